"""The log API users hold: the ``logs`` namespace of a store, a handle per log, and readers."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Generator, Iterable, Mapping
from concurrent.futures import Future

from seaway._values import Durability, PartitionInfo, ProducerMark
from seaway.errors import (
    ClosedError,
    InvalidArgumentError,
    LogDeletedError,
    LsnOutOfRangeError,
    TrimPastTailError,
    UnknownLogError,
)
from seaway.ledger import LogSealed, LogTrimmed, encode_change
from seaway.log._aborted import AbortedWrites
from seaway.log._api import read_logs
from seaway.log._coalesce import AppendCoalescer, CoalesceConfig, Coalescers
from seaway.log._config import LogGroup, LogInfo, LogsConfig
from seaway.log._embedded import EmbeddedLogStore
from seaway.log._handle import (
    UNSET,
    AppendCounts,
    LogBounds,
    LogHandle,
    attribute_overrides,
    check_count_ranges,
    check_log_ids,
    get_or_create_log,
)
from seaway.log._lsn import LSN_MAX, LSN_OLDEST, check_lsn, lsn_str
from seaway.log._meta import MetadataStore
from seaway.log._reader import LogReadState, ReadChunk
from seaway.log._types import (
    BUFFERED_BYTES_MAX_DEFAULT,
    LogAttributes,
    ReadItem,
    Record,
    check_buffer_bounds,
    payload_bytes,
    take_within,
    weight,
)


class Log(LogHandle):
    """A handle on one log of the embedded store. Cheap to create; all state lives in the store."""

    def __init__(self, logs: Logs, info: LogInfo) -> None:
        super().__init__(info, logs._store)
        self._logs = logs
        self._store = logs._store

    # --- appending ------------------------------------------------------------------------------

    def _make_appends(self) -> AppendCoalescer:
        store, log_id, sync = self._store, self.id, self._sync

        def send(payloads: tuple[bytes, ...], mark: ProducerMark | None, if_tail: int | None) -> Future[range]:
            return store.append_async(log_id, payloads, sync, mark, if_tail)

        return self._logs._coalescers.get(log_id, send)

    # --- the log's state ------------------------------------------------------------------------

    def tail_lsn(self) -> int:
        """The LSN of the last record appended (or trimmed); 0 if the log was never written."""
        self._logs._check_open()
        self._store.check_not_deleted(self.id)
        return self._store.released(self.id)

    def seal(self) -> int:
        """Seal the log for good and return its final LSN (its tail, for ever).

        Appends accepted before this call are decided first; every later one fails with
        :class:`LogSealedError`. Readers read up to the final LSN and then get a SEALED gap and
        are done with the log. Durable when it returns; sealing a sealed log returns the same LSN.
        """
        self._logs._check_open()
        self._store.check_not_deleted(self.id)
        return self._store.seal_log(
            self.id, lambda final: encode_change(LogSealed(self.id, self.name, final)))

    def final_lsn(self) -> int | None:
        """The final LSN of a log sealed for good; None while it takes appends."""
        self._logs._check_open()
        self._store.check_not_deleted(self.id)
        return self._store.final_lsn(self.id)

    def delete(self) -> None:
        """Delete the log; see :meth:`Logs.delete`."""
        self._logs.delete(self)

    def trim_point(self) -> int:
        return self._store.logsdb.trim_point(self.id)

    def is_empty(self) -> bool:
        """True when the log holds no record above its trim point."""
        tail = self.tail_lsn()
        start = self.trim_point() + 1
        if start > tail:
            return True
        state = LogReadState(self.id, start, tail)
        while not state.done:
            want = state.want(tail)
            if want is None:
                break
            if any(isinstance(item, Record) for item in state.on_chunk(self._store.read_chunk(want))):
                return False
        return True

    def data_size(self) -> int:
        """Bytes the log occupies on disk, approximately (trimmed records linger until dropped)."""
        self._logs._check_open()
        return self._store.logsdb.data_size(self.id)

    def trim(self, lsn: int) -> None:
        """Trim the log up to and including ``lsn``; readers then see a TRIM gap there."""
        check_lsn(lsn)
        tail = self.tail_lsn()
        if lsn > tail:
            raise TrimPastTailError(
                f"log {self.name!r}: cannot trim to {lsn_str(lsn)}, the tail is {lsn_str(tail)}")
        self._store.logsdb.trim(self.id, lsn, ledger=encode_change(LogTrimmed(self.id, self.name, lsn)))
        # After the trim: one cut off between the two leaves entries of records gone, which judge nothing.
        AbortedWrites(self._logs.metadata_store()).forget_trimmed(self.id, lsn)

    def find_time(self, timestamp_ms: int) -> int:
        """The LSN of the first record (or hole plug) above the trim point stamped at or after
        ``timestamp_ms``; the LSN after the tail if there is none. A binary search, not a scan."""
        if not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise InvalidArgumentError(f"timestamp_ms must be a non-negative integer, got {timestamp_ms!r}")
        self._logs._check_open()
        return min(self._store.logsdb.find_time(self.id, timestamp_ms), self.tail_lsn() + 1)

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Generator[ReadItem, None, None]:
        """Records and gaps of this log from ``lsn_from`` up to ``lsn_until`` (the tail by default)."""
        return self._logs.read({self: lsn_from}, until=lsn_until)


_UNFINISHED_CHUNKS_MAX = 4
"""Chunks cut short by a reader's bounds kept to resume from; an older one is read again instead."""


class _LogWake(threading.Event):
    """What the store sets when one log's release point moves: it marks that log for the reader's
    next fill, then wakes the reader. A fill so looks only at the logs that may have more, not at
    every log read (its own event is never waited on)."""

    def __init__(self, log_id: int, ready: dict[int, None], wake: threading.Event) -> None:
        super().__init__()
        self._log_id = log_id
        self._ready = ready
        self._reader_wake = wake

    def set(self) -> None:
        self._ready[self._log_id] = None  # one dict store: atomic for the reader thread that reads it
        self._reader_wake.set()


class Reader:
    """Reads many logs at once, each in LSN order, delivering records and gaps.

    A log read up to ``LSN_MAX`` is tailed: :meth:`read` waits for new records without polling.
    Logs may be started and stopped while the reader runs, from any thread. Items of different
    logs interleave in no particular order; logs are served in turn, a chunk each, so one busy log
    does not hold back the others. At most ``buffered_items_max`` items and ``buffered_bytes_max``
    payload bytes are held (plus one record, however large, so that a read always makes progress);
    the disk is read only as they are consumed.
    """

    def __init__(self, logs: Logs, buffered_items_max: int = 2_000, *, runs: bool = False,
                 buffered_bytes_max: int = BUFFERED_BYTES_MAX_DEFAULT) -> None:
        check_buffer_bounds(buffered_items_max, buffered_bytes_max)
        self._runs = runs
        self._buffered = 0  # records and gaps in the buffer (a run counts its records)
        self._buffered_bytes = 0  # payload bytes in the buffer
        self._logs = logs
        self._store = logs._store
        self._states: dict[int, LogReadState] = {}
        self._deletions_seen = self._store.deletions
        self._buffer: builtins.list[ReadItem] = []
        self._buffered_items_max = buffered_items_max
        self._buffered_bytes_max = buffered_bytes_max
        self._unfinished: dict[int, ReadChunk] = {}  # oldest first
        # Logs that may have more to read, in the order they are served (one served goes last).
        self._ready: dict[int, None] = {}
        self._undone: set[int] = set()  # logs not read up to their lsn_until yet
        self._wakes: dict[int, _LogWake] = {}
        self._closed = False
        self._woken = False
        self._lock = threading.Lock()
        self._wake = threading.Event()  # set when a log read here may have more, or on close

    def start_reading(self, log: LogHandle | int | str, lsn_from: int = LSN_OLDEST, lsn_until: int = LSN_MAX) -> None:
        """Read ``log`` from ``lsn_from`` to ``lsn_until`` inclusive (forever if ``LSN_MAX``).

        A log already read here is read again from ``lsn_from``: what was buffered of it is dropped."""
        log_id = self._logs._resolve(log).id
        check_lsn(lsn_from, "lsn_from")
        check_lsn(lsn_until, "lsn_until")
        if lsn_from < LSN_OLDEST or lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_str(lsn_from)} until {lsn_str(lsn_until)}")
        self._store.check_not_deleted(log_id)
        with self._lock:
            self._drop(log_id)
            self._states[log_id] = LogReadState(log_id, lsn_from, lsn_until, runs=self._runs)
            self._undone.add(log_id)
            wake = self._wakes.get(log_id)
            if wake is None:
                wake = self._wakes[log_id] = _LogWake(log_id, self._ready, self._wake)
        self._store.watch_releases(log_id, wake)
        wake.set()

    def stop_reading(self, log: LogHandle | int | str) -> None:
        """Read ``log`` no more; what was buffered of it is dropped. Nothing happens if it is not read."""
        # By id without a lookup: a deleted log can be stopped too.
        log_id = log.id if isinstance(log, LogHandle) else log if isinstance(log, int) else self._logs._resolve(log).id
        with self._lock:
            self._states.pop(log_id, None)
            self._undone.discard(log_id)
            self._drop(log_id)
            wake = self._wakes.pop(log_id, None)
        if wake is not None:
            self._store.unwatch_releases(log_id, wake)

    def _drop(self, log_id: int) -> None:
        if any(i.log_id == log_id for i in self._buffer):
            self._buffer = [i for i in self._buffer if i.log_id != log_id]
            self._buffered = sum(map(weight, self._buffer))
            self._buffered_bytes = payload_bytes(self._buffer)
        self._unfinished.pop(log_id, None)

    @property
    def done(self) -> bool:
        """True when every log has been read up to its ``lsn_until``."""
        with self._lock:
            return not self._buffer and not self._undone

    def wake(self) -> None:
        """Make a :meth:`read` that waits now (or the next one that would wait) return at once,
        with nothing. For a thread that must look at something else (a stop, a control message)."""
        self._woken = True
        self._wake.set()

    def read(self, items_max: int = 1000, timeout_s: float | None = None, *,
             bytes_max: int | None = None) -> builtins.list[ReadItem]:
        """Up to ``items_max`` items and ``bytes_max`` payload bytes (at least one item, however
        large); waits up to ``timeout_s`` (None: forever) for the first one.

        Returns an empty list on timeout, after :meth:`wake`, or at once when every log is done.
        """
        if items_max < 1:
            raise InvalidArgumentError("items_max must be at least 1")
        if bytes_max is not None and bytes_max < 1:
            raise InvalidArgumentError("bytes_max must be at least 1")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self._closed:
                raise ClosedError("the reader is closed")
            self._logs._check_open()
            self._wake.clear()  # before looking: a release from here on sets it again
            with self._lock:
                self._fill()
                if self._buffer or not self._undone:
                    return self._take(items_max, bytes_max)
            if self._woken:
                self._woken = False
                return []
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return []
            self._wake.wait(remaining)

    def _take(self, items_max: int, bytes_max: int | None) -> builtins.list[ReadItem]:
        if not self._runs and bytes_max is None:
            taken = self._buffer[:items_max]
            del self._buffer[:items_max]
            self._buffered -= len(taken)
            self._buffered_bytes = self._buffered_bytes - payload_bytes(taken) if self._buffer else 0
            return taken
        taken, count, size = take_within(self._buffer, items_max, bytes_max)
        self._buffered -= count
        self._buffered_bytes -= size
        return taken

    def _fill(self) -> None:
        """Fill the buffer up to its bounds, a chunk of each log that may have more in turn."""
        deletions = self._store.deletions
        deleted = [] if deletions == self._deletions_seen else \
            [log_id for log_id in self._states if self._store.is_deleted(log_id)]
        self._deletions_seen = deletions
        if deleted:  # reported once; the reader goes on with its other logs
            for log_id in deleted:
                del self._states[log_id]
                self._undone.discard(log_id)
                self._ready.pop(log_id, None)
                self._drop(log_id)
                wake = self._wakes.pop(log_id, None)
                if wake is not None:
                    self._store.unwatch_releases(log_id, wake)
            raise LogDeletedError(f"log {deleted[0]} was deleted while it was being read")
        progressed = True
        while progressed and self._ready:
            progressed = False
            for log_id in builtins.list(self._ready):
                if self._buffered >= self._buffered_items_max or self._buffered_bytes >= self._buffered_bytes_max:
                    return
                # Off the list before looking at its release point: a release from here on puts it back.
                self._ready.pop(log_id, None)
                state = self._states.get(log_id)
                if state is None:
                    continue
                progressed = self._fill_from(state) or progressed
                if state.done:
                    self._undone.discard(log_id)
                elif state.want(self._store.released(log_id)) is not None:
                    self._ready[log_id] = None  # more to read: served again after the others

    def _fill_from(self, state: LogReadState) -> bool:
        """One chunk of ``state``'s log into the buffer, within its bounds; False if it had none."""
        want = state.want(self._store.released(state.log_id))
        if want is None:
            return self._sealed_end(state)
        # A chunk cut short by the buffer's bounds is kept and resumed, not read and decoded again.
        chunk = self._unfinished.pop(state.log_id, None)
        if chunk is None or chunk.covered_to < want.lsn_from:
            chunk = self._store.read_chunk(want)
        items = state.on_chunk(chunk, self._buffered_items_max - self._buffered,
                               self._buffered_bytes_max - self._buffered_bytes)
        self._buffer.extend(items)
        self._buffered += len(items) if not self._runs else sum(map(weight, items))
        self._buffered_bytes += state.emitted_bytes
        if state.next_lsn <= min(chunk.covered_to, want.lsn_to):
            self._unfinished[state.log_id] = chunk
            if len(self._unfinished) > _UNFINISHED_CHUNKS_MAX:
                del self._unfinished[next(iter(self._unfinished))]
        elif state.want(self._store.released(state.log_id)) is None:
            self._sealed_end(state)
        return bool(items)

    def _sealed_end(self, state: LogReadState) -> bool:
        """A SEALED gap for a log sealed for good, once read up to its final LSN; False if none."""
        final = self._store.final_lsn(state.log_id)
        if final is None:
            return False
        sealed = state.on_sealed(final)
        self._buffer.extend(sealed)
        self._buffered += len(sealed)
        return bool(sealed)

    def __iter__(self) -> Generator[ReadItem, None, None]:
        """Every item until all logs are done (forever when tailing)."""
        while True:
            items = self.read()
            if not items:
                return
            yield from items

    def close(self) -> None:
        self._closed = True
        with self._lock:
            wakes, self._wakes = self._wakes, {}
        for log_id, wake in wakes.items():
            self._store.unwatch_releases(log_id, wake)
        self._wake.set()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Logs:
    """The logs of one store: create and find logs and groups, read, run retention."""

    def __init__(self, store: EmbeddedLogStore, defaults: LogAttributes | None = None,
                 coalesce: CoalesceConfig | None = None) -> None:
        self._store = store
        self._config = LogsConfig(store.logsdb, defaults or LogAttributes())
        self._coalescers = Coalescers(coalesce)
        deleted = self._config.deleted_ids()
        store.forget_deleted(deleted)  # finishes deletions a crash interrupted
        for log_id in deleted:
            self._config.forget_name(log_id)

    def metadata_store(self) -> MetadataStore:
        """The store's metadata store (``sw.meta``), whose batches may create these logs
        atomically with the metadata that names them (:meth:`MetaBatch.create_log`)."""
        return MetadataStore(self._store.logsdb, self._config)

    def close_appends(self, drain_s: float = 30.0) -> None:
        """Let the appends made so far go out (waiting up to ``drain_s``), then refuse more: the
        first step of closing the store."""
        self._coalescers.close(drain_s)

    def _check_open(self) -> None:
        if self._store.closed:
            raise ClosedError("the store is closed")

    def create(self, name: str, *, log_id: int | None = None, group: str | None = None,
               backlog_s: float | None = UNSET, payload_bytes_max: int = UNSET,
               durability: Durability = UNSET) -> Log:
        """Create a log. Attributes not given are inherited from its group, then the defaults."""
        self._check_open()
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        return Log(self, self._config.create_log(name, log_id, group, overrides))

    def create_group(self, name: str, first_id: int, last_id: int, *, backlog_s: float | None = UNSET,
                     payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> LogGroup:
        """Create a named range of log ids whose logs inherit the attributes given here."""
        self._check_open()
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        return self._config.create_group(name, first_id, last_id, overrides)

    def get(self, name_or_id: str | int) -> Log:
        """The log with this name or id; raises :class:`UnknownLogError` (:class:`LogDeletedError`
        for the id of a deleted log)."""
        self._check_open()
        return Log(self, self._config.get(name_or_id))

    def get_or_create(self, name: str, *, group: str | None = None, backlog_s: float | None = UNSET,
                      payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> Log:
        """The log with this name, created (as :meth:`create` would) if there is none. An existing
        log must be in the ``group`` given and have the attributes given (those not given: any), or
        :class:`LogExistsError` says what differs (a log's attributes are fixed when it is created)."""
        log: Log = get_or_create_log(self, name, group=group, backlog_s=backlog_s,
                                     payload_bytes_max=payload_bytes_max, durability=durability)
        return log

    def delete(self, log: LogHandle | int | str) -> None:
        """Delete a log: appends accepted before this call are decided, later ones fail with
        :class:`LogDeletedError`, and when it returns its records are unreadable (readers get
        :class:`LogDeletedError`) and their space is being reclaimed. Its id is never used again;
        its name may be. Durable when it returns (a deletion interrupted by a crash is finished when
        the store opens)."""
        resolved = self._resolve(log)
        self._check_open()
        self._store.delete_log(resolved.id, lambda: self._config.mark_deleted(resolved.id))
        AbortedWrites(self.metadata_store()).forget_log(resolved.id)
        self._config.forget_name(resolved.id)
        self._coalescers.forget(resolved.id)  # nothing more can be appended to it

    def _resolve(self, log: LogHandle | int | str) -> Log:
        if isinstance(log, LogHandle):
            if not isinstance(log, Log) or log._store is not self._store:
                raise UnknownLogError(f"{log!r} belongs to another store")
            self._store.check_not_deleted(log.id)
            return log
        return self.get(log)

    def list(self) -> builtins.list[Log]:
        self._check_open()
        return [Log(self, info) for info in self._config.logs()]

    def groups(self) -> builtins.list[LogGroup]:
        return self._config.groups()

    def reader(self, buffered_items_max: int = 2_000, *, runs: bool = False,
               buffered_bytes_max: int = BUFFERED_BYTES_MAX_DEFAULT) -> Reader:
        """A reader over any of these logs. With ``runs``, it delivers :class:`RecordRun` items (one
        per stored batch, or part of one) instead of a :class:`Record` each: for bulk consumers, and
        counted by their records against ``buffered_items_max`` and ``read``'s ``items_max``."""
        self._check_open()
        return Reader(self, buffered_items_max, runs=runs, buffered_bytes_max=buffered_bytes_max)

    def read(self, starts: Mapping[LogHandle | int | str, int],
             until: int | None = None) -> Generator[ReadItem, None, None]:
        """Records and gaps of several logs, each from its start LSN.

        ``until`` is the last LSN to read of every log; by default each log's tail when called,
        so the iteration ends. Pass ``LSN_MAX`` to tail the logs forever.
        """
        return read_logs(self.reader(), self._resolve, starts, until)

    def append_counts(self, log_ids: Iterable[int]) -> dict[int, AppendCounts]:
        """For each of ``log_ids``: the records appended to it and their payload bytes since the
        store opened (this process's, or the server's). For sampling the write rates of many logs
        at once (what the stream auto-scaler does): cheap, counted as appends are acknowledged, no
        disk read.

        Counts only grow while the store is open and start again at zero when it reopens (a
        sampler takes lower counts for a restart). A log not appended to since, or unknown, or
        deleted, counts zero: one log going away does not fail the others' sample. Records stored
        once for an idempotent append sent twice count once. At most ``APPEND_COUNTS_LOGS_MAX`` ids
        a call; ids that are not log ids raise :class:`InvalidArgumentError`.
        """
        ids = check_log_ids(log_ids)
        self._check_open()
        return {log_id: AppendCounts(*counts) for log_id, counts in self._store.append_counts(ids).items()}

    def bounds(self, log_ids: Iterable[int]) -> dict[int, LogBounds]:
        """For each of ``log_ids`` that names a log: its tail LSN, final LSN and trim point, in one
        call (a Spark driver plans ranges of many logs at every micro-batch). The three are read
        together for each log: a log sealed meanwhile is either answered sealed, with its final LSN
        as tail, or not sealed, with a tail no later than its final LSN.

        Unknown and deleted logs are left out of the answer: one log going away does not fail the
        others. At most ``APPEND_COUNTS_LOGS_MAX`` ids a call; ids that are not log ids raise
        :class:`InvalidArgumentError`.
        """
        ids = check_log_ids(log_ids)
        self._check_open()
        found: dict[int, LogBounds] = {}
        for log_id in ids:
            if log_id in found:
                continue
            try:
                self._config.get(log_id)
            except UnknownLogError:  # or deleted (a subclass)
                continue
            if self._store.is_deleted(log_id):
                continue
            # The final LSN first: once sealed, the tail is the final LSN for good.
            final = self._store.final_lsn(log_id)
            tail = self._store.released(log_id) if final is None else final
            found[log_id] = LogBounds(tail, final, self._store.logsdb.trim_point(log_id))
        return found

    def count_records(self, ranges: Mapping[int, tuple[int, int | None]]) -> dict[int, int]:
        """For each log id of ``ranges`` (log id -> ``(lsn_from, lsn_until)``, both inclusive;
        ``lsn_until`` None for the tail): how many records a reader of that range would get, counted
        without reading any (what a reader group's or a consumer group's lag is made of).

        LSNs jump at every epoch, so a count is not a difference of LSNs: the store keeps where each
        epoch ended and which slots were plugged as holes, and counts in O(epochs in the range). The
        count stops at the log's tail as readers see it (what was acknowledged), and leaves out what
        is trimmed away; records lost to damage after they were stored (DATALOSS gaps) still count.
        Unknown and deleted logs are left out of the answer, as in :meth:`bounds`. At most
        ``APPEND_COUNTS_LOGS_MAX`` logs a call; a bad log id or range raises :class:`InvalidArgumentError`,
        an LSN out of ``[0, 2**64 - 1]`` :class:`LsnOutOfRangeError`.
        """
        checked = check_count_ranges(ranges)
        self._check_open()
        found = self.bounds(checked)
        return {log_id: self._store.logsdb.count_records(log_id, lsn_from, min(lsn_until, found[log_id].tail_lsn))
                for log_id, (lsn_from, lsn_until) in checked.items() if log_id in found}

    def run_retention(self) -> builtins.list[int]:
        """Drop the partitions none of whose records is retained any more; return their ids."""
        self._check_open()
        return self._store.logsdb.drop_expired(self._config.backlog_ms, self._trimmed_by_retention)

    def _trimmed_by_retention(self, log_id: int, trim_point: int) -> bytes | None:
        """The ledger entry of a trim point that retention raises, written with it (a log deleted
        meanwhile has its own entry, and none for this)."""
        try:
            info = self._config.get(log_id)
        except UnknownLogError:  # or deleted (a subclass)
            return None
        return encode_change(LogTrimmed(log_id, info.name, trim_point))

    def partitions(self) -> builtins.list[PartitionInfo]:
        self._check_open()
        return self._store.logsdb.partitions()

    def flush(self) -> None:
        """Write what RocksDB holds in memory to its files, so that its write-ahead log can be
        recycled (it does so on its own as memory fills); for measuring disk use, and before backups."""
        self._check_open()
        self._store.logsdb.flush()


