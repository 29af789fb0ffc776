"""The stream controller: every control-plane change of scopes and streams.

Each change is one atomic batch of the metadata store, guarded by compare-and-set on the records
it read, so that any number of processes may make changes at once: one wins, the others get a
typed error (or retry, where that is safe). A scaling is a sequence of idempotent steps, each
re-runnable, recorded first in the transition record so that whoever finds it (the next change of
that stream, or :meth:`StreamController.recover` when a process starts) finishes it:

1. record the transition: the delta (segments to seal, segments to create), if none is under way
   and the current generation is the one the plan was made from;
2. create the new segments' logs and note their ids in it, in one batch (the logs are created in
   the same write as the record naming them: a crash leaves both or neither);
3. write the new generation: its record, ``cur``, the delta in the history, the time index, and
   each sealed segment's sealing generation;
4. seal the old segments' logs: writers that meet the seal look up the successors, which exist;
5. record the sealed segments' sizes and final LSNs, and remove the transition record.

Writes go on throughout: until step 4, to the old segments; after, to the new ones.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Callable, Sequence

from seaway._clock import Clock
from seaway.errors import (
    ConditionFailedError,
    InvalidArgumentError,
    InvalidStreamCutError,
    LogDeletedError,
    LogExistsError,
    LsnOutOfRangeError,
    ScaleConflictError,
    ScopeExistsError,
    ScopeNotEmptyError,
    StreamChangedError,
    StreamExistsError,
    StreamNotSealedError,
    StreamSealedError,
    UnknownLogError,
    UnknownScopeError,
    UnknownStreamError,
)
from seaway.ledger import (
    RetentionApplied,
    ScopeCreated,
    ScopeDeleted,
    StreamCreated,
    StreamDeleted,
    StreamScaled,
    StreamSealed,
    StreamTruncated,
    StreamUpdated,
)
from seaway.log import LSN_OLDEST, LogsApi, MetaApi, MetaBatch
from seaway.streams._config import SEGMENTS_MAX, StreamConfig
from seaway.streams._cut import StreamCut, check_consistent
from seaway.streams._metadata import (
    NAMESPACE,
    RETENTION_CUTS_MAX,
    StreamMetadata,
    StreamState,
    Truncation,
    as_json,
    config_json,
    creating_key,
    cut_order,
    index_key,
    scope_key,
    thinned_cut,
    wholly_before,
)
from seaway.streams._names import check_part, segment_id, segment_str
from seaway.streams._records import Delta, Generation, Segment, check_cover, even_ranges

log = logging.getLogger("seaway.streams")

SEGMENTS_GROUP = "streams.segments"
"""The log group reserved for segments' logs."""
SEGMENT_LOG_IDS = (2**60, 2**61 - 1)
LIST_MAX = 10_000
CREATE_ATTEMPTS_MAX = 100
"""Times a stream creation re-reads its scope when other creations in it came first."""


def segment_log_name(scope: str, stream: str, uid: str, segment: int) -> str:
    """The name of a segment's log: the stream's uid keeps a stream created again under the same
    name from meeting the logs of the one before."""
    return f"seg/{scope}/{stream}/{uid}/{segment_str(segment)}"


class StreamController:
    """Control-plane changes over a store's logs (``sw.logs``) and metadata store (``sw.meta``),
    embedded or remote alike. Thread-safe: every change is a conditional batch."""

    def __init__(self, logs: LogsApi, meta: MetaApi, clock: Clock) -> None:
        self.logs = logs
        self.meta = meta
        self.clock = clock
        self._group_ready = False
        self.after_step: Callable[[int], None] | None = None
        """Called after each step of a scaling with its number (1-5): where tests stop a scaling
        as a crash would."""

    # --- scopes ---------------------------------------------------------------------------------

    def create_scope(self, scope: str) -> None:
        check_part(scope, "scope")
        try:
            self.meta.batch().expect_absent(NAMESPACE, scope_key(scope)).put(
                NAMESPACE, scope_key(scope), str(self.clock.now_ms()).encode()).record(ScopeCreated(scope)).commit()
        except ConditionFailedError:
            raise ScopeExistsError(f"scope {scope!r} exists") from None

    def scope_version(self, scope: str) -> int:
        found = self.meta.get(NAMESPACE, scope_key(check_part(scope, "scope")))
        if found is None:
            raise UnknownScopeError(f"scope {scope!r} does not exist")
        return found.version

    def list_scopes(self) -> list[str]:
        return [key.decode().partition("/")[2] for key, _ in self.meta.scan(NAMESPACE, prefix=b"scope/",
                                                                             limit=LIST_MAX)]

    def list_streams(self, scope: str) -> list[str]:
        self.scope_version(scope)
        prefix = index_key(scope, "")
        return [key[len(prefix):].decode() for key, _ in self.meta.scan(NAMESPACE, prefix=prefix, limit=LIST_MAX)]

    def delete_scope(self, scope: str) -> None:
        """Delete an empty scope; :class:`ScopeNotEmptyError` while it holds streams (or one is
        being created in it)."""
        version = self.scope_version(scope)
        if self.meta.scan(NAMESPACE, prefix=index_key(scope, ""), limit=1) or self.meta.scan(
                NAMESPACE, prefix=creating_key(scope, ""), limit=1):
            raise ScopeNotEmptyError(f"scope {scope!r} holds streams: delete them first")
        try:  # a stream creation begun meanwhile wrote the scope key (see create_stream): this
            # batch, conditional on the version read before the scans, then fails.
            self.meta.batch().expect_version(NAMESPACE, scope_key(scope), version).delete(
                NAMESPACE, scope_key(scope)).record(ScopeDeleted(scope)).commit()
        except ConditionFailedError:
            raise ScopeNotEmptyError(f"scope {scope!r} changed while being deleted: try again") from None

    # --- streams --------------------------------------------------------------------------------

    def _segment_group(self) -> None:
        if self._group_ready:
            return
        with contextlib.suppress(LogExistsError):
            self.logs.create_group(SEGMENTS_GROUP, *SEGMENT_LOG_IDS)
        self._group_ready = True

    def _make_log(self, meta: StreamMetadata, uid: str, segment: Segment) -> int:
        """The segment's log, created if it is not there yet (a re-run of a step finds it)."""
        self._segment_group()
        name = segment_log_name(meta.scope, meta.stream, uid, segment.id)
        handle = self.logs.get_or_create(name, group=SEGMENTS_GROUP)
        return int(handle.id)

    def _new_log_id(self) -> int:
        """A random id for a new segment log, in the lower half of the segments' group (the upper
        half stays for ids the log layer chooses itself, above the highest one taken): taken
        already only by chance, which the batch that creates the log then refuses
        (:class:`LogExistsError`), and the caller chooses again."""
        lo, hi = SEGMENT_LOG_IDS
        return lo + secrets.randbelow((hi - lo + 1) // 2)

    def _created_logs(self, batch: MetaBatch, meta: StreamMetadata, uid: str, segments: Sequence[Segment],
                      look: bool) -> tuple[Segment, ...]:
        """``segments`` with their logs: those without one get a new id and their log is created by
        ``batch``. ``look``: a segment whose log exists by name already (made by a version that
        created logs before the batch naming them) keeps that one."""
        self._segment_group()
        out: list[Segment] = []
        for s in segments:
            log_id = s.log_id
            name = segment_log_name(meta.scope, meta.stream, uid, s.id)
            if not log_id and look:
                with contextlib.suppress(UnknownLogError):
                    log_id = int(self.logs.get(name).id)
            if not log_id:
                log_id = self._new_log_id()
                batch.create_log(name, log_id, group=SEGMENTS_GROUP)
            out.append(Segment(s.number, s.generation, s.created_ms, s.key_lo, s.key_hi, log_id))
        return tuple(out)

    def create_stream(self, scope: str, stream: str, config: StreamConfig, segments: int | None = None) -> None:
        """Create a stream with ``segments`` segments of equal ranges (default: the scaling
        policy's minimum).

        One metadata batch: the stream's records, its segments' logs (created in the same write,
        :meth:`MetaBatch.create_log`: neither a crash nor a racing change leaves a log that
        nothing names, or a record naming a missing log), and the scope key rewritten, conditional
        on the version read, so that a racing :meth:`delete_scope` fails (and streams created at
        once in one scope race for it: the losers read again and retry)."""
        check_part(stream, "stream")
        if not isinstance(config, StreamConfig):
            raise InvalidArgumentError(f"config must be a StreamConfig, got {config!r:.80}")
        count = config.scaling.min_segments if segments is None else segments
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= SEGMENTS_MAX:
            raise InvalidArgumentError(f"a stream starts with 1-{SEGMENTS_MAX} segments, got {count!r}")
        meta = StreamMetadata(self.meta, scope, stream)
        for _ in range(CREATE_ATTEMPTS_MAX):
            found = self.meta.get(NAMESPACE, scope_key(meta.scope))
            if found is None:
                raise UnknownScopeError(f"scope {meta.scope!r} does not exist")
            if self.meta.get(NAMESPACE, index_key(meta.scope, meta.stream)) is not None \
                    or self.meta.get(NAMESPACE, creating_key(meta.scope, meta.stream)) is not None:
                raise StreamExistsError(f"stream {meta.name!r} exists (or is being created)")
            now = self.clock.now_ms()
            state = StreamState(config, "active", now, secrets.token_hex(6))
            batch = self.meta.batch().expect_version(NAMESPACE, scope_key(meta.scope), found.version).put(
                NAMESPACE, scope_key(meta.scope), found.value).expect_absent(
                NAMESPACE, creating_key(meta.scope, meta.stream))  # one an older version began
            planned = [Segment(n, 0, now, lo, hi) for n, (lo, hi) in enumerate(even_ranges(count))]
            made = self._created_logs(batch, meta, state.uid, planned, look=False)
            try:
                meta.create_batch(batch, state, Generation(0, now, made)).record(
                    StreamCreated(meta.name, count, config_json(config))).commit()
                return
            except (ConditionFailedError, LogExistsError):
                continue  # the scope or the name changed meanwhile, or an id was taken: look again
        raise StreamChangedError(f"scope {meta.scope!r} changed {CREATE_ATTEMPTS_MAX} times while stream "
                                 f"{meta.name!r} was being created: try again")

    def _undo_creations(self) -> int:
        """Remove every creation record left by a process of an older version (which created a
        stream in three steps: this record, the logs, the stream's records) that stopped between
        those steps, and the logs it names; how many. Streams are now created in one batch, which
        writes no such record: this only cleans stores written before."""
        undone = 0
        start = creating_key("", "")
        while rows := self.meta.scan(NAMESPACE, prefix=creating_key("", ""), start=start, limit=LIST_MAX):
            for key, found in rows:
                scope, _, stream = key[len(creating_key("", "")):].decode().partition("/")
                try:
                    data = json.loads(found.value)
                    uid, count = str(data["uid"]), int(data["segments"])
                except (ValueError, KeyError, TypeError):
                    log.warning("a stream creation record cannot be decoded: removed", extra={"key": key})
                    uid, count = "", 0
                with contextlib.suppress(ConditionFailedError):  # another process undid it, or it finished
                    self.meta.batch().expect_version(NAMESPACE, key, found.version).delete(NAMESPACE, key).commit()
                    undone += 1
                    for number in range(min(count, SEGMENTS_MAX)):
                        self._drop_named(segment_log_name(scope, stream, uid, segment_id(0, number)))
            start = rows[-1][0] + b"\x00"
        return undone

    def stream(self, scope: str, stream: str) -> StreamMetadata:
        return StreamMetadata(self.meta, check_part(scope, "scope"), check_part(stream, "stream"))

    def update(self, meta: StreamMetadata, config: StreamConfig) -> None:
        if not isinstance(config, StreamConfig):
            raise InvalidArgumentError(f"config must be a StreamConfig, got {config!r:.80}")
        state, version = meta.state()
        self._check_active(meta, state)
        for name in ("transactional", "store_routing_keys"):  # the segments' record format
            if getattr(config, name) != getattr(state.config, name):
                raise InvalidArgumentError(f"stream {meta.name!r}: {name} is fixed when the stream is created")
        new = StreamState(config, state.state, state.created_ms, state.uid)
        try:
            self.meta.batch().expect_version(NAMESPACE, meta.key("conf"), version).put(
                NAMESPACE, meta.key("conf"), new.encode()).record(
                StreamUpdated(meta.name, config_json(config))).commit()
        except ConditionFailedError:
            raise StreamChangedError(f"stream {meta.name!r} changed meanwhile: read it and try again") from None

    @staticmethod
    def _check_active(meta: StreamMetadata, state: StreamState) -> None:
        if state.state == "sealed":
            raise StreamSealedError(f"stream {meta.name!r} is sealed")
        if state.state != "active":
            raise UnknownStreamError(f"stream {meta.name!r} is being deleted")

    # --- scaling --------------------------------------------------------------------------------

    def scale(self, meta: StreamMetadata, sealed: Sequence[int], ranges: Sequence[tuple[float, float]],
              reason: str = "manual") -> Generation:
        """Replace the ``sealed`` segments (adjacent, all of the current set) by new segments with
        ``ranges``, which must cover exactly the sealed ones' union. Returns the new generation.
        :class:`ScaleConflictError` if the segments are not all current (another scaling changed
        the set first: nothing was done)."""
        self.recover_stream(meta)
        state, conf_version = meta.state()
        self._check_active(meta, state)
        current, next_number, current_version = meta.current()
        sealed_ids = list(dict.fromkeys(sealed))
        if not sealed_ids:
            raise InvalidArgumentError("a scaling seals at least one segment")
        old = [current.find(s) for s in sealed_ids]
        if any(s is None for s in old):
            unknown = [segment_str(i) for i, s in zip(sealed_ids, old, strict=True) if s is None]
            raise ScaleConflictError(f"stream {meta.name!r}: segment {', '.join(unknown)} is not of the current "
                                     f"generation {current.generation}")
        olds = sorted((s for s in old if s is not None), key=lambda s: s.key_lo)
        check_cover([(s.key_lo, s.key_hi) for s in olds], olds[0].key_lo, olds[-1].key_hi,
                    "the sealed segments' ranges (they must be adjacent)")
        new_ranges = check_cover(ranges, olds[0].key_lo, olds[-1].key_hi, "the sealed segments' union")
        if len(current.segments) - len(olds) + len(new_ranges) > SEGMENTS_MAX:
            raise InvalidArgumentError(f"a stream has at most {SEGMENTS_MAX} segments at once")
        g = current.generation + 1
        now = max(self.clock.now_ms(), current.created_ms)  # the time index must not go backwards
        created = tuple(Segment(next_number + i, g, now, lo, hi) for i, (lo, hi) in enumerate(new_ranges))
        delta = Delta(g, now, tuple(s.id for s in olds), created, reason)
        try:
            self.meta.batch().expect_version(NAMESPACE, meta.key("conf"), conf_version).expect_version(
                NAMESPACE, meta.key("cur"), current_version).expect_absent(NAMESPACE, meta.key("trans")).put(
                NAMESPACE, meta.key("trans"), delta.encode()).commit()
        except ConditionFailedError:
            raise ScaleConflictError(f"stream {meta.name!r} changed while planning the scaling (another scaling "
                                     "or a seal came first): read its segments and decide again") from None
        self._stepped(1)
        log.info("scaling", extra={"stream": meta.name, "generation": g, "reason": reason,
                                   "sealed": [segment_str(s) for s in delta.sealed],
                                   "created": [str(s) for s in created]})
        self.recover_stream(meta)
        return meta.generation(g)

    def split(self, meta: StreamMetadata, segment: int, ways: int = 2, reason: str = "manual") -> Generation:
        current, _, _ = meta.current()
        this = current.find(segment)
        if this is None:
            raise ScaleConflictError(f"stream {meta.name!r}: segment {segment_str(segment)} is not current")
        if not isinstance(ways, int) or isinstance(ways, bool) or not 2 <= ways <= 100:
            raise InvalidArgumentError(f"a segment splits in 2-100 ways, got {ways!r}")
        return self.scale(meta, [segment], even_ranges(ways, this.key_lo, this.key_hi), reason)

    def merge(self, meta: StreamMetadata, segments: Sequence[int], reason: str = "manual") -> Generation:
        current, _, _ = meta.current()
        found = [current.find(s) for s in segments]
        if len(found) < 2 or any(s is None for s in found):
            raise ScaleConflictError(f"stream {meta.name!r}: a merge takes two or more current, adjacent segments")
        lo = min(s.key_lo for s in found if s is not None)
        hi = max(s.key_hi for s in found if s is not None)
        return self.scale(meta, segments, [(lo, hi)], reason)

    def recover_stream(self, meta: StreamMetadata) -> None:
        """Finish what a process left half-done on this stream: a scaling (steps 2-5), a seal, a
        truncation or a deletion. Idempotent; safe to run from several processes at once."""
        found = meta.transition()
        if found is not None:
            self._finish_scaling(meta, *found)
        state, _ = meta.state()
        if state.state == "sealed":
            self._seal_current(meta)
        elif state.state == "deleting":
            self._finish_delete(meta)
        truncation = meta.truncation()
        if truncation is not None and truncation.pending:
            self._finish_truncation(meta)

    def recover(self) -> int:
        """Finish every half-done change of every stream (a process runs this when it starts);
        the streams looked at."""
        self._undo_creations()
        seen = 0
        for scope in self.list_scopes():
            for stream in self.list_streams(scope):
                try:
                    self.recover_stream(self.stream(scope, stream))
                except UnknownStreamError:
                    continue  # deleted meanwhile
                seen += 1
        return seen

    # --- seal, delete, truncate -----------------------------------------------------------------

    def seal(self, meta: StreamMetadata) -> None:
        """No more writes: writers get :class:`StreamSealedError`, readers reach its end.
        Idempotent."""
        self.recover_stream(meta)
        state, version = meta.state()
        if state.state == "active":
            sealed = StreamState(state.config, "sealed", state.created_ms, state.uid)
            try:  # the transition record must stay absent: a scaling begun meanwhile is finished first
                self.meta.batch().expect_version(NAMESPACE, meta.key("conf"), version).expect_absent(
                    NAMESPACE, meta.key("trans")).put(NAMESPACE, meta.key("conf"), sealed.encode()).record(
                    StreamSealed(meta.name)).commit()
            except ConditionFailedError:
                return self.seal(meta)
        elif state.state != "sealed":
            raise UnknownStreamError(f"stream {meta.name!r} is being deleted")
        self._seal_current(meta)
        return None

    def _seal_current(self, meta: StreamMetadata) -> None:
        current, _, _ = meta.current()
        for segment in current.segments:
            self._seal_log(segment.log_id)

    def delete(self, meta: StreamMetadata) -> None:
        """Delete a sealed stream: its records and every segment's log. :class:`StreamNotSealedError`
        for an active one."""
        state, version = meta.state()
        if state.state == "active":
            raise StreamNotSealedError(f"stream {meta.name!r} must be sealed before it is deleted")
        if state.state == "sealed":
            deleting = StreamState(state.config, "deleting", state.created_ms, state.uid)
            try:
                self.meta.batch().expect_version(NAMESPACE, meta.key("conf"), version).put(
                    NAMESPACE, meta.key("conf"), deleting.encode()).commit()
            except ConditionFailedError:
                return self.delete(meta)
        self._finish_delete(meta)
        return None

    def _finish_delete(self, meta: StreamMetadata) -> None:
        try:
            _, version = meta.state()
            current, _, _ = meta.current()
        except UnknownStreamError:
            return
        for segment in self._every_segment(meta, current.generation):
            self._drop_log(segment.log_id)
        # Conditional on the "deleting" record as read: of processes finishing the same deletion,
        # one removes the records (and records the change), the others find it done.
        with contextlib.suppress(ConditionFailedError):
            self.meta.batch().expect_version(NAMESPACE, meta.key("conf"), version).delete_prefix(
                NAMESPACE, meta.key("")).delete(NAMESPACE, index_key(meta.scope, meta.stream)).record(
                StreamDeleted(meta.name)).commit()

    def _every_segment(self, meta: StreamMetadata, last: int) -> list[Segment]:
        """Every segment the stream ever had: the first generation's and each delta's."""
        segments = list(meta.generation(0).segments)
        for delta in meta.deltas(0, last):
            segments.extend(delta.created)
        return segments

    def truncate(self, meta: StreamMetadata, cut: StreamCut, *, policy: str | None = None) -> None:
        """Remove every event below ``cut``: segments wholly below it are deleted (their logs
        removed), the others trimmed below their position. A cut below the current head is
        refused (:class:`InvalidStreamCutError`); the same cut again is a no-op. ``policy`` (the
        retention policy as JSON) marks a truncation made by retention: the ledger records it as
        :class:`RetentionApplied` rather than :class:`StreamTruncated`."""
        self.recover_stream(meta)
        old, version = meta.truncation_versioned()
        head = old.positions if old is not None else {s.id: LSN_OLDEST for s in meta.generation(0).segments}
        _, (lower, pairs) = self.check_cuts(meta, StreamCut(meta.name, head), cut)
        if old is not None:
            if cut_order(lower, pairs) > 0:
                raise InvalidStreamCutError(f"stream {meta.name!r} is truncated past this cut already")
            if head == dict(cut.positions):
                return
        upper = [s for s, _ in pairs]
        between = meta.segments_between([s for s, _ in lower], upper)
        steps = [(s.log_id, 0) for s in between if wholly_before(s, upper)]  # 0: delete the log
        steps.extend((s.log_id, lsn - 1) for s, lsn in pairs if lsn > LSN_OLDEST)
        record = Truncation(tuple(pairs), meta.size_until(pairs), (old.sequence if old else 0) + 1,
                            bool(steps))
        batch = self.meta.batch()
        batch.expect_version(NAMESPACE, meta.key("trunc"), version)
        # The head moves in this batch (readers see the new head from now on): the change is
        # recorded here, not when the logs are trimmed after it (a truncation with nothing left to
        # trim or delete has no later step). The entry names the cut's size, not the cut, which
        # the head record holds (a cut of 10,000 segments is larger than an entry may be).
        batch.record(StreamTruncated(meta.name, len(pairs), record.size) if policy is None
                     else RetentionApplied(meta.name, len(pairs), record.size, policy))
        try:
            meta.truncation_batch(batch, record, steps).commit()
        except ConditionFailedError:
            raise StreamChangedError(f"stream {meta.name!r} was truncated meanwhile: try again") from None
        self._finish_truncation(meta)

    def _finish_truncation(self, meta: StreamMetadata) -> None:
        """Do what the truncation under way left to do to the logs, a record of steps at a time
        (each removed once done: the steps are idempotent, so a crash repeats at most one record's),
        then mark it done."""
        found = meta.meta.get(NAMESPACE, meta.key("trunc"))
        if found is None:
            return
        record = Truncation.decode(found.value)
        if not record.pending:
            return
        self._do_steps(record.legacy_steps)
        while (chunk := meta.pending_chunk(record.sequence)) is not None:
            key, steps = chunk
            self._do_steps(steps)
            # Unconditional: the key is this truncation's own, and whoever removes it did the steps.
            self.meta.batch().delete(NAMESPACE, key).commit()
        done = Truncation(record.cut, record.size, record.sequence)
        with contextlib.suppress(ConditionFailedError):  # another process finished it
            self.meta.batch().expect_version(NAMESPACE, meta.key("trunc"), found.version).put(
                NAMESPACE, meta.key("trunc"), done.encode()).commit()

    def _do_steps(self, steps: Sequence[tuple[int, int]]) -> None:
        for log_id, lsn in steps:
            if lsn == 0:
                self._drop_log(log_id)
            else:
                with contextlib.suppress(LogDeletedError, UnknownLogError, LsnOutOfRangeError):
                    self.logs.get(log_id).trim(lsn)

    def record_cut(self, meta: StreamMetadata, tail: StreamCut) -> StreamCut:
        """Add ``tail`` (a cut at the tail, just taken) to the retention set, with its time and the
        stream's size up to it. The set keeps at most ``RETENTION_CUTS_MAX`` cuts: past that, the
        one whose gap is smallest for its age goes (:func:`thinned_cut`), so the set covers the
        whole stream, sparser with age, whatever the retention window."""
        pairs = self.check_cut(meta, tail)
        current, _, _ = meta.current()
        size = meta.sealed_sum(current.generation) + sum(
            int(self.logs.get(s.log_id).data_size()) for s, _ in pairs if current.find(s.id) is not None)
        found = meta.meta.get(NAMESPACE, meta.key("retention"))
        cuts = meta.retention_set()
        now = max([self.clock.now_ms(), *(t + 1 for t, _ in cuts[-1:])])  # one cut per millisecond, in order
        cuts.append((now, size))
        batch = self.meta.batch().expect_version(NAMESPACE, meta.key("retention"),
                                                 0 if found is None else found.version)
        while len(cuts) > max(3, RETENTION_CUTS_MAX):
            old, _ = cuts.pop(thinned_cut([t for t, _ in cuts], now))
            batch.delete(NAMESPACE, meta.key(f"cut/{old:016x}"))
        batch.put(NAMESPACE, meta.key(f"cut/{now:016x}"), as_json(
            {"time": now, "size": size, "positions": {str(k): v for k, v in tail.positions.items()}}))
        try:
            batch.put(NAMESPACE, meta.key("retention"), as_json(cuts)).commit()
        except ConditionFailedError:
            raise StreamChangedError(f"stream {meta.name!r}: another cut was recorded meanwhile") from None
        return tail

    def check_cut(self, meta: StreamMetadata, cut: StreamCut) -> list[tuple[Segment, int]]:
        """A cut of this stream, checked to be consistent; its segments with their records."""
        return self.check_cuts(meta, cut)[1][0]

    def check_cuts(self, meta: StreamMetadata, *cuts: StreamCut) -> tuple[dict[int, Segment],
                                                                            list[list[tuple[Segment, int]]]]:
        """Cuts of this stream, each checked to be consistent, with their segments' records, and
        all those records by id (:meth:`StreamMetadata.cut_records`: 1 read when the newest
        segment's generation holds them all, 1 more per other generation that made them, however
        many generations lie between)."""
        for cut in cuts:
            if not isinstance(cut, StreamCut):
                raise InvalidStreamCutError(f"expected a StreamCut, got {cut!r:.80}")
            if cut.stream != meta.name:
                raise InvalidStreamCutError(f"the cut is of stream {cut.stream!r}, not {meta.name!r}")
        try:
            records = meta.cut_records(s for cut in cuts for s in cut.positions)
        except InvalidArgumentError:  # a generation the stream never had
            raise InvalidStreamCutError(f"a stream cut names segments stream {meta.name!r} never had") from None
        return records, [check_consistent(cut, records) for cut in cuts]

    def _finish_scaling(self, meta: StreamMetadata, delta: Delta, version: int) -> None:
        state, _ = meta.state()
        if any(s.log_id == 0 for s in delta.created):  # step 2
            planned = delta.created
            for attempt in range(CREATE_ATTEMPTS_MAX):  # the logs are created with the batch naming them
                batch = self.meta.batch()
                made = self._created_logs(batch, meta, state.uid, planned, look=attempt > 0)
                made_delta = Delta(delta.generation, delta.time_ms, delta.sealed, made, delta.reason)
                try:
                    version = batch.expect_version(NAMESPACE, meta.key("trans"), version).put(
                        NAMESPACE, meta.key("trans"), made_delta.encode()).commit()
                    delta = made_delta
                    break
                except ConditionFailedError:
                    return  # another process moved it on; it finishes it
                except LogExistsError:
                    continue  # an id was taken, or a log made by an older version has the name
            else:
                raise StreamChangedError(f"stream {meta.name!r}: the new segments' logs could not be created in "
                                         f"{CREATE_ATTEMPTS_MAX} attempts: try again")
            self._stepped(2)
        current, next_number, current_version = meta.current()
        if current.generation == delta.generation - 1:  # step 3
            batch, current = meta.new_generation_batch(
                self.meta.batch(), current, current_version,
                max(next_number, max(s.number for s in delta.created) + 1), delta, version)
            try:
                batch.commit()  # the transition record is unchanged: its version holds for step 5
            except ConditionFailedError:
                return
            self._stepped(3)
        previous = meta.generation(delta.generation - 1)
        ends: dict[int, tuple[int, int]] = {}
        for segment in delta.sealed:  # step 4
            record = previous.find(segment)
            if record is not None:
                ends[segment] = self._seal_log(record.log_id)
        self._stepped(4)
        # Step 5 completes the scaling (the transition record goes, the sealed segments are sealed):
        # it is where the change is recorded, once, by whichever process gets there.
        scaled = StreamScaled(meta.name, delta.generation, len(delta.sealed), len(delta.created))
        try:  # step 5
            meta.sizes_batch(self.meta.batch().expect_version(NAMESPACE, meta.key("trans"), version),
                             delta.generation, ends).delete(NAMESPACE, meta.key("trans")).record(scaled).commit()
        except ConditionFailedError:
            return
        self._stepped(5)

    def _stepped(self, step: int) -> None:
        if self.after_step is not None:
            self.after_step(step)

    def _seal_log(self, log_id: int) -> tuple[int, int]:
        """Seal a segment's log (again, if it is sealed); its size and final LSN."""
        try:
            handle = self.logs.get(log_id)
        except (LogDeletedError, UnknownLogError):
            return 0, 0  # truncated away already
        final = int(handle.seal())
        return int(handle.data_size()), final

    def _drop_log(self, log_id: int) -> None:
        with contextlib.suppress(LogDeletedError, UnknownLogError):
            self.logs.delete(log_id)

    def _drop_named(self, name: str) -> None:
        with contextlib.suppress(LogDeletedError, UnknownLogError):
            self.logs.delete(self.logs.get(name).id)
