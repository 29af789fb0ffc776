"""Passes of a background job (automatic scaling, retention) on a daemon thread of their own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from seaway._errors import SeawayError

log = logging.getLogger("seaway")


class PeriodicPasses:
    """Calls ``run_once`` every ``interval_s`` (nothing when it is None) from :meth:`start` until
    :meth:`close`. A pass that fails with a :class:`SeawayError` (the store closing, a disk
    failure) is logged and the next one tried on time."""

    def __init__(self, name: str, run_once: Callable[[], object], interval_s: float | None) -> None:
        self._name = name
        self._run_once = run_once
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        interval = self._interval_s
        if interval is None or self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self._run_once()
                except SeawayError as exc:
                    log.warning(f"{self._name} pass failed", extra={"error": str(exc)})

        self._thread = threading.Thread(target=loop, name=f"seaway-{self._name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
