"""A progress bar on stderr for long commands; silent when stderr is not a terminal (scripts, CI)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress(total, "label") as p: p.advance()``; redraws at most ten times a second."""

    WIDTH = 30

    def __init__(self, total: int, label: str, stream: TextIO | None = None, force: bool = False) -> None:
        self._total = max(1, total)
        self._label = label
        self._stream = stream or sys.stderr
        self._enabled = force or self._stream.isatty()
        self._done = 0
        self._drawn_s = 0.0

    @property
    def enabled(self) -> bool:
        """Whether it draws (its stream is a terminal, or it was forced)."""
        return self._enabled

    @property
    def done(self) -> int:
        return self._done

    def advance(self, steps: int = 1, label: str | None = None) -> None:
        self._done = min(self._total, self._done + steps)
        if label is not None:
            self._label = label
        now = time.monotonic()
        if self._enabled and (now - self._drawn_s >= 0.1 or self._done == self._total):
            self._drawn_s = now
            filled = self.WIDTH * self._done // self._total
            self._stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                               f"{100 * self._done // self._total:3d}% {self._label}\x1b[K")
            self._stream.flush()

    def __enter__(self) -> Progress:
        self.advance(0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()
