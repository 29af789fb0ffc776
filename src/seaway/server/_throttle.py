"""Counting, and logging at most once an interval, what a broken or hostile client can repeat at will."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter

_log = logging.getLogger("seaway.server")


class ThrottledWarning:
    """Each :meth:`note` counts one occurrence; one warning line goes to the log per interval, so
    that a client repeating a mistake cannot flood it (the count is in the metric)."""

    def __init__(self, counter: Counter, message: str, clock: Callable[[], float] = time.monotonic,
                 interval_s: float = 60.0) -> None:
        self._counter = counter
        self._message = message
        self._clock = clock
        self._interval_s = interval_s
        self._lock = threading.Lock()  # grpc's threads note at once
        self._logged_s: float | None = None

    def note(self, **extra: Any) -> None:
        self._counter.inc()
        now = self._clock()
        with self._lock:
            if self._logged_s is not None and now - self._logged_s < self._interval_s:
                return
            self._logged_s = now
        _log.warning(self._message, extra=extra)
