"""Time as an injected dependency: the system clock for users, a fake one for tests."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Where Seaway reads the time. Wall time stamps records; monotonic time measures waits."""

    def now_ms(self) -> int:
        """Wall-clock time in milliseconds since the Unix epoch."""
        ...

    def monotonic_s(self) -> float:
        """A clock that never goes backwards, in seconds, for deadlines and timeouts."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_s(self) -> float:
        return time.monotonic()
