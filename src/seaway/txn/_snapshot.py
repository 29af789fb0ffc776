"""Snapshots: which transactions' writes a reader may see (Tephra's visibility rule).

Every transactional write carries its transaction's *write pointer*. A snapshot taken from the
manager says which write pointers are committed as of that moment::

    visible(v) = v == own write pointer
                 or (v <= read_pointer and v not in in_progress and v not in invalid)

Readers of logs need one more distinction than visible or not: a write pointer that is in progress
(or issued after the snapshot) may still commit, so a reader that keeps order must *wait* at it,
never step over it; one on the invalid list (aborted, timed out) will never be visible, so a reader
*skips* it. That wait is what keeps a transaction that commits late from being missed by readers
that had already moved past its position.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from seaway.errors import CorruptionError

_HEAD = struct.Struct(">BQQII")
_VERSION = 1


class Visibility(Enum):
    VISIBLE = "visible"
    """Committed as of the snapshot (or the reader's own transaction's write)."""
    WAIT = "wait"
    """In progress, or begun after the snapshot: it may still commit. Do not step over it."""
    SKIP = "skip"
    """Aborted or timed out: never visible. Step over it."""


@dataclass(frozen=True)
class Snapshot:
    """What was committed when the snapshot was taken. ``write_pointer`` is 0 for a reader outside
    any transaction; a transaction's own snapshot carries its write pointer, whose writes it sees."""

    read_pointer: int
    in_progress: tuple[int, ...] = ()
    invalid: tuple[int, ...] = ()
    write_pointer: int = 0

    @cached_property
    def _excluded(self) -> frozenset[int]:
        """Built by the first visibility question, not by the begin that made the snapshot."""
        return frozenset(self.in_progress) | frozenset(self.invalid)

    @cached_property
    def _in_progress(self) -> frozenset[int]:
        return frozenset(self.in_progress)

    def visible(self, write_pointer: int) -> bool:
        if write_pointer == self.write_pointer:
            return True
        return write_pointer <= self.read_pointer and write_pointer not in self._excluded

    def visibility(self, write_pointer: int) -> Visibility:
        if self.visible(write_pointer):
            return Visibility.VISIBLE
        if write_pointer > self.read_pointer or write_pointer in self._in_progress:
            return Visibility.WAIT
        return Visibility.SKIP

    def encode(self) -> bytes:
        return b"".join((_HEAD.pack(_VERSION, self.read_pointer, self.write_pointer, len(self.in_progress),
                                    len(self.invalid)),
                         struct.pack(f">{len(self.in_progress)}Q", *self.in_progress),
                         struct.pack(f">{len(self.invalid)}Q", *self.invalid)))

    @classmethod
    def decode(cls, raw: bytes) -> Snapshot:
        try:
            version, read_pointer, write_pointer, n_progress, n_invalid = _HEAD.unpack_from(raw)
            if version != _VERSION or len(raw) != _HEAD.size + 8 * (n_progress + n_invalid):
                raise ValueError(f"version {version}, {len(raw)} bytes")
            values = struct.unpack_from(f">{n_progress + n_invalid}Q", raw, _HEAD.size)
        except (struct.error, ValueError) as exc:
            raise CorruptionError(f"a transaction snapshot does not decode: {exc}") from None
        return cls(read_pointer, values[:n_progress], values[n_progress:], write_pointer)
