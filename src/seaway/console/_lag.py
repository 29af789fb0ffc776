"""Lag over time: the console samples every group's total lag at an interval and keeps a bounded
window of samples per group, for the lag chart. The store keeps no history of lag; what the chart
shows starts when the console started."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from seaway.console._views import iso_ms, now_ms
from seaway.errors import SeawayError

_log = logging.getLogger("seaway.console")


class LagSampler:
    """``totals()`` returns every group's lag by series name (None where the store does not count
    it). :meth:`sample` records one sample of each; :meth:`start` does so every ``interval_s`` in a
    thread of its own until :meth:`stop`. Series keep at most ``samples_max`` samples; a group
    that no longer exists loses its series at the next sample."""

    def __init__(self, totals: Callable[[], dict[str, int | None]], interval_s: float, samples_max: int,
                 clock_ms: Callable[[], int] = now_ms) -> None:
        self._totals = totals
        self._interval_s = interval_s
        self._samples_max = samples_max
        self._clock_ms = clock_ms
        self._series: dict[str, deque[tuple[int, int | None]]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        """Why the last sample failed (the store unreachable, say), or None."""

    def sample(self) -> None:
        """Record one sample of every group's lag; a failure to read them is kept in
        :attr:`last_error` (and logged), not raised: the next sample tries again."""
        try:
            totals = self._totals()
        except SeawayError as exc:  # the store unreachable, a group deleted meanwhile, ...
            self.last_error = str(exc)
            _log.warning("lag sample failed: %s", exc)
            return
        except Exception as exc:  # a defect: said and logged, but the sampling thread goes on
            self.last_error = f"{type(exc).__name__}: {exc}"
            _log.exception("lag sample failed")
            return
        self.last_error = None
        at = self._clock_ms()
        with self._lock:
            for name, lag in totals.items():
                self._series.setdefault(name, deque(maxlen=self._samples_max)).append((at, lag))
            for gone in [n for n in self._series if n not in totals]:
                del self._series[gone]

    def series(self) -> list[dict[str, Any]]:
        """Each group's samples, oldest first: ``{"name", "time": [ISO...], "lag": [int or None...]}``."""
        with self._lock:
            return [{"name": name, "time": [iso_ms(t) for t, _ in samples], "lag": [lag for _, lag in samples]}
                    for name, samples in sorted(self._series.items())]

    def start(self) -> None:
        """Take the first sample now (the chart has a point from the start), then one every
        ``interval_s`` in a thread."""
        self.sample()
        self._thread = threading.Thread(target=self._run, name="seaway-console-lag", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            self.sample()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
