"""Planning reads of a stream or a log, on Spark's driver: positions, ends, read limits, ranges.

A *part* is where events are read in order: a segment of a stream, or the log itself. Positions map
parts to the LSN of the next event to read there, as a stream cut does; a part whose position is
past its sealed log's final LSN is *finished*. Everything here is decided from the store's state
when called; what Spark must replay (offsets, partitions) is derived only from offsets, so that
``read()`` returns the same rows for the same range however often it runs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from seaway.errors import (
    InvalidArgumentError,
    InvalidStreamCutError,
    StreamTruncatedError,
    TimedOutError,
    UnknownLogError,
)
from seaway.log import ESN_MAX, LSN_OLDEST, GapType, Record, RecordRun, epoch_of
from seaway.streams import Segment, Stream, StreamCut, parse_segment, segment_str, unframe
from seaway.txn import Snapshot, Visibility

LOG = logging.getLogger("seaway.spark")

SPLIT_EVENTS_MIN = 2_048
"""A range shorter than this is never split into several Spark partitions (tasks cost ~ms each)."""
PARTITION_EVENTS_MAX = 250_000
"""A range is split so that no Spark partition reads more than this (memory, and stragglers)."""
SCAN_ITEMS_MAX = 10_000
"""Items a driver-side scan of a transactional segment asks for at a time."""
KNOWN_CUTS_MAX = 16
"""Stream cuts a driver remembers as consistent (its latest offsets: Spark hands them back)."""


READ_TIMEOUT_S = 60.0
"""How long a source's read of stored data waits for the server to send something before it fails."""


def read_stored(reader: Any, items_max: int, what: str) -> list[Any]:
    """The next items of ``reader``, whose reads all end at LSNs already stored; ``[]`` only once
    every read reached its end. A read that gets nothing for ``READ_TIMEOUT_S`` stalled (a server
    that hangs, a range past what it holds): that fails with a retriable :class:`TimedOutError`, so
    that Spark runs the task or the batch again, never taken for the end of the range (which would
    drop the rest of it)."""
    items: list[Any] = reader.read(items_max, timeout_s=READ_TIMEOUT_S)
    if not items and not reader.done:
        raise TimedOutError(f"the seaway source: reading {what}, the server sent nothing for {READ_TIMEOUT_S:g} s "
                            "(the read stalled; the batch fails rather than end short, and Spark may run it again)")
    return items


@dataclass(frozen=True)
class Range(InputPartition):
    """One Spark input partition: LSNs ``lsn_from..lsn_until`` (both included) of a part's log.

    ``snapshot`` (transactional streams) is an encoded transaction snapshot that decides every
    transactional event of the range; empty otherwise (see also ``hide_open``). ``skip_lost``: a range truncated away
    under the read is skipped with a warning instead of failing the task."""

    part: str
    log_id: int
    lsn_from: int
    lsn_until: int
    snapshot: bytes = b""
    skip_lost: bool = False
    hide_open: bool = False
    """A batch read's range: events of transactions the snapshot sees in progress are left out
    (a micro-batch's range never holds one: it ends at the first)."""
    framed: bool = False
    """The records carry a header (with their routing keys): a stream created ``transactional`` or
    ``store_routing_keys``."""

    @property
    def events_max(self) -> int:
        """How many events the range can hold at most (LSNs within one epoch are consecutive)."""
        if epoch_of(self.lsn_from) != epoch_of(self.lsn_until):
            return ESN_MAX
        return self.lsn_until - self.lsn_from + 1


@dataclass(frozen=True)
class RangeGroup(InputPartition):
    """One Spark input partition that reads several ranges in turn (pieces of different parts):
    how a batch is cut into partitions of about the same size, whatever its parts hold."""

    ranges: tuple[Range, ...]


@dataclass
class PartState:
    """What the store says of one part now."""

    exists: bool
    """False when the log is gone (a segment truncated away whole)."""
    tail: int
    """The last LSN stored (the final LSN of a sealed log)."""
    sealed: bool
    trim_point: int


class Target:
    """A stream or a log, as the source reads it. Subclasses say what parts are and how they follow
    each other; the rest (ends, limits, data loss, ranges) is shared."""

    kind = ""
    transactional = False
    framed = False
    """Whether the records carry a header, to take off (see ``StreamConfig.framed``)."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self._logs: dict[int, Any] = {}

    # --- what subclasses define ------------------------------------------------------------------

    def head(self) -> dict[int, int]:
        raise NotImplementedError

    def tail(self) -> dict[int, int]:
        raise NotImplementedError

    def at_time(self, time_ms: int) -> dict[int, int]:
        raise NotImplementedError

    def log_id(self, part: int) -> int:
        raise NotImplementedError

    def part_str(self, part: int) -> str:
        raise NotImplementedError

    def parse_part(self, text: str) -> int:
        raise NotImplementedError

    def follow(self, positions: dict[int, int], finished: set[int], frozen: set[int]) -> dict[int, int]:
        """``positions`` with finished parts replaced by what comes after them (none for a log)."""
        return positions

    def between(self, start: dict[int, int], end: dict[int, int]) -> list[int]:
        """Every part with events between two positions (for batch reads)."""
        return sorted(set(start) | set(end))

    def check(self, positions: dict[int, int]) -> dict[int, int]:
        """Positions checked to be of this target (a consistent cut of a stream)."""
        return positions

    def known_consistent(self, positions: Mapping[int, int]) -> None:
        """Note positions consistent by construction, so that :meth:`check` need not ask the store."""

    def snapshot(self) -> bytes:
        """An encoded transaction snapshot for the executors (empty: nothing to decide)."""
        return b""

    def lost_until(self, part: int, state: PartState) -> int:
        """The last LSN truncated away of a part (its final LSN for a log that is gone)."""
        return state.trim_point

    # --- offsets ---------------------------------------------------------------------------------

    def to_offset(self, positions: Mapping[int, int], skipped: int = 0) -> dict[str, Any]:
        """The JSON offset: ``{"stream"|"log": name, "positions": {part: lsn}, "skipped": n}``."""
        offset: dict[str, Any] = {self.kind: self.name,
                                  "positions": {self.part_str(p): positions[p] for p in sorted(positions)}}
        if skipped:
            offset["skipped"] = skipped
        return offset

    def from_offset(self, offset: Mapping[str, Any]) -> tuple[dict[int, int], int]:
        """Positions and the skipped count of an offset :meth:`to_offset` made (or a user wrote)."""
        try:
            if offset.get(self.kind) != self.name:
                raise ValueError(f"it names {self.kind} {offset.get(self.kind)!r}")
            raw = offset["positions"]
            positions = {self.parse_part(k): int(v) for k, v in raw.items()}
            skipped = int(offset.get("skipped", 0))
            if not positions or any(v < LSN_OLDEST for v in positions.values()) or skipped < 0:
                raise ValueError("no positions, or one below 1")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidArgumentError(f"not an offset of {self.kind} {self.name!r} ({exc}): {dict(offset)!r:.200}") \
                from None
        return self.check(positions), skipped

    # --- the store's state -----------------------------------------------------------------------

    def _log(self, log_id: int) -> Any:
        log = self._logs.get(log_id)
        if log is None:
            log = self._logs[log_id] = self.client.logs.get(log_id)
        return log

    def states(self, parts: list[int]) -> dict[int, PartState]:
        """What the store says of these parts now, in one round trip (``logs.bounds``): planning
        runs at every micro-batch, and Spark waits for it."""
        if not parts:
            return {}
        ids = {part: self.log_id(part) for part in parts}
        found = self.client.logs.bounds(ids.values())
        gone = PartState(False, 0, True, 0)  # deleted: a segment wholly below a stream's head
        return {part: gone if (b := found.get(log_id)) is None
                else PartState(True, b.tail_lsn, b.final_lsn is not None, b.trim_point)
                for part, log_id in ids.items()}

    def state(self, part: int) -> PartState:
        return self.states([part])[part]

    # --- ends of micro-batches -------------------------------------------------------------------

    def advance(self, start: dict[int, int], skipped: int, *, events_max: int | None, bytes_max: int | None,
                fail_on_data_loss: bool, target: dict[int, int] | None = None) -> tuple[dict[int, int], int]:
        """The end of the next micro-batch from ``start``, and the skipped count after it.

        A finished part is replaced by its successors once all the segments their scaling sealed
        are finished, which happens in a later call than the one that read it to its end: a
        successor's events come in a later micro-batch than all of its predecessors' (per-key
        order). ``events_max`` and ``bytes_max`` bound what the batch holds (bytes estimated from the
        logs' average event size); ``target`` (``availableNow``) bounds each part's position, and no
        part of it is followed past. Truncated data under ``start`` fails
        (:class:`StreamTruncatedError`) unless ``fail_on_data_loss`` is false: then it is skipped,
        logged and counted."""
        positions = dict(start)
        states = self.states(list(positions))
        for part, state in states.items():
            lost_until = self.lost_until(part, state)
            if positions[part] <= lost_until:
                skipped += self._lost(part, positions[part], lost_until, fail_on_data_loss)
                positions[part] = lost_until + 1
        finished = {p for p, s in states.items() if s.sealed and positions[p] > s.tail}
        followed = self.follow(positions, finished, set(target or ()))
        if followed != positions:
            positions = followed
            states.update(self.states([p for p in positions if p not in states]))
            states = {p: states[p] for p in positions}
            finished = {p for p, s in states.items() if s.sealed and positions[p] > s.tail}
        ends = {p: (positions[p] if p in finished else self._stable_end(p, positions[p], states[p].tail + 1))
                for p in positions}
        if target is not None:
            ends = {p: max(positions[p], min(e, target[p])) if p in target else e for p, e in ends.items()}
        # The average event size costs a round trip: asked only when a byte limit needs it.
        event_bytes = 1.0 if bytes_max is None else self._event_bytes([p for p in ends if ends[p] > positions[p]])
        budget = _budget(events_max, bytes_max, event_bytes)
        if budget is not None:
            counted = {p: self.first_present(p, positions[p], e - 1) for p, e in ends.items() if e > positions[p]}
            ends = _limit(positions, counted, ends, budget)
        self.known_consistent(ends)  # a cut followed whole from a consistent one
        return ends, skipped

    def first_present(self, part: int, lsn_from: int, lsn_until: int) -> int:
        """``lsn_from``, or when the LSNs up to ``lsn_until`` cross a sequencer epoch, the first one
        from there that holds a record (``lsn_until + 1`` if none): what lies between is bridges
        and holes, fixed for good below the tail. A new log's first record is in epoch 1, so this
        is what lets a read limit count a segment's first events."""
        if epoch_of(lsn_from) == epoch_of(lsn_until):
            return lsn_from
        reader = self.client.logs.reader(1, runs=True)
        try:
            reader.start_reading(self._log(self.log_id(part)), lsn_from, lsn_until)  # a handle: no lookup
            while True:
                items = read_stored(reader, 1, f"{self.kind} {self.name!r} positions {lsn_from}-{lsn_until}")
                if not items:
                    return lsn_until + 1
                item = items[0]
                if type(item) is RecordRun:
                    return int(item.first_lsn)
                if type(item) is Record:
                    return int(item.lsn)
                if item.type is not GapType.BRIDGE and item.type is not GapType.HOLE:
                    return lsn_from  # trimmed or lost: counted where the data loss check runs
        finally:
            reader.close()

    def _lost(self, part: int, lsn_from: int, lsn_until: int, fail: bool) -> int:
        what = f"{self.kind} {self.name!r} {'segment ' + self.part_str(part) + ' ' if self.kind == 'stream' else ''}" \
               f"positions {lsn_from}-{lsn_until}"
        if fail:
            raise StreamTruncatedError(
                f"the seaway source lost data: {what} were truncated before the query read them. Set the "
                "option failOnDataLoss=false to skip what is gone (logged, and counted in the offsets' "
                "\"skipped\" entry)")
        count = lsn_until - lsn_from + 1 if epoch_of(lsn_from) == epoch_of(lsn_until) else 1
        LOG.warning("seaway source: skipping %s, truncated before the query read them (failOnDataLoss=false)", what)
        return count

    def _stable_end(self, part: int, lsn_from: int, end: int) -> int:
        """The end to read a part to (exclusive); subclasses stop earlier for transactions."""
        return end

    def _event_bytes(self, parts: list[int]) -> float:
        """Average bytes of an event of these parts, from the server's append counts (1 KiB if the
        server counted no appends since it started)."""
        if not parts:
            return 1.0
        counts = self.client.logs.append_counts([self.log_id(p) for p in parts])
        records = sum(c.records for c in counts.values())
        size = sum(c.payload_bytes for c in counts.values())
        return size / records if records else 1024.0

    # --- ranges (Spark partitions) ---------------------------------------------------------------

    def ranges(self, start: dict[int, int], end: dict[int, int], *, partitions_min: int,
               fail_on_data_loss: bool, snapshot: bytes = b"", hide_open: bool = False) -> list[Range | RangeGroup]:
        """The Spark partitions of a micro-batch or a batch read from ``start`` to ``end``. A part of
        ``end`` that ``start`` lacks is read from its beginning; a part of ``start`` that ``end``
        lacks, to its final LSN. Parts wholly truncated away are skipped or fail as in
        :meth:`advance`; a range whose beginning is truncated meanwhile starts after the trim point."""
        found: list[Range] = []
        parts = self.between(start, end)
        states = self.states(parts)
        for part in parts:
            lsn_from = start.get(part, LSN_OLDEST)
            state = states[part]
            lsn_until = end[part] - 1 if part in end else state.tail
            if lsn_from > lsn_until:
                continue
            lost_until = min(self.lost_until(part, state), lsn_until)
            if lsn_from <= lost_until:
                self._lost(part, lsn_from, lost_until, fail_on_data_loss)
                lsn_from = lost_until + 1
                if lsn_from > lsn_until:
                    continue
            lsn_from = self.first_present(part, lsn_from, lsn_until)
            if lsn_from > lsn_until:
                continue
            found.append(Range(self.part_str(part), self.log_id(part), lsn_from, lsn_until, snapshot,
                               not fail_on_data_loss, hide_open, self.framed))
        return pack(found, partitions_min)


def _budget(events_max: int | None, bytes_max: int | None, event_bytes: float) -> int | None:
    budgets = [b for b in (events_max, None if bytes_max is None else max(1, int(bytes_max / max(event_bytes, 1.0))))
               if b is not None]
    return min(budgets) if budgets else None


def _limit(start: dict[int, int], counted: dict[int, int], ends: dict[int, int], budget: int) -> dict[int, int]:
    """Ends moved back so that the parts together hold at most ``budget`` events, shared fairly
    (water-filling: a part with less than its share gives the rest to the others). ``counted`` is
    where each part's events begin (after any leading bridge). A range that still crosses a
    sequencer epoch counts as one event to the limit, since its count is unknown without reading
    (it is read whole: a limit can be overshot once, at a server restart)."""
    available = {p: _events(c, ends[p]) for p, c in counted.items() if c < ends[p]}
    grant: dict[int, int] = {}
    left = budget
    pending = sorted(available, key=lambda p: available[p])
    while pending and left > 0:
        share = max(1, left // len(pending))
        part = pending.pop(0)
        grant[part] = min(available[part], share)
        left -= grant[part]
    limited = {p: counted.get(p, e) if p in available else e for p, e in ends.items()}
    for part, count in grant.items():
        crosses = epoch_of(counted[part]) != epoch_of(ends[part] - 1)
        limited[part] = ends[part] if crosses else counted[part] + count
    return {p: max(start[p], e) if p in start else e for p, e in limited.items()}


def _events(lsn_from: int, end: int) -> int:
    """Events between ``lsn_from`` and ``end`` (exclusive) as the limit counts them."""
    return end - lsn_from if epoch_of(lsn_from) == epoch_of(end - 1) else 1


def pack(ranges: list[Range], partitions_min: int) -> list[Range | RangeGroup]:
    """The ranges cut into about ``partitions_min`` Spark partitions of the same size (every core
    busy to the end: the parts of a batch rarely hold the same number of events, so pieces of
    several parts make up one partition), none over :data:`PARTITION_EVENTS_MAX` events. A batch
    under ``partitions_min`` times :data:`SPLIT_EVENTS_MIN` events keeps a partition per range;
    no piece is cut under :data:`SPLIT_EVENTS_MIN` events; a range that crosses an epoch (its size
    unknown) is a partition of its own."""
    sized = [r for r in ranges if r.events_max < ESN_MAX]
    whole: list[Range | RangeGroup] = [r for r in ranges if r.events_max == ESN_MAX]
    total = sum(r.events_max for r in sized)
    count = max(partitions_min, math.ceil(total / PARTITION_EVENTS_MAX))
    if total < count * SPLIT_EVENTS_MIN:
        return [*sized, *whole]
    share = math.ceil(total / count)
    out: list[Range | RangeGroup] = []
    group: list[Range] = []
    room = share
    for r in sized:
        lo = r.lsn_from
        while lo <= r.lsn_until:
            left = r.lsn_until - lo + 1
            if group and room < SPLIT_EVENTS_MIN <= left:  # no piece that small: the next partition
                out.append(group[0] if len(group) == 1 else RangeGroup(tuple(group)))
                group, room = [], share
            take = left if left - room < SPLIT_EVENTS_MIN else room  # nor a rest that small
            group.append(Range(r.part, r.log_id, lo, lo + take - 1, r.snapshot, r.skip_lost, r.hide_open, r.framed))
            room -= take
            lo += take
            if room <= 0:
                out.append(group[0] if len(group) == 1 else RangeGroup(tuple(group)))
                group, room = [], share
    if group:
        out.append(group[0] if len(group) == 1 else RangeGroup(tuple(group)))
    return [*out, *whole]


# --- a stream -------------------------------------------------------------------------------------


class StreamTarget(Target):
    """A stream: parts are its segments, followed across scalings."""

    kind = "stream"

    def __init__(self, client: Any, name: str) -> None:
        super().__init__(client, name)
        self.stream: Stream = client.streams.get(name)
        self.transactional = self.stream.config.transactional
        self.framed = self.stream.config.framed
        self._records: dict[int, Segment] = {}
        self._decided: dict[int, int] = {}
        """Transactional segments -> the LSN below which every event is known to be decided."""
        self._consistent: dict[frozenset[tuple[int, int]], None] = {}
        """Cuts known consistent (checked, or made by :meth:`advance`), oldest first: Spark gives
        each offset back to ``latestOffset`` and ``partitions``, and checking costs round trips."""

    def part_str(self, part: int) -> str:
        return segment_str(part)

    def parse_part(self, text: str) -> int:
        return parse_segment(text)

    def record(self, segment: int) -> Segment:
        found = self._records.get(segment)
        if found is None:
            self._records.update(self.stream.metadata.segment_records([segment]))
            found = self._records.get(segment)
            if found is None:
                raise InvalidStreamCutError(f"stream {self.name!r} has no segment {segment_str(segment)}")
        return found

    def log_id(self, part: int) -> int:
        return self.record(part).log_id

    def check(self, positions: dict[int, int]) -> dict[int, int]:
        if frozenset(positions.items()) not in self._consistent:
            self.stream.compare(StreamCut(self.name, positions), StreamCut(self.name, positions))  # consistent?
            self.known_consistent(positions)
        return positions

    def known_consistent(self, positions: Mapping[int, int]) -> None:
        self._consistent[frozenset(positions.items())] = None
        while len(self._consistent) > KNOWN_CUTS_MAX:
            del self._consistent[next(iter(self._consistent))]

    def head(self) -> dict[int, int]:
        return dict(self.stream.head().positions)

    def tail(self) -> dict[int, int]:
        return dict(self.stream.tail().positions)

    def at_time(self, time_ms: int) -> dict[int, int]:
        """Each segment of the generation current at ``time_ms`` at its first event stamped at or
        after it; the head if that is before the head (or the stream began after it)."""
        head = self.stream.head()
        try:
            segments = self.stream.segments_at(time_ms)
            cut = StreamCut(self.name, {s.id: self._log(s.log_id).find_time(time_ms) for s in segments})
            if self.stream.compare(cut, head) >= 0:
                return dict(cut.positions)
        except (InvalidArgumentError, UnknownLogError):
            pass  # before the stream, or truncated there: the head is the first position at that time
        return dict(head.positions)

    def lost_until(self, part: int, state: PartState) -> int:
        if not state.exists:  # wholly below the head: gone up to its final LSN
            ends = self.stream.metadata.sealed_ends([part])
            return ends.get(part, (0, 0))[1]
        return state.trim_point

    def follow(self, positions: dict[int, int], finished: set[int], frozen: set[int]) -> dict[int, int]:
        """Replace the segments a scaling sealed by the segments it made, once every one it sealed
        is finished (the cut stays consistent); never past a segment of ``frozen``."""
        result = dict(positions)
        for segment in sorted(finished - frozen):
            if segment not in result:
                continue  # replaced already in this step
            successors = self.stream.successors(segment)
            if not successors:
                continue  # sealed with its stream
            generation = next(iter(successors)).generation
            delta = self.stream.history(after=generation - 1, limit=1)[0]
            if all(s in result and s in finished and s not in frozen for s in delta.sealed):
                for s in delta.sealed:
                    del result[s]
                for created in delta.created:
                    self._records[created.id] = created
                    result[created.id] = LSN_OLDEST
        return result

    def between(self, start: dict[int, int], end: dict[int, int]) -> list[int]:
        if start.keys() == end.keys():
            # No scaling in between: a segment made by one would follow some segment of ``start``
            # and precede one of ``end``, which is then in ``start`` too, with its own predecessor:
            # not a consistent cut.
            return sorted(start)
        segments = self.stream.segments_between(StreamCut(self.name, start), StreamCut(self.name, end))
        for s in segments:
            self._records[s.id] = s
        return [s.id for s in segments]

    def _stable_end(self, part: int, lsn_from: int, end: int) -> int:
        """For a transactional stream, the first event at or after ``lsn_from`` of a transaction
        still in progress (its *stable position*), if before ``end``; events below are all decided
        (committed or aborted for good), so that reading them later gives the same rows."""
        if not self.transactional:
            return end
        lsn = max(lsn_from, self._decided.get(part, LSN_OLDEST))
        if lsn >= end:
            return end
        waiting = self._first_waiting(part, lsn, end)
        self._decided[part] = end if waiting is None else waiting
        return end if waiting is None else waiting

    def _first_waiting(self, part: int, lsn_from: int, end: int) -> int | None:
        """The LSN of the first event in ``[lsn_from, end)`` of a transaction in progress, decided
        with a snapshot taken after reading them (so that no transaction it thinks open had ended)."""
        found: list[tuple[int, int]] = []  # (lsn, write pointer) of transactional events, in order
        reader = self.client.logs.reader(SCAN_ITEMS_MAX, runs=True)
        try:
            reader.start_reading(self._log(self.log_id(part)), lsn_from, end - 1)  # a handle: no lookup
            while True:
                items = read_stored(reader, SCAN_ITEMS_MAX,
                                    f"{self.kind} {self.name!r} positions {lsn_from}-{end - 1}")
                if not items:
                    break
                for item in items:
                    if type(item) is RecordRun:
                        for i, payload in enumerate(item.payloads):
                            write_pointer, _ = unframe(payload)
                            if write_pointer:
                                found.append((item.first_lsn + i, write_pointer))
                    elif type(item) is Record:
                        write_pointer, _ = unframe(item.payload)
                        if write_pointer:
                            found.append((item.lsn, write_pointer))
        finally:
            reader.close()
        if not found:
            return None
        snapshot = self.client.txn.snapshot()
        for lsn, write_pointer in found:
            if snapshot.visibility(write_pointer) is Visibility.WAIT:
                return lsn
        return None

    def snapshot(self) -> bytes:
        """An encoded snapshot for the executors (transactional streams only): every transaction
        of a planned range is decided, so any snapshot taken after planning decides it the same."""
        if not self.transactional:
            return b""
        snapshot: Snapshot = self.client.txn.snapshot()
        return snapshot.encode()


# --- a log ----------------------------------------------------------------------------------------


class LogTarget(Target):
    """A log: one part, the log itself (its id), which never has successors."""

    kind = "log"

    def __init__(self, client: Any, name: str) -> None:
        super().__init__(client, name)
        log = client.logs.get(int(name) if name.isdigit() else name)
        self._logs[log.id] = log
        self.id: int = log.id

    def part_str(self, part: int) -> str:
        return str(part)

    def parse_part(self, text: str) -> int:
        part = int(text)
        if part != self.id:
            raise ValueError(f"log {self.name!r} has id {self.id}, not {part}")
        return part

    def log_id(self, part: int) -> int:
        return part

    def head(self) -> dict[int, int]:
        return {self.id: self._log(self.id).trim_point() + 1}

    def tail(self) -> dict[int, int]:
        return {self.id: self._log(self.id).tail_lsn() + 1}

    def at_time(self, time_ms: int) -> dict[int, int]:
        return {self.id: self._log(self.id).find_time(time_ms)}


def open_target(client: Any, kind: str, name: str) -> Target:
    return StreamTarget(client, name) if kind == "stream" else LogTarget(client, name)
