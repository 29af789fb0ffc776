"""A clock that moves only when a test moves it."""

from __future__ import annotations

import threading


class FakeClock:
    """Wall time starts at ``start_ms`` and moves by :meth:`advance`; monotonic time moves with it."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ms = start_ms
        self._start_ms = start_ms

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic_s(self) -> float:
        with self._lock:
            return (self._now_ms - self._start_ms) / 1000

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        with self._lock:
            self._now_ms += round(seconds * 1000)

    def set_ms(self, now_ms: int) -> None:
        with self._lock:
            if now_ms < self._now_ms:
                raise ValueError("a clock does not go backwards")
            self._now_ms = now_ms
