"""The on-disk format of LogsDB: keys, entries and metadata values. Pure functions, no I/O.

A data key is ``(log id, LSN)`` as two big-endian unsigned 64-bit integers, so RocksDB's byte order is
the order of logs and, within a log, of LSNs.

A data value is an *entry*: one appended batch of records with consecutive LSNs starting at the key's
LSN (or a hole plug covering ``count`` LSNs). Layout::

    header  version u8 | kind u8 | flags u16 | timestamp_ms u64 | count u32 | header_crc u32
    records (kind RECORDS only), ``count`` times:
            length u32 | payload_crc u32 | payload (length bytes)

``header_crc`` is the CRC-32 of the key followed by the header without its last field, so an entry
that was moved under another key is caught too. ``payload_crc`` is the CRC-32 of the payload seeded
with its length, so a damaged length is caught as well as a damaged payload.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

FORMAT_VERSION = 1

_KEY = struct.Struct(">QQ")
_HEADER = struct.Struct(">BBHQII")
_HEADER_BODY = struct.Struct(">BBHQI")
_RECORD = struct.Struct(">II")

KEY_BYTES = _KEY.size
HEADER_BYTES = _HEADER.size
RECORD_OVERHEAD_BYTES = _RECORD.size


class EntryKind(IntEnum):
    RECORDS = 0
    HOLE_PLUG = 1


def encode_key(log_id: int, lsn: int) -> bytes:
    return _KEY.pack(log_id, lsn)


def decode_key(key: bytes) -> tuple[int, int]:
    log_id, lsn = _KEY.unpack(key)
    return int(log_id), int(lsn)


def _header(key: bytes, kind: EntryKind, flags: int, timestamp_ms: int, count: int) -> bytes:
    body = _HEADER_BODY.pack(FORMAT_VERSION, kind, flags, timestamp_ms, count)
    return body + struct.pack(">I", zlib.crc32(body, zlib.crc32(key)))


def encode_records(key: bytes, timestamp_ms: int, payloads: list[bytes], flags: int = 0) -> bytes:
    """Encode a batch of record payloads as one entry stored under ``key``."""
    parts = [_header(key, EntryKind.RECORDS, flags, timestamp_ms, len(payloads))]
    pack = _RECORD.pack
    crc32 = zlib.crc32
    for payload in payloads:
        length = len(payload)
        parts.append(pack(length, crc32(payload, length)))
        parts.append(payload)
    return b"".join(parts)


def encode_hole_plug(key: bytes, timestamp_ms: int, count: int) -> bytes:
    """Encode a hole plug: ``count`` LSNs from the key's LSN on that will never hold records."""
    return _header(key, EntryKind.HOLE_PLUG, 0, timestamp_ms, count)


def encoded_records_bytes(payloads: list[bytes]) -> int:
    """The size of the entry :func:`encode_records` would produce, without building it."""
    return HEADER_BYTES + sum(len(p) for p in payloads) + RECORD_OVERHEAD_BYTES * len(payloads)


@dataclass(frozen=True, slots=True)
class EntryHeader:
    kind: EntryKind
    flags: int
    timestamp_ms: int
    count: int


class HeaderCorrupt(Exception):
    """The entry header failed its checksum or names an unknown version or kind."""


def decode_header(key: bytes, value: bytes) -> EntryHeader:
    """Decode and verify an entry's header; raise :class:`HeaderCorrupt` if it does not verify."""
    if len(value) < HEADER_BYTES:
        raise HeaderCorrupt("entry shorter than its header")
    version, kind, flags, timestamp_ms, count, crc = _HEADER.unpack_from(value)
    body = memoryview(value)[: _HEADER_BODY.size]
    if zlib.crc32(body, zlib.crc32(key)) != crc:
        raise HeaderCorrupt("entry header checksum mismatch")
    if version != FORMAT_VERSION or kind not in (EntryKind.RECORDS, EntryKind.HOLE_PLUG):
        raise HeaderCorrupt(f"unknown entry version {version} or kind {kind}")
    return EntryHeader(EntryKind(kind), flags, timestamp_ms, count)


def decode_payloads(value: bytes, count: int) -> list[bytes | None]:
    """Split a RECORDS entry into its payloads, verifying each checksum.

    A payload that fails its checksum is ``None``. Once one record's framing is damaged, the position
    of every later record is unknown, so they are all ``None`` as well.
    """
    out: list[bytes | None] = []
    unpack = _RECORD.unpack_from
    crc32 = zlib.crc32
    end = len(value)
    pos = HEADER_BYTES
    for _ in range(count):
        if pos + RECORD_OVERHEAD_BYTES > end:
            break
        length, crc = unpack(value, pos)
        start = pos + RECORD_OVERHEAD_BYTES
        pos = start + length
        if pos > end:
            break
        payload = value[start:pos]
        if crc32(payload, length) != crc:
            out.append(None)
            continue
        out.append(payload)
    out.extend([None] * (count - len(out)))
    return out


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


_U64 = struct.Struct(">Q")


def encode_u64(value: int) -> bytes:
    return _U64.pack(value)


def decode_u64(raw: bytes) -> int:
    return int(_U64.unpack(raw)[0])
