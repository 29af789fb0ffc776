"""The on-disk format of LogsDB: keys, entries and metadata values. Pure functions, no I/O.

A data key is ``(log id, LSN)`` as two big-endian unsigned 64-bit integers, so RocksDB's byte order is
the order of logs and, within a log, of LSNs.

A data value is an *entry*: one appended batch of records with consecutive LSNs starting at the key's
LSN (or a hole plug covering ``count`` LSNs). Layout::

    header    version u8 | kind u8 | flags u16 | timestamp_ms u64 | count u32 | header_sum u64
    (kind RECORDS only:)
    lengths   length u32, ``count`` times
    sums      payload_sum u64, ``count`` times
    payloads  the payloads, back to back
    (kind SEGMENT_REF only:)
    offset u64 | length u32

A SEGMENT_REF stands in for a large RECORDS entry whose bytes, header included, are at ``offset`` in
the partition's segment file (see ``_segment``); its header repeats the entry's timestamp and count,
so time searches need not read the segment. The reference itself carries no checksum of its own:
bytes read from a wrong place fail the key-bound header checksum of the entry they should be.

The table of lengths and sums comes first so that a read splits and verifies a batch with a few
C-level passes instead of a Python loop per record; the read path is dominated by that work.

Checksums are XXH3-64 (the ``xxhash`` package): it costs a fraction of CRC-32 per kilobyte, which
matters because every read verifies every payload. ``header_sum`` covers the key followed by the
header without its last field, so an entry moved under another key is caught too. ``payload_sum``
is seeded with the payload's length, so a damaged length is caught as well as a damaged payload.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from itertools import accumulate
from operator import eq
from typing import NamedTuple

from xxhash import xxh3_64_intdigest

FORMAT_VERSION = 1

_KEY = struct.Struct(">QQ")
_HEADER = struct.Struct(">BBHQIQ")
_HEADER_BODY = struct.Struct(">BBHQI")
_SUM = struct.Struct(">Q")
_REF = struct.Struct(">QI")

KEY_BYTES = _KEY.size
HEADER_BYTES = _HEADER.size
RECORD_OVERHEAD_BYTES = 12
"""Per record: its length (u32) and its checksum (u64)."""
ENTRY_BYTES_LIMIT = 1 << 30
"""The largest entry the format stores (a segment reference's length is a u32, with room to spare)."""


class EntryKind(IntEnum):
    RECORDS = 0
    HOLE_PLUG = 1
    SEGMENT_REF = 2


_KIND_OF = {int(kind): kind for kind in EntryKind}  # a dict lookup: calling EntryKind(n) costs more


def encode_key(log_id: int, lsn: int) -> bytes:
    return _KEY.pack(log_id, lsn)


def decode_key(key: bytes) -> tuple[int, int]:
    log_id, lsn = _KEY.unpack(key)  # ints already: no int() round trip
    return log_id, lsn


def _header(key: bytes, kind: EntryKind, flags: int, timestamp_ms: int, count: int) -> bytes:
    body = _HEADER_BODY.pack(FORMAT_VERSION, kind, flags, timestamp_ms, count)
    return body + _SUM.pack(xxh3_64_intdigest(key + body))


@lru_cache(maxsize=1024)  # a Struct compiles its format when made: once per count, not per entry
def _table(count: int) -> struct.Struct:
    return struct.Struct(f">{count}I{count}Q")


def encode_records(key: bytes, timestamp_ms: int, payloads: list[bytes], flags: int = 0) -> bytes:
    """Encode a batch of record payloads as one entry stored under ``key``."""
    lengths = list(map(len, payloads))
    sums = list(map(xxh3_64_intdigest, payloads, lengths))
    header = _header(key, EntryKind.RECORDS, flags, timestamp_ms, len(payloads))
    return b"".join((header, _table(len(payloads)).pack(*lengths, *sums), *payloads))


def encode_hole_plug(key: bytes, timestamp_ms: int, count: int) -> bytes:
    """Encode a hole plug: ``count`` LSNs from the key's LSN on that will never hold records."""
    return _header(key, EntryKind.HOLE_PLUG, 0, timestamp_ms, count)


def encode_segment_ref(key: bytes, timestamp_ms: int, count: int, offset: int, length: int) -> bytes:
    """A reference to a RECORDS entry of ``count`` records stored at ``offset`` in a segment file."""
    return _header(key, EntryKind.SEGMENT_REF, 0, timestamp_ms, count) + _REF.pack(offset, length)


def decode_segment_ref(value: bytes) -> tuple[int, int]:
    """The offset and length of a SEGMENT_REF whose header is verified."""
    if len(value) != HEADER_BYTES + _REF.size:
        raise HeaderCorrupt("segment reference of the wrong size")
    offset, length = _REF.unpack_from(value, HEADER_BYTES)
    return int(offset), int(length)


def encoded_records_bytes(payloads: list[bytes]) -> int:
    """The size of the entry :func:`encode_records` would produce, without building it."""
    return HEADER_BYTES + sum(len(p) for p in payloads) + RECORD_OVERHEAD_BYTES * len(payloads)


class EntryHeader(NamedTuple):
    """A verified header. A named tuple, not a frozen dataclass: a read makes two per entry, and a
    frozen dataclass costs four times more to make."""

    kind: EntryKind
    flags: int
    timestamp_ms: int
    count: int  # type: ignore[assignment]  # hides tuple.count, which nothing here calls


class HeaderCorrupt(Exception):
    """The entry header failed its checksum or names an unknown version or kind."""


def decode_header(key: bytes, value: bytes) -> EntryHeader:
    """Decode and verify an entry's header; raise :class:`HeaderCorrupt` if it does not verify."""
    if len(value) < HEADER_BYTES:
        raise HeaderCorrupt("entry shorter than its header")
    version, kind, flags, timestamp_ms, count, checksum = _HEADER.unpack_from(value)
    if xxh3_64_intdigest(key + value[: _HEADER_BODY.size]) != checksum:
        raise HeaderCorrupt("entry header checksum mismatch")
    entry_kind = _KIND_OF.get(kind)
    if version != FORMAT_VERSION or entry_kind is None:
        raise HeaderCorrupt(f"unknown entry version {version} or kind {kind}")
    return EntryHeader(entry_kind, flags, timestamp_ms, count)


def decode_payloads(value: bytes, count: int) -> list[bytes | None]:
    """Split a RECORDS entry into its payloads, verifying each checksum.

    A payload that fails its checksum is ``None``. A damaged length shifts every later payload, so
    those fail their checksums too; a damaged table makes the whole entry ``None``.
    """
    table = _table(count)
    if HEADER_BYTES + table.size > len(value):
        return [None] * count
    fields = table.unpack_from(value, HEADER_BYTES)
    lengths, sums = fields[:count], fields[count:]
    ends = list(accumulate(lengths, initial=HEADER_BYTES + table.size))
    payloads: list[bytes | None] = list(map(value.__getitem__, map(slice, ends, ends[1:])))
    verified = list(map(eq, map(xxh3_64_intdigest, payloads, lengths), sums))  # type: ignore[arg-type]
    if ends[-1] == len(value) and all(verified):
        return payloads
    size = len(value)
    return [p if ok and end <= size else None for p, ok, end in zip(payloads, verified, ends[1:], strict=True)]


# --- Metadata values -------------------------------------------------------------------------------

_DIR = struct.Struct(">QQQQQQ")


@dataclass(slots=True)
class DirEntry:
    """What one partition holds of one log: LSN and timestamp bounds, bytes and entry count."""

    lsn_min: int
    lsn_max: int
    timestamp_ms_min: int
    timestamp_ms_max: int
    size_bytes: int
    entries: int

    def encode(self) -> bytes:
        return _DIR.pack(
            self.lsn_min,
            self.lsn_max,
            self.timestamp_ms_min,
            self.timestamp_ms_max,
            self.size_bytes,
            self.entries,
        )

    @classmethod
    def decode(cls, raw: bytes) -> DirEntry:
        return cls(*_DIR.unpack(raw))

    def copy(self) -> DirEntry:
        """A copy made field by field: ``dataclasses.replace`` costs several times more, and every
        read of a log makes one per partition."""
        return DirEntry(self.lsn_min, self.lsn_max, self.timestamp_ms_min, self.timestamp_ms_max,
                        self.size_bytes, self.entries)


_U64 = struct.Struct(">Q")
_PRODUCED = struct.Struct(">QQI")


def encode_produced(window: dict[int, tuple[int, int]]) -> bytes:
    """A producer's remembered batches: ``sequence -> (first LSN, count)``, oldest first."""
    return b"".join(_PRODUCED.pack(seq, first, count) for seq, (first, count) in window.items())


def decode_produced(raw: bytes) -> dict[int, tuple[int, int]]:
    return {seq: (first, count) for seq, first, count in _PRODUCED.iter_unpack(raw)}


PRODUCED_BATCH_BYTES = _PRODUCED.size
"""Bytes of one batch in an encoded window (see :func:`encode_produced`)."""


def encode_produced_batch(sequence: int, first_lsn: int, count: int) -> bytes:
    """One batch of an encoded window: windows grow by appending them."""
    return _PRODUCED.pack(sequence, first_lsn, count)


def produced_batch(raw: bytes, index: int) -> tuple[int, int, int]:
    """Batch number ``index`` of an encoded window, as ``(sequence, first LSN, count)``."""
    sequence, first, count = _PRODUCED.unpack_from(raw, index * _PRODUCED.size)
    return sequence, first, count


def lsn_text(lsn: int) -> str:
    """An LSN as the log layer spells it (``e<epoch>n<esn>``), for messages."""
    return f"e{lsn >> 32}n{lsn & 0xFFFFFFFF}"


def encode_u64(value: int) -> bytes:
    return _U64.pack(value)


def decode_u64(raw: bytes) -> int:
    return int(_U64.unpack(raw)[0])


# --- the metadata store's values --------------------------------------------------------------------
# A metadata value is ``version u64 | sum u64 | value``: the revision of the batch that wrote it, and
# an XXH3-64 of the key, the version and the value, so a value moved under another key is caught.

_KV_HEAD = struct.Struct(">QQ")


def encode_kv(key: bytes, version: int, value: bytes) -> bytes:
    return _KV_HEAD.pack(version, xxh3_64_intdigest(value, seed=version ^ xxh3_64_intdigest(key))) + value


def decode_kv(key: bytes, raw: bytes) -> tuple[int, bytes]:
    """``(version, value)``; raises :class:`HeaderCorrupt` if the checksum does not match."""
    if len(raw) < _KV_HEAD.size:
        raise HeaderCorrupt("metadata value shorter than its header")
    version, stored = _KV_HEAD.unpack_from(raw)
    value = raw[_KV_HEAD.size:]
    if xxh3_64_intdigest(value, seed=version ^ xxh3_64_intdigest(key)) != stored:
        raise HeaderCorrupt("metadata value checksum mismatch")
    return int(version), value
