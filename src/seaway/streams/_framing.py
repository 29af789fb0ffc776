"""The records of a framed stream's segments: each event behind a small header.

A stream created with ``StreamConfig(transactional=True)`` or ``StreamConfig(store_routing_keys=True)``
stores every event with a header. Its first byte holds flags; what they announce follows, in
this order, then the event::

    <flags> [<write pointer, 8 bytes BE>] [<key length, 2 bytes BE> <key bytes>] <event>

    flags 0x01  written in the transaction of that write pointer (never 0); without it, the event
                is plain: visible at once
          0x02  the event's routing key follows (0 to ``ROUTING_KEY_BYTES_MAX`` bytes)
          0x04  the key was given as a str (its bytes are UTF-8); only with 0x02

So ``0x00 <event>`` is a plain event without a key (1 byte of header) and ``0x01 <write
pointer> <event>`` one of a transaction (9 bytes): the only two headers before keys were stored,
which still decode the same. Any other bit set is corruption.

A stream created with neither flag stores events as they are (no header, no cost). The flags
are fixed at creation, so a segment's records are all framed or none are. This module is the one
place that encodes and decodes the header; readers decide what a transactional event's write
pointer means with a snapshot of the transaction manager (see :mod:`seaway.txn`).
"""

from __future__ import annotations

import struct

from seaway.errors import CorruptionError
from seaway.streams._routing import ROUTING_KEY_BYTES_MAX

PLAIN = 0x00
IN_TXN = 0x01
KEYED = 0x02
TEXT_KEY = 0x04
_FLAGS = IN_TXN | KEYED | TEXT_KEY
_PLAIN_HEAD = bytes((PLAIN,))
_TXN_HEAD = struct.Struct(">BQ")
_KEY_LENGTH = struct.Struct(">H")
PLAIN_OVERHEAD_BYTES = 1
TXN_OVERHEAD_BYTES = _TXN_HEAD.size
KEY_OVERHEAD_BYTES = _KEY_LENGTH.size
"""Header bytes a stored key adds besides its own bytes."""

RoutingKey = str | bytes


def header(write_pointer: int, routing_key: RoutingKey | None = None) -> bytes:
    """The header of an event written in the transaction of ``write_pointer`` (0: none) with
    ``routing_key`` (None: none stored). A write's events share one: an event is stored as
    ``header + event``. The caller has checked the key (see :func:`~seaway.streams.key_position`)."""
    if routing_key is None:
        return _PLAIN_HEAD if write_pointer == 0 else _TXN_HEAD.pack(IN_TXN, write_pointer)
    if isinstance(routing_key, str):
        raw, flags = routing_key.encode(), KEYED | TEXT_KEY
    else:
        raw, flags = routing_key, KEYED
    head = bytes((flags,)) if write_pointer == 0 else _TXN_HEAD.pack(flags | IN_TXN, write_pointer)
    return head + _KEY_LENGTH.pack(len(raw)) + raw


def frame(event: bytes, write_pointer: int, routing_key: RoutingKey | None = None) -> bytes:
    """``event`` with its header (see :func:`header`)."""
    return header(write_pointer, routing_key) + event


def unframe(record: bytes) -> tuple[int, bytes]:
    """(write pointer, event) of a framed record; the write pointer is 0 for a plain event. A
    stored routing key is left out (see :func:`unframe_keyed`). :class:`CorruptionError` for bytes
    that are not a framed record (a stream's record format is fixed at creation, so this means a
    bug or a damaged store, never bad input)."""
    if record[:1] == _PLAIN_HEAD:  # the common case first: a plain event without a key
        return 0, record[1:]
    write_pointer, _, event = unframe_keyed(record)
    return write_pointer, event


def unframe_keyed(record: bytes) -> tuple[int, RoutingKey | None, bytes]:
    """(write pointer, routing key, event) of a framed record: the write pointer is 0 for a plain
    event; the key is None when none was stored, else as it was given (str or bytes).
    :class:`CorruptionError` as :func:`unframe`."""
    flags = record[0] if record else -1
    if flags == PLAIN:
        return 0, None, record[1:]
    if flags < 0 or flags & ~_FLAGS or (flags & TEXT_KEY and not flags & KEYED):
        raise _corrupt(record, "no valid header")
    offset = 1
    write_pointer = 0
    if flags & IN_TXN:
        if len(record) < _TXN_HEAD.size:
            raise _corrupt(record, "a cut write pointer")
        write_pointer = _TXN_HEAD.unpack_from(record)[1]
        if not write_pointer:
            raise _corrupt(record, "a transaction's write pointer of 0")
        offset = _TXN_HEAD.size
    if not flags & KEYED:
        return write_pointer, None, record[offset:]
    if len(record) < offset + KEY_OVERHEAD_BYTES:
        raise _corrupt(record, "a cut key length")
    length: int = _KEY_LENGTH.unpack_from(record, offset)[0]
    offset += KEY_OVERHEAD_BYTES
    if length > ROUTING_KEY_BYTES_MAX or len(record) < offset + length:
        raise _corrupt(record, f"a key of {length} bytes")
    raw = record[offset:offset + length]
    key: RoutingKey = raw
    if flags & TEXT_KEY:
        try:
            key = raw.decode()
        except UnicodeDecodeError:
            raise _corrupt(record, "a text key that is not UTF-8") from None
    return write_pointer, key, record[offset + length:]


def _corrupt(record: bytes, what: str) -> CorruptionError:
    return CorruptionError(f"a framed stream's record has {what}: {record[:24]!r}")
