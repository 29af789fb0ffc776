"""``invariant()``: a check for what must never happen, kept under ``python -O`` (unlike ``assert``)."""

from __future__ import annotations

from seaway._errors import InternalError


class InvariantViolation(InternalError):
    """A bug in Seaway: a condition that the code guarantees did not hold.

    An :class:`InternalError`, so that it reaches callers (through append futures, say) inside the
    one hierarchy, with its stable code, rather than as a bare ``AssertionError``."""


def invariant(condition: bool, message: str) -> None:
    """Raise :class:`InvariantViolation` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise InvariantViolation(message)
