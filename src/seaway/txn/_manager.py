"""The transaction manager: issues write pointers and snapshots, commits and aborts, times out idle
transactions, prunes the invalid list; durable on a Seaway log (group commit) plus saved states.

One manager serves a store: the embedded process's, or the server's for its clients. Every change
of its state is an edit (see :mod:`_state`) appended to the write-ahead log before the caller hears
of it. Appends made while others are in flight are joined by the log layer into one append and one
disk sync, so concurrent begins and commits share syncs (group commit). Every
``TxnConfig.save_edits`` edits (or ``save_interval_s``) the whole state is saved in the metadata
store with the LSN it covers, and the log is trimmed there: recovery loads the saved state and
applies the edits after it.

A commit has three phases. Under the lock, it is checked (in progress, not timed out, no conflict)
and its edit appended; its conflict keys count for other commits from then on. Then, once the edit
is durable, its metadata writes (a consumer's position, say) are applied. Only then does it leave
the in-progress set that snapshots carry: no reader sees its data before the commit is durable and
its metadata writes are in place. Recovery applies a logged commit's metadata writes again (they
are plain puts and deletes, so applying twice changes nothing).

Each commit and each time-out writes one change-ledger entry (summary fields only), in the batch
that applies the commit's writes, with the marker that says it was applied: after a crash between
the log edit and that batch, recovery writes it, and never twice.
"""

from __future__ import annotations

import builtins
import contextlib
import heapq
import json
import logging
import secrets
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seaway._clock import Clock, SystemClock
from seaway._passes import PeriodicPasses
from seaway.errors import (
    CorruptionError,
    InvalidArgumentError,
    OverloadedError,
    SeawayError,
    StorageError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    UnknownLogError,
    UnknownTransactionError,
)
from seaway.ledger import TxnAbortedByTimeout, TxnCommitted
from seaway.log import LSN_OLDEST, AbortedWrites, Gap, GapType, MetaApi, Record, check_meta_key
from seaway.txn._invalid import CHANGES_IDS_MAX, PAGE_IDS_MAX, InvalidChanges, InvalidVersion
from seaway.txn._snapshot import Snapshot
from seaway.txn._state import (
    POINTERS_PER_MS,
    Abort,
    Begin,
    Commit,
    Edit,
    InProgress,
    Prune,
    Register,
    Reserve,
    SaveMark,
    Settle,
    TimeOut,
    TxnState,
    TxnStatus,
    Visible,
    decode_edit,
    encode_edit,
)

if TYPE_CHECKING:
    from seaway.log import Log, Logs

log = logging.getLogger("seaway.txn")

WAL_LOG = "seaway.txn.wal"
"""The log that holds the manager's edits (a reserved name)."""
NAMESPACE = "txn"
_STATE_HEAD = b"state"
_STATE_CHUNK = b"state/"
_APPLIED = b"applied/"
"""``applied/<LSN>``: the metadata writes of the commit logged at LSN are in place, with its ledger
entry (put with them, so that recovery applies only those of commits cut off before; applying the
others again would put back values written since, outside the transaction, and record the commit
twice). The same for a time-out logged at LSN and its ledger entry. Those at or below a saved state
are deleted."""
_CHUNK_BYTES = 512 << 10
CONFLICT_KEYS_MAX = 100_000
WRITES_MAX = 1_000
LOGS_MAX = 10_000
COMMIT_ALL_MAX = 10_000
"""Transactions one ``commit_all`` commits together, at most."""
PRUNE_IDS_MAX = 10_000
"""Transactions one ``Prune`` edit drops from the invalid list (an edit is one log record)."""
_PENDING = 2**64
"""The commit pointer of a commit being logged: later than any transaction's begin."""


RECOVERY_GAP_POINTERS = 1000 * POINTERS_PER_MS
EXPIRIES_SLACK = 1024
"""The expiry order is rebuilt from the transactions in progress once it holds more than twice
as many entries as they are, plus this: entries of ended transactions go then, not at their
timeout (one ended in a heap is not cheap to find)."""


def _log_failure(future: Future[int]) -> None:
    if (exc := future.exception()) is not None:
        log.warning("a transaction log append failed", extra={"error": str(exc)})


@dataclass(frozen=True)
class TxnConfig:
    timeout_s: float = 30.0
    """How long a transaction may stay in progress unless it asks for another timeout at begin."""
    timeout_s_max: float = 3600.0
    in_progress_max: int = 100_000
    """Transactions in progress at once; a begin beyond it fails with OverloadedError."""
    outcomes_s: float = 900.0
    """How long after a transaction ended ``status`` still reports its outcome (then: UNKNOWN),
    also across restarts: what a client whose commit call was cut off has to ask."""
    outcomes_max: int = 1_000_000
    """A memory bound on those outcomes (17 bytes each): beyond, the oldest are forgotten earlier."""
    tick_s: float = 0.1
    """How often idle transactions are timed out."""
    prune_interval_s: float = 10.0
    settle_s: float = 60.0
    """How long after an invalid transaction's end, or its expiry if later, its writes may still
    land. A writer aborted by id is not told: its handle goes on writing until its own deadline,
    just before the expiry; an append sent by then is answered within this time. Then its logs'
    tails are noted, it is listed as aborted in each of them (the log layer's aborted writes,
    which readers honour), and it leaves the invalid list."""
    save_edits: int = 10_000
    save_interval_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("timeout_s", "timeout_s_max", "tick_s", "prune_interval_s", "save_interval_s", "outcomes_s"):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(f"TxnConfig.{name} must be positive")
        if self.timeout_s > self.timeout_s_max:
            raise InvalidArgumentError("TxnConfig.timeout_s must not exceed timeout_s_max")
        for name in ("in_progress_max", "outcomes_max", "save_edits"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"TxnConfig.{name} must be at least 1")
        if self.settle_s < 0:
            raise InvalidArgumentError("TxnConfig.settle_s must not be negative")


@dataclass(frozen=True)
class TxnInfo:
    """A transaction the manager holds: in progress, or invalid (aborted or timed out, its data
    not yet gone)."""

    id: int
    status: TxnStatus
    began_ms: int | None
    expiry_ms: int | None
    logs: tuple[int, ...]


def _applied_key(lsn: int) -> bytes:
    return _APPLIED + b"%020d" % lsn


def _commit_change(state: TxnState, edit: Commit) -> TxnCommitted:
    """A commit's ledger change, from the state before it (which still holds its logs)."""
    logs = sum(len(txn.logs) for wp in edit.write_pointers if (txn := state.in_progress.get(wp)) is not None)
    return TxnCommitted(edit.write_pointer, logs, len(edit.writes), len(edit.write_pointers))


def _ledger_change(state: TxnState, edit: Edit) -> TxnCommitted | TxnAbortedByTimeout | None:
    """The ledger change an edit makes, from the state before it: a commit, or a time-out of a
    transaction in progress (one the state no longer holds ends nothing); None for other edits."""
    if isinstance(edit, Commit):
        return _commit_change(state, edit)
    if isinstance(edit, TimeOut) and (txn := state.in_progress.get(edit.write_pointer)) is not None:
        return TxnAbortedByTimeout(edit.write_pointer, len(txn.logs))
    return None


def check_write_pointer(write_pointer: object) -> int:
    """A transaction id (write pointer), checked: an integer in (0, 2**64); shared with the remote
    client, so that both refuse the same ids the same way."""
    if not isinstance(write_pointer, int) or isinstance(write_pointer, bool) or not 0 < write_pointer < 2**64:
        raise InvalidArgumentError(f"a transaction id is an integer in (0, 2**64), got {write_pointer!r}")
    return write_pointer


def check_write_pointers(write_pointers: Iterable[int]) -> tuple[int, ...]:
    """The transactions of a ``commit_all``: 1 to COMMIT_ALL_MAX distinct ids (shared with the
    remote client)."""
    if isinstance(write_pointers, (int, bytes, str)):
        raise InvalidArgumentError(f"commit_all takes several transaction ids, got {write_pointers!r:.80}")
    pointers = tuple(write_pointers)
    if not 0 < len(pointers) <= COMMIT_ALL_MAX:
        raise InvalidArgumentError(f"commit_all commits 1 to {COMMIT_ALL_MAX} transactions, got {len(pointers)}")
    for write_pointer in pointers:
        check_write_pointer(write_pointer)
    if len(set(pointers)) != len(pointers):
        raise InvalidArgumentError("commit_all names a transaction more than once")
    return pointers


def check_commit(conflicts: Iterable[bytes], writes: Iterable[tuple[str, bytes, bytes | None]],
                 ) -> tuple[frozenset[bytes], tuple[tuple[str, bytes, bytes | None], ...]]:
    """A commit's conflict keys and metadata writes, checked (shared with the remote client)."""
    keys = frozenset(conflicts)
    if len(keys) > CONFLICT_KEYS_MAX:
        raise InvalidArgumentError(f"a transaction declares at most {CONFLICT_KEYS_MAX} conflict keys")
    for key in keys:
        if not isinstance(key, bytes) or not 0 < len(key) <= 1024:
            raise InvalidArgumentError(f"a conflict key is 1-1024 bytes, got {key!r:.80}")
    checked = tuple(writes)
    if len(checked) > WRITES_MAX:
        raise InvalidArgumentError(f"a transaction makes at most {WRITES_MAX} metadata writes")
    for namespace, key, value in checked:
        check_meta_key(namespace, key)
        if value is not None and not isinstance(value, bytes):
            raise InvalidArgumentError(f"a metadata value must be bytes or None, got {type(value).__name__}")
    return keys, checked


class TransactionManager:
    """The manager of an embedded store (``sw.txn`` is built on it). Thread-safe."""

    def __init__(self, logs: Logs, meta: MetaApi, clock: Clock | None = None, config: TxnConfig | None = None) -> None:
        self.config = config or TxnConfig()
        self._logs = logs
        self._meta = meta
        self._aborted = AbortedWrites(meta)
        self._clock = clock or SystemClock()
        self._cond = threading.Condition()
        self._committing: dict[int, tuple[int, frozenset[bytes]]] = {}
        self._begins: dict[int, Future[int]] = {}
        """Begins whose append has not succeeded (yet), by write pointer, until their transaction ends."""
        self._unrecorded = 0
        """Time-outs logged whose ledger entry is not written yet: a save waits for them, as for
        commits (the log below it is trimmed, and recovery could not write them any more)."""
        self._saving = False
        self._save_lock = threading.Lock()
        self._stopped: StorageError | None = None
        """One save at a time: a save that began earlier must not land its state after a later
        one trimmed the log past that earlier state's end."""
        self._edits_since_save = 0
        self._saved_at_s = self._clock.monotonic_s()
        self._expiries: list[tuple[int, int]] = []
        self._wal: Log | None = None
        with contextlib.suppress(UnknownLogError):  # made by the first edit: a store that never
            self._wal = logs.get(WAL_LOG)           # uses transactions has no log of theirs
        self._dated: list[Visible] = []
        self.state = self._recover()
        self._epoch = secrets.randbits(62) + 1
        """This incarnation's number: the invalid list's versions count from here (see :mod:`._invalid`)."""
        if self._wal is not None:  # the floor recovery raised, durable before any pointer above it is issued
            for visible in self._dated:  # as recovery dated them, for the next recovery to do the same
                self._append(visible)
            self._append(Reserve(self.state.last_write_pointer)).result()
        self._ticks = PeriodicPasses("txn-timeouts", self._tick, self.config.tick_s)
        self._prunes = PeriodicPasses("txn-pruning", self.run_pruning, self.config.prune_interval_s)

    def start(self) -> None:
        """Start timing out idle transactions, saving state and pruning, on background threads."""
        self._ticks.start()
        self._prunes.start()

    def close(self) -> None:
        self._ticks.close()
        self._prunes.close()

    # --- recovery and saving ----------------------------------------------------------------------

    def _recover(self) -> TxnState:
        head = self._meta.get(NAMESPACE, _STATE_HEAD)
        start = LSN_OLDEST
        state = TxnState(*self._outcome_bounds)
        if head is not None:
            try:
                saved = json.loads(head.value)
                chunks = [self._meta.get(NAMESPACE, _STATE_CHUNK + b"%06d" % i) for i in range(int(saved["chunks"]))]
                if any(c is None for c in chunks):
                    raise ValueError("a chunk is missing")
                raw = b"".join(c.value for c in chunks if c is not None)
                start = int(saved["lsn"]) + 1
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptionError(f"the transaction manager's saved state is damaged: {exc!r:.200}") from None
            state = TxnState.decode(raw, *self._outcome_bounds)
        edits: list[tuple[int, Edit]] = []  # since the saved state: at most about save_edits
        for item in () if self._wal is None else self._wal.read(start):
            if isinstance(item, Gap):
                # Trimmed past the saved state: the edits in between are gone as surely as lost ones.
                if item.type in (GapType.DATALOSS, GapType.TRIM):
                    raise CorruptionError(f"the transaction log lost records {item.lsn_lo}-{item.lsn_hi}")
                continue
            if not isinstance(item, Record):  # pragma: no cover - plain reads yield records and gaps
                continue
            edits.append((item.lsn, decode_edit(item.payload)))
        # A commit whose append failed, and whose transactions were aborted then (see _cancel),
        # commits nothing, whichever of the two records came first.
        cancelled = {edit.write_pointer for _, edit in edits if isinstance(edit, Abort)}
        for lsn, edit in edits:
            if isinstance(edit, Commit) and (not state.takes(edit) or cancelled.intersection(edit.write_pointers)):
                continue
            change = _ledger_change(state, edit)  # from the state before the edit: its logs
            state.apply(edit)
            if change is not None and self._meta.get(NAMESPACE, _applied_key(lsn)) is None:
                self._apply_edit(edit.writes if isinstance(edit, Commit) else (), lsn, change)
        self._dated = state.date_commits()
        for write_pointer, txn in state.in_progress.items():
            heapq.heappush(self._expiries, (txn.expiry_ms, write_pointer))
        # Begins are not waited for (see begin): write pointers issued before a crash may be
        # missing from the log. Issue the next ones a second of pointers above any of them (the
        # caller logs that floor, so that the next recovery starts above what this run issues).
        if self._wal is not None:  # made by the first edit, before any write pointer was issued
            state.last_write_pointer = max(state.last_write_pointer,
                                           self._clock.now_ms() * POINTERS_PER_MS) + RECOVERY_GAP_POINTERS
        return state

    @property
    def _outcome_bounds(self) -> tuple[int, int]:
        return self.config.outcomes_max, int(self.config.outcomes_s * 1000)

    def save(self) -> None:
        """Save the whole state and trim the log below it (done by itself every so often)."""
        with self._save_lock:
            self._save()

    def _save(self) -> None:
        with self._cond:
            self._saving = True
            try:
                while (self._committing or self._unrecorded) and self._stopped is None:
                    self._cond.wait()
                self._check_running()
                raw = self.state.encode()
                marker = self._append(SaveMark())
                self._edits_since_save = 0
            finally:
                self._saving = False
                self._cond.notify_all()
        lsn = marker.result()
        chunks = [raw[i:i + _CHUNK_BYTES] for i in range(0, len(raw), _CHUNK_BYTES)] or [b""]
        # Every commit logged before the checkpoint has applied its writes, and every edit its
        # ledger entry (saving waited for them).
        batch = (self._meta.batch().delete_prefix(NAMESPACE, _STATE_CHUNK)
                 .delete_range(NAMESPACE, _APPLIED, _applied_key(lsn + 1)))
        for i, chunk in enumerate(chunks):
            batch.put(NAMESPACE, _STATE_CHUNK + b"%06d" % i, chunk)
        batch.put(NAMESPACE, _STATE_HEAD, json.dumps({"lsn": lsn, "chunks": len(chunks)}).encode()).commit()
        if self._wal is not None:
            self._wal.trim(lsn)
        self._saved_at_s = self._clock.monotonic_s()

    def _append(self, edit: Edit) -> Future[int]:
        """Append ``edit`` (called under the lock, so that the log's order is the order applied)."""
        self._edits_since_save += 1
        if self._wal is None:
            self._wal = self._logs.get_or_create(WAL_LOG)
        return self._wal.append_async(encode_edit(edit))

    def _apply_edit(self, writes: Iterable[tuple[str, bytes, bytes | None]], lsn: int,
                    change: TxnCommitted | TxnAbortedByTimeout) -> None:
        """Apply the metadata writes of the edit logged at ``lsn`` (a commit's) and write its ledger
        entry, with its applied marker, in one batch."""
        batch = self._meta.batch().put(NAMESPACE, _applied_key(lsn), b"").record(change)
        for namespace, key, value in writes:
            if value is None:
                batch.delete(namespace, key)
            else:
                batch.put(namespace, key, value)
        # Not synced: the edit's log record is, and recovery applies again every edit whose marker
        # (written in this same batch) is missing; a save's synced batch makes it durable before
        # the log below it is trimmed.
        self._meta.commit(batch, sync=False)

    def _stop(self, what: str, exc: SeawayError) -> StorageError:
        """Stop the manager (rather than let saves wait for ever for an edit logged but not
        applied): a restart applies it from the log."""
        with self._cond:
            self._stopped = StorageError(f"the transaction manager stopped: {what} ({exc}); reopen the store")
            self._cond.notify_all()
        return self._stopped

    def _end_all(self, ends: Iterable[Abort | TimeOut]) -> list[tuple[Future[int], TxnAbortedByTimeout | None]]:
        """Apply and log ``ends`` (called under the lock); each time-out with its ledger entry, to
        write once it is logged (:meth:`_record_timeout`)."""
        ended = []
        for edit in ends:
            change = _ledger_change(self.state, edit)
            timed_out = change if isinstance(change, TxnAbortedByTimeout) else None
            ended.append((self._end(edit), timed_out))
            self._unrecorded += timed_out is not None
        return ended

    def _finish_ends(self, ended: Iterable[tuple[Future[int], TxnAbortedByTimeout | None]]) -> None:
        """Wait for ends logged by :meth:`_end_all`; write the time-outs' ledger entries."""
        failure: BaseException | None = None
        for future, change in ended:
            try:
                if change is None:
                    future.result()
                else:
                    self._record_timeout(future, change)
            except BaseException as exc:  # the others are recorded all the same
                failure = failure or exc
        if failure is not None:
            raise failure

    def _record_timeout(self, future: Future[int], change: TxnAbortedByTimeout) -> None:
        try:
            lsn = future.result()  # if it fails, the time-out may be logged or not: recovery records it if it is
            try:
                self._apply_edit((), lsn, change)
            except SeawayError as exc:
                raise self._stop(f"transaction {change.txn_id} is logged as timed out but its ledger entry "
                                 "failed", exc) from exc
        finally:
            with self._cond:
                self._unrecorded -= 1
                self._cond.notify_all()

    # --- the API ----------------------------------------------------------------------------------

    @property
    def default_timeout_s(self) -> float:
        return self.config.timeout_s

    def begin(self, timeout_s: float | None = None) -> Snapshot:
        """Begin a transaction; return its snapshot, whose ``write_pointer`` is its id."""
        timeout = self.config.timeout_s if timeout_s is None else timeout_s
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= self.config.timeout_s_max:
            raise InvalidArgumentError(f"a transaction's timeout is in (0, {self.config.timeout_s_max}] s, "
                                       f"got {timeout_s!r}")
        with self._cond:
            self._check_running()
            if len(self.state.in_progress) >= self.config.in_progress_max:
                raise OverloadedError(f"{self.config.in_progress_max} transactions are in progress; "
                                      "commit or abort some first")
            now_ms = self._clock.now_ms()
            edit = Begin(self.state.next_write_pointer(now_ms), now_ms, int(timeout * 1000))
            self.state.apply(edit)
            heapq.heappush(self._expiries, (now_ms + edit.timeout_ms, edit.write_pointer))
            durable = self._append(edit)
            self._begins[edit.write_pointer] = durable
            snapshot = self.state.snapshot(edit.write_pointer)
        # Not waited for: a transaction writes nothing before a register or a commit, whose edits
        # come after this one in the log and are waited for, so its begin is durable by then. One
        # lost in a crash is a transaction the manager no longer knows: its register or commit
        # fails with UnknownTransactionError, and it never wrote anything. One refused is a hole
        # in the log that later edits do not fill: its register waits for it and fails.
        durable.add_done_callback(_log_failure)
        durable.add_done_callback(lambda done: self._logged_begin(edit.write_pointer, done))
        return snapshot

    def _logged_begin(self, write_pointer: int, done: Future[int]) -> None:
        if done.exception() is None:
            self._begins.pop(write_pointer, None)  # one dict operation: no lock needed

    def snapshot(self) -> Snapshot:
        """What is committed now, for a reader outside any transaction."""
        with self._cond:
            self._check_running()  # stopped, what it holds may not be what the log says
            return self.state.snapshot()

    def invalid_changes(self, known: InvalidVersion, ids_max: int = CHANGES_IDS_MAX) -> InvalidChanges:
        """What turns a copy of the invalid list at ``known`` into the list as it is now (for a
        server's replies: a client keeps a copy, see :mod:`seaway.txn._invalid`): the changes
        since, or the whole list, or (too long to send whole) an answer to read it in pages."""
        with self._cond:
            journal = self.state.invalid_journal
            if known.epoch == self._epoch:
                changes = journal.since(known.version, ids_max)
                if changes is not None:
                    return InvalidChanges(self._epoch, journal.version, added=changes[0], removed=changes[1])
            if len(self.state.invalid) <= ids_max:
                return InvalidChanges(self._epoch, journal.version, reset=True, added=self.state.snapshot().invalid)
            return InvalidChanges(self._epoch, journal.version, fetch=True)

    def invalid_page(self, after: int, limit: int = PAGE_IDS_MAX) -> tuple[tuple[int, ...], InvalidVersion, bool]:
        """Up to ``limit`` (at most PAGE_IDS_MAX) ids of the invalid list above ``after``, in order,
        the list's version they were read at, and whether more follow."""
        if not isinstance(limit, int) or not 1 <= limit <= PAGE_IDS_MAX:
            raise InvalidArgumentError(f"a page of the invalid list holds 1-{PAGE_IDS_MAX} ids, got {limit!r}")
        if not isinstance(after, int) or after < 0:
            raise InvalidArgumentError(f"a page starts after a write pointer (0 or more), got {after!r}")
        with self._cond:
            ids, more = self.state.invalid_page(after, limit)
            return ids, InvalidVersion(self._epoch, self.state.invalid_journal.version), more

    def status(self, write_pointer: int) -> TxnStatus:
        check_write_pointer(write_pointer)
        with self._cond:
            self._check_running()  # stopped, the log decides what a restart will say
            return self.state.status(write_pointer)

    def register(self, write_pointer: int, logs: Iterable[int]) -> None:
        """Note that the transaction is about to write to ``logs``; durable when it returns. A
        writer calls it before its first write to each log, so that an aborted or timed-out
        transaction's data can be found (and the invalid list pruned once it is gone)."""
        check_write_pointer(write_pointer)
        wanted = set(logs)
        if len(wanted) > LOGS_MAX:
            raise InvalidArgumentError(f"register at most {LOGS_MAX} logs at once")
        # Data written before its begin is logged (it may never be: refused) would be a
        # transaction's that a restart does not know, visible however it ended.
        if (refused := self._unlogged_begin((write_pointer,))) is not None:
            raise refused
        with self._cond:
            txn = self._live(write_pointer)
            fresh = wanted - txn.logs
            if not fresh:
                return
            edit = Register(write_pointer, tuple(sorted(fresh)))
            self.state.apply(edit)
            durable = self._append(edit)
        durable.result()

    def commit(self, write_pointer: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit: every write the transaction made becomes visible, and its metadata ``writes``
        are applied, all together. Raises :class:`TransactionConflictError` (and aborts it) if a
        transaction that committed after it began declared one of the same ``conflicts`` keys."""
        self.commit_all((check_write_pointer(write_pointer),), conflicts, writes)

    def commit_all(self, write_pointers: Iterable[int], conflicts: Iterable[bytes] = (),
                   writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit several transactions as one: one edit in the log, so that after a crash either
        all of them are committed, with the metadata ``writes``, or none is (a Spark driver
        publishes what its tasks staged, each in a transaction of its own).

        The ``conflicts`` keys count for all of them: the commit fails if a transaction that
        committed after the earliest of them began declared one of the keys. When it cannot commit
        them all (one is not in progress, one timed out, a conflict), it commits none, aborts those
        that could have committed (a timed-out one is timed out), and raises the error of the first
        that could not."""
        pointers = check_write_pointers(write_pointers)
        keys, checked = check_commit(conflicts, writes)
        # A commit record of a transaction whose begin is not in the log commits nothing after a
        # restart: one that writes no log (no register waited for its begin) must wait here.
        unlogged = self._unlogged_begin(pointers)
        with self._cond:
            while self._saving:
                self._cond.wait()
            self._check_running()
            failure, ends = self._refusal(pointers, keys, unlogged)
            if failure is None:
                edit = Commit(pointers[0], tuple(sorted(keys)), checked, pointers[1:], self._clock.now_ms())
                committed = _commit_change(self.state, edit)
                # Appended first: an append refused at once (an edit over the log's payload bound)
                # leaves the transactions in progress, not "being committed" for ever.
                durable = self._append(edit)
                # Until it is visible, a commit conflicts with every transaction in progress that
                # declares one of its keys: none of their snapshots can have seen it.
                for i, write_pointer in enumerate(pointers):
                    self._committing[write_pointer] = (_PENDING, keys if i == 0 else frozenset())
            else:
                pending = self._end_all(ends)
        if failure is not None:
            self._finish_ends(pending)
            raise failure
        try:
            lsn = durable.result()
        except BaseException as exc:
            self._cancel(pointers, exc)
            raise
        try:  # every commit has a ledger entry: a batch even when it has no metadata writes
            self._apply_edit(checked, lsn, committed)
        except SeawayError as exc:
            # Logged but not applied: a restart applies it from the log. Until then the manager
            # stops (rather than let saves wait for this commit forever).
            raise self._stop(f"transaction {pointers[0]} is logged as committed but its writes failed", exc) from exc
        with self._cond:
            # Its conflict keys date from now, when it becomes visible: a transaction that began
            # while it was being logged did not see it either. Logged (not waited for), so that
            # recovery dates it the same; one lost in a crash dates it later, never earlier.
            self.state.apply(edit)
            if edit.conflicts:
                visible = Visible(edit.write_pointer, self.state.last_write_pointer)
                self.state.apply(visible)
                self._append(visible).add_done_callback(_log_failure)
            for write_pointer in pointers:
                del self._committing[write_pointer]
                self._begins.pop(write_pointer, None)
            self._cond.notify_all()

    def _cancel(self, pointers: tuple[int, ...], exc: BaseException) -> None:
        """The commit of ``pointers`` failed to append: it may be written all the same (a reply
        lost), and a restart would find it committed. Abort them, waited for, so that the live
        outcome and the recovered one agree: recovery commits nothing by a commit record whose
        transactions have an abort in the log (before or after it). If that fails too, stop: the
        outcome is the log's, which the next opening reads."""
        with self._cond:
            now_ms = self._clock.now_ms()
            for write_pointer in pointers:
                del self._committing[write_pointer]
            self._cond.notify_all()
            try:
                futures = [self._end(Abort(write_pointer, now_ms)) for write_pointer in pointers]
            except SeawayError as refused:
                futures, failure = [], refused
        try:
            for future in futures:
                future.result()
            return
        except SeawayError as refused:
            failure = refused
        raise self._stop(f"transaction {pointers[0]}'s commit failed to append ({exc}) and so did its abort",
                         failure) from exc

    def _unlogged_begin(self, pointers: tuple[int, ...]) -> SeawayError | None:
        """Wait for the begins of ``pointers`` not logged yet; the error of the first that failed
        (refused, or its reply lost: a restart may not know that transaction), else None."""
        for write_pointer in pointers:
            begun = self._begins.get(write_pointer)
            if begun is not None and isinstance(error := begun.exception(), SeawayError):
                return error
        return None

    def _refusal(self, pointers: tuple[int, ...], keys: frozenset[bytes], unlogged: SeawayError | None = None,
                 ) -> tuple[SeawayError | None, list[Abort | TimeOut]]:
        """Why ``pointers`` cannot commit together now (``unlogged``: the error of a begin not
        logged), and the edits that end those of them still in progress; (None, []) when they can.
        Called under the lock."""
        now_ms = self._clock.now_ms()
        failure = unlogged
        for write_pointer in pointers if failure is None else ():
            try:
                txn = self._live(write_pointer)
            except SeawayError as exc:
                failure = exc
                break
            if txn.expiry_ms <= now_ms:
                failure = TransactionTimedOutError(f"transaction {write_pointer} timed out")
                break
        if failure is None:
            key = self.state.conflicting(min(pointers), keys, self._committing.values())
            if key is None:
                return None, []
            failure = TransactionConflictError(f"transaction {min(pointers)} conflicts on key {key!r:.80} "
                                               "with a transaction that committed after it began")
        ends: list[Abort | TimeOut] = []
        for write_pointer in pointers:
            live = self.state.in_progress.get(write_pointer)
            if live is None or write_pointer in self._committing:
                continue
            timed_out = live.expiry_ms <= now_ms
            ends.append(TimeOut(write_pointer, now_ms) if timed_out else Abort(write_pointer, now_ms))
        return failure, ends

    def abort(self, write_pointer: int) -> None:
        """Abort: nothing the transaction wrote will be visible. Aborting an aborted or timed-out
        transaction again does nothing; aborting a committed one raises."""
        check_write_pointer(write_pointer)
        with self._cond:
            status = self.state.status(write_pointer)
            if status in (TxnStatus.ABORTED, TxnStatus.TIMED_OUT) and write_pointer not in self.state.in_progress:
                return
            txn = self._live(write_pointer)
            edit = Abort(write_pointer, self._clock.now_ms())
            durable = self._end(edit)
        if not txn.logs:  # nothing of it exists: lost in a crash, it ends the same way (timed out)
            durable.add_done_callback(_log_failure)
            return
        try:
            durable.result()
        except SeawayError as exc:
            # Aborted here already (readers step over its data), but maybe not in the log: a
            # restart would find it in progress. Logged again (twice is harmless); failing that,
            # stop, and the log decides.
            try:
                with self._cond:
                    self._check_running()
                    again = self._append(edit)
                again.result()
            except SeawayError as refused:
                raise self._stop(f"transaction {write_pointer}'s abort failed to append ({exc}), twice",
                                 refused) from exc

    def list(self, after: TxnInfo | None = None, limit: int | None = None) -> list[TxnInfo]:
        """Transactions in progress, then invalid ones, each by id: a page of at most ``limit``
        (all when None) that starts after ``after``, the last item of the page before (a
        transaction that ended between the two pages may come in both, or in neither if it
        was pruned). A page costs O(what the manager holds), not a copy of all of it per item."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidArgumentError(f"a page's limit is a positive integer, got {limit!r}")
        live_after, dead_after = 0, 0
        if after is not None:
            if after.status is TxnStatus.IN_PROGRESS:
                live_after = after.id
            else:
                live_after, dead_after = 2**64, after.id
        most = 2**64 if limit is None else limit
        with self._cond:
            live_ids = [wp for wp in self.state.in_progress if wp > live_after]
            live_ids = heapq.nsmallest(most, live_ids) if limit is not None else sorted(live_ids)
            live = [TxnInfo(wp, TxnStatus.IN_PROGRESS, t.began_ms, t.expiry_ms, tuple(sorted(t.logs)))
                    for wp, t in ((wp, self.state.in_progress[wp]) for wp in live_ids)]
            room = most - len(live)
            dead: list[TxnInfo] = []
            if room > 0:
                dead_ids = (wp for wp in self.state.invalid if wp > dead_after)
                chosen = heapq.nsmallest(room, dead_ids) if limit is not None else sorted(dead_ids)
                dead = [TxnInfo(wp, e.status, None, None, e.logs)
                        for wp, e in ((wp, self.state.invalid[wp]) for wp in chosen)]
        return live + dead

    # --- internals --------------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._stopped is not None:
            raise self._stopped

    def _live(self, write_pointer: int) -> InProgress:
        """The transaction, in progress and not being committed; else the error that says why."""
        self._check_running()
        txn = self.state.in_progress.get(write_pointer)
        if txn is not None and write_pointer not in self._committing:
            return txn
        status = TxnStatus.IN_PROGRESS if txn is not None else self.state.status(write_pointer)
        if status is TxnStatus.UNKNOWN:
            raise UnknownTransactionError(f"no transaction {write_pointer} is known (never begun, or finished "
                                          f"before the outcomes the manager keeps: outcomes_s after it ended)")
        if status is TxnStatus.TIMED_OUT:
            raise TransactionTimedOutError(f"transaction {write_pointer} timed out")
        what = "is being committed" if status is TxnStatus.IN_PROGRESS else f"already ended: {status.value}"
        raise TransactionNotInProgressError(f"transaction {write_pointer} {what}")

    def _end(self, edit: Abort | TimeOut) -> Future[int]:
        self._begins.pop(edit.write_pointer, None)
        self.state.apply(edit)
        return self._append(edit)

    def _tick(self) -> None:
        """Time out the transactions past their expiry; save the state when it is due."""
        if self.run_timeouts():
            self.save()

    def run_timeouts(self) -> bool:
        """Time out the transactions past their expiry now (done by itself every ``tick_s``);
        return whether saving the state is due. Public for tests that drive the manager with a
        fake clock and no background passes."""
        now_ms = self._clock.now_ms()
        pending: list[tuple[Future[int], TxnAbortedByTimeout | None]] = []
        later: list[tuple[int, int]] = []
        with self._cond:
            while self._expiries and self._expiries[0][0] <= now_ms:
                _, write_pointer = heapq.heappop(self._expiries)
                txn = self.state.in_progress.get(write_pointer)
                if txn is None:
                    continue
                if write_pointer in self._committing or txn.expiry_ms > now_ms:
                    # Being committed (it ends by itself, or is looked at again next time): the
                    # others behind it time out all the same.
                    later.append((max(txn.expiry_ms, now_ms + 1), write_pointer))
                    continue
                pending.extend(self._end_all([TimeOut(write_pointer, now_ms)]))
            for entry in later:
                heapq.heappush(self._expiries, entry)
            if len(self._expiries) > 2 * len(self.state.in_progress) + EXPIRIES_SLACK:
                # Mostly ended transactions: rebuilt, O(in progress), at most once per as many ends.
                self._expiries = [(txn.expiry_ms, wp) for wp, txn in self.state.in_progress.items()]
                heapq.heapify(self._expiries)
            due = self._edits_since_save > 0 and (
                self._edits_since_save >= self.config.save_edits
                or self._clock.monotonic_s() - self._saved_at_s >= self.config.save_interval_s)
        self._finish_ends(pending)
        return due

    def run_pruning(self) -> int:
        """Settle and prune the invalid list now (done by itself every ``prune_interval_s``);
        return how many transactions left it.

        A transaction settles ``settle_s`` after it ended (or expired, if later): no write of it
        can land any more, and its logs' tails are noted (logged). A settled one leaves the list
        once each of its logs is trimmed past its tail, deleted, or lists it as aborted (the log
        layer's :class:`~seaway.log.AbortedWrites`, whose readers skip its records whatever their
        snapshot says): listed first, durably, then pruned (a crash in between leaves it on the
        list, listed again by the next pass). A log that holds as many entries as it may keeps
        it on the list until trims make room."""
        now_ms = self._clock.now_ms()
        settle_ms = int(self.config.settle_s * 1000)
        with self._cond:
            entries = list(self.state.invalid.items())
        settled: list[Settle] = []
        for write_pointer, entry in entries:
            if entry.tails is None and now_ms - entry.ended_ms >= settle_ms:
                settled.append(Settle(write_pointer, tuple(self._tail(log_id) for log_id in entry.logs)))
        self._log_edits(settled)
        tails = {edit.write_pointer: edit.tails for edit in settled}
        done = [(wp, entry.logs, tails.get(wp, entry.tails)) for wp, entry in entries]
        gone = self._unreadable([(wp, logs, t) for wp, logs, t in done if t is not None])
        for i in range(0, len(gone), PRUNE_IDS_MAX):
            self._log_edits([Prune(tuple(gone[i:i + PRUNE_IDS_MAX]))])
        return len(gone)

    def _log_edits(self, edits: Iterable[Edit]) -> None:
        """Apply and log ``edits``; wait until they are durable."""
        with self._cond:
            futures = []
            for edit in edits:
                self.state.apply(edit)
                futures.append(self._append(edit))
        for future in futures:
            future.result()

    def _unreadable(self, settled: Sequence[tuple[int, tuple[int, ...], tuple[int, ...]]]) -> builtins.list[int]:
        """Those of the ``settled`` transactions (id, logs, tails) no reader can see data of any
        more: in each of their logs it was trimmed away, or the log lists them as aborted (listed
        now where it does not yet, durably)."""
        wanted: dict[int, list[tuple[int, int]]] = {}
        for write_pointer, logs, tails in settled:
            for log_id, tail in zip(logs, tails, strict=True):
                if tail > 0 and not self._trimmed_past(log_id, tail):
                    wanted.setdefault(log_id, []).append((write_pointer, tail))
        unlisted: set[int] = set()
        for log_id, items in wanted.items():
            try:
                listed = self._aborted.note(log_id, items)
            except SeawayError as exc:  # tried again by the next pass; it stays on the list until then
                log.warning("listing aborted transactions in a log failed", extra={"log_id": log_id, "error": str(exc)})
                listed = set()
            unlisted.update(wp for wp, _ in items if wp not in listed)
        return [write_pointer for write_pointer, _, _ in settled if write_pointer not in unlisted]

    def _tail(self, log_id: int) -> int:
        try:
            return self._logs.get(log_id).tail_lsn()
        except UnknownLogError:
            return 0

    def _trimmed_past(self, log_id: int, tail: int) -> bool:
        try:
            return self._logs.get(log_id).trim_point() >= tail
        except UnknownLogError:
            return True

