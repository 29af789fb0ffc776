"""``invariant()``: a check for what must never happen, kept under ``python -O`` (unlike ``assert``)."""

from __future__ import annotations


class InvariantViolation(AssertionError):
    """A bug in Seaway: a condition that the code guarantees did not hold."""


def invariant(condition: bool, message: str) -> None:
    """Raise :class:`InvariantViolation` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise InvariantViolation(message)
