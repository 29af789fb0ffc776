"""Reader groups (Pravega's): readers that share a stream's segments, each segment read by one
reader at a time, so that together they read every event once and each routing key in order.

The group's whole state is two records of the metadata store's ``streams`` namespace, under
``rg/<name>/``:

``conf``   what the group reads (never changes): the stream, the start cut, the end cut.
``state``  who reads what: each reader's segments with its last stored position in each, the
           *pool* of segments no reader holds (with the position to read them from), and the
           *finished* segments (read to their end) whose range no later segment covers yet.

A group made with ``retention_subscribed`` also has the key ``rgsub/<scope>/<stream>/<name>``
(written and deleted with the group), so that the retention pass finds a stream's subscribed groups
with one scan: their checkpoints hold back consumption-based retention (see
:mod:`seaway.streams._retention`).

Every change reads ``state``, changes it, and writes it back only if its version is unchanged
(compare-and-set); a change that loses a race is made again on the fresh state. The segments
held, pooled and finished always cover the key space exactly, so that the positions of all of
them are a consistent stream cut: the group's checkpoint.

Order. A scaling seals segments and creates others over their union. The created segments go to
the pool only once every segment that scaling sealed is finished (read to its seal by whoever
held it): a successor is never read while any of its predecessors has events left, so the events
of one routing key are read in the order they were written. (This waits for the scaling's whole
set of sealed segments, not only each successor's own predecessors: a little later for some
successors, but the cut of held, pooled and finished segments then never overlaps itself.)

Balance. With ``T`` segments held or pooled and ``R`` readers, a reader takes pooled segments
while it holds fewer than ``ceil(T / R)``, and gives one back (at the position it has read to)
while it holds more than that, or holds ``ceil`` while another reader holds fewer than
``floor(T / R)`` and the pool is empty.

Failures. A reader stores its positions at most once per read batch and on :meth:`checkpoint`;
one that vanishes is declared offline with :meth:`ReaderGroup.reader_offline`, and its segments
go back to the pool at the positions it last stored: the events it read after that are read
again (at least once). A reader that was declared offline gets :class:`ReaderOfflineError`.

Truncation. A group cannot start below the stream's head (:class:`StreamTruncatedError`). A reader
that meets events truncated away under it (its segment trimmed below its position, or deleted
whole) gets :class:`StreamTruncatedError` from :meth:`EventReader.read_next`, naming the segment and
the position lost, once per segment; its next read goes on from where the stream's events now begin
(the trim point, or the deleted segment's successors), as Pravega's ``TruncatedDataException``.

Transactions. On a transactional stream a reader delivers an event written in a transaction only
once its snapshot of the transaction manager says the transaction committed; it steps over one
that aborted or timed out. At one still in progress it stops that segment there (its *stable
position*): it delivers nothing after it in that segment, stops reading the segment's log, and
takes fresh snapshots (with a backoff from ``txn_poll_s_min`` to ``txn_poll_s_max``) until the
transaction ends, then reads on from it. So a transaction that commits late is never skipped, a
key's events keep their order, a segment is not finished (its successors not started) while it
holds an unresolved event, and the positions the reader stores never pass an event it has not
delivered. The other segments it holds are read meanwhile.
"""

from __future__ import annotations

import builtins
import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seaway._invariant import invariant
from seaway.errors import (
    ClosedError,
    ConditionFailedError,
    CorruptionError,
    InvalidArgumentError,
    InvalidStreamCutError,
    ReaderExistsError,
    ReaderGroupExistsError,
    ReaderOfflineError,
    SeawayError,
    StreamTruncatedError,
    UnknownLogError,
    UnknownReaderGroupError,
)
from seaway.ledger import ReaderGroupCreated, ReaderGroupDeleted, ReaderGroupReset
from seaway.log import LSN_MAX, LSN_OLDEST, Gap, GapType, LogsApi, MetaApi, Record, lsn_str
from seaway.streams._cut import StreamCut, positions_repr
from seaway.streams._framing import unframe_keyed
from seaway.streams._metadata import NAMESPACE
from seaway.streams._names import check_part, generation_of, segment_str
from seaway.txn import AbortedJudges, Visibility

if TYPE_CHECKING:
    from seaway.streams._streams import Stream
    from seaway.txn import Snapshot

SnapshotSource = Callable[[], "Snapshot"]
"""Where readers take snapshots of the transaction manager (``sw.txn.snapshot``)."""

READERS_MAX = 1_000
"""Readers of one group at once (the state record holds them all)."""
CAS_ATTEMPTS_MAX = 1_000
"""Tries of one change of the group's state before giving up (each lost race means another
process made progress)."""


SUBSCRIBED_GROUPS_MAX = 1_000
"""Subscribed reader groups of one stream that retention looks at (the first by name)."""


_GROUPS_PREFIX = b"rg/"


def group_prefix(name: str) -> bytes:
    return _GROUPS_PREFIX + f"{name}/".encode()


def subscription_prefix(stream: str) -> bytes:
    """The keys of the groups subscribed to ``stream`` (``scope/stream``) for retention."""
    return f"rgsub/{stream}/".encode()


def subscribed_checkpoints(meta: MetaApi, stream: str) -> list[tuple[str, StreamCut]]:
    """The reader groups subscribed to ``stream``'s retention, each with its checkpoint (as last
    stored): one scan, then one read per group. Groups deleted meanwhile are left out."""
    prefix = subscription_prefix(stream)
    found = []
    for key, _ in meta.scan(NAMESPACE, prefix=prefix, limit=SUBSCRIBED_GROUPS_MAX):
        name = key[len(prefix):].decode()
        state = meta.get(NAMESPACE, group_prefix(name) + b"state")
        if state is not None:
            found.append((name, StreamCut(stream, _State.decode(state.value).positions())))
    return found


@dataclass(frozen=True)
class ReaderConfig:
    """How an :class:`EventReader` reads."""

    batch_items_max: int = 200
    """Items fetched from the segments' logs at once; the reader's positions are stored at most
    once per batch."""
    sync_interval_s: float = 0.5
    """The longest a reader with nothing to read waits before it looks at the group again (for
    segments released by others, or readers that joined)."""
    buffered_items_max: int = 2_000
    """The bound of the underlying multiplexed log reader."""
    txn_poll_s_min: float = 0.001
    """On a transactional stream, the first wait before a segment stopped at a transaction in
    progress looks again (with a fresh snapshot); it doubles on each look up to ``txn_poll_s_max``."""
    txn_poll_s_max: float = 0.1

    def __post_init__(self) -> None:
        if not isinstance(self.batch_items_max, int) or not 1 <= self.batch_items_max <= 10_000:
            raise InvalidArgumentError(f"batch_items_max is in [1, 10000], got {self.batch_items_max!r}")
        if not isinstance(self.sync_interval_s, int | float) or not 0 < self.sync_interval_s <= 60:
            raise InvalidArgumentError(f"sync_interval_s is in (0, 60], got {self.sync_interval_s!r}")
        if not isinstance(self.buffered_items_max, int) or self.buffered_items_max < self.batch_items_max:
            raise InvalidArgumentError("buffered_items_max must be at least batch_items_max")
        for name in ("txn_poll_s_min", "txn_poll_s_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 60:
                raise InvalidArgumentError(f"{name} is in (0, 60], got {value!r}")
        if self.txn_poll_s_min > self.txn_poll_s_max:
            raise InvalidArgumentError("txn_poll_s_min must not exceed txn_poll_s_max")


@dataclass(frozen=True)
class Event:
    """One event read by a reader of a group."""

    payload: bytes
    segment: int
    lsn: int
    timestamp_ms: int
    position: Mapping[int, int]
    """The reader's position just after this event: each segment it holds -> LSN of the next
    event to read there."""
    routing_key: str | bytes | None = None
    """The routing key the event was written with, as given (str or bytes), on a stream that
    stores keys (``StreamConfig.framed``: created ``store_routing_keys`` or ``transactional``);
    None when it was written without one, or the stream does not store keys."""

    def __repr__(self) -> str:  # segments and LSNs as everything else prints them: 1.2, e<epoch>n<esn>
        return f"Event(payload={self.payload!r}, segment={segment_str(self.segment)!r}, lsn={lsn_str(self.lsn)}, " \
               f"timestamp_ms={self.timestamp_ms}, position={positions_repr(self.position)}, " \
               f"routing_key={self.routing_key!r})"


@dataclass(frozen=True)
class ReaderGroupInfo:
    """What :meth:`ReaderGroup.describe` shows."""

    name: str
    stream: str
    start: StreamCut
    end: StreamCut | None
    readers: tuple[str, ...]
    assignments: Mapping[str, tuple[int, ...]]
    """Reader -> the segments it holds."""
    unassigned: tuple[int, ...]
    finished: tuple[int, ...]
    """Segments read to their end whose range no later segment covers yet (waiting for the other
    segments sealed with them, or at the end cut, or at the end of a sealed stream)."""
    positions: Mapping[int, int]
    """Every segment above -> the LSN of the next event to read there (as last stored)."""
    retention_subscribed: bool = False
    """Whether the group's checkpoint holds back the stream's consumption-based retention."""
    lags: Mapping[int, int] = field(default_factory=dict)
    """Segment -> events left to read in it (its *lag*): from the group's position there to the
    segment's end (sealed), its tail (current) or the end cut, counted without reading them. Every
    segment with events between the group's checkpoint and the stream's tail is here, the segments
    not reached yet (successors of those it reads) from their start; see :meth:`Stream.events_after`."""
    lag: int = 0
    """Events left to read in all: the sum of :attr:`lags`."""


# --- the records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Conf:
    stream: str
    start: dict[int, int]
    end: dict[int, int] | None
    end_ranges: dict[int, tuple[float, float]]
    """The end cut's segments' key ranges (to tell whether a segment is past the end)."""
    subscribed: bool = False
    """Subscribed to the stream's retention (see the module docstring)."""

    def encode(self) -> bytes:
        return _json({"stream": self.stream, "start": _keyed(self.start),
                      "end": None if self.end is None else _keyed(self.end),
                      "end_ranges": {str(s): list(r) for s, r in self.end_ranges.items()},
                      "subscribed": self.subscribed})

    @classmethod
    def decode(cls, raw: bytes) -> _Conf:
        data = json.loads(raw)
        end = data["end"]
        return cls(data["stream"], _unkeyed(data["start"]), None if end is None else _unkeyed(end),
                   {int(s): (float(lo), float(hi)) for s, (lo, hi) in data["end_ranges"].items()},
                   bool(data.get("subscribed", False)))

    def bound(self, segment: int) -> int | None:
        """Where reading ``segment`` stops (the LSN after the last one to read), or None."""
        return None if self.end is None else self.end.get(segment)

    def past_end(self, segment: int, key_lo: float, key_hi: float) -> bool:
        """Whether the end cut is wholly before ``segment``: every end segment over its range came
        before it."""
        if self.end is None or segment in self.end:
            return False
        over = [s for s, (lo, hi) in self.end_ranges.items() if lo < key_hi and key_lo < hi]
        return bool(over) and all(generation_of(s) < generation_of(segment) for s in over)


@dataclass
class _State:
    readers: dict[str, dict[int, int]] = field(default_factory=dict)
    pool: dict[int, int] = field(default_factory=dict)
    finished: dict[int, int] = field(default_factory=dict)
    log_ids: dict[int, int] = field(default_factory=dict)
    """Segment -> its log's id, for every segment held, pooled or finished (``logs`` in the stored
    JSON, which keeps its key so that groups stored before still decode)."""

    def encode(self) -> bytes:
        return _json({"readers": {r: _keyed(s) for r, s in self.readers.items()}, "pool": _keyed(self.pool),
                      "finished": _keyed(self.finished), "logs": _keyed(self.log_ids)})

    @classmethod
    def decode(cls, raw: bytes) -> _State:
        data = json.loads(raw)
        return cls({r: _unkeyed(s) for r, s in data["readers"].items()}, _unkeyed(data["pool"]),
                   _unkeyed(data["finished"]), _unkeyed(data["logs"]))

    def positions(self) -> dict[int, int]:
        out = dict(self.pool)
        out.update(self.finished)
        for held in self.readers.values():
            out.update(held)
        return out

    def admit(self, conf: _Conf, segment: int, log_id: int, position: int) -> None:
        """Put a segment to read from ``position`` in the pool (among the finished if there is
        nothing to read in it before the end cut)."""
        self.log_ids[segment] = log_id
        bound = conf.bound(segment)
        if bound is not None and position >= bound:
            self.finished[segment] = position
        else:
            self.pool[segment] = position

    def finish(self, conf: _Conf, segment: int, position: int, scaling: _Scaling | None) -> None:
        """A segment read to its end (``scaling``: the one that sealed it, if any): once every
        segment that scaling sealed is finished, the segments it created go to the pool."""
        self.finished[segment] = position
        if scaling is None or not all(s in self.finished for s in scaling.sealed):
            return
        admitted = [s for s in scaling.created if not conf.past_end(s[0], s[2], s[3])]
        if not admitted or any(s[0] in self.log_ids for s in admitted):
            return  # past the end cut (or done already by another reader's lost race, retried)
        for sealed in scaling.sealed:
            del self.finished[sealed]
            self.log_ids.pop(sealed, None)
        for created, log_id, _, _ in admitted:
            self.admit(conf, created, log_id, LSN_OLDEST)


@dataclass(frozen=True)
class _Scaling:
    """What the scaling that sealed a segment sealed, and what it created (id, log, key range)."""

    sealed: tuple[int, ...]
    created: tuple[tuple[int, int, float, float], ...]


def _json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _keyed(positions: Mapping[int, int]) -> dict[str, int]:
    return {str(k): v for k, v in positions.items()}


def _unkeyed(positions: Mapping[str, int]) -> dict[int, int]:
    return {int(k): int(v) for k, v in positions.items()}


# --- the group -----------------------------------------------------------------------------------


class ReaderGroups:
    """Create, find and delete reader groups (behind ``sw.streams``)."""

    def __init__(self, logs: LogsApi, meta: MetaApi, get_stream: Callable[[str], Stream],
                 snapshot: SnapshotSource | None = None) -> None:
        self._logs = logs
        self._meta = meta
        self._get_stream = get_stream
        self._snapshot = snapshot

    def create(self, name: str, stream: str | Stream, start: StreamCut | None = None,
               end: StreamCut | None = None, *, retention_subscribed: bool = False) -> ReaderGroup:
        """A new group reading ``stream`` from ``start`` (default: its head) up to ``end`` (default:
        forever). :class:`ReaderGroupExistsError` if the name is taken; :class:`InvalidStreamCutError`
        for cuts that are not consistent cuts of the stream, or an end before the start;
        :class:`StreamTruncatedError` for a start below the stream's head (in any part of the key
        space). With ``retention_subscribed``, the stream's retention keeps what the group has not
        checkpointed past (within the policy's bounds)."""
        check_part(name, "reader group")
        if not isinstance(retention_subscribed, bool):
            raise InvalidArgumentError(f"retention_subscribed is a bool, got {retention_subscribed!r:.40}")
        handle = self._get_stream(stream if isinstance(stream, str) else stream.name)
        start = handle.head() if start is None else start
        handle.compare(start, start)  # checks that the start is a consistent cut of the stream
        if end is not None and handle.compare(start, end) > 0:
            raise InvalidStreamCutError("the start cut is after the end cut")
        _check_not_truncated(handle, start)
        records = handle.metadata.segment_records([*start.positions, *(end.positions if end else {})])
        end_ranges = {} if end is None else {s: (records[s].key_lo, records[s].key_hi) for s in end.positions}
        conf = _Conf(handle.name, dict(start.positions), None if end is None else dict(end.positions), end_ranges,
                     retention_subscribed)
        state = _State()
        for segment, position in start.positions.items():
            state.admit(conf, segment, records[segment].log_id, position)
        prefix = group_prefix(name)
        batch = self._meta.batch().expect_absent(NAMESPACE, prefix + b"conf").put(
            NAMESPACE, prefix + b"conf", conf.encode()).put(NAMESPACE, prefix + b"state", state.encode())
        if retention_subscribed:
            batch.put(NAMESPACE, subscription_prefix(handle.name) + name.encode(), b"")
        batch.record(ReaderGroupCreated(name, handle.name))
        try:
            batch.commit()
        except ConditionFailedError:
            raise ReaderGroupExistsError(f"reader group {name!r} exists") from None
        return ReaderGroup(self._logs, self._meta, name, conf, handle, self._snapshot)

    def get(self, name: str) -> ReaderGroup:
        """A group by name; :class:`UnknownReaderGroupError` if there is none."""
        check_part(name, "reader group")
        found = self._meta.get(NAMESPACE, group_prefix(name) + b"conf")
        if found is None:
            raise UnknownReaderGroupError(f"reader group {name!r} does not exist")
        conf = _Conf.decode(found.value)
        return ReaderGroup(self._logs, self._meta, name, conf, self._get_stream(conf.stream), self._snapshot)

    def names(self, limit: int | None = None) -> builtins.list[str]:
        """The names of the reader groups, in name order, the first ``limit`` of them (all when
        None): a scan of the groups' records (two each), read in pages."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidArgumentError(f"limit is a positive integer or None, got {limit!r:.40}")
        names: builtins.list[str] = []
        for key, _ in self._meta.scan_all(NAMESPACE, prefix=_GROUPS_PREFIX):
            if limit is not None and len(names) >= limit:
                break
            name, _, record = key[len(_GROUPS_PREFIX):].decode().partition("/")
            if record == "conf":
                names.append(name)
        return names

    def delete(self, name: str) -> None:
        """Delete a group and its state; its readers get :class:`UnknownReaderGroupError`."""
        check_part(name, "reader group")
        found = self._meta.get(NAMESPACE, group_prefix(name) + b"conf")
        if found is None:
            raise UnknownReaderGroupError(f"reader group {name!r} does not exist")
        stream = _Conf.decode(found.value).stream
        # The subscription key goes with the group, in the same batch: retention never sees one
        # without the other. Conditional on the group's record as read, so that of two deletes one
        # applies (and is recorded) and the other finds no group.
        try:
            self._meta.batch().expect_version(NAMESPACE, group_prefix(name) + b"conf", found.version).delete_prefix(
                NAMESPACE, group_prefix(name)).delete(NAMESPACE, subscription_prefix(stream) + name.encode()).record(
                ReaderGroupDeleted(name)).commit()
        except ConditionFailedError:
            raise UnknownReaderGroupError(f"reader group {name!r} was deleted meanwhile") from None


def _check_not_truncated(stream: Stream, start: StreamCut) -> None:
    """:class:`StreamTruncatedError` if ``start`` (a consistent cut) is below the stream's head
    anywhere."""
    head = stream.head()
    try:
        below = stream.compare(start, head) < 0
    except InvalidStreamCutError:  # ahead of the head in part of the key space, below it elsewhere
        below = True
    if below:
        raise StreamTruncatedError(f"stream {stream.name!r} is truncated past the start cut: its events begin at "
                                   f"{head.to_json()}; start there or later")


class ReaderGroup:
    """A handle on one reader group (cheap: the state is in the metadata store)."""

    def __init__(self, logs: LogsApi, meta: MetaApi, name: str, conf: _Conf, stream: Stream,
                 snapshot: SnapshotSource | None = None) -> None:
        self._logs = logs
        self._snapshot = snapshot
        self.stream_handle = stream
        self._meta = meta
        self.aborted = AbortedJudges(meta)
        """What its readers ask about an event their snapshot calls visible."""
        self.name = name
        self._conf = conf
        self._key = group_prefix(name) + b"state"

    @property
    def stream(self) -> str:
        return self._conf.stream

    def __repr__(self) -> str:
        return f"ReaderGroup({self.name!r}, {self.stream!r})"

    def _read(self) -> tuple[_State, int]:
        found = self._meta.get(NAMESPACE, self._key)
        if found is None:
            raise UnknownReaderGroupError(f"reader group {self.name!r} does not exist")
        return _State.decode(found.value), found.version

    def _change(self, edit: Callable[[_State], bool]) -> _State:
        """Apply ``edit`` to the state by compare-and-set, on fresh state after each lost race;
        ``edit`` returns False for no change (nothing is written). The state written (or read)."""
        for _ in range(CAS_ATTEMPTS_MAX):
            state, version = self._read()
            if not edit(state):
                return state
            try:
                self._meta.batch().expect_version(NAMESPACE, self._key, version).put(
                    NAMESPACE, self._key, state.encode()).commit()
            except ConditionFailedError:
                continue
            return state
        raise ConditionFailedError(f"reader group {self.name!r}: the state changed on each of "
                                   f"{CAS_ATTEMPTS_MAX} tries")

    def describe(self) -> ReaderGroupInfo:
        """The group's readers, segments, positions and lag (as last stored)."""
        state, _ = self._read()
        c = self._conf
        positions = state.positions()
        lags = self.stream_handle.events_after(StreamCut(self.stream_handle.name, positions), c.end)
        return ReaderGroupInfo(
            self.name, c.stream, StreamCut(c.stream, c.start), None if c.end is None else StreamCut(c.stream, c.end),
            tuple(sorted(state.readers)), {r: tuple(sorted(s)) for r, s in sorted(state.readers.items())},
            tuple(sorted(state.pool)), tuple(sorted(state.finished)), dict(sorted(positions.items())),
            c.subscribed, lags, sum(lags.values()))

    def lag(self) -> int:
        """Events left to read from the group's checkpoint (see :attr:`ReaderGroupInfo.lag`)."""
        return self.describe().lag

    def reset(self, to: StreamCut | str = "head", *, time_ms: int | None = None) -> StreamCut:
        """Move the group's position, as ``kafka-consumer-groups --reset-offsets`` does: to ``"head"``
        (the stream's oldest event kept), ``"tail"`` (after its newest: only new events are read),
        a :class:`StreamCut` of the stream, or, with ``time_ms``, the first events written at or
        after that time (milliseconds since the epoch; ``to`` is then ignored; a time before the
        stream's head, in any part of its key space, is the head). Returns the cut.

        Every reader is removed from the group in the same compare-and-set change (a reader's own
        change either lands before it, and is overwritten, or after it, and finds the reader gone):
        each gets :class:`ReaderOfflineError` at its next look at the group, having delivered at
        most the rest of the batch it held; make new readers to read from the new position. The
        change is recorded in the ledger (``reader_group.reset``). Raises
        :class:`InvalidStreamCutError` for a cut that is not a consistent cut of the stream or is
        after the group's end cut, :class:`StreamTruncatedError` for one below the stream's head,
        :class:`InvalidArgumentError` for another ``to``."""
        cut = self._reset_cut(to, time_ms)
        handle, c = self.stream_handle, self._conf
        handle.compare(cut, cut)  # a consistent cut of this stream
        if c.end is not None and handle.compare(cut, StreamCut(c.stream, c.end)) > 0:
            raise InvalidStreamCutError("the cut is after the group's end cut")
        _check_not_truncated(handle, cut)
        records = handle.metadata.segment_records(cut.positions)
        state = _State()
        for segment, position in cut.positions.items():
            state.admit(c, segment, records[segment].log_id, position)
        for _ in range(CAS_ATTEMPTS_MAX):
            _, version = self._read()
            try:
                self._meta.batch().expect_version(NAMESPACE, self._key, version).put(
                    NAMESPACE, self._key, state.encode()).record(
                    ReaderGroupReset(self.name, len(cut.positions))).commit()
            except ConditionFailedError:
                continue
            return cut
        raise ConditionFailedError(f"reader group {self.name!r}: the state changed on each of "
                                   f"{CAS_ATTEMPTS_MAX} tries")

    def _reset_cut(self, to: StreamCut | str, time_ms: int | None) -> StreamCut:
        handle = self.stream_handle
        if time_ms is not None:
            if not isinstance(time_ms, int) or isinstance(time_ms, bool) or time_ms < 0:
                raise InvalidArgumentError(f"time_ms is a non-negative integer, got {time_ms!r:.40}")
            head = handle.head()
            try:
                at = StreamCut(self.stream, {s.id: self._logs.get(s.log_id).find_time(time_ms)
                                             for s in handle.segments_at(time_ms)})
                return head if not at.positions or handle.compare(at, head) < 0 else at
            except (InvalidStreamCutError, UnknownLogError):  # before the head in part of the key space
                return head
        if isinstance(to, StreamCut):
            return to
        if to == "head":
            return handle.head()
        if to == "tail":
            return handle.tail()
        raise InvalidArgumentError(f"a reset goes to 'head', 'tail', a StreamCut or a time (time_ms=), got {to!r:.60}")

    def checkpoint(self) -> StreamCut:
        """The group's position as a consistent stream cut: every segment held, pooled or finished,
        at the position last stored. Readers store theirs once per read batch and on
        :meth:`EventReader.checkpoint`; call that on each reader first for the exact position."""
        state, _ = self._read()
        return StreamCut(self.stream, state.positions())

    def reader(self, reader_id: str, config: ReaderConfig | None = None) -> EventReader:
        """Join the group as ``reader_id``. :class:`ReaderExistsError` if a reader of that id is a
        member (close it, or declare it offline, first); :class:`InvalidArgumentError` for a
        transactional stream when this store's client has no transaction manager to ask."""
        check_part(reader_id, "reader")
        stream_config = self.stream_handle.config
        transactional = stream_config.transactional
        if transactional and self._snapshot is None:
            raise InvalidArgumentError(f"stream {self.stream!r} is transactional: reading it needs the transaction "
                                       "manager (sw.txn), which this client does not have")

        def join(state: _State) -> bool:
            if reader_id in state.readers:
                raise ReaderExistsError(f"reader {reader_id!r} is a member of group {self.name!r} already")
            if len(state.readers) >= READERS_MAX:
                raise InvalidArgumentError(f"a reader group has at most {READERS_MAX} readers")
            state.readers[reader_id] = {}
            return True

        self._change(join)
        return EventReader(self, self._logs, reader_id, self._conf, config or ReaderConfig(),
                           self._snapshot if transactional else None, framed=stream_config.framed)

    def reader_offline(self, reader_id: str) -> bool:
        """Remove a reader (one that vanished without closing): its segments go back to the pool at
        the positions it last stored. False if it was not a member."""
        check_part(reader_id, "reader")
        gone = False

        def offline(state: _State) -> bool:
            nonlocal gone
            held = state.readers.pop(reader_id, None)
            gone = held is not None
            if held is not None:
                state.pool.update(held)
            return gone

        self._change(offline)
        return gone

    def readers(self) -> builtins.list[str]:
        return sorted(self._read()[0].readers)


# --- one reader ----------------------------------------------------------------------------------


class EventReader:
    """One member of a reader group: reads the segments the group gives it. Used by one thread."""

    def __init__(self, group: ReaderGroup, logs: LogsApi, reader_id: str, conf: _Conf, config: ReaderConfig,
                 snapshot: SnapshotSource | None = None, *, framed: bool = False) -> None:
        self._group = group
        self._aborted = group.aborted
        self._logs = logs
        self.reader_id = reader_id
        self._conf = conf
        self._config = config
        self._reader = logs.reader(config.buffered_items_max)
        self._positions: dict[int, int] = {}  # held segment -> next LSN to deliver
        self._segment_of: dict[int, int] = {}  # log -> held segment
        self._items: deque[Any] = deque()
        self._finished: dict[int, tuple[int, bool]] = {}  # segment -> (end position, read to its seal)
        self._scalings: dict[int, _Scaling | None] = {}
        self._group_done = False
        self._closed = False
        self._framed = framed or snapshot is not None
        """Whether the stream's records carry a header (with routing keys, write pointers)."""
        self._snapshot_source = snapshot
        """Set for a transactional stream (transactions' events are delivered as snapshots of the
        manager say)."""
        self._snapshot: Snapshot | None = None
        self._snapshot_s = -math.inf  # when it was taken (monotonic)
        self._fetched_s = 0.0  # when the items being consumed were known to be stored
        self._waiting: dict[int, tuple[int, int]] = {}
        """Segments stopped at a transaction in progress -> (their log, its write pointer); their
        logs are not read meanwhile, and their position is that event's."""
        self._poll_s = config.txn_poll_s_min
        self._poll_at_s = 0.0
        self._sync_at_s = 0.0

    def __repr__(self) -> str:
        return f"EventReader({self._group.name!r}, {self.reader_id!r})"

    @property
    def segments(self) -> builtins.list[int]:
        """The segments this reader holds (as of its last look at the group)."""
        return sorted(self._positions)

    def read_next(self, timeout_s: float | None = 0.0) -> Event | None:
        """The next event of the segments this reader holds; waits up to ``timeout_s`` (None:
        forever) for one. None on timeout, or at once when the group has read everything up to its
        end cut (or the end of a sealed stream). :class:`ReaderOfflineError` if the reader was
        declared offline, :class:`UnknownReaderGroupError` if the group was deleted.
        :class:`StreamTruncatedError` (once per segment) when events this reader was to read next
        were truncated away: the next call goes on from where the stream's events now begin."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        polled = False  # the last wait was cut short only to look at stopped segments again
        while True:
            self._check_open()
            if self._items:
                if self._finished:
                    # A segment finished with the event handed over last: the application has
                    # handled it (it asks for the next), so now the group may know the segment is
                    # done and read what comes after it. Stored before the event was handled, a
                    # crash meanwhile would lose it.
                    self._sync()
                event = self._consume(self._items.popleft())
                if event is not None:
                    return event
                if self._finished:
                    self._sync()  # at once (nothing was handed over): the segments after it may now be read
                continue
            if not polled or time.monotonic() >= self._sync_at_s:
                self._sync()  # once per batch: store positions, take or give segments
                self._sync_at_s = time.monotonic() + self._config.sync_interval_s
            if self._group_done:
                return None
            if self._waiting:
                self._look_again()
            remaining = None if deadline is None else deadline - time.monotonic()
            wait_s = self._config.sync_interval_s if remaining is None else \
                max(0.0, min(remaining, self._config.sync_interval_s))
            polled = bool(self._waiting) and self._poll_at_s - time.monotonic() < wait_s
            if polled:
                wait_s = max(0.0, self._poll_at_s - time.monotonic())
            if len(self._positions) > len(self._waiting):  # some held segment is being read
                try:
                    self._items.extend(self._reader.read(self._config.batch_items_max, wait_s))
                    self._fetched_s = time.monotonic()
                except UnknownLogError as exc:  # LogDeletedError among them: truncation, or worse
                    lost = self._lost(list(self._positions), exc)
                    if lost is not None:
                        raise lost from None
                    continue  # what was deleted had been read: its successors come next
            elif wait_s > 0:
                time.sleep(wait_s)  # nothing read: another process must release segments, or end a transaction
            if not self._items and remaining is not None and remaining <= wait_s:
                return None

    def __iter__(self) -> Iterator[Event]:
        """Every event, each as :meth:`read_next` gives it, waiting for more for as long as it
        takes (a consumer's loop: ``for event in reader:``). It ends when the group has read
        everything up to its end cut, or to the end of a sealed stream. An error ends it as it
        would end ``read_next``; iterating again goes on from where the reader is."""
        while (event := self.read_next(timeout_s=None)) is not None:
            yield event

    def _consume(self, item: Any) -> Event | None:
        segment = self._segment_of.get(item.log_id)
        if segment is None or segment in self._finished:
            return None  # of a segment given away meanwhile
        bound = self._conf.bound(segment)
        if type(item) is Record:
            payload = item.payload
            routing_key = None
            if self._framed:
                write_pointer, routing_key, payload = unframe_keyed(payload)
                if write_pointer and self._snapshot_source is None:
                    raise CorruptionError(f"segment {segment_str(segment)} position {item.lsn}: a transaction's "
                                          f"event in stream {self._conf.stream!r}, which is not transactional")
                seen = Visibility.VISIBLE if not write_pointer else self._visibility(write_pointer, item.log_id)
                if seen is Visibility.WAIT:
                    self._wait_at(segment, item.log_id, item.lsn, write_pointer)
                    return None
                if seen is Visibility.SKIP:  # aborted or timed out: never delivered
                    self._advance(segment, item.lsn, bound)
                    return None
            self._advance(segment, item.lsn, bound)
            return Event(payload, segment, item.lsn, item.timestamp_ms, dict(self._positions), routing_key)
        gap: Gap = item
        if gap.type is GapType.SEALED:
            self._finished[segment] = (gap.lsn_lo if bound is None else bound, bound is None)
            return None
        # Trimmed, lost or never written: nothing to deliver there; go on after it.
        self._positions[segment] = gap.lsn_hi + 1
        if bound is not None and gap.lsn_hi + 1 >= bound:
            self._finished[segment] = (bound, False)
        if gap.type is GapType.TRIM:  # events that were there are gone: the reader must know
            raise StreamTruncatedError(
                f"stream {self._conf.stream!r} was truncated under reader {self.reader_id!r}: segment "
                f"{segment_str(segment)} lost positions {gap.lsn_lo}-{gap.lsn_hi}; reading goes on from "
                f"{gap.lsn_hi + 1}")
        return None

    def _advance(self, segment: int, lsn: int, bound: int | None) -> None:
        """The event at ``lsn`` is delivered (or stepped over): the segment's position is after it."""
        self._positions[segment] = lsn + 1
        if bound is not None and lsn + 1 >= bound:
            self._finished[segment] = (bound, False)

    # --- transactions (on a transactional stream) -----------------------------------------------

    def _fresh_snapshot(self) -> Snapshot:
        invariant(self._snapshot_source is not None, f"{self!r}: a snapshot of a non-transactional stream")
        assert self._snapshot_source is not None  # for mypy
        self._snapshot_s = time.monotonic()
        self._snapshot = self._snapshot_source()
        return self._snapshot

    def _visibility(self, write_pointer: int, log_id: int) -> Visibility:
        """What to do with an event of transaction ``write_pointer`` in log ``log_id``. VISIBLE
        and SKIP are final (a transaction's outcome never changes), so any snapshot decides them; a
        WAIT is checked once more with a snapshot taken after the event was read, so that the reader
        does not stop at a transaction its old snapshot did not know had ended. One the snapshot
        calls visible is skipped all the same if the log lists it as aborted (dropped from the
        invalid list since: :class:`~seaway.txn.LogJudge`)."""
        snapshot = self._snapshot
        if snapshot is None or (snapshot.visibility(write_pointer) is Visibility.WAIT
                                and self._snapshot_s < self._fetched_s):
            snapshot = self._fresh_snapshot()
        return self._aborted.judge(log_id, snapshot, write_pointer)

    def _wait_at(self, segment: int, log_id: int, lsn: int, write_pointer: int) -> None:
        """Stop ``segment`` at its event at ``lsn`` (of a transaction in progress): deliver nothing
        after it, and stop reading its log (so that nothing piles up meanwhile) until
        :meth:`_look_again` finds the transaction ended."""
        self._positions[segment] = lsn
        if not self._waiting:
            self._poll_s = self._config.txn_poll_s_min
            self._poll_at_s = time.monotonic() + self._poll_s
        self._waiting[segment] = (log_id, write_pointer)
        self._reader.stop_reading(log_id)
        self._items = deque(i for i in self._items if i.log_id != log_id)

    def _look_again(self) -> None:
        """When due: with a fresh snapshot, read on the stopped segments whose transaction ended
        (from the event they stopped at, decided again); back off while none did."""
        now = time.monotonic()
        if now < self._poll_at_s:
            return
        snapshot = self._fresh_snapshot()
        ended = [s for s, (_, wp) in self._waiting.items() if snapshot.visibility(wp) is not Visibility.WAIT]
        self._poll_s = self._config.txn_poll_s_min if ended else min(2 * self._poll_s, self._config.txn_poll_s_max)
        self._poll_at_s = now + self._poll_s
        missing: builtins.list[int] = []
        error: SeawayError | None = None
        for segment in ended:
            log_id, _ = self._waiting.pop(segment)
            try:
                self._start(segment, log_id, self._positions[segment])
            except UnknownLogError as exc:  # truncated away meanwhile
                missing.append(segment)
                error = exc
        if error is not None:
            raised = self._lost(missing, error)
            if raised is not None:
                raise raised

    def _lost(self, candidates: builtins.list[int], error: SeawayError) -> SeawayError | None:
        """After the log layer said a log this reader reads (or was to start reading) is gone: the
        segments among ``candidates`` that truncation deleted (wholly below the stream's head) are
        finished as if read to their seal, so that their successors come next, and the error to
        raise names them; None if they had been read to their end (nothing lost). Any other cause
        of a missing log (the stream deleted) is returned as it was."""
        meta = self._group.stream_handle.metadata
        truncation = meta.truncation()
        records = meta.segment_records(candidates)
        gone = [s for s in candidates if truncation is not None and s in records and truncation.below(records[s])]
        if not gone:
            return error
        ends = meta.sealed_ends(gone)
        lost: builtins.list[str] = []
        for segment in gone:
            position = self._positions.get(segment, LSN_OLDEST)
            self._stop(segment)
            bound = self._conf.bound(segment)
            self._finished[segment] = (position if bound is None else bound, bound is None)
            final = ends.get(segment, (0, LSN_MAX))[1]
            if position <= final and (bound is None or position < bound):
                lost.append(f"{segment_str(segment)} from position {position}")
        if not lost:
            return None
        return StreamTruncatedError(
            f"stream {self._conf.stream!r} was truncated under reader {self.reader_id!r}: segment "
            f"{', '.join(lost)} deleted before it was read; reading goes on from its successors")

    def _scaling(self, segment: int) -> _Scaling | None:
        """The scaling that sealed ``segment`` (None: sealed with its stream, no successor)."""
        if segment not in self._scalings:
            stream = self._group.stream_handle
            successors = stream.successors(segment)
            if not successors:
                self._scalings[segment] = None
            else:
                generation = generation_of(next(iter(successors)).id)
                delta = stream.history(after=generation - 1, limit=1)[0]
                self._scalings[segment] = _Scaling(
                    delta.sealed, tuple((s.id, s.log_id, s.key_lo, s.key_hi) for s in delta.created))
        return self._scalings[segment]

    def _sync(self, leave: bool = False) -> _State:
        """Store positions and finished segments, then take or give segments; start and stop
        reading the logs accordingly. With ``leave``, give every segment back and leave."""
        scalings = {s: self._scaling(s) for s, (_, sealed) in self._finished.items() if sealed}
        rid = self.reader_id
        taken: dict[int, int] = {}
        given: list[int] = []

        def edit(state: _State) -> bool:
            taken.clear()
            given.clear()
            held = state.readers.get(rid)
            if held is None:
                raise ReaderOfflineError(f"reader {rid!r} is no longer a member of group {self._group.name!r}")
            before = (dict(held), len(state.pool), len(state.finished))
            for segment in list(held):
                if segment in self._positions:
                    held[segment] = self._positions[segment]
            for segment, (end, _) in self._finished.items():
                held.pop(segment, None)
                state.finish(self._conf, segment, end, scalings.get(segment))
            if leave:
                state.pool.update(held)
                del state.readers[rid]
                return True
            self._balance(state, held, taken, given)
            return (dict(held), len(state.pool), len(state.finished)) != before

        try:
            state = self._group._change(edit)
        except ReaderOfflineError:
            self._shut()
            raise
        self._finished.clear()
        for segment in given:
            self._stop(segment)
        missing: builtins.list[int] = []
        error: SeawayError | None = None
        for segment, position in taken.items():
            try:
                self._start(segment, state.log_ids[segment], position)
            except UnknownLogError as exc:  # deleted by a truncation since it was pooled, or worse
                missing.append(segment)
                error = exc
        for segment in [s for s in self._positions if s not in state.readers.get(rid, {})]:
            self._stop(segment)  # finished: its log is done
        self._group_done = not state.pool and not any(state.readers.values())
        if error is not None:
            raised = self._lost(missing, error)
            if raised is not None:
                raise raised
        return state

    @staticmethod
    def _balance(state: _State, held: dict[int, int], taken: dict[int, int], given: list[int]) -> None:
        total = len(state.pool) + sum(len(s) for s in state.readers.values())
        readers = len(state.readers)
        high, low = math.ceil(total / readers), total // readers
        if len(held) < high and state.pool:
            for segment in sorted(state.pool)[:high - len(held)]:  # oldest generations first
                taken[segment] = held[segment] = state.pool.pop(segment)
        elif len(held) > high or (len(held) == high > low and not state.pool
                                  and min(len(s) for s in state.readers.values()) < low):
            segment = max(held)  # the newest: the oldest are nearer their end
            state.pool[segment] = held.pop(segment)
            given.append(segment)

    def _start(self, segment: int, log_id: int, position: int) -> None:
        """Read ``segment`` from ``position``; held even if its log is gone (the error raised), so
        that :meth:`_lost` finishes it."""
        bound = self._conf.bound(segment)
        self._positions[segment] = position
        self._segment_of[log_id] = segment
        self._reader.start_reading(log_id, position, LSN_MAX if bound is None else bound - 1)

    def _stop(self, segment: int) -> None:
        self._positions.pop(segment, None)
        self._waiting.pop(segment, None)
        for log_id in [log for log, s in self._segment_of.items() if s == segment]:
            del self._segment_of[log_id]
            self._reader.stop_reading(log_id)
            self._items = deque(i for i in self._items if i.log_id != log_id)

    def _drop_all(self) -> None:
        for segment in list(self._positions):
            self._stop(segment)
        self._items.clear()

    def checkpoint(self) -> StreamCut:
        """Store this reader's positions now, and return the group's checkpoint
        (:meth:`ReaderGroup.checkpoint`)."""
        self._check_open()
        self._sync()
        return self._group.checkpoint()

    def close(self) -> None:
        """Leave the group: the segments held go back to the pool at the positions delivered.
        Idempotent."""
        if self._closed:
            return
        try:
            self._sync(leave=True)
        except (ReaderOfflineError, UnknownReaderGroupError):
            pass  # nothing to give back
        finally:
            self._shut()

    def _shut(self) -> None:
        self._closed = True
        self._drop_all()
        self._reader.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"reader {self.reader_id!r} is closed")

    def __enter__(self) -> EventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
