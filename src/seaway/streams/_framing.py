"""The records of a transactional stream's segments: each event behind a small header.

A stream created with ``StreamConfig(transactional=True)`` stores every event with a header that
says whether a transaction wrote it, and which::

    0x00 <event>                         a plain event, visible at once
    0x01 <write pointer, 8 bytes BE> <event>   written in the transaction of that write pointer

A stream created without it stores events as they are (no header, no cost). The flag is fixed at
creation, so a segment's records are all framed or none are. This module is the one place that
encodes and decodes the header; readers decide what a transactional event's write pointer means
with a snapshot of the transaction manager (see :mod:`seaway.streams._txn`).
"""

from __future__ import annotations

import struct

from seaway._errors import CorruptionError

PLAIN = 0x00
IN_TXN = 0x01
_PLAIN_HEAD = bytes((PLAIN,))
_TXN_HEAD = struct.Struct(">BQ")
PLAIN_OVERHEAD_BYTES = 1
TXN_OVERHEAD_BYTES = _TXN_HEAD.size


def frame(event: bytes, write_pointer: int) -> bytes:
    """``event`` with its header: plain when ``write_pointer`` is 0, else of that transaction."""
    if write_pointer == 0:
        return _PLAIN_HEAD + event
    return _TXN_HEAD.pack(IN_TXN, write_pointer) + event


def unframe(record: bytes) -> tuple[int, bytes]:
    """(write pointer, event) of a framed record; the write pointer is 0 for a plain event.
    :class:`CorruptionError` for bytes that are not a framed record (a stream's record format is
    fixed at creation, so this means a bug or a damaged store, never bad input)."""
    if record[:1] == _PLAIN_HEAD:
        return 0, record[1:]
    if record[:1] == b"\x01" and len(record) >= _TXN_HEAD.size:
        write_pointer: int = _TXN_HEAD.unpack_from(record)[1]
        if write_pointer:
            return write_pointer, record[_TXN_HEAD.size:]
    raise CorruptionError(f"a transactional stream's record has no valid header: {record[:16]!r}")
