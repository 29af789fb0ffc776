"""A ledger entry as read back: its index, its time, and the change it records."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from seaway.errors import CorruptionError
from seaway.ledger._changes import Change, decode_change

_TIME = struct.Struct(">Q")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One committed control-plane change. ``index`` goes up by one an entry, across restarts;
    ``time_ms`` is when the store wrote it (epoch milliseconds)."""

    index: int
    time_ms: int
    change: Change

    @property
    def operation(self) -> str:
        return self.change.OPERATION

    @property
    def resource(self) -> str:
        return self.change.resource()

    @classmethod
    def decode(cls, index: int, stored: bytes) -> LedgerEntry:
        """From what the store keeps under the index: the time (8 bytes, big-endian), then the change."""
        if len(stored) < _TIME.size:
            raise CorruptionError(f"ledger entry {index} is {len(stored)} bytes: too short")
        return cls(index, _TIME.unpack_from(stored)[0], decode_change(stored[_TIME.size:]))

    @staticmethod
    def stored(time_ms: int, body: bytes) -> bytes:
        """What the store keeps for an entry written at ``time_ms`` (see :meth:`decode`)."""
        return _TIME.pack(time_ms) + body
