"""Log sequence numbers: ``LSN = epoch << 32 | esn``, both parts unsigned 32-bit."""

from __future__ import annotations

from seaway.errors import LsnOutOfRangeError

LSN_INVALID = 0
LSN_OLDEST = 1
LSN_MAX = 2**64 - 1
EPOCH_MAX = 2**32 - 1
ESN_MAX = 2**32 - 1
ESN_FIRST = 1
"""The first sequence number a sequencer issues in an epoch; ESN 0 is never issued."""


def make_lsn(epoch: int, esn: int) -> int:
    if not (0 <= epoch <= EPOCH_MAX and 0 <= esn <= ESN_MAX):
        raise LsnOutOfRangeError(f"epoch {epoch} or esn {esn} is outside 32 bits")
    return epoch << 32 | esn


def epoch_of(lsn: int) -> int:
    return lsn >> 32


def esn_of(lsn: int) -> int:
    return lsn & ESN_MAX


def lsn_str(lsn: int) -> str:
    """``e<epoch>n<esn>``, LogDevice's spelling of an LSN."""
    return f"e{lsn >> 32}n{lsn & ESN_MAX}"


def check_lsn(lsn: int, what: str = "lsn") -> int:
    if not isinstance(lsn, int) or isinstance(lsn, bool) or not (0 <= lsn <= LSN_MAX):
        raise LsnOutOfRangeError(f"{what} must be an integer in [0, 2**64 - 1], got {lsn!r}")
    return lsn
