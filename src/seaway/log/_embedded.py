"""The embedded driver: runs the sequencers and the storage node in-process over LogsDB.

One writer thread owns every state machine, so they need no locks: appends reach it through a
bounded inbox, it carries out their effects (epoch-store bumps, disk writes) and resolves each
append's future. Whatever arrives while a disk write is in progress goes out in the next one, so
concurrent appends share fsyncs. Readers read LogsDB directly, never past the release point.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from seaway._clock import Clock, SystemClock
from seaway._dirs import make_dir_durable
from seaway._invariant import invariant
from seaway._values import ProducerMark, PutHolePlug, PutRecords
from seaway.errors import (
    ClosedError,
    InvalidArgumentError,
    LogDeletedError,
    LogSealedError,
    OverloadedError,
    SeawayError,
    SequenceTooOldError,
    StorageError,
    StoreFailedError,
)
from seaway.log._epoch_store import EpochStore, RocksDBEpochStore, bump_epochs
from seaway.log._lsn import epoch_of, lsn_str
from seaway.log._order import ProducerOrder
from seaway.log._protocol import (
    AppendAcked,
    AppendFailed,
    AppendRequest,
    DiskWrite,
    DiskWriteDone,
    EpochFailed,
    EpochGranted,
    Released,
    RequestEpoch,
    SealReply,
    SequencerEvent,
    StorageEffect,
    StorageEvent,
    StoreReply,
    Tick,
)
from seaway.log._reader import LogReadState, ReadChunk, ReadWant
from seaway.log._sequencer import Sequencer, SequencerConfig
from seaway.log._storage import StorageConfig, StorageNode
from seaway.log._tail import TailCache
from seaway.logsdb import LogsDB, LogsDBConfig

_EPOCHS_PER_WRITE_MAX = 4096
"""Logs given new epochs by one write of the epoch store (16 bytes each in its write batch)."""

DiskFault = Callable[[DiskWrite], SeawayError | None]
"""A test hook: return an error to make a disk write fail without writing anything."""


@dataclass(frozen=True)
class LogStoreConfig:
    logsdb: LogsDBConfig = field(default_factory=LogsDBConfig)
    sequencer: SequencerConfig = field(default_factory=SequencerConfig)
    storage: StorageConfig = field(default_factory=lambda: StorageConfig(writes_in_flight_max=2))
    """Two writes in flight: the next group is applied while the previous one syncs."""
    inbox_appends_max: int = 100_000
    """Appends waiting for the writer thread; more are refused as overloaded."""
    read_chunk_bytes_max: int = 1 << 20
    """The most entry bytes one reader reads from disk at a time."""
    tail_cache_bytes_max: int = 64 << 20
    """Payload bytes of the entries just written kept in memory for tailing readers (0: none)."""


def read_chunk(db: LogsDB, want: ReadWant, bytes_max: int) -> ReadChunk:
    """Read what a reader wants from LogsDB (the reader's disk access, for any driver)."""
    entries, covered_to = db.read(want.log_id, want.lsn_from, want.lsn_to, bytes_max)
    next_entry = None
    if not entries or entries[-1].last_lsn < covered_to:
        next_entry = db.next_entry_lsn(want.log_id, covered_to)
    ends = db.epoch_ends(want.log_id, epoch_of(want.lsn_from), epoch_of(covered_to))
    return ReadChunk(entries, covered_to, db.trim_point(want.log_id), ends, next_entry)


@dataclass(frozen=True, slots=True)
class _EndAppends:
    """Through the inbox, in order with appends: the log takes no appends after this one (it is
    being sealed or deleted); answer with its tail once every append accepted before is decided."""

    why: Literal["sealed", "deleted"]


@dataclass(slots=True)
class _Pending:
    future: Future[range]
    log_id: int
    producer_key: tuple[int, bytes, int] | None = None
    payload_bytes: int = 0


class _Syncer:
    """Makes applied disk writes durable, in the order they were applied: one WAL sync covers every
    write applied before it started. Reports each write's outcome, in order, to ``report``."""

    def __init__(self, db: LogsDB, report: Callable[[list[DiskWriteDone]], None]) -> None:
        self._db = db
        self._report = report
        self._cv = threading.Condition()
        self._pending: list[tuple[int, bool, SeawayError | None]] = []
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="seaway-log-syncer", daemon=True)
        self._thread.start()

    def submit(self, write_id: int, sync: bool, error: SeawayError | None) -> None:
        """A write applied (or failed: ``error``); reported after the next sync if ``sync``."""
        with self._cv:
            self._pending.append((write_id, sync, error))
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._closing:
                    self._cv.wait()
                if not self._pending:
                    return
                taken, self._pending = self._pending, []
            failed: SeawayError | None = None
            if any(sync and error is None for _, sync, error in taken):
                try:
                    self._db.sync_wal()
                except SeawayError as exc:
                    failed = exc
                except Exception as exc:  # a bug: fail these writes rather than leave them waiting
                    failed = StorageError(f"write-ahead log sync failed: {exc!r}")
            self._report([DiskWriteDone(write_id, error or failed) for write_id, _, error in taken])

    def close(self) -> None:
        """Report what is pending, then stop."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._thread.join()


class EmbeddedLogStore:
    """Logs in a local directory, sequenced and stored in this process."""

    def __init__(self, path: str | Path, config: LogStoreConfig | None = None,
                 clock: Clock | None = None, epoch_store: EpochStore | None = None,
                 disk_fault: DiskFault | None = None) -> None:
        self._config = config or LogStoreConfig()
        self._clock = clock or SystemClock()
        path = Path(path)
        try:
            # Durable in its parent before anything in it counts (LogsDB and the epoch store do
            # the same for their directories inside it).
            make_dir_durable(path)
        except OSError as exc:
            raise StorageError(f"cannot create the data directory {path}: {exc}") from exc
        self.logsdb = LogsDB(path / "logsdb", self._config.logsdb, self._clock)
        try:
            self._epochs = epoch_store or RocksDBEpochStore(path / "epochs")
        except BaseException:
            self.logsdb.close()
            raise
        self._disk_fault = disk_fault
        self._tail = TailCache(self._config.tail_cache_bytes_max)
        self._synced: deque[DiskWriteDone] = deque()  # from the syncer, for the writer thread
        self._failed_apply: int | None = None  # a write that failed to apply, until the node hears
        log_ids = self.logsdb.log_ids()
        self._storage = StorageNode({i: self.logsdb.last_lsn(i) for i in log_ids},
                                    {i: self.logsdb.sealed_epoch(i) for i in log_ids}, self._config.storage)
        self._sequencers: dict[int, Sequencer] = {}
        # Logs whose sequencer has a deadline (appends in flight, a seal waiting): the only ones the
        # writer looks at for timers, so its loop costs the same however many logs exist.
        self._timed: set[int] = set()
        self._timed_peak = 0  # a set does not shrink: once it held many, walking it costs that many
        # (log id, event) for a sequencer; (None, event) for the storage node.
        self._events: deque[tuple[int | None, SequencerEvent | StorageEvent]] = deque()
        # Logs whose sequencers asked for a new epoch: granted together, in one durable write of the
        # epoch store, once the events at hand are handled (after a restart, the first appends to
        # many logs cost one sync, not one each).
        self._epochs_wanted: list[int] = []
        self._pumping = False
        self._completions: list[tuple[Future[range], range | SeawayError]] = []
        self._broken: SeawayError | None = None
        self._pending: dict[int, _Pending] = {}
        # log id -> (records, payload bytes) acknowledged since the store opened. Written by the
        # writer thread only (one dict store of a new tuple an ack), read by any: no lock needed.
        self._appended: dict[int, tuple[int, int]] = {}
        # (log id, producer id, sequence) of producers' batches in flight -> their record count and
        # the retries waiting on them
        self._producing: dict[tuple[int, bytes, int], tuple[int, list[Future[range]]]] = {}
        # The order of each producer's batches with some in flight (see seaway.log._order).
        self._order = ProducerOrder()
        self._next_request_id = 0
        self._inbox: deque[tuple[int, AppendRequest, Future[range]] | tuple[int, _EndAppends, Future[int]]] = deque()
        # Logs that take no more appends (writer thread only), and callers waiting for their tails.
        self._ended: dict[int, Literal["sealed", "deleted"]] = dict.fromkeys(self.logsdb.sealed_logs(), "sealed")
        self._ending: dict[int, list[Future[int]]] = {}
        self._inbox_cv = threading.Condition()
        self._released = {i: self.logsdb.last_lsn(i) for i in log_ids}
        self._release_lock = threading.Lock()
        self._watchers: dict[int, set[threading.Event]] = {}  # log id -> its readers' wake-up events
        self._final = self.logsdb.sealed_logs()  # log id -> final LSN, once sealed for good (release lock)
        self._deleted: set[int] = set()  # (release lock)
        self._closing = False
        self._closed = False
        self._syncer = _Syncer(self.logsdb, self._on_synced) if self._config.storage.writes_in_flight_max > 1 else None
        self._thread = threading.Thread(target=self._run, name="seaway-log-writer", daemon=True)
        self._thread.start()

    def _on_synced(self, done: list[DiskWriteDone]) -> None:
        with self._inbox_cv:
            self._synced.extend(done)
            self._inbox_cv.notify()

    # --- appends (any thread) -------------------------------------------------------------------

    def append_async(self, log_id: int, payloads: tuple[bytes, ...], sync: bool = True,
                     producer: ProducerMark | None = None, if_tail: int | None = None) -> Future[range]:
        """Sequence and store ``payloads`` as one batch; the future gives their LSNs.

        With ``producer``, a batch whose producer id and sequence number were stored before is not
        stored again: the future gives the LSNs it got the first time (idempotent appends). With
        ``if_tail``, the batch is stored only if the log's last LSN is ``if_tail`` when it is
        sequenced (after every append accepted before it); otherwise it fails with
        :class:`TailMismatchError`.
        """
        future: Future[range] = Future()
        request = AppendRequest(0, payloads, sync, producer, if_tail)
        self._enqueue(log_id, request, future)
        return future

    def _enqueue(self, log_id: int, request: AppendRequest | _EndAppends, future: Future[range] | Future[int]) -> None:
        with self._inbox_cv:
            if self._broken is not None:
                raise self._broken
            if self._closing:
                raise ClosedError("the log store is closed")
            if len(self._inbox) >= self._config.inbox_appends_max:
                raise OverloadedError(f"{len(self._inbox)} appends are waiting to be written")
            if isinstance(request, AppendRequest):
                self._next_request_id += 1
                request = AppendRequest(self._next_request_id, request.payloads, request.sync, request.producer,
                                        request.if_tail)
            self._inbox.append((log_id, request, future))  # type: ignore[arg-type]
            self._inbox_cv.notify()

    def end_appends(self, log_id: int, why: Literal["sealed", "deleted"], timeout_s: float | None = None) -> int:
        """Take no more appends for the log (later ones fail with :class:`LogSealedError` or
        :class:`LogDeletedError`); return its tail once every append accepted before is decided.
        The caller then makes the seal or the deletion durable."""
        future: Future[int] = Future()
        self._enqueue(log_id, _EndAppends(why), future)
        return future.result(timeout_s)

    def seal_log(self, log_id: int, ledger: Callable[[int], bytes] | None = None) -> int:
        """Seal the log for good and return its final LSN: no append is taken after this call, and
        those accepted before it are decided first. Durable when it returns; idempotent.
        ``ledger(final_lsn)``: the change ledger entry written with the seal (none if sealed already)."""
        if self.logsdb.final_lsn(log_id) is None:
            last = self.end_appends(log_id, "sealed")
            self.logsdb.seal_log(log_id, last, ledger=None if ledger is None else ledger(last))
        final = self.logsdb.final_lsn(log_id)
        if final is None:
            raise StorageError(f"log {log_id} was sealed but has no final LSN")  # never: seal_log is durable
        with self._release_lock:
            self._final[log_id] = final
            watchers = tuple(self._watchers.get(log_id, ()))
        for wake in watchers:  # tailing readers learn that the log ends
            wake.set()
        return final

    def final_lsn(self, log_id: int) -> int | None:
        """The last LSN of a log sealed for good; None while it takes appends."""
        return self._final.get(log_id)

    def delete_log(self, log_id: int, mark_deleted: Callable[[], None]) -> None:
        """Delete the log: refuse its appends, let those accepted be decided, call ``mark_deleted``
        (which makes the deletion durable, so that :meth:`forget_deleted` finishes it after a crash),
        then make its records unreadable and reclaim their space."""
        self.end_appends(log_id, "deleted")
        mark_deleted()
        self.forget_deleted([log_id])

    def forget_deleted(self, log_ids: list[int]) -> None:
        """Make deleted logs unreadable (readers get :class:`LogDeletedError`) and remove their data
        (idempotent: also what finishes a deletion interrupted by a crash)."""
        with self._release_lock:
            self._deleted.update(log_ids)
            for log_id in log_ids:  # no reader reads past a deletion: their tails and ends go
                self._released.pop(log_id, None)
                self._final.pop(log_id, None)
            watchers = [wake for log_id in log_ids for wake in self._watchers.get(log_id, ())]
        for wake in watchers:
            wake.set()
        for log_id in log_ids:
            self._tail.forget(log_id)
            self._appended.pop(log_id, None)  # no append is acknowledged for it any more
            if self.logsdb.data_size(log_id) or self.logsdb.last_lsn(log_id) > self.logsdb.trim_point(log_id):
                self.logsdb.delete_log_data(log_id)

    def append_counts(self, log_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
        """Records and payload bytes acknowledged for each log since the store opened ((0, 0) for
        a log without any); counted before the appends' futures are answered."""
        appended = self._appended
        return {log_id: appended.get(log_id, (0, 0)) for log_id in log_ids}

    def is_deleted(self, log_id: int) -> bool:
        return log_id in self._deleted

    @property
    def deletions(self) -> int:
        """How many logs were deleted (it only grows): a reader looks for deleted logs among its
        own only when this changed, not on every read."""
        return len(self._deleted)

    def check_not_deleted(self, log_id: int) -> None:
        if log_id in self._deleted:
            raise LogDeletedError(f"log {log_id} was deleted")

    # --- the writer thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._inbox_cv:
                while not self._inbox and not self._synced and (not self._closing or self._storage.busy):
                    self._inbox_cv.wait(timeout=self._wait_s())
                    if not self._inbox and not self._synced:
                        break
                batch = list(self._inbox)
                self._inbox.clear()
                synced = list(self._synced)
                self._synced.clear()
                closing = self._closing
            try:
                for done in synced:
                    if done.write_id == self._failed_apply:
                        self._failed_apply = None  # the node hears of it now: later writes are new
                    self._events.append((None, done))
                for log_id, request, future in batch:
                    if isinstance(request, _EndAppends):
                        self._end(log_id, request, future)  # type: ignore[arg-type]
                    else:
                        self._accept(log_id, request, future)  # type: ignore[arg-type]
                self._tick()
                self._pump()
                self._answer_ended()
            except BaseException as exc:  # a bug: fail every waiter rather than hang them
                self._stop_writing(StoreFailedError(f"log writer failed: {exc!r}"))
                raise
            failure = self.logsdb.write_failure
            if failure is not None:
                # LogsDB takes no more writes (a write or a sync failed): retrying them would only
                # spin the sequencers through plugs and epochs. Appends fail until it is reopened.
                self._stop_writing(StoreFailedError(f"the log store takes no writes since a write failed ({failure}); "
                                                    "reopen it"))
                return
            if closing and not batch and not self._storage.busy:
                return

    def _stop_writing(self, error: StorageError) -> None:
        """Fail every append waiting or to come with ``error``; the writer thread ends (close()
        still closes the rest)."""
        with self._inbox_cv:
            self._broken = error
        for future, _ in self._completions:
            if not future.done():
                future.set_exception(error)
        self._completions.clear()
        self._fail_all(error)

    def _end(self, log_id: int, request: _EndAppends, future: Future[int]) -> None:
        if self._ended.get(log_id) != "deleted":  # a deletion outranks a seal
            self._ended[log_id] = request.why
        self._ending.setdefault(log_id, []).append(future)

    def _answer_ended(self) -> None:
        """Answer the callers of end_appends whose logs have every append decided."""
        for log_id in [i for i in self._ending if i not in self._sequencers or self._sequencers[i].idle]:
            tail = self.released(log_id)
            if self._ended[log_id] == "deleted":
                # Its appends are all decided and ``_ended`` refuses any more: no use for its sequencer.
                self._sequencers.pop(log_id, None)
                self._timed.discard(log_id)
            for future in self._ending.pop(log_id):
                future.set_result(tail)

    def _refusal(self, log_id: int) -> SeawayError | None:
        ended = self._ended.get(log_id)
        if ended is None and log_id not in self._deleted:
            return None
        if ended == "sealed":
            final = self.logsdb.final_lsn(log_id)
            return LogSealedError(f"log {log_id} is sealed" + (f" at {lsn_str(final)}" if final is not None else "")
                                  + ": it takes no more appends")
        return LogDeletedError(f"log {log_id} was deleted")

    def _accept(self, log_id: int, request: AppendRequest, future: Future[range]) -> None:
        mark = request.producer
        key = None if mark is None else (log_id, mark.producer_id, mark.sequence)
        if mark is not None and key in self._producing:  # a retry of a batch still in flight: answer both alike
            count, waiting = self._producing[key]
            if count == len(request.payloads):
                waiting.append(future)
            else:
                self._completions.append((future, _not_a_retry(log_id, mark, count, len(request.payloads))))
            return
        if mark is not None:
            stored = self.logsdb.produced(log_id, mark.producer_id, mark.sequence)
            if isinstance(stored, range):  # answered even by a sealed log: it is a retry
                same = len(stored) == len(request.payloads)
                self._completions.append(
                    (future, stored if same else _not_a_retry(log_id, mark, len(stored), len(request.payloads))))
                return
            if stored is False:
                self._completions.append((future, SequenceTooOldError(
                    f"log {log_id}: sequence {mark.sequence} is older than every batch remembered of its producer "
                    "(or the producer was forgotten): whether it was stored cannot be told; nothing was stored")))
                return
            if not self.logsdb.producer_admitted(log_id, mark.producer_id):
                self._completions.append((future, OverloadedError(
                    f"log {log_id} remembers as many producers as it may, all active lately: a new producer's "
                    "batches wait until one has been idle for producer_idle_s_min")))
                return
        refusal = self._refusal(log_id)
        if refusal is None and mark is not None:
            logsdb, producer_id = self.logsdb, mark.producer_id
            refusal = self._order.check(log_id, producer_id, mark.sequence,
                                        lambda: logsdb.next_sequence(log_id, producer_id))
        if refusal is not None:
            self._completions.append((future, refusal))
            return
        if mark is not None:
            self._order.taken(log_id, mark.producer_id, mark.sequence)
            self._producing[(log_id, mark.producer_id, mark.sequence)] = (len(request.payloads), [])
        self._pending[request.request_id] = _Pending(future, log_id, key, sum(map(len, request.payloads)))
        self._events.append((log_id, request))

    def _settle(self, pending: _Pending, result: range | SeawayError) -> None:
        self._completions.append((pending.future, result))
        if pending.producer_key is not None:
            log_id, producer_id, sequence = pending.producer_key
            self._order.decided(log_id, producer_id, sequence, isinstance(result, range))
            for future in self._producing.pop(pending.producer_key, (0, []))[1]:
                self._completions.append((future, result))

    def _wait_s(self) -> float | None:
        deadlines = [d for log_id in self._timed if (d := self._sequencers[log_id].next_deadline_ms) is not None]
        if not deadlines:
            return None
        return max(0.001, (min(deadlines) - self._clock.now_ms()) / 1000)

    def _tick(self) -> None:
        now_ms = self._clock.now_ms()
        for log_id in list(self._timed):
            deadline = self._sequencers[log_id].next_deadline_ms
            if deadline is not None and deadline <= now_ms:
                self._events.append((log_id, Tick()))

    def _pump(self) -> None:
        """Run the state machines until nothing is left to do: events first, then the disk."""
        if self._pumping:
            return
        self._pumping = True
        try:
            while True:
                while self._events:
                    target, event = self._events.popleft()
                    if target is None:
                        self._storage_effects(self._storage.handle(event))  # type: ignore[arg-type]
                    else:
                        self._sequencer_effects(target, event)  # type: ignore[arg-type]
                if self._epochs_wanted:
                    self._grant_epochs()
                    continue
                flushed = self._storage.flush()
                if not flushed:
                    break
                self._storage_effects(flushed)
        finally:
            self._pumping = False
        # Answer appends only now, once the releases they caused are published: a caller that
        # reads right after its append returns finds its records.
        done, self._completions = self._completions, []
        for future, result in done:
            if isinstance(result, range):
                future.set_result(result)
            else:
                future.set_exception(result)

    def _sequencer_effects(self, log_id: int, event: SequencerEvent) -> None:
        sequencer = self._sequencers.get(log_id)
        if sequencer is None:
            sequencer = self._sequencers[log_id] = Sequencer(log_id, self._config.sequencer)
        effects = sequencer.handle(event, self._clock.now_ms())
        if sequencer.timed:
            self._timed.add(log_id)
            self._timed_peak = max(self._timed_peak, len(self._timed))
        elif log_id in self._timed:
            self._timed.discard(log_id)
            if self._timed_peak > 64 and len(self._timed) * 16 < self._timed_peak:
                self._timed = set(self._timed)
                self._timed_peak = len(self._timed)
        for effect in effects:
            if isinstance(effect, AppendAcked):
                pending = self._pending.pop(effect.request_id)
                records, size = self._appended.get(pending.log_id, (0, 0))
                self._appended[pending.log_id] = (records + effect.count, size + pending.payload_bytes)
                self._settle(pending, range(effect.first_lsn, effect.first_lsn + effect.count))
            elif isinstance(effect, AppendFailed):
                self._settle(self._pending.pop(effect.request_id), effect.error)
            elif isinstance(effect, RequestEpoch):
                self._epochs_wanted.append(effect.log_id)
            else:
                self._events.append((None, effect))

    def _grant_epochs(self) -> None:
        """Take a new epoch for every log that asked, in one write of the epoch store (a sequencer
        asks once, then waits for the answer: no log is in the list twice)."""
        wanted = self._epochs_wanted[:_EPOCHS_PER_WRITE_MAX]  # the rest go in the next write
        del self._epochs_wanted[:_EPOCHS_PER_WRITE_MAX]
        invariant(len(set(wanted)) == len(wanted), "a sequencer asks for one epoch at a time")
        try:
            granted = bump_epochs(self._epochs, wanted)
        except SeawayError as exc:
            self._events.extend((log_id, EpochFailed(exc)) for log_id in wanted)
            return
        self._events.extend((log_id, EpochGranted(granted[log_id])) for log_id in wanted)

    def _storage_effects(self, effects: list[StorageEffect]) -> None:
        for effect in effects:
            if isinstance(effect, DiskWrite):
                if self._syncer is None:
                    self._events.append((None, DiskWriteDone(effect.write_id, self._write(effect, effect.sync))))
                elif self._failed_apply is not None:
                    # Started on top of a write that failed: the storage node will fail it too, so
                    # it must not reach the disk either.
                    self._syncer.submit(effect.write_id, False, StorageError("an earlier disk write failed"))
                else:
                    # Applied now, durable once the syncer's next WAL sync returns: meanwhile this
                    # thread goes on, and may apply the next write (two-stage group commit).
                    error = self._write(effect, False)
                    if error is not None:
                        self._failed_apply = effect.write_id
                    self._syncer.submit(effect.write_id, effect.sync, error)
            elif isinstance(effect, StoreReply | SealReply):
                self._events.append((effect.log_id, effect))
            elif isinstance(effect, Released):
                with self._release_lock:
                    self._released[effect.log_id] = effect.lsn
                    watchers = tuple(self._watchers.get(effect.log_id, ()))
                for wake in watchers:  # only the readers of this log: the others would wake for nothing
                    wake.set()

    def _write(self, write: DiskWrite, sync: bool) -> SeawayError | None:
        if self._disk_fault is not None:
            injected = self._disk_fault(write)
            if injected is not None:
                return injected
        try:
            self.logsdb.write(write.ops, sync=sync)
        except SeawayError as exc:
            return exc
        for op in write.ops:
            if isinstance(op, PutRecords):
                self._tail.add(op.log_id, op.first_lsn, op.timestamp_ms, op.payloads)
            elif isinstance(op, PutHolePlug):
                self._tail.forget(op.log_id)
        return None

    def _fail_all(self, error: SeawayError) -> None:
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()
        for _, waiting in self._producing.values():
            for future in waiting:
                if not future.done():
                    future.set_exception(error)
        self._producing.clear()
        with self._inbox_cv:
            for _, _, queued in self._inbox:
                queued.set_exception(error)
            self._inbox.clear()
        for ends in self._ending.values():
            for end in ends:
                if not end.done():
                    end.set_exception(error)
        self._ending.clear()

    # --- reading (any thread) -------------------------------------------------------------------

    def released(self, log_id: int) -> int:
        """The last LSN of the log that readers may read (its tail)."""
        with self._release_lock:
            return self._released.get(log_id, 0)

    def read_chunk(self, want: ReadWant) -> ReadChunk:
        self._check_open()
        log_id = want.log_id
        trim_point = self.logsdb.trim_point(log_id)
        if want.lsn_from > trim_point:
            cached = self._tail.take(log_id, want.lsn_from, want.lsn_to, self._config.read_chunk_bytes_max)
            if cached:
                # Consecutive LSNs from lsn_from on, so every entry overlapping them is here and no
                # range in between lacks one: nothing for epoch ends to classify.
                return ReadChunk(cached, min(cached[-1].last_lsn, want.lsn_to), trim_point, {})
        return read_chunk(self.logsdb, want, self._config.read_chunk_bytes_max)

    def watch_releases(self, log_id: int, wake: threading.Event) -> None:
        """Set ``wake`` whenever the log's release point moves, and when the store closes."""
        with self._release_lock:
            self._watchers.setdefault(log_id, set()).add(wake)
            if self._closed:
                wake.set()

    def unwatch_releases(self, log_id: int, wake: threading.Event) -> None:
        with self._release_lock:
            watchers = self._watchers.get(log_id)
            if watchers is not None:
                watchers.discard(wake)
                if not watchers:
                    del self._watchers[log_id]

    def read_state(self, log_id: int, lsn_from: int, lsn_until: int) -> LogReadState:
        return LogReadState(log_id, lsn_from, lsn_until)

    # --- lifecycle ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the log store is closed")

    def close(self) -> None:
        """Finish the appends already accepted, then close. Idempotent."""
        with self._inbox_cv:
            if self._closing:
                already = True
            else:
                already = False
                self._closing = True
                self._inbox_cv.notify()
        if already:
            self._thread.join()
            return
        self._thread.join()
        if self._syncer is not None:
            self._syncer.close()
        self._fail_all(ClosedError("the log store closed before the append was written"))
        invariant(not self._pending, "no append is left waiting")
        with self._release_lock:
            self._closed = True
            watchers = [wake for wakes in self._watchers.values() for wake in wakes]
        for wake in watchers:
            wake.set()
        self._epochs.close()
        self.logsdb.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def write_failure(self) -> str | None:
        """Why appends can no longer be stored until the store is reopened (a disk sync failed)."""
        return self.logsdb.write_failure


def _not_a_retry(log_id: int, mark: ProducerMark, count: int, got: int) -> InvalidArgumentError:
    """A producer's sequence names one batch: one of another size under it is a mistake, not a retry."""
    return InvalidArgumentError(
        f"log {log_id}: sequence {mark.sequence} of producer {mark.producer_id!r} names a batch of {count} records, "
        f"this one has {got}: a retry must resend the same batch; a new batch needs a new sequence")
