"""A stream's controller metadata, in PDP-32's layout, kept in the log layer's metadata store.

Every record is a key of the ``streams`` namespace under ``s/<scope>/<stream>/``:

=====================================  =================================================================
``conf``                               configuration record: config, state, creation time, log-name uid
``gen/<generation>``                   one record per stream generation: its segments and their ranges
``cur``                                the current generation (a copy of its record), next segment number
``hist/<chunk>/<generation>``          the scale history: one delta per generation, in chunks of 1,000
                                       keys (a full chunk never changes; a chunk is read by one scan)
``troot``, ``tleaf/<chunk>``           the time index: the start time of each chunk (root), and of each
                                       generation of a chunk (leaf), packed 8-byte big-endian integers
``sealed/<segment>``                   the generation that sealed the segment (for successor queries)
``sizes/<shard>``                      sealed segments' sizes and final LSNs, sharded by segment number
                                       (1,000 each): 16 bytes a segment at ``number % 1000``
``sealedsum/<generation>``             bytes of all segments sealed up to that generation
``trunc``                              the truncation record: the stream's head and what is left to delete
``retention``, ``cut/<time>``          the retention set (time and size of each recorded cut) and the
                                       stream cut records it points at
``trans``                              the transient scale-transition record
=====================================  =================================================================

A stream being created has a record ``new/<scope>/<stream>`` until its records are written (see
``StreamController.create_stream``).

Numbers in keys are fixed-width hex, so that byte order is numeric order. Each query costs a
constant number of store reads (gets or one-call scans), however long the history; a query over
stream cuts, a number bounded by its cuts' segments, not by the generations between them: see
each method. The class only reads and builds batches; :mod:`seaway.streams._controller` runs the
changes.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from seaway._invariant import invariant
from seaway.errors import (
    CorruptionError,
    InvalidArgumentError,
    InvalidStreamCutError,
    SeawayError,
    UnknownStreamError,
)
from seaway.log import MetaApi, MetaBatch, Versioned
from seaway.streams._config import StreamConfig
from seaway.streams._names import SEGMENT_NUMBER_MAX, generation_of, number_of, segment_str
from seaway.streams._records import SEGMENT_STRUCT, Delta, Generation, Segment

NAMESPACE = "streams"
CHUNK_GENERATIONS = 1_000
"""Deltas per history chunk, and generations per time-index leaf."""
SIZE_SHARD_SEGMENTS = 1_000
"""Segment numbers per shard of sealed sizes."""
SEALED_LOOKUPS_MAX = 64
"""Segments whose sealed-generation records a cut query reads to find where the deltas it needs
begin; past it, it begins after the oldest one's creation (one scan reads 10,000 deltas)."""
NEAR_GENERATIONS = 64
"""Cuts whose segments were made at most this many generations apart are read as a span (the
oldest generation's record and one scan of the deltas after it), cheaper than a read for each
generation that made one or a lookup of where each was sealed; farther apart, a cut query reads
those, as many as the cut's segments whatever the generations between."""
RETENTION_CUTS_MAX = 20_000
"""Stream cuts the retention set keeps. Past it, cuts are thinned as they age (see
:func:`thinned_cut`), so that the set reaches back as far as the stream does, however long a
retention window is, with its gaps in proportion to their age."""


def stream_prefix(scope: str, stream: str) -> bytes:
    return f"s/{scope}/{stream}/".encode()


def scope_key(scope: str) -> bytes:
    return f"scope/{scope}".encode()


def creating_key(scope: str, stream: str) -> bytes:
    """The record of a stream creation under way (see ``StreamController.create_stream``); with
    empty names, the prefix of all of them."""
    return f"new/{scope}/{stream}".encode() if scope else b"new/"


def index_key(scope: str, stream: str) -> bytes:
    """The stream's entry in its scope's list of streams."""
    return f"idx/{scope}/{stream}".encode()


def thinned_cut(times: Sequence[int], now_ms: int) -> int:
    """The index of the recorded cut to drop from a full retention set (times ascending): the one
    whose removal leaves the smallest gap for its age, ``(next - previous) / (now - its time)``.
    The oldest and the newest stay. Repeated as cuts are added, this keeps the gaps about in
    proportion to age: ``N`` cuts cover ages from ``a`` to ``T`` with a gap of about
    ``ln(T / a) / N`` of each cut's age (20,000 cuts a minute apart over a year: 0.07%, 28 minutes
    at 30 days), so a window of any length finds a cut near its edge."""
    invariant(len(times) >= 3, "a retention set to thin holds three cuts or more")
    best, best_score = 1, math.inf
    for i in range(1, len(times) - 1):
        score = (times[i + 1] - times[i - 1]) / max(1, now_ms - times[i])
        if score < best_score:
            best, best_score = i, score
    return best


def _pack_times(times: Sequence[int]) -> bytes:
    return struct.pack(f">{len(times)}q", *times)


def _unpack_times(raw: bytes) -> list[int]:
    return list(struct.unpack(f">{len(raw) // 8}q", raw))


_TIME = struct.Struct(">q")
_SIZE_SLOT = struct.Struct(">QQ")
"""A sealed segment's slot in its size shard: its size in bytes and its final LSN (zeros: none)."""


def _count_at_or_before(packed: bytes, time_ms: int) -> int:
    """How many of the packed, ascending times are at or before ``time_ms``: a binary search over
    the bytes, unpacking only the entries it probes (a leaf holds 1,000)."""
    lo, hi = 0, len(packed) // _TIME.size
    while lo < hi:
        mid = (lo + hi) // 2
        if _TIME.unpack_from(packed, mid * _TIME.size)[0] <= time_ms:
            lo = mid + 1
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class Span:
    """A generation's record and the deltas after it, up to some generation."""

    first: Generation
    deltas: list[Delta]

    @functools.cached_property
    def records(self) -> dict[int, Segment]:
        """Every segment of the first generation or made after it, by id (built once: the cut
        checks and the cut queries after them both need it)."""
        found = {s.id: s for s in self.first.segments}
        for delta in self.deltas:
            found.update((s.id, s) for s in delta.created)
        return found


@dataclass(frozen=True)
class StreamState:
    """The configuration record."""

    config: StreamConfig
    state: str
    """``active``, ``sealed`` or ``deleting``."""
    created_ms: int
    uid: str
    """Part of the names of the stream's segment logs, so that a stream created again under the same
    name never meets the logs of the one before."""

    def encode(self) -> bytes:
        return json.dumps({"config": self.config.to_json(), "state": self.state, "created_ms": self.created_ms,
                           "uid": self.uid}, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> StreamState:
        data = json.loads(raw)
        return cls(StreamConfig.from_json(data["config"]), data["state"], data["created_ms"], data["uid"])


_TRUNCATION_FORMAT = 2
"""The first byte of a packed truncation record (a JSON one, from before, begins with ``{``)."""
_TRUNCATION_HEAD = struct.Struct(">BQQ?I")
"""Format, size, sequence number, whether work is pending, how many segments the cut has; then each
of the cut's segments (:data:`SEGMENT_STRUCT`) with its LSN (8 bytes)."""
_PENDING = struct.Struct(">QQ")
"""A step left to a truncation: a log id and the LSN to trim it up to (0: delete the log)."""
PENDING_CHUNK_STEPS = 50_000
"""Steps per record of a truncation's pending work (800 KB, under the store's 1 MiB a value)."""


@dataclass(frozen=True)
class Truncation:
    """The stream's head: every event below ``cut`` (each segment with the LSN it starts at) is
    gone; segments wholly below it are deleted. The work a truncation under way has still to do to
    the logs is not in this record, whose size would grow with it, but in records of up to
    ``PENDING_CHUNK_STEPS`` steps each under ``tpend/<sequence>/``."""

    cut: tuple[tuple[Segment, int], ...]
    size: int = 0
    """Bytes below the head (of whole segments), as :meth:`StreamMetadata.size_until` counts."""
    sequence: int = 0
    """This stream's truncations so far: the key of this one's pending work."""
    pending: bool = False
    """Whether pending work (log deletions and trims) remains."""
    legacy_steps: tuple[tuple[int, int], ...] = ()
    """Pending work held in the record itself, by the format before this one (never written)."""

    @property
    def positions(self) -> dict[int, int]:
        return {s.id: lsn for s, lsn in self.cut}

    def below(self, segment: Segment) -> bool:
        """Whether the segment is wholly below the head."""
        return wholly_before(segment, [s for s, _ in self.cut])

    def encode(self) -> bytes:
        invariant(not self.legacy_steps, "pending work is written in its own records")
        parts = [_TRUNCATION_HEAD.pack(_TRUNCATION_FORMAT, self.size, self.sequence, self.pending, len(self.cut))]
        parts.extend(SEGMENT_STRUCT.pack(s.number, s.generation, s.created_ms, s.key_lo, s.key_hi, s.log_id)
                     + lsn.to_bytes(8, "big") for s, lsn in self.cut)
        return b"".join(parts)

    @classmethod
    def decode(cls, raw: bytes) -> Truncation:
        if raw[:1] == b"{":
            data = json.loads(raw)
            steps = tuple((log_id, 0) for log_id in data["delete"]) + tuple((a, b) for a, b in data["trim"])
            return cls(tuple((Segment.from_json(s), lsn) for s, lsn in data["cut"]), data["size"], 0, bool(steps),
                       steps)
        fmt, size, sequence, pending, count = _TRUNCATION_HEAD.unpack_from(raw)
        if fmt != _TRUNCATION_FORMAT:
            raise ValueError(f"not a truncation record: format {fmt}")
        step = SEGMENT_STRUCT.size + 8
        if len(raw) != _TRUNCATION_HEAD.size + step * count:
            raise ValueError(f"a truncation record of {len(raw)} bytes for {count} segments")
        cut = []
        for at in range(_TRUNCATION_HEAD.size, len(raw), step):
            cut.append((Segment(*SEGMENT_STRUCT.unpack_from(raw, at)),
                        int.from_bytes(raw[at + SEGMENT_STRUCT.size:at + step], "big")))
        return cls(tuple(cut), size, sequence, pending)


def pack_steps(steps: Sequence[tuple[int, int]]) -> list[bytes]:
    """A truncation's pending work as records of at most ``PENDING_CHUNK_STEPS`` steps: (log id,
    LSN to trim up to, or 0 to delete the log)."""
    return [b"".join(_PENDING.pack(*p) for p in steps[i:i + PENDING_CHUNK_STEPS])
            for i in range(0, len(steps), PENDING_CHUNK_STEPS)]


def unpack_steps(raw: bytes) -> list[tuple[int, int]]:
    if len(raw) % _PENDING.size:
        raise ValueError(f"a record of pending steps of {len(raw)} bytes")
    return [(int(a), int(b)) for a, b in _PENDING.iter_unpack(raw)]


class StreamMetadata:
    """Reads of one stream's records, and the batches that change them. Thread-safe (stateless
    over the store)."""

    def __init__(self, meta: MetaApi, scope: str, stream: str) -> None:
        self.meta = meta
        self.scope = scope
        self.stream = stream
        self.name = f"{scope}/{stream}"
        self._prefix = stream_prefix(scope, stream)

    def key(self, suffix: str) -> bytes:
        return self._prefix + suffix.encode()

    @staticmethod
    def gen_key(generation: int) -> str:
        return f"gen/{generation:08x}"

    @staticmethod
    def hist_key(generation: int) -> str:
        return f"hist/{generation // CHUNK_GENERATIONS:06x}/{generation:08x}"

    @staticmethod
    def leaf_key(chunk: int) -> str:
        return f"tleaf/{chunk:06x}"

    @staticmethod
    def shard_key(segment: int) -> str:
        return f"sizes/{number_of(segment) // SIZE_SHARD_SEGMENTS:06x}"

    def _get(self, suffix: str) -> Versioned | None:
        return self.meta.get(NAMESPACE, self.key(suffix))

    def _need(self, suffix: str) -> Versioned:
        found = self._get(suffix)
        if found is None:
            raise UnknownStreamError(f"stream {self.name!r} does not exist")
        return found

    # --- reads: each a constant number of store reads ------------------------------------------

    def state(self) -> tuple[StreamState, int]:
        """The configuration record and its version (1 read)."""
        found = self._need("conf")
        return StreamState.decode(found.value), found.version

    def current(self) -> tuple[Generation, int, int]:
        """The current generation, the next segment number, and the record's version (1 read)."""
        found = self._need("cur")
        data = json.loads(found.value)
        return Generation.decode(json.dumps(data["gen"]).encode()), data["next"], found.version

    def generation(self, generation: int) -> Generation:
        """A generation's record (1 read)."""
        found = self._get(self.gen_key(generation))
        if found is None:
            raise InvalidArgumentError(f"stream {self.name!r} has no generation {generation}")
        return Generation.decode(found.value)

    def generation_at(self, time_ms: int) -> int:
        """The generation current at ``time_ms`` (the first, for a time before it): a binary search
        of the time index's root, then of one leaf (2 reads)."""
        chunk = max(0, _count_at_or_before(self._need("troot").value, time_ms) - 1)
        leaf = self._get(self.leaf_key(chunk))
        at = _count_at_or_before(leaf.value, time_ms) if leaf is not None else 0
        return chunk * CHUNK_GENERATIONS + max(0, at - 1)

    def truncation(self) -> Truncation | None:
        return self.truncation_versioned()[0]

    def truncation_versioned(self) -> tuple[Truncation | None, int]:
        """The truncation record and its version (0: none yet), for a change conditional on it."""
        found = self._get("trunc")
        return (None, 0) if found is None else (Truncation.decode(found.value), found.version)

    @staticmethod
    def pending_key(sequence: int, chunk: int | None = None) -> str:
        """A truncation's records of pending work (with no chunk: their prefix)."""
        return f"tpend/{sequence:08x}/" + ("" if chunk is None else f"{chunk:06x}")

    def pending_chunk(self, sequence: int) -> tuple[bytes, list[tuple[int, int]]] | None:
        """The first record left of truncation ``sequence``'s pending work: its key and steps
        (1 scan of 1 row), or None when none is left."""
        rows = self.meta.scan(NAMESPACE, prefix=self.key(self.pending_key(sequence)), limit=1)
        return None if not rows else (rows[0][0], unpack_steps(rows[0][1].value))

    def truncation_batch(self, batch: MetaBatch, record: Truncation, steps: Sequence[tuple[int, int]]) -> MetaBatch:
        """Write the truncation record and its pending work (``steps``), in as many records as
        keep each under the store's value limit."""
        for chunk, packed in enumerate(pack_steps(steps)):
            batch.put(NAMESPACE, self.key(self.pending_key(record.sequence, chunk)), packed)
        return batch.put(NAMESPACE, self.key("trunc"), record.encode())

    def segments_at(self, time_ms: int) -> list[Segment]:
        """The segments of the generation current at ``time_ms``, less those wholly truncated since
        (4 reads: the time index's root and leaf, the generation, the truncation record)."""
        segments = list(self.generation(self.generation_at(time_ms)).segments)
        truncation = self.truncation()
        return segments if truncation is None else [s for s in segments if not truncation.below(s)]

    def sealed_at(self, segment: int) -> int | None:
        """The generation that sealed ``segment``, or None while it is active (1 read)."""
        found = self._get(f"sealed/{segment:016x}")
        return None if found is None else int.from_bytes(found.value, "big")

    def successors(self, segment: int) -> dict[Segment, list[int]]:
        """The segments that replaced ``segment``, each with all of its predecessors (3 reads: the
        sealing generation, its record, and the record of the generation before). Empty while the
        segment is active."""
        sealed = self.sealed_at(segment)
        if sealed is None:
            self._segment_record(segment)  # unknown segments are an error, not "no successors"
            return {}
        after, before = self.generation(sealed), self.generation(sealed - 1)
        this = before.find(segment)
        if this is None:
            raise InvalidArgumentError(f"segment {segment_str(segment)} is not in generation {sealed - 1}")
        result: dict[Segment, list[int]] = {}
        for successor in after.segments:
            if successor.generation == sealed and successor.overlaps(this):
                result[successor] = [p.id for p in before.segments
                                     if p.overlaps(successor) and after.find(p.id) is None]
        return result

    def predecessors(self, segment: int) -> list[Segment]:
        """The segments ``segment`` replaced (2 reads); empty for the first generation's."""
        created = generation_of(segment)
        if created == 0:
            self._segment_record(segment)
            return []
        now, before = self.generation(created), self.generation(created - 1)
        this = now.find(segment)
        if this is None:
            raise InvalidArgumentError(f"stream {self.name!r} has no segment {segment_str(segment)}")
        return [p for p in before.segments if p.overlaps(this) and now.find(p.id) is None]

    def _segment_record(self, segment: int) -> Segment:
        """The record of a segment (1 read: the generation that created it)."""
        found = self._get(self.gen_key(generation_of(segment)))
        this = None if found is None else Generation.decode(found.value).find(segment)
        if this is None:
            raise InvalidArgumentError(f"stream {self.name!r} has no segment {segment_str(segment)}")
        return this

    def deltas(self, after: int, until: int) -> list[Delta]:
        """The deltas of generations in ``(after, until]``, in order: one scan per 10,000 (a constant
        number for a span of a few chunks, as a stream cut spans)."""
        result: list[Delta] = []
        if until <= after:
            return result
        start = self.key(self.hist_key(after + 1))
        end = self.key(self.hist_key(until)) + b"\x00"
        while True:
            rows = self.meta.scan(NAMESPACE, start=start, end=end, limit=10_000)
            result.extend(Delta.decode(v.value) for _, v in rows)
            if len(rows) < 10_000:
                return result
            start = rows[-1][0] + b"\x00"

    def sealed_ends(self, segments: Iterable[int]) -> dict[int, tuple[int, int]]:
        """The recorded size and final LSN of sealed segments (1 read per shard touched)."""
        by_shard: dict[int, list[int]] = {}
        for segment in segments:
            by_shard.setdefault((segment & SEGMENT_NUMBER_MAX) // SIZE_SHARD_SEGMENTS, []).append(segment)
        sizes: dict[int, tuple[int, int]] = {}
        slot = _SIZE_SLOT.size
        for shard, members in by_shard.items():
            found = self._get(f"sizes/{shard:06x}")
            raw = b"" if found is None else found.value
            for segment in members:
                offset = slot * ((segment & SEGMENT_NUMBER_MAX) % SIZE_SHARD_SEGMENTS)
                if offset + _SIZE_SLOT.size <= len(raw):
                    size, final = _SIZE_SLOT.unpack_from(raw, offset)
                    if size or final:  # a slot never written is zeros
                        sizes[segment] = (size, final)
        return sizes

    def sealed_sum(self, generation: int) -> int:
        """Bytes of all segments sealed up to ``generation`` (1 read)."""
        found = self._sealed_sum(generation)
        return 0 if found is None else found

    def _sealed_sum(self, generation: int) -> int | None:
        """:meth:`sealed_sum`, or None if the generation has no running total (the first has
        none; a later one gets it when its scaling records the sizes of what it sealed)."""
        found = self._get(f"sealedsum/{generation:08x}")
        return None if found is None else int.from_bytes(found.value, "big")

    def transition(self) -> tuple[Delta, int] | None:
        """The scaling under way (its delta; created segments carry their logs once made), and the
        record's version (1 read)."""
        found = self._get("trans")
        return None if found is None else (Delta.decode(found.value), found.version)

    def retention_set(self) -> list[tuple[int, int]]:
        """(time_ms, size) of each recorded stream cut, oldest first (1 read)."""
        found = self._get("retention")
        return [] if found is None else [(int(t), int(n)) for t, n in json.loads(found.value)]

    def recorded_cut(self, time_ms: int) -> tuple[int, dict[int, int]]:
        """The size and positions of the stream cut recorded at ``time_ms`` (1 read)."""
        found = self._get(f"cut/{time_ms:016x}")
        if found is None:
            raise InvalidArgumentError(f"stream {self.name!r} has no stream cut recorded at {time_ms}")
        data = json.loads(found.value)
        return data["size"], {int(k): v for k, v in data["positions"].items()}

    def segment_records(self, segments: Iterable[int]) -> dict[int, Segment]:
        """The records of ``segments`` (1 read per distinct generation that created them); those
        the stream never had are left out."""
        by_generation: dict[int, list[int]] = {}
        for segment in segments:
            by_generation.setdefault(generation_of(segment), []).append(segment)
        records: dict[int, Segment] = {}
        for generation, members in by_generation.items():
            found = self._get(self.gen_key(generation))
            if found is None:
                continue
            record = Generation.decode(found.value)
            for segment in members:
                if (this := record.find(segment)) is not None and this.generation == generation:
                    records[segment] = this
        return records

    def cut_records(self, segments: Iterable[int]) -> dict[int, Segment]:
        """The records of a cut's segments; those the stream never had are left out. The record of
        the generation that created the newest (1 read) holds every one still current then, as in
        a cut of one whole generation (the recorded cuts, the tail, a head), or a checkpoint
        lagging on a segment that has not scaled; each other one costs 1 read per distinct
        generation that created them (:meth:`segment_records`). However many generations lie
        between them (cuts made over at most ``NEAR_GENERATIONS`` are read as a :meth:`span`):
        :class:`InvalidArgumentError` if the stream has no such newest generation."""
        wanted = set(segments)
        if not wanted:
            return {}
        generations = [generation_of(s) for s in wanted]
        if max(generations) - min(generations) <= NEAR_GENERATIONS:
            records = self.span(wanted).records
            return {s: records[s] for s in wanted if s in records}
        newest = self.generation(max(generations))
        found = {s.id: s for s in newest.segments if s.id in wanted}
        found.update(self.segment_records(wanted - found.keys()))
        return found

    def span(self, segments: Iterable[int]) -> Span:
        """Records that hold those of ``segments`` (all of them, for segments of the stream), and
        of every segment made between the oldest and the newest of them: 1 read when the
        generation that created the newest holds them all, else 2 reads and a scan of every delta
        between (at most ``NEAR_GENERATIONS``, or while a scaling's sizes are not recorded yet)."""
        wanted = set(segments)
        generations = [generation_of(s) for s in wanted]
        low, high = min(generations), max(generations)
        if low < high:
            newest = self.generation(high)
            if wanted <= {s.id for s in newest.segments}:
                return Span(newest, [])
        return self.full_span(low, high)

    def full_span(self, low: int, high: int) -> Span:
        """Generation ``low``'s record and the deltas after it up to ``high`` (1 read and one scan
        per 10,000 generations)."""
        return Span(self.generation(low), self.deltas(low, high))

    def _first_sealed(self, segments: Sequence[Segment], until: int) -> int:
        """A generation at or before the first one that sealed any of ``segments`` (all sealed):
        their sealed-generation records (1 read each) when they are at most
        ``SEALED_LOOKUPS_MAX`` and ``until``, the last generation wanted, is more than
        ``NEAR_GENERATIONS`` after the oldest one's creation; else the one after that."""
        oldest = min(s.generation for s in segments)
        if until - oldest > NEAR_GENERATIONS and len(segments) <= SEALED_LOOKUPS_MAX:
            found = [self.sealed_at(s.id) for s in segments]
            if all(g is not None for g in found):
                return min(g for g in found if g is not None)
        return oldest + 1

    def segments_between(self, lower: Sequence[Segment], upper: Sequence[Segment]) -> list[Segment]:
        """Every segment with events between two consistent cuts (given as their segments' records,
        ``lower`` not after ``upper``): those of both cuts and those created in between over their
        ranges. Over a part of the key space, the segments between were created after the lower
        cut's segment there was sealed and no later than the upper cut's: so the deltas read are
        those after the first sealing of a segment of ``lower`` not in ``upper`` (see
        :meth:`_first_sealed`), up to the newest segment of ``upper`` not in ``lower``. Reads:
        those deltas (one scan per 10,000), as many as the generations in which the parts that
        moved were scaled, not the generations between the cuts' oldest and newest segments (a
        cut lagging on a segment that has not scaled for a year costs nothing for that year)."""
        lower_ids, upper_ids = {s.id for s in lower}, {s.id for s in upper}
        moved = [s for s in lower if s.id not in upper_ids]
        new = [s for s in upper if s.id not in lower_ids]
        candidates = {s.id: s for s in (*lower, *upper)}
        if moved and new:
            until = max(s.generation for s in new)
            after = self._first_sealed(moved, until) - 1
            if after < until:
                for delta in self.deltas(after, until):
                    candidates.update((s.id, s) for s in delta.created)
        return sorted((s for s in candidates.values()
                       if not wholly_before(s, lower) and not wholly_after(s, upper)),
                      key=lambda s: (s.generation, s.key_lo))

    def size_until(self, cut: Sequence[tuple[Segment, int]]) -> int:
        """Bytes of the segments wholly before a consistent cut, from the stream's first event
        (truncated ones included): counted in whole segments, as Kafka's ``retention.bytes`` counts
        whole segment files; a cut's own segment counts once the cut is past its end.

        With ``H`` the generation that created the cut's newest segment: every segment sealed up
        to ``H`` is wholly before the cut except the cut's own sealed ones and those made after
        them over their ranges, which are the segments between the cut and generation ``H``'s
        segments that are not current in ``H``. So: the running total at ``H`` (1 read),
        ``H``'s record (1 read), less the sizes of those, plus the cut's own segments it is past
        the end of (the size shards they touch, and :meth:`segments_between`'s reads, none when
        the cut's segments are all current in ``H``: a whole generation's cut, or one lagging on
        a segment that has not scaled since)."""
        segments = [s for s, _ in cut]
        high = max(s.generation for s in segments)
        total = self._sealed_sum(high)
        if total is None and high > 0:
            # No running total yet at H: its scaling has not recorded the sizes of what it sealed.
            return self._size_walking(cut)
        newest = self.generation(high)
        current = {s.id for s in newest.segments}
        after = [] if all(s.id in current for s in segments) else [
            s for s in self.segments_between(segments, newest.segments) if s.id not in current]
        recorded = self.sealed_ends({*(s.id for s in after), *(s.id for s in segments)})
        total = (total or 0) - sum(recorded[s.id][0] for s in after if s.id in recorded)
        total += sum(recorded[s.id][0] for s, lsn in cut if s.id in recorded and lsn > recorded[s.id][1])
        return total

    def _size_walking(self, cut: Sequence[tuple[Segment, int]]) -> int:
        """:meth:`size_until` from the running total at the cut's oldest generation and every
        delta after it up to its newest (while a scaling's sizes are not recorded yet)."""
        segments = [s for s, _ in cut]
        span = self.span(s.id for s in segments)
        total = self._sealed_sum(span.first.generation)
        if total is None:
            # No running total yet at the span's first generation: its scaling has not recorded the
            # sizes of what it sealed (or the generation is the first). A span that begins after
            # the cut's oldest generation (a whole generation's cut) relied on that total: walk
            # from the oldest instead, whose total counts what was recorded.
            oldest = min(s.generation for s in segments)
            if oldest < span.first.generation:
                span = self.full_span(oldest, span.first.generation)
                total = self._sealed_sum(oldest)
            total = total or 0
        ranges = span.records
        sealed_after = [(segment, delta.generation) for delta in span.deltas for segment in delta.sealed]
        in_cut = {s.id for s in segments}
        ordered = sorted(segments, key=lambda s: s.key_lo)  # a consistent cut: in key order, no overlap
        starts = [s.key_lo for s in ordered]

        def over(segment: Segment) -> list[Segment]:
            """The cut's segments over this one's range (a binary search, not a walk of the cut)."""
            return ordered[max(0, bisect.bisect_right(starts, segment.key_lo) - 1):
                           bisect.bisect_left(starts, segment.key_hi)]

        before = [segment for segment, sealed in sealed_after if segment not in in_cut
                  and all(c.generation >= sealed for c in over(ranges[segment]))]
        recorded = self.sealed_ends([*before, *in_cut])
        total += sum(recorded[s][0] for s in before if s in recorded)
        total += sum(recorded[s.id][0] for s, lsn in cut if s.id in recorded and lsn > recorded[s.id][1])
        return total

    # --- batches --------------------------------------------------------------------------------

    def create_batch(self, batch: MetaBatch, state: StreamState, first: Generation) -> MetaBatch:
        """Create the stream's records, if it has none."""
        batch.expect_absent(NAMESPACE, index_key(self.scope, self.stream))
        batch.expect_absent(NAMESPACE, self.key("conf"))
        batch.put(NAMESPACE, index_key(self.scope, self.stream), b"")
        batch.put(NAMESPACE, self.key("conf"), state.encode())
        batch.put(NAMESPACE, self.key(self.gen_key(0)), first.encode())
        batch.put(NAMESPACE, self.key("cur"), _current_value(first, len(first.segments)))
        batch.put(NAMESPACE, self.key("troot"), _pack_times([first.created_ms]))
        batch.put(NAMESPACE, self.key(self.leaf_key(0)), _pack_times([first.created_ms]))
        return batch

    def new_generation_batch(self, batch: MetaBatch, current: Generation, current_version: int, next_number: int,
                             delta: Delta, transition_version: int) -> tuple[MetaBatch, Generation]:
        """Step 3 of a scaling: the new generation's records, the delta, the time index, and the
        sealed-generation record of each sealed segment; only if the current generation is still
        the one the transition was made from and the transition is unchanged."""
        g = delta.generation
        invariant(current.generation + 1 == g, "a scaling makes the generation after the current one")
        invariant(all(s.log_id for s in delta.created), "a scaling's logs exist before its generation")
        sealed = set(delta.sealed)
        kept = [s for s in current.segments if s.id not in sealed]
        new = Generation(g, delta.time_ms, tuple(sorted(kept + list(delta.created), key=lambda s: s.key_lo)))
        batch.expect_version(NAMESPACE, self.key("cur"), current_version)
        batch.expect_version(NAMESPACE, self.key("trans"), transition_version)
        batch.put(NAMESPACE, self.key(self.gen_key(g)), new.encode())
        batch.put(NAMESPACE, self.key("cur"), _current_value(new, next_number))
        batch.put(NAMESPACE, self.key(self.hist_key(g)), delta.encode())
        for segment in delta.sealed:
            batch.put(NAMESPACE, self.key(f"sealed/{segment:016x}"), g.to_bytes(8, "big"))
        chunk = g // CHUNK_GENERATIONS
        leaf = self._get(self.leaf_key(chunk))
        times = _unpack_times(leaf.value) if leaf is not None else []
        del times[g % CHUNK_GENERATIONS:]  # a re-run of this step writes the same leaf
        batch.put(NAMESPACE, self.key(self.leaf_key(chunk)), _pack_times([*times, delta.time_ms]))
        if g % CHUNK_GENERATIONS == 0:
            root = _unpack_times(self._need("troot").value)[:chunk]
            batch.put(NAMESPACE, self.key("troot"), _pack_times([*root, delta.time_ms]))
        return batch, new

    def sizes_batch(self, batch: MetaBatch, generation: int, ends: dict[int, tuple[int, int]]) -> MetaBatch:
        """Step 5 of a scaling: the size and final LSN of each segment it sealed, and the running
        total of sealed bytes."""
        by_shard: dict[str, list[tuple[int, int, int]]] = {}
        for segment, (size, final) in ends.items():
            by_shard.setdefault(self.shard_key(segment), []).append((number_of(segment), size, final))
        for shard, members in by_shard.items():
            found = self._get(shard)
            raw = bytearray(b"" if found is None else found.value)
            for number, size, final in members:
                offset = _SIZE_SLOT.size * (number % SIZE_SHARD_SEGMENTS)
                if len(raw) < offset + _SIZE_SLOT.size:
                    raw.extend(bytes(offset + _SIZE_SLOT.size - len(raw)))
                _SIZE_SLOT.pack_into(raw, offset, size, final)
            batch.put(NAMESPACE, self.key(shard), bytes(raw))
        total = self.sealed_sum(generation - 1) + sum(size for size, _ in ends.values())
        batch.put(NAMESPACE, self.key(f"sealedsum/{generation:08x}"), total.to_bytes(8, "big"))
        return batch


def _current_value(generation: Generation, next_number: int) -> bytes:
    return as_json({"gen": json.loads(generation.encode()), "next": next_number})


def as_json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def config_json(config: StreamConfig) -> str:
    """A stream's configuration as compact JSON (as the ledger records it)."""
    return as_json(config.to_json()).decode()


def wholly_before(segment: Segment, cut: Sequence[Segment]) -> bool:
    """Every segment of the cut over this one's range came after it (a segment over another's
    range made in a later generation replaced it, or replaced a successor of it)."""
    over = [c for c in cut if c.overlaps(segment)]
    return bool(over) and all(c.generation > segment.generation for c in over)


def wholly_after(segment: Segment, cut: Sequence[Segment]) -> bool:
    """Every segment of the cut over this one's range came before it."""
    over = [c for c in cut if c.overlaps(segment)]
    return bool(over) and all(c.generation < segment.generation for c in over)


def cut_order(a: Sequence[tuple[Segment, int]], b: Sequence[tuple[Segment, int]]) -> int:
    """-1 if cut ``a`` is at or before ``b`` everywhere (0 if they are equal), 1 if after it
    everywhere, and :class:`InvalidStreamCutError` if each is ahead somewhere (PDP-32's
    comparison: over each part of the key space, the later segment, or the same segment at the
    higher position, is ahead)."""
    ahead_a = ahead_b = False
    for sa, la in a:
        for sb, lb in b:
            if not sa.overlaps(sb):
                continue
            if sa.id == sb.id:
                ahead_a |= la > lb
                ahead_b |= lb > la
            else:
                ahead_a |= sa.generation > sb.generation
                ahead_b |= sb.generation > sa.generation
    if ahead_a and ahead_b:
        raise InvalidStreamCutError("the two stream cuts are not ordered: each is ahead in part of the key space")
    return 1 if ahead_a else -1 if ahead_b else 0


def _typed(method: Callable[..., Any]) -> Callable[..., Any]:
    """A read that meets a record it cannot decode raises :class:`CorruptionError` naming the
    stream, never a bare ``ValueError`` or ``KeyError``: any client can write the metadata store,
    and a broken record must not look like a bug of the caller's."""

    @functools.wraps(method)
    def typed(self: StreamMetadata, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SeawayError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, struct.error) as exc:
            raise CorruptionError(f"stream {self.name!r}: a metadata record cannot be decoded "
                                  f"({type(exc).__name__}: {exc})") from exc

    return typed


for _name in ("state", "current", "generation", "generation_at", "truncation_versioned", "segments_at", "sealed_at",
              "successors", "predecessors", "deltas", "pending_chunk", "sealed_ends", "sealed_sum", "transition",
              "retention_set",
              "recorded_cut", "segment_records", "cut_records", "segments_between", "size_until", "span",
              "full_span",
              "new_generation_batch",
              "sizes_batch"):
    setattr(StreamMetadata, _name, _typed(getattr(StreamMetadata, _name)))
