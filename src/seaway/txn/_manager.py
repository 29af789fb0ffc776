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

The manager is written in parts, each a base class of the next: its log, saves and recovery
(:mod:`._durable`); ends logged (a time-out with its ledger entry), time-outs and pruning
(:mod:`._expiry`); commits (:mod:`._commit`); and here, begins, snapshots, the invalid list's
answers to a server, registers, aborts and listing.
"""

from __future__ import annotations

import contextlib
import heapq
import secrets
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seaway._clock import Clock, SystemClock
from seaway._passes import PeriodicPasses
from seaway.errors import InvalidArgumentError, OverloadedError, SeawayError, UnknownLogError
from seaway.log import AbortedWrites, LinkedBatch, MetaApi, append_linked, check_linked
from seaway.txn._checks import check_commit, check_txn_logs, check_wait, check_write_pointer
from seaway.txn._commit import CommittingManager, _answer
from seaway.txn._config import TxnConfig
from seaway.txn._durable import WAL_LOG, log_failure
from seaway.txn._idlog import LiveChanges, live_changes
from seaway.txn._invalid import CHANGES_IDS_MAX, PAGE_IDS_MAX, InvalidChanges, InvalidVersion
from seaway.txn._linked import LinkedWrite, check_linked_writes, filled
from seaway.txn._snapshot import Snapshot
from seaway.txn._state import Abort, Begin, Register, Reserve, TxnStatus

if TYPE_CHECKING:
    from seaway.log import Logs


@dataclass(frozen=True)
class TxnInfo:
    """A transaction the manager holds: in progress, or invalid (aborted or timed out, its data
    not yet gone)."""

    id: int
    status: TxnStatus
    began_ms: int | None
    expiry_ms: int | None
    logs: tuple[int, ...]


class TransactionManager(CommittingManager):
    """The manager of an embedded store (``sw.txn`` is built on it). Thread-safe."""

    def __init__(self, logs: Logs, meta: MetaApi, clock: Clock | None = None, config: TxnConfig | None = None) -> None:
        self.config = config or TxnConfig()
        self._logs = logs
        self._meta = meta
        self._aborted = AbortedWrites(meta)
        self._clock = clock or SystemClock()
        self._cond = threading.Condition()
        self._committing = {}
        self._begins = {}
        self._unrecorded = 0
        self._saving = False
        self._save_lock = threading.Lock()
        self._stopped = None
        self._edits_since_save = 0
        self._saved_at_s = self._clock.monotonic_s()
        self._expiries = []
        self._wal = None
        with contextlib.suppress(UnknownLogError):  # made by the first edit: a store that never
            self._wal = logs.get(WAL_LOG)           # uses transactions has no log of theirs
        self._dated = []
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

    # --- the API ----------------------------------------------------------------------------------

    @property
    def default_timeout_s(self) -> float:
        return self.config.timeout_s

    def begin(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Snapshot:
        """Begin a transaction; return its snapshot, whose ``write_pointer`` is its id, once the
        begin is durable. ``logs``: the logs it is about to write to, registered by the begin itself
        (at most LOGS_MAX), in the same edit and sync."""
        snapshot, durable = self._start_begin(timeout_s, logs)
        self._logged_begin_or_abort(snapshot.write_pointer, durable)
        return snapshot

    def begin_many(self, begins: Sequence[tuple[float | None, Iterable[int]]]) -> list[Snapshot | SeawayError]:
        """Several begins (``(timeout_s, logs)`` each, as :meth:`begin` takes them), all appended
        before any is waited for, so that those that register logs share the log's syncs. Each
        one's snapshot, or its error (the error of one does not stop the others). For a server
        answering many clients' begins in one call."""
        started: list[tuple[Snapshot, Future[int]] | SeawayError] = []
        for timeout_s, logs in begins:
            try:
                started.append(self._start_begin(timeout_s, logs))
            except Exception as exc:  # this begin's answer; the others, started, are waited for
                started.append(_answer(exc))
        out: list[Snapshot | SeawayError] = []
        for item in started:
            if isinstance(item, SeawayError):
                out.append(item)
                continue
            snapshot, durable = item
            try:
                self._logged_begin_or_abort(snapshot.write_pointer, durable)
                out.append(snapshot)
            except SeawayError as exc:
                out.append(exc)
        return out

    def _start_begin(self, timeout_s: float | None, logs: Iterable[int]) -> tuple[Snapshot, Future[int]]:
        """Apply and append a begin; its append, for the caller to wait for."""
        timeout = self.config.timeout_s if timeout_s is None else timeout_s
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= self.config.timeout_s_max:
            raise InvalidArgumentError(f"a transaction's timeout is in (0, {self.config.timeout_s_max}] s, "
                                       f"got {timeout_s!r}")
        wanted = check_txn_logs(logs)
        with self._cond:
            self._check_running()
            if len(self.state.in_progress) >= self.config.in_progress_max:
                raise OverloadedError(f"{self.config.in_progress_max} transactions are in progress; "
                                      "commit or abort some first")
            now_ms = self._clock.now_ms()
            edit = Begin(self.state.next_write_pointer(now_ms), now_ms, int(timeout * 1000), wanted)
            self.state.apply(edit)
            heapq.heappush(self._expiries, (now_ms + edit.timeout_ms, edit.write_pointer))
            durable = self._append(edit)
            self._begins[edit.write_pointer] = durable
            snapshot = self.state.snapshot(edit.write_pointer)
        # Waited for by the caller, logs or not: a begin that returned is one a restart finds (in
        # progress, then timed out), so the outcome of every transaction a caller learnt the id of
        # can be asked after a crash. A begin's sync is shared with its neighbours' (group commit).
        return snapshot, durable

    def _logged_begin_or_abort(self, write_pointer: int, durable: Future[int]) -> None:
        """Wait for a begin; if its append failed, abort the transaction (its caller never learns its
        id: nobody else would end it before its timeout) and raise."""
        try:
            durable.result()
        except SeawayError:
            with self._cond:
                if write_pointer in self.state.in_progress and write_pointer not in self._committing:
                    # Not waited for: its begin may be missing from the log, and either way it wrote
                    # nothing; a restart that finds the begin finds it in progress, and it times out.
                    self._end(Abort(write_pointer, self._clock.now_ms())).add_done_callback(log_failure)
            raise
        self._begins.pop(write_pointer, None)

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
                return InvalidChanges(self._epoch, journal.version, reset=True, added=self.state.dead.sorted())
            return InvalidChanges(self._epoch, journal.version, fetch=True)

    def live_changes(self, snapshot: Snapshot, known_epoch: int, known_version: int) -> LiveChanges:
        """What brings a client's copy of the in-progress set at (``known_epoch``,
        ``known_version``) to the set as ``snapshot`` (one of this manager's) holds it: the ids
        begun and ended since, or the whole set (a client that is new, or too far behind). The
        version is the snapshot's own, so that the client decides visibility as of it (a copy
        newer than a begin would make transactions that ended since visible to it)."""
        return live_changes(self._epoch, snapshot.in_progress_view, known_epoch, known_version)

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

    def wait_ended(self, write_pointers: Iterable[int], timeout_s: float) -> list[int]:
        """Wait until any of ``write_pointers`` is no longer in progress (committed and visible,
        aborted, timed out, or never begun), or ``timeout_s`` passed; the ids of those no longer
        in progress then, in the order given (empty: the wait timed out). Woken by the commit or
        end itself, not by polling (the real clock bounds the wait: it is a wait of this process)."""
        ids, timeout = check_wait(write_pointers, timeout_s)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                in_progress = self.state.in_progress
                ended = [write_pointer for write_pointer in ids if write_pointer not in in_progress]
                remaining = deadline - time.monotonic()
                if ended or remaining <= 0:
                    return ended
                self._cond.wait(remaining)

    def register(self, write_pointer: int, logs: Iterable[int]) -> None:
        """Note that the transaction is about to write to ``logs``; durable when it returns. A
        writer calls it before its first write to each log, so that an aborted or timed-out
        transaction's data can be found (and the invalid list pruned once it is gone)."""
        check_write_pointer(write_pointer)
        wanted = check_txn_logs(logs)
        # Data written before its begin is logged (it may never be: refused) would be a
        # transaction's that a restart does not know, visible however it ended.
        if (refused := self._unlogged_begin((write_pointer,))) is not None:
            raise refused
        if not wanted:
            return
        with self._cond:
            self._live(write_pointer)
            # Logged even when the logs are registered here already: an earlier register of them
            # may have been refused by the log after it was applied (its caller asks again), or
            # still be in flight; a handle asks only for logs it has not registered.
            edit = Register(write_pointer, wanted)
            self.state.apply(edit)
            durable = self._append(edit)
        durable.result()

    def commit_appending(self, write_pointer: int, batches: Sequence[LinkedBatch], conflicts: Iterable[bytes] = (),
                         writes: Iterable[tuple[str, bytes, bytes | None]] = (),
                         linked_writes: Sequence[LinkedWrite] = ()) -> list[range | SeawayError] | None:
        """Append ``batches`` (one linked append, :func:`seaway.log.append_linked`) and commit, in one
        step: what a queue producer's commit is (one call through a server instead of one per
        append and one for the commit).

        The batches' logs not yet registered with the transaction are registered first (durably,
        as :meth:`register` does), so whatever is appended is the transaction's, found if it never
        commits. Then the batches are appended; once all are stored, the transaction commits as
        :meth:`commit` does, with ``writes`` and ``linked_writes`` (completed with the batches'
        LSNs). Returns None once committed; raises what :meth:`commit` raises. If a batch failed,
        nothing is committed and the transaction stays in progress: the batches' outcomes are
        returned (each one's LSNs, or its error), for the caller to write again what failed
        (a log sealed by a resize, say) and then commit, or abort. A crash at any point leaves the
        transaction in progress (it times out) or committed whole."""
        check_write_pointer(write_pointer)
        check_linked(batches)
        check_linked_writes(linked_writes, batches)
        keys, checked = check_commit(conflicts, writes)
        with self._cond:
            missing = {batch.log_id for batch in batches} - self._live(write_pointer).logs
        if missing:
            self.register(write_pointer, missing)
        outcomes = append_linked(self._logs, batches)
        lsns = [outcome for outcome in outcomes if isinstance(outcome, range)]
        if len(lsns) < len(outcomes):
            return outcomes
        self.commit(write_pointer, keys, [*checked, *filled(linked_writes, lsns)])
        return None

    def abort(self, write_pointer: int) -> None:
        """Abort: nothing the transaction wrote will be visible. Aborting an aborted or timed-out
        transaction again does nothing; aborting a committed one raises."""
        check_write_pointer(write_pointer)
        with self._cond:
            self._check_running()  # stopped, the log decides (a caller must not hear "done")
            status = self.state.status(write_pointer)
            if status in (TxnStatus.ABORTED, TxnStatus.TIMED_OUT) and write_pointer not in self.state.in_progress:
                return
            self._live(write_pointer)
            # Waited for even when it wrote nothing: one that returned must survive a restart
            # (else the transaction, in progress again, could be committed by its id).
            ended = self._end_all([Abort(write_pointer, self._clock.now_ms())])
        self._finish_ends(ended)

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
