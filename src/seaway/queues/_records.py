"""What queues store: consumer groups' records, consumers' positions, and chunks of entries.

A *chunk* is one record of a partition's log: the entries one transaction enqueued for one
consumer of one group (or part of them, when large). Two versions share their head (big-endian)::

    version u8 | write pointer u64 | count u32 | counters u32 * count | ...

- version 1, the entries' payloads themselves (what versions before the queue's data log wrote,
  once per group as in the source design; still read)::

    ... | lengths u32 * count | payloads

- version 2, a *pointer chunk*: the payloads are in *data chunks* of the queue's data log, written
  once whatever the number of groups; the pointer names those records (their LSNs) and, per
  entry, which of them holds it and its index there::

    ... | data log u64 | refs u32 | LSNs u64 * refs | ref u32 * count | index u32 * count

A data chunk is a version 1 chunk of the queue's data log: entries of one send, in counter order.
A send splits its entries into data chunks by where the groups place them (the partition in each
group, the largest groups first), so that a consumer reads the data chunks of its own share and
little else (see :mod:`seaway.queues._data`). Readers judge a pointer chunk by its write pointer, as
any chunk, and read its data chunk only to deliver it (:mod:`seaway.queues._data`).

An entry's id is ``(write pointer, counter)``: the counter numbers the transaction's entries.

The hash that places an entry of a HASH group is BLAKE2b-8 of the key's UTF-8 bytes (an int's
decimal form), modulo the group's size. It is part of the format and never changes.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from seaway.errors import CorruptionError, InvalidArgumentError, MissingHashKeyError
from seaway.log import Versioned, lsn_str

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
NAME_CHARS_MAX = 64
SIZE_MAX = 1024
"""Consumers in a group."""
GROUPS_MAX = 64
"""Consumer groups of a queue."""
ENTRY_BYTES_MAX = (1 << 20) - 64
"""An entry's payload (a chunk is one log record, at most 1 MiB)."""
CHUNK_BYTES_MAX = 1 << 20
READ_BYTES_DEFAULT = 8 << 20
"""Payload bytes one ``dequeue`` or ``read_committed`` returns by default (at least one entry)."""
READ_BYTES_MAX = 64 << 20
"""The largest ``bytes_max`` a read may ask for."""


def check_bytes_max(bytes_max: object) -> int:
    if not isinstance(bytes_max, int) or isinstance(bytes_max, bool) or not 1 <= bytes_max <= READ_BYTES_MAX:
        raise InvalidArgumentError(f"bytes_max is in [1, {READ_BYTES_MAX}], got {bytes_max!r}")
    return bytes_max


def entries_within(payloads: list[bytes], start: int, count_max: int, bytes_left: int,
                   first_free: bool) -> tuple[int, int]:
    """The end of the run of ``payloads`` from ``start`` a read takes, and its bytes: at most
    ``count_max`` entries of at most ``bytes_left`` bytes together, except that the read's first
    entry is taken whatever its size (``first_free``: the read has none yet)."""
    end = min(len(payloads), start + count_max)
    total = sum(map(len, payloads[start:end]))
    if total <= bytes_left:  # the common case: the whole run fits
        return end, total
    stop, taken = start, 0
    while stop < end:
        size = len(payloads[stop])
        if taken + size > bytes_left and not (first_free and stop == start):
            break
        taken += size
        stop += 1
    return stop, taken

NAMESPACE = "queues"
PARTITIONS_GROUP = "queues.partitions"
"""The log group reserved for queue partitions' logs."""
PARTITION_LOG_IDS = (2**61, 2**62 - 1)
LIST_MAX = 10_000


def queue_key(queue: str) -> bytes:
    return f"q/{queue}".encode()


def group_key(queue: str, group: str) -> bytes:
    return f"g/{queue}/{group}".encode()


def groups_prefix(queue: str) -> bytes:
    return f"g/{queue}/".encode()


def position_key(queue: str, group: str, generation: int, partition: int) -> bytes:
    return f"p/{queue}/{group}/{generation}/{partition}".encode()


def pointer_key(queue: str, group: str, generation: int) -> bytes:
    """A FIFO layout's claim pointer: the first LSN of its log no consumer has claimed."""
    return f"c/{queue}/{group}/{generation}".encode()


def claim_key(queue: str, group: str, generation: int, consumer: int, round_: int = 0) -> bytes:
    """A FIFO consumer's claim, of the group's ``round_`` (its reset count: a reset makes every
    claim of the rounds before it no one's, see :meth:`Queues.reset_group`)."""
    return claims_prefix(queue, group, generation, round_) + str(consumer).encode()


def claims_prefix(queue: str, group: str, generation: int, round_: int = 0) -> bytes:
    """The claims of a round (round 0 keeps the form of the claims made before resets had rounds;
    later rounds' numbers are fixed-width, so that they sort as numbers)."""
    if round_ == 0:
        return f"cl/{queue}/{group}/{generation}/".encode()
    return f"cl/{queue}/{group}/{generation}.{round_:016x}/".encode()


def claims_before(queue: str, group: str, generation: int, round_: int) -> list[tuple[bytes, bytes]]:
    """The key ranges ``[start, end)`` of every claim of a round before ``round_``."""
    if round_ == 0:
        return []
    zero = claims_prefix(queue, group, generation)
    later = f"cl/{queue}/{group}/{generation}.".encode()
    # Round 0's claims end where "/" would be "0" (the byte after it); later rounds' sort as numbers.
    return [(zero, zero[:-1] + b"0"), (later, claims_prefix(queue, group, generation, round_))]


def resets_key(queue: str, group: str) -> bytes:
    """How many times the group's positions were reset (see :meth:`Queues.reset_group`)."""
    return f"r/{queue}/{group}".encode()


def acknowledged_key(log_id: int) -> bytes:
    """The highest LSN of a queue partition's log whose entries (and every one before) a group
    acknowledged, as written before each trim of the log: a position a reset set below a trim
    that raced it starts above this instead of finding its entries gone (see
    :meth:`Queues.trim_acknowledged`)."""
    return f"e/{log_id}".encode()


def skipped_key(queue: str, group: str, consumer: int) -> bytes:
    return f"s/{queue}/{group}/{consumer}".encode()


_CHUNK = struct.Struct(">BQI")
_CHUNK_VERSION = 1
_POINTER_VERSION = 2
_REFS = struct.Struct(">QI")
POINTER_ENTRIES_MAX = 65_536
"""Entries of one pointer chunk (12 bytes each, and 8 per data chunk named: well within a record)."""
_POSITION = struct.Struct(">QI")
_CLAIM = struct.Struct(">QQI")
_LSN = struct.Struct(">Q")


def check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > NAME_CHARS_MAX:
        raise InvalidArgumentError(f"a {what} name is 1-{NAME_CHARS_MAX} letters, digits and ._- starting "
                                   f"with a letter or digit, got {name!r}")
    return name


class Strategy(Enum):
    FIFO = "FIFO"
    """Any free consumer claims the next entries."""
    ROUND_ROBIN = "ROUND_ROBIN"
    """Entries go to the consumers in turn, by entry id."""
    HASH = "HASH"
    """An entry goes to the consumer its named key's hash picks: one key, one consumer."""


@dataclass(frozen=True)
class Layout:
    """One generation of a group: its size, strategy and key, and the logs of its partitions (one
    per consumer; FIFO: one shared)."""

    generation: int
    size: int
    strategy: Strategy
    key: str | None
    logs: tuple[int, ...]

    def place(self, entries: list[tuple[int, bytes, Mapping[str, Any] | None]], turn: int) -> list[int]:
        """The partition of each ``(counter, payload, keys)`` entry (the producer's side).

        ROUND_ROBIN deals the entries in turn from consumer ``turn % size``: the producer passes
        where its previous send to the group stopped, so whatever the transactions' sizes and
        write pointers, the consumers' shares of what one producer sent differ by at most one.
        (Placing by entry id, ``(write pointer + counter) % size``, sent every single-entry
        transaction to consumer 0 when the size divided 10**6: write pointers are multiples of
        it.) Consumers never recompute a placement: it is not part of the stored format."""
        if self.strategy is Strategy.FIFO:
            return [0] * len(entries)
        if self.strategy is Strategy.ROUND_ROBIN:
            size = self.size
            return [(turn + i) % size for i in range(len(entries))]
        key, size = self.key, self.size
        try:
            return [_hashed(keys[key]) % size for _, _, keys in entries]  # type: ignore[index]
        except (KeyError, TypeError):
            raise MissingHashKeyError(f"an entry has no {key!r} key, which its HASH group partitions on") from None

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "size": self.size, "strategy": self.strategy.value,
                "key": self.key, "logs": list(self.logs)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Layout:
        return cls(int(data["generation"]), int(data["size"]), Strategy(data["strategy"]), data["key"],
                   tuple(int(x) for x in data["logs"]))


_HASHES: dict[tuple[type, object], int] = {}
_HASHES_MAX = 1 << 16


def _hashed(value: object) -> int:
    """:func:`hash_key`, remembered for the values seen most (keys repeat: users, pages)."""
    cache_key = (value.__class__, value)  # 1, 1.0 and True are equal, but only 1 is a valid key
    found = _HASHES.get(cache_key)
    if found is None:
        found = hash_key(value)
        if len(_HASHES) >= _HASHES_MAX:
            _HASHES.clear()
        _HASHES[cache_key] = found
    return found


def hash_key(value: object) -> int:
    if isinstance(value, bytes):
        raw = value
    elif isinstance(value, str):
        raw = value.encode()
    elif isinstance(value, int) and not isinstance(value, bool):
        raw = str(value).encode()
    else:
        raise InvalidArgumentError(f"a hash key's value is str, bytes or int, got {type(value).__name__}")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


@dataclass(frozen=True)
class GroupRecord:
    """A consumer group: its current layout, and the previous one while it is drained."""

    name: str
    current: Layout
    previous: Layout | None = None
    resized_ms: int = 0

    def encode(self) -> bytes:
        return json.dumps({"name": self.name, "current": self.current.to_json(),
                           "previous": None if self.previous is None else self.previous.to_json(),
                           "resized_ms": self.resized_ms}).encode()

    @classmethod
    def decode(cls, raw: bytes) -> GroupRecord:
        try:
            data = json.loads(raw)
            return cls(data["name"], Layout.from_json(data["current"]),
                       None if data["previous"] is None else Layout.from_json(data["previous"]),
                       int(data["resized_ms"]))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise CorruptionError(f"a consumer group record does not decode: {exc!r:.200}") from None


class Position(NamedTuple):
    """Where a consumer reads next in its partition: the chunk's LSN and the index of the entry in
    it."""

    lsn: int
    entry: int

    def __repr__(self) -> str:  # LSNs as everything else prints them: e<epoch>n<esn>
        return f"Position(lsn={lsn_str(self.lsn)}, entry={self.entry})"

    def encode(self) -> bytes:
        return _POSITION.pack(self.lsn, self.entry)

    @classmethod
    def decode(cls, raw: bytes) -> Position:
        try:
            lsn, entry = _POSITION.unpack(raw)
        except struct.error:
            raise CorruptionError(f"a queue position does not decode: {raw!r:.40}") from None
        return cls(lsn, entry)


class Claim(NamedTuple):
    """A FIFO consumer's claimed range of its layout's log, up to ``last_lsn``, and how far it got."""

    last_lsn: int
    position: Position

    def encode(self) -> bytes:
        return _CLAIM.pack(self.last_lsn, *self.position)

    @classmethod
    def decode(cls, raw: bytes) -> Claim:
        try:
            last, lsn, entry = _CLAIM.unpack(raw)
        except struct.error:
            raise CorruptionError(f"a queue claim does not decode: {raw!r:.40}") from None
        return cls(last, Position(lsn, entry))


def decode_lsn(raw: bytes) -> int:
    try:
        return int(_LSN.unpack(raw)[0])
    except struct.error:
        raise CorruptionError(f"a queue claim pointer does not decode: {raw!r:.40}") from None


def encode_lsn(lsn: int) -> bytes:
    return _LSN.pack(lsn)


@dataclass
class Chunk:
    write_pointer: int
    counters: list[int] = field(default_factory=list)
    payloads: list[bytes] = field(default_factory=list)
    nbytes: int = 0

    def add(self, counter: int, payload: bytes) -> None:
        self.counters.append(counter)
        self.payloads.append(payload)
        self.nbytes += len(payload) + 8

    def encode(self) -> bytes:
        count = len(self.payloads)
        return b"".join((_CHUNK.pack(_CHUNK_VERSION, self.write_pointer, count),
                         struct.pack(f">{count}I", *self.counters),
                         struct.pack(f">{count}I", *map(len, self.payloads)), *self.payloads))


def chunk_overhead(count: int) -> int:
    return _CHUNK.size + 8 * count


def chunk_write_pointer(raw: bytes) -> int:
    try:
        return int(_CHUNK.unpack_from(raw)[1])
    except struct.error:
        raise CorruptionError("a queue chunk does not decode: too short") from None


def chunk_count(raw: bytes) -> int:
    try:
        return int(_CHUNK.unpack_from(raw)[2])
    except struct.error:
        raise CorruptionError("a queue chunk does not decode: too short") from None


class DataRef(NamedTuple):
    """Where a pointer chunk's payloads are: data chunks ``lsns`` of ``data_log``, and for each
    entry the one holding it (``refs``, an index into ``lsns``) and its index among its entries."""

    data_log: int
    lsns: list[int]
    refs: list[int]
    indexes: list[int]


def encode_pointer(write_pointer: int, counters: list[int], ref: DataRef) -> bytes:
    """A version 2 chunk: entries ``counters`` of a transaction, whose payloads are where ``ref`` says."""
    count = len(counters)
    return b"".join((_CHUNK.pack(_POINTER_VERSION, write_pointer, count), struct.pack(f">{count}I", *counters),
                     _REFS.pack(ref.data_log, len(ref.lsns)), struct.pack(f">{len(ref.lsns)}Q", *ref.lsns),
                     struct.pack(f">{count}I", *ref.refs), struct.pack(f">{count}I", *ref.indexes)))


def pointer_data_lsn(raw: bytes) -> int | None:
    """The lowest LSN of the data chunks a pointer chunk names (None for a chunk of version 1),
    read without decoding its entries."""
    if raw[:1] != b"\x02":
        return None
    try:
        count = int(_CHUNK.unpack_from(raw)[2])
        at = _CHUNK.size + 4 * count
        refs = int(_REFS.unpack_from(raw, at)[1])
        lsns = struct.unpack_from(f">{refs}Q", raw, at + _REFS.size)
    except struct.error:
        raise CorruptionError("a queue pointer chunk does not decode: too short") from None
    return min(lsns) if lsns else None


def decode_record(raw: bytes) -> tuple[int, list[int], list[bytes] | None, DataRef | None]:
    """A partition log's chunk of either version: its write pointer, counters, and its payloads
    (version 1) or where they are (version 2); :class:`CorruptionError` if it is neither."""
    if raw[:1] != b"\x02":
        return (*decode_chunk(raw), None)
    try:
        _, write_pointer, count = _CHUNK.unpack_from(raw)
        counters = list(struct.unpack_from(f">{count}I", raw, _CHUNK.size))
        at = _CHUNK.size + 4 * count
        data_log, nrefs = _REFS.unpack_from(raw, at)
        at += _REFS.size
        lsns = list(struct.unpack_from(f">{nrefs}Q", raw, at))
        at += 8 * nrefs
        values = struct.unpack_from(f">{2 * count}I", raw, at)
        refs, indexes = list(values[:count]), list(values[count:])
        if at + 8 * count != len(raw):
            raise ValueError(f"{len(raw)} bytes, entries end at {at + 8 * count}")
        if count and max(refs) >= nrefs:
            raise ValueError(f"an entry names data chunk {max(refs)} of {nrefs}")
    except (struct.error, ValueError) as exc:
        raise CorruptionError(f"a queue pointer chunk does not decode: {exc}") from None
    return write_pointer, counters, None, DataRef(data_log, lsns, refs, indexes)


def decode_chunk(raw: bytes) -> tuple[int, list[int], list[bytes]]:
    """A version 1 chunk's write pointer, counters and payloads; :class:`CorruptionError` if it is
    not one."""
    try:
        version, write_pointer, count = _CHUNK.unpack_from(raw)
        if version != _CHUNK_VERSION:
            raise ValueError(f"version {version}")
        values = struct.unpack_from(f">{2 * count}I", raw, _CHUNK.size)
        counters, lengths = list(values[:count]), values[count:]
        offset = _CHUNK.size + 8 * count
        payloads = []
        for length in lengths:
            payloads.append(raw[offset:offset + length])
            offset += length
        if offset != len(raw):
            raise ValueError(f"{len(raw)} bytes, entries end at {offset}")
    except (struct.error, ValueError) as exc:
        raise CorruptionError(f"a queue chunk does not decode: {exc}") from None
    return write_pointer, counters, payloads


def reset_state_of(found: Versioned | None, group: str) -> tuple[int, int, int | None]:
    """The group's reset count as stored under :func:`resets_key` (``found``: None when never reset),
    its version, and the transaction of a FIFO reset that marked it (None: none); see
    :meth:`Queues.reset_state`."""
    if found is None:
        return 0, 0, None
    count, _, pending = found.value.decode(errors="replace").partition(":")
    try:
        return int(count), found.version, int(pending) if pending else None
    except ValueError:
        raise CorruptionError(f"group {group!r}'s reset count does not decode: {found.value!r:.40}") from None
