"""``sw.streams``: scopes and streams, the same over an embedded store and a server."""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seaway._clock import Clock, SystemClock
from seaway.errors import (
    InvalidArgumentError,
    InvalidStreamCutError,
    ReaderGroupExistsError,
    ScopeExistsError,
    StreamExistsError,
    UnknownReaderGroupError,
    UnknownStreamError,
)
from seaway.log import LSN_OLDEST, LogsApi, MetaApi
from seaway.streams._config import FixedSegments, RetentionPolicy, ScalingPolicy, StreamConfig
from seaway.streams._controller import StreamController
from seaway.streams._cut import StreamCut
from seaway.streams._metadata import StreamMetadata, cut_order
from seaway.streams._names import parse_segment, split_stream_name
from seaway.streams._reader_group import ReaderGroup, ReaderGroups
from seaway.streams._records import Delta, Generation, Segment
from seaway.streams._writer import EventWriter, WriterConfig

if TYPE_CHECKING:
    from seaway.txn import Transactions

HISTORY_LIMIT_MAX = 10_000


@dataclass(frozen=True)
class StreamInfo:
    """What ``describe()`` shows."""

    name: str
    config: StreamConfig
    state: str
    created_ms: int
    generation: int
    segments: tuple[Segment, ...]
    head: StreamCut
    scaling_under_way: bool


class Stream:
    """A handle on one stream (cheap: it holds no state but its name)."""

    def __init__(self, controller: StreamController, scope: str, stream: str) -> None:
        self._controller = controller
        self._meta = controller.stream(scope, stream)
        self.scope = scope
        self.stream = stream
        self.name = f"{scope}/{stream}"

    def __repr__(self) -> str:
        return f"Stream({self.name!r})"

    # --- configuration and state ---------------------------------------------------------------

    def describe(self) -> StreamInfo:
        state, _ = self._meta.state()
        current, _, _ = self._meta.current()
        return StreamInfo(self.name, state.config, state.state, state.created_ms, current.generation,
                          current.segments, self.head(), self._meta.transition() is not None)

    @property
    def config(self) -> StreamConfig:
        return self._meta.state()[0].config

    def update(self, *, scaling: ScalingPolicy | None = None, retention: RetentionPolicy | None = None,
               clear_retention: bool = False) -> StreamConfig:
        """Change the scaling and/or retention policy; returns the new configuration."""
        old = self.config
        config = StreamConfig(scaling or old.scaling,
                              None if clear_retention else retention if retention is not None else old.retention,
                              old.transactional, old.store_routing_keys)
        self._controller.update(self._meta, config)
        return config

    def seal(self) -> None:
        self._controller.seal(self._meta)

    def writer(self, writer_id: str | None = None, config: WriterConfig | None = None) -> EventWriter:
        """A new :class:`EventWriter` of this stream (close it when done)."""
        return EventWriter(self, self._controller.logs, writer_id, config)

    def delete(self) -> None:
        self._controller.delete(self._meta)

    # --- scaling --------------------------------------------------------------------------------

    def scale(self, sealed: builtins.list[int | str], ranges: builtins.list[tuple[float, float]],
              reason: str = "manual") -> Generation:
        """Replace adjacent current segments by new ones over exactly their key ranges."""
        return self._controller.scale(self._meta, [parse_segment(s) for s in sealed], ranges, reason)

    def split(self, segment: int | str, ways: int = 2) -> Generation:
        return self._controller.split(self._meta, parse_segment(segment), ways)

    def merge(self, segments: builtins.list[int | str]) -> Generation:
        return self._controller.merge(self._meta, [parse_segment(s) for s in segments])

    # --- queries (each a constant number of metadata reads) -------------------------------------

    def current_segments(self) -> builtins.list[Segment]:
        return list(self._meta.current()[0].segments)

    def segments_at(self, time_ms: int) -> builtins.list[Segment]:
        return self._meta.segments_at(time_ms)

    def successors(self, segment: int | str) -> dict[Segment, builtins.list[int]]:
        return self._meta.successors(parse_segment(segment))

    def predecessors(self, segment: int | str) -> builtins.list[Segment]:
        return self._meta.predecessors(parse_segment(segment))

    def segments_between(self, lower: StreamCut, upper: StreamCut) -> builtins.list[Segment]:
        """Every segment with events between two cuts (the lower not after the upper)."""
        _, (low, high) = self._controller.check_cuts(self._meta, lower, upper)
        if cut_order(low, high) > 0:
            raise InvalidStreamCutError("the lower stream cut is after the upper one")
        return self._meta.segments_between([s for s, _ in low], [s for s, _ in high])

    def size_until(self, cut: StreamCut) -> int:
        """Bytes of the segments wholly before the cut (see :meth:`StreamMetadata.size_until`)."""
        _, (pairs,) = self._controller.check_cuts(self._meta, cut)
        return self._meta.size_until(pairs)

    def compare(self, a: StreamCut, b: StreamCut) -> int:
        """-1, 0 or 1 as cut ``a`` is before, equal to or after ``b``; :class:`InvalidStreamCutError`
        if neither is (each is ahead in part of the key space)."""
        _, (first, second) = self._controller.check_cuts(self._meta, a, b)
        return cut_order(first, second)

    def head(self) -> StreamCut:
        """Where the stream's events begin: its truncation cut, or the start of the first segments."""
        truncation = self._meta.truncation()
        if truncation is not None:
            return StreamCut(self.name, truncation.positions)
        return StreamCut(self.name, {s.id: LSN_OLDEST for s in self._meta.generation(0).segments})

    def tail(self) -> StreamCut:
        """Just after the last event of each current segment (their logs' tails asked in one call)."""
        logs = self._controller.logs
        segments = self.current_segments()
        bounds = logs.bounds([s.log_id for s in segments])
        return StreamCut(self.name, {s.id: (bounds[s.log_id].tail_lsn if s.log_id in bounds
                                            else logs.get(s.log_id).tail_lsn()) + 1 for s in segments})

    def events_after(self, cut: StreamCut, end: Mapping[int, int] | None = None) -> dict[int, int]:
        """Segment -> events after ``cut`` (a consistent cut: a reader group's positions, a Spark
        query's committed offset) up to the tail, or up to ``end`` (an end cut's positions): the
        segments of the cut from their positions, those created after them (not reached yet) from
        their start, each to its end. What a reader at ``cut`` has left to read: its lag. Counted
        with the log layer's ``count_records`` (one call), never by reading: a segment truncated
        away counts nothing, nor the part of one below its trim point. On a transactional stream
        the events of transactions still open or aborted count too (telling them apart would mean
        reading them)."""
        positions = dict(cut.positions)
        upper = self.tail() if end is None else StreamCut(self.name, end)
        try:
            segments = self.segments_between(cut, upper)
        except InvalidStreamCutError:  # past the end cut somewhere (not expected): count to the tail
            end, upper = None, self.tail()
            segments = self.segments_between(cut, upper)
        ranges: dict[int, tuple[int, int | None]] = {}
        by_log: dict[int, int] = {}
        for segment in segments:
            until = None if end is None else end.get(segment.id)
            ranges[segment.log_id] = (positions.get(segment.id, LSN_OLDEST), None if until is None else until - 1)
            by_log[segment.log_id] = segment.id
        counts = self._controller.logs.count_records(ranges) if ranges else {}
        return {segment: int(counts.get(log_id, 0)) for log_id, segment in sorted(by_log.items(), key=lambda i: i[1])}

    def history(self, after: int = 0, limit: int = 1000) -> builtins.list[Delta]:
        """The scalings that made generations ``after + 1`` onwards, oldest first."""
        if not isinstance(limit, int) or not 1 <= limit <= HISTORY_LIMIT_MAX:
            raise InvalidArgumentError(f"limit is in [1, {HISTORY_LIMIT_MAX}], got {limit!r}")
        current = self._meta.current()[0].generation
        return self._meta.deltas(after, min(current, after + limit))

    def truncate(self, cut: StreamCut) -> None:
        self._controller.truncate(self._meta, cut)

    def record_cut(self) -> StreamCut:
        """Record the tail as a stream cut in the retention set; return it."""
        return self._controller.record_cut(self._meta, self.tail())

    def cut_at_time(self, time_ms: int) -> StreamCut | None:
        """The last recorded stream cut at or before ``time_ms`` (None if there is none)."""
        return self._recorded_cut(lambda cuts: bisect.bisect_right([t for t, _ in cuts], time_ms))

    def cut_at_size(self, size: int) -> StreamCut | None:
        """The last recorded stream cut with at most ``size`` bytes before it (None if none)."""
        return self._recorded_cut(lambda cuts: bisect.bisect_right([s for _, s in cuts], size))

    def _recorded_cut(self, count: Callable[[builtins.list[tuple[int, int]]], int]) -> StreamCut | None:
        """The last of the first ``count(retention set)`` recorded cuts (2 reads)."""
        cuts = self._meta.retention_set()
        i = count(cuts)
        if i == 0:
            return None
        return StreamCut(self.name, self._meta.recorded_cut(cuts[i - 1][0])[1])

    @property
    def metadata(self) -> StreamMetadata:
        """The stream's metadata records (for tools and tests)."""
        return self._meta


class Streams:
    """Scopes and streams of a store (``sw.streams``); the same embedded and remote.

    ``txn`` is the store's transactions (``sw.txn``), which readers of transactional streams ask
    for snapshots; without it (a client that has none) such streams can be written outside
    transactions but not read by reader groups."""

    def __init__(self, logs: LogsApi, meta: MetaApi, clock: Clock | None = None,
                 txn: Transactions | None = None) -> None:
        self._controller = StreamController(logs, meta, clock or SystemClock())
        self._txn = txn

    @property
    def controller(self) -> StreamController:
        return self._controller

    def create_scope(self, scope: str, *, exist_ok: bool = False) -> None:
        """Create a scope (:class:`ScopeExistsError` if there is one, unless ``exist_ok``)."""
        try:
            self._controller.create_scope(scope)
        except ScopeExistsError:
            if not exist_ok:
                raise

    def delete_scope(self, scope: str) -> None:
        self._controller.delete_scope(scope)

    def scopes(self) -> builtins.list[str]:
        return self._controller.list_scopes()

    def list(self, scope: str) -> builtins.list[str]:
        """The names (``scope/stream``) of a scope's streams."""
        return [f"{scope}/{s}" for s in self._controller.list_streams(scope)]

    def create(self, name: str, *, scaling: ScalingPolicy | None = None, retention: RetentionPolicy | None = None,
               segments: int | None = None, transactional: bool = False,
               store_routing_keys: bool = False) -> Stream:
        """Create stream ``scope/stream`` (its scope must exist) with ``segments`` segments (default:
        the scaling policy's minimum). ``transactional`` (fixed for the stream's life) lets events
        be written in transactions; ``store_routing_keys`` (fixed too) keeps each event's routing
        key for readers. With either, records carry a small header, and keys are kept."""
        scope, stream = split_stream_name(name)
        if scaling is None:
            scaling = FixedSegments(segments if isinstance(segments, int) and not isinstance(segments, bool)
                                    and segments >= 1 else 1)
        config = StreamConfig(scaling, retention, transactional, store_routing_keys)
        self._controller.create_stream(scope, stream, config, segments)
        return Stream(self._controller, scope, stream)

    def get_or_create(self, name: str, *, scaling: ScalingPolicy | None = None,
                      retention: RetentionPolicy | None = None, segments: int | None = None,
                      transactional: bool = False, store_routing_keys: bool = False) -> Stream:
        """The stream with this name, created (as :meth:`create` would) if there is none.

        An existing stream must have what is asked of it: the ``scaling`` and ``retention`` given
        (None: any), the number of ``segments`` given of a fixed scaling, and transactions or routing
        keys when ``transactional`` or ``store_routing_keys`` is True. Otherwise
        :class:`StreamExistsError` says what differs (change a policy with :meth:`Stream.update`)."""
        try:
            found = self.get(name)
        except UnknownStreamError:
            try:
                return self.create(name, scaling=scaling, retention=retention, segments=segments,
                                   transactional=transactional, store_routing_keys=store_routing_keys)
            except StreamExistsError:
                found = self.get(name)  # created meanwhile by another process
        differs = _differences(found.config, scaling, retention, segments, transactional, store_routing_keys)
        if differs:
            raise StreamExistsError(f"stream {found.name!r} exists with another configuration: {'; '.join(differs)} "
                                    "(Stream.update changes its policies; the rest is fixed for its life)")
        return found

    def get(self, name: str) -> Stream:
        """A stream by name; :class:`UnknownStreamError` if there is none."""
        scope, stream = split_stream_name(name)
        handle = Stream(self._controller, scope, stream)
        state, _ = handle.metadata.state()
        if state.state == "deleting":
            raise UnknownStreamError(f"stream {name!r} is being deleted")
        return handle

    def create_reader_group(self, name: str, stream: str | Stream, start: StreamCut | None = None,
                            end: StreamCut | None = None, *, retention_subscribed: bool = False) -> ReaderGroup:
        """A reader group over ``stream`` (see :mod:`seaway.streams._reader_group`); with
        ``retention_subscribed``, its checkpoint holds back the stream's retention."""
        return self._reader_groups().create(name, stream, start, end, retention_subscribed=retention_subscribed)

    def reader_group(self, name: str) -> ReaderGroup:
        return self._reader_groups().get(name)

    def get_or_create_reader_group(self, name: str, stream: str | Stream) -> ReaderGroup:
        """The reader group with this name, created over ``stream`` from its head if there is none;
        :class:`ReaderGroupExistsError` if the group there reads another stream."""
        try:
            found = self.reader_group(name)
        except UnknownReaderGroupError:
            try:
                return self.create_reader_group(name, stream)
            except ReaderGroupExistsError:
                found = self.reader_group(name)
        asked = stream if isinstance(stream, str) else stream.name
        if found.stream != asked:
            raise ReaderGroupExistsError(f"reader group {name!r} exists and reads stream {found.stream!r}, not "
                                         f"{asked!r}")
        return found

    def list_reader_groups(self, limit: int | None = None) -> builtins.list[str]:
        """The names of the reader groups (of every stream), in name order: the first ``limit``
        (all when None)."""
        return self._reader_groups().names(limit)

    def delete_reader_group(self, name: str) -> None:
        self._reader_groups().delete(name)

    def _reader_groups(self) -> ReaderGroups:
        return ReaderGroups(self._controller.logs, self._controller.meta, self.get,
                            None if self._txn is None else self._txn.snapshot)

    def recover(self) -> int:
        """Finish the changes processes left half-done (a server does this when it starts)."""
        return self._controller.recover()


def _differences(config: StreamConfig, scaling: ScalingPolicy | None, retention: RetentionPolicy | None,
                 segments: int | None, transactional: bool, store_routing_keys: bool) -> builtins.list[str]:
    """What an existing stream's ``config`` lacks of what :meth:`Streams.get_or_create` was asked."""
    differs = []
    if scaling is not None and scaling != config.scaling:
        differs.append(f"scaling is {config.scaling!r}, not {scaling!r}")
    elif scaling is None and segments is not None and isinstance(config.scaling, FixedSegments) \
            and config.scaling.count != segments:
        differs.append(f"it has a fixed {config.scaling.count} segments, not {segments}")
    if retention is not None and retention != config.retention:
        differs.append(f"retention is {config.retention!r}, not {retention!r}")
    if transactional and not config.transactional:
        differs.append("it is not transactional")
    if store_routing_keys and not config.store_routing_keys:
        differs.append("it does not store routing keys")
    return differs
