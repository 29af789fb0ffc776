"""The transaction manager as a Hypothesis state machine against a small reference model: begin,
register, writes to logs, staged metadata writes, conflict keys, commit, abort, time passing and
timeouts, saving, trimming and pruning, writes outside transactions, and restarts. After every step
each transaction's status, the manager's list, a fresh snapshot's contents and the visibility of
every write pointer seen, every record left in the logs, and the metadata are checked against the
model.

Several transactions run interleaved: a commit may be held between its log append and its
visibility (``start_commit``) while others begin, commit, abort and time out, until it finishes or
the manager crashes there (``restart``); transactions are aborted by id behind their handles'
backs, and their writers go on writing until their deadline; a commit's append may fail after it
was written (a lost reply). Invariants: no lost update between transactions declaring the same
conflict key; nothing aborted or timed out is ever visible, pruned or not; nothing committed is
lost or applied twice; every outcome is answerable (the model keeps them all, as outcomes_s
promises for its run).

The manager's background passes are switched off (``tick_s`` and ``prune_interval_s`` far beyond
any run) and driven from the rules instead (``run_timeouts``, ``run_pruning``), with a fake clock,
so that every run replays exactly (the held commit waits on events, not on time).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import seaway
from seaway import (
    OverloadedError,
    StorageError,
    TimedOutError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    TxnConfig,
    TxnStatus,
    UnknownTransactionError,
)
from seaway.log import Record
from seaway.testing import AppendFaults, FakeClock
from seaway.txn import WAL_LOG, AbortedJudges, Transaction, TransactionManager, Visibility
from seaway.txn._api import DEADLINE_MARGIN_S_MAX
from seaway.txn._durable import RECOVERY_GAP_POINTERS
from seaway.txn._state import POINTERS_PER_MS

NS = "m"
KEYS = [b"k0", b"k1", b"k2"]
CONFLICT_KEYS = [b"c0", b"c1"]
LOGS = ["a", "b"]
CONFIG = TxnConfig(timeout_s=10, timeout_s_max=60, in_progress_max=4, outcomes_s=10**6, tick_s=3600,
                   prune_interval_s=3600, settle_s=5, save_edits=10**9, save_interval_s=10**9)
SWCONFIG = seaway.SeawayConfig(txn=CONFIG, retention=None)
_ENDED = (TxnStatus.ABORTED, TxnStatus.TIMED_OUT)


@dataclass
class ModelTxn:
    wp: int
    begin_seq: int
    expiry_ms: int
    status: TxnStatus = TxnStatus.IN_PROGRESS
    logs: set[int] = field(default_factory=set)
    writes: dict[bytes, bytes | None] = field(default_factory=dict)
    conflicts: set[bytes] = field(default_factory=set)
    invalid: bool = False
    since_ms: int = 0
    tails: tuple[int, ...] | None = None
    handle_logs: set[int] = field(default_factory=set)
    handle: Transaction | None = None
    """The handle from this incarnation of the store (None after a restart)."""
    deadline_ms: int = 0
    """Its writer's deadline, as the handle's (expiry less the margin), on the manager's clock."""
    committed_by_id: bool = False
    """Committed from elsewhere: its writer, which cannot know, is left alone from then on."""


@dataclass
class Pending:
    """A commit logged, held before it becomes visible, on a thread of its own."""

    txn: ModelTxn
    keys: set[bytes]
    writes: dict[bytes, bytes | None]
    release: threading.Event
    crash: threading.Event
    thread: threading.Thread
    error: list[BaseException]


class TxnModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.clock = FakeClock()
        self.sw = seaway.open(self.dir, SWCONFIG, clock=self.clock)
        self.log_ids = [self.sw.logs.create(name).id for name in LOGS]
        self.txns: list[ModelTxn] = []
        self.seq = 0  # orders begins and commits
        self.committed: list[tuple[int, set[bytes]]] = []  # (seq of the commit, its conflict keys)
        self.meta: dict[bytes, bytes] = {}
        self.last_wp = 0
        self.began_wp = 0
        self.logged = False
        """The last write pointer issued, and the last one a begin recorded (what recovery goes on from)."""
        self.tails = dict.fromkeys(self.log_ids, 0)
        self.judges_of: object = None
        self.judges = AbortedJudges(self.sw.meta)
        self.trimmed = dict.fromkeys(self.log_ids, 0)
        self.pending: Pending | None = None
        self.history: list[tuple[int, int, set[bytes]]] = []
        """(begin seq, visible seq, conflict keys) of every transaction committed."""

    def teardown(self) -> None:
        if self.pending is not None:
            self.pending.release.set()
            self.pending.thread.join(10)
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def manager(self) -> TransactionManager:
        api = self.sw.txn.api
        assert isinstance(api, TransactionManager)
        return api

    # --- the model --------------------------------------------------------------------------------

    def status(self, txn: ModelTxn) -> TxnStatus:
        return txn.status  # outcomes_s is beyond any run: every outcome is answerable

    def end(self, txn: ModelTxn, status: TxnStatus) -> None:
        txn.status = status
        if status in _ENDED and txn.logs:
            txn.invalid, txn.since_ms = True, self.clock.now_ms()

    def not_live_error(self, txn: ModelTxn) -> type[Exception]:
        """What the manager raises for a transaction that is not in progress."""
        status = self.status(txn)
        if self.committing(txn):
            return TransactionNotInProgressError
        if status is TxnStatus.UNKNOWN:
            return UnknownTransactionError
        if status is TxnStatus.TIMED_OUT:
            return TransactionTimedOutError
        return TransactionNotInProgressError

    def committing(self, txn: ModelTxn) -> bool:
        return self.pending is not None and self.pending.txn is txn

    def conflicts(self, begin_seq: int, keys: set[bytes]) -> bool:
        """Whether a transaction begun at ``begin_seq`` declaring ``keys`` conflicts now: a commit
        visible after it began, or one being committed (it cannot have seen that one either)."""
        if self.pending is not None and keys & self.pending.keys:
            return True
        return any(seq > begin_seq and c & keys for seq, c in self.committed)

    def pick(self, i: int) -> ModelTxn:
        """Mostly a transaction in progress, sometimes any (one that ended, or was forgotten)."""
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS]
        among = live if live and i % 4 else self.txns
        return among[i // 4 % len(among)]

    def live_handle(self, txn: ModelTxn, use: bool) -> Transaction | None:
        handle = txn.handle
        return handle if use and handle is not None and handle.status is TxnStatus.IN_PROGRESS else None

    # --- rules ------------------------------------------------------------------------------------

    @initialize(use_handle=st.booleans())
    def two_in_progress(self, use_handle: bool) -> None:
        """Two transactions to start from, so that most runs have some that overlap (conflicts)."""
        self.begin(None, use_handle, {CONFLICT_KEYS[0]})
        self.begin(30, not use_handle, {CONFLICT_KEYS[0]})

    @rule(timeout_s=st.sampled_from([None, 1, 30]), use_handle=st.booleans(),
          keys=st.sets(st.sampled_from(CONFLICT_KEYS), max_size=1))
    def begin(self, timeout_s: float | None, use_handle: bool, keys: set[bytes]) -> None:
        """A begin; with ``keys``, the conflict keys it declares at once (most runs then have
        transactions that overlap on a key: conflicts)."""
        in_progress = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS]
        if len(in_progress) >= CONFIG.in_progress_max:
            try:
                self.sw.txn.begin(timeout_s) if use_handle else self.manager.begin(timeout_s)
            except OverloadedError:
                event("begin: overloaded")
                return
            raise AssertionError("a begin beyond in_progress_max succeeded")
        handle: Transaction | None = None
        if use_handle:
            handle = self.sw.txn.begin(timeout_s)
            snapshot = handle.snapshot
        else:
            snapshot = self.manager.begin(timeout_s)
        now_ms = self.clock.now_ms()
        expected_wp = max(self.last_wp + 1, now_ms * POINTERS_PER_MS)
        assert snapshot.write_pointer == expected_wp
        assert snapshot.read_pointer == expected_wp
        assert snapshot.in_progress == tuple(sorted([*(t.wp for t in in_progress), expected_wp]))
        assert snapshot.visibility(expected_wp) is Visibility.VISIBLE  # its own writes
        self.last_wp = self.began_wp = expected_wp
        self.logged = True
        self.seq += 1
        timeout_ms = int((CONFIG.timeout_s if timeout_s is None else timeout_s) * 1000)
        margin_ms = int(min(DEADLINE_MARGIN_S_MAX * 1000, timeout_ms / 10))
        self.txns.append(txn := ModelTxn(expected_wp, self.seq, now_ms + timeout_ms, handle=handle,
                                         deadline_ms=now_ms + timeout_ms - margin_ms))
        if keys:
            self.declare_conflicts(0, keys, txn)

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), logs=st.sets(st.sampled_from([0, 1]), min_size=1), use_handle=st.booleans())
    def register(self, i: int, logs: set[int], use_handle: bool) -> None:
        txn = self.pick(i)
        ids = {self.log_ids[n] for n in logs}
        handle = self.live_handle(txn, use_handle)
        expected: type[Exception] | None = None
        if ((txn.status is not TxnStatus.IN_PROGRESS or self.committing(txn))
                and not (handle is not None and ids <= txn.handle_logs)):
            expected = self.not_live_error(txn)  # a handle asks nothing for what it registered
        try:
            if handle is not None:
                handle.register_logs(ids)
                txn.handle_logs |= ids
            else:
                self.manager.register(txn.wp, ids)
        except (UnknownTransactionError, TransactionNotInProgressError) as exc:
            assert type(exc) is expected, (exc, expected)
            return
        assert expected is None, f"the register succeeded, {expected.__name__} expected"
        txn.logs |= ids

    def may_write(self, txn: ModelTxn) -> bool:
        """A writer writes until its handle's deadline unless its handle ended: also once its
        transaction was aborted by id or timed out behind its back (it was not told). One
        committed by id is left alone (a writer that goes on then is the application's bug)."""
        if not txn.logs or txn.committed_by_id or self.clock.now_ms() >= txn.deadline_ms:
            return False
        handle = txn.handle
        return handle is None or handle.status is TxnStatus.IN_PROGRESS

    @precondition(lambda self: any(self.may_write(t) for t in self.txns))
    @rule(i=st.integers(0, 100), n=st.integers(0, 1))
    def write(self, i: int, n: int) -> None:
        """A write tagged with the transaction's write pointer, to a log it registered, by a writer
        that follows its handle's rule (on the manager's clock)."""
        writers = [t for t in self.txns if self.may_write(t)]
        txn = writers[i % len(writers)]
        log_id = sorted(txn.logs)[n % len(txn.logs)]
        if txn.status is not TxnStatus.IN_PROGRESS:
            event("write: after its transaction ended")
        self.tails[log_id] = self.sw.logs.get(log_id).append(b"%d" % txn.wp)

    @precondition(lambda self: any(self.may_write(t) and t.status is TxnStatus.IN_PROGRESS
                                   and not self.committing(t) for t in self.txns))
    @rule(i=st.integers(0, 100), cycles=st.integers(1, 3))
    def aborted_behind_its_writers_back(self, i: int, cycles: int) -> None:
        """Another sequence the single steps rarely take: a transaction that wrote is aborted by id
        (its writer is not told), time passes through settling, trimming and pruning, and its
        writer writes again before its deadline: that write must never be visible."""
        writers = [t for t in self.txns if self.may_write(t) and t.status is TxnStatus.IN_PROGRESS
                   and not self.committing(t)]
        txn = writers[i % len(writers)]
        log_id = sorted(txn.logs)[0]
        self.tails[log_id] = self.sw.logs.get(log_id).append(b"%d" % txn.wp)
        self.abort(0, use_handle=False, txn=txn)
        for _ in range(cycles):
            self.prune_cycle()
        if self.may_write(txn):
            event("write: after an abort by id and pruning cycles")
            self.tails[log_id] = self.sw.logs.get(log_id).append(b"%d" % txn.wp)

    @rule(n=st.integers(0, 1))
    def trim(self, n: int) -> None:
        log_id = self.log_ids[n]
        if self.tails[log_id]:
            self.sw.logs.get(log_id).trim(self.tails[log_id])
            self.trimmed[log_id] = self.tails[log_id]

    @precondition(lambda self: any(t.status is TxnStatus.IN_PROGRESS for t in self.txns))
    @rule(i=st.integers(0, 100), key=st.sampled_from(KEYS), value=st.one_of(st.none(), st.binary(max_size=4)))
    def stage(self, i: int, key: bytes, value: bytes | None) -> None:
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS and not self.committing(t)]
        if not live:
            return
        txn = live[i % len(live)]
        if (handle := self.live_handle(txn, True)) is not None:
            if value is None:
                handle.stage_delete(NS, key)
            else:
                handle.stage_put(NS, key, value)
        txn.writes[key] = value

    @precondition(lambda self: any(t.status is TxnStatus.IN_PROGRESS for t in self.txns))
    @rule(i=st.integers(0, 100), keys=st.sets(st.sampled_from(CONFLICT_KEYS), min_size=1, max_size=2))
    def declare_conflicts(self, i: int, keys: set[bytes], txn: ModelTxn | None = None) -> None:
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS and not self.committing(t)]
        if not live:
            return
        txn = txn or live[i % len(live)]
        if (handle := self.live_handle(txn, True)) is not None:
            handle.add_conflicts(*keys)
        txn.conflicts |= keys

    def refusal(self, txn: ModelTxn) -> type[Exception] | None:
        """Why the manager refuses to commit ``txn`` now, and ends it as it does; None if it commits."""
        if txn.status is not TxnStatus.IN_PROGRESS or self.committing(txn):
            return self.not_live_error(txn)
        if txn.expiry_ms <= self.clock.now_ms():
            self.end(txn, TxnStatus.TIMED_OUT)
            return TransactionTimedOutError
        if self.conflicts(txn.begin_seq, txn.conflicts):
            self.end(txn, TxnStatus.ABORTED)
            return TransactionConflictError
        return None

    def committed_now(self, group: list[ModelTxn], keys: set[bytes], writes: dict[bytes, bytes | None]) -> None:
        """``group`` became visible, together, now."""
        self.seq += 1
        self.committed.append((self.seq, set(keys)))
        self.history.append((min(t.begin_seq for t in group), self.seq, set(keys)))
        for txn in group:
            self.end(txn, TxnStatus.COMMITTED)
        for key, value in writes.items():
            if value is None:
                self.meta.pop(key, None)
            else:
                self.meta[key] = value

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), use_handle=st.booleans(), reply_lost=st.booleans())
    def commit(self, i: int, use_handle: bool, reply_lost: bool) -> None:
        """A commit; with ``reply_lost``, one whose log append is written but whose reply is lost:
        the manager aborts it, and a restart must find it aborted too."""
        self.commit_txn(self.pick(i), use_handle, reply_lost)

    def commit_txn(self, txn: ModelTxn, use_handle: bool, reply_lost: bool) -> None:
        expected = self.refusal(txn)
        handle = self.live_handle(txn, use_handle)
        faults = None
        if reply_lost and expected is None:
            faults = AppendFaults(0, lose_reply=1.0, limit=1, logs={self.sw.logs.get(WAL_LOG).id})
            expected = TimedOutError
            self.end(txn, TxnStatus.ABORTED)
        try:
            if faults is not None:
                with faults.applied(self.sw):
                    self.commit_once(txn, handle)
            else:
                self.commit_once(txn, handle)
        except (UnknownTransactionError, TransactionNotInProgressError, TransactionConflictError,
                TimedOutError) as exc:
            assert type(exc) is expected, (exc, expected)
            event(f"commit: {type(exc).__name__}")
            return
        assert expected is None, f"the commit succeeded, {expected.__name__} expected"
        txn.committed_by_id = handle is None
        self.committed_now([txn], txn.conflicts, txn.writes)

    def commit_once(self, txn: ModelTxn, handle: Transaction | None) -> None:
        if handle is not None:
            handle.commit()
        else:
            self.sw.txn.commit(txn.wp, txn.conflicts, [(NS, key, value) for key, value in txn.writes.items()])

    @precondition(lambda self: self.pending is None and any(t.status is TxnStatus.IN_PROGRESS for t in self.txns))
    @rule(i=st.integers(0, 100))
    def start_commit(self, i: int) -> None:
        """A commit (by id) that stops between its log append and its visibility: its edit is
        durable, its metadata writes not applied yet. Other rules run meanwhile; it ends with
        ``finish_commit``, or a crash (``restart``)."""
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS]
        self.start_commit_of(live[i % len(live)])

    def start_commit_of(self, txn: ModelTxn) -> None:
        expected = self.refusal(txn)
        if expected is not None:
            with_error = (UnknownTransactionError, TransactionNotInProgressError, TransactionConflictError)
            try:
                self.commit_once(txn, None)
            except with_error as exc:
                assert type(exc) is expected, (exc, expected)
                return
            raise AssertionError(f"the commit succeeded, {expected.__name__} expected")
        manager = self.manager
        apply_edit = manager._apply_edit
        entered, release, crash = threading.Event(), threading.Event(), threading.Event()
        error: list[BaseException] = []

        def held(*args: Any) -> None:
            if not entered.is_set():
                entered.set()
                assert release.wait(30)
                if crash.is_set():
                    raise StorageError("injected: the process died before the commit became visible")
            apply_edit(*args)

        def run() -> None:
            try:
                self.commit_once(txn, None)
            except BaseException as exc:  # seen by finish_commit or the crash
                error.append(exc)
            finally:
                entered.set()  # also when it failed before its metadata writes

        manager._apply_edit = held  # type: ignore[method-assign,assignment]
        thread = threading.Thread(target=run, name="held-commit", daemon=True)
        thread.start()
        assert entered.wait(30), "the held commit never reached its metadata writes"
        assert not error, f"the held commit failed: {error[0]!r}"
        event("commit held between its append and its visibility")
        txn.committed_by_id = True
        self.pending = Pending(txn, set(txn.conflicts), dict(txn.writes), release, crash, thread, error)

    @precondition(lambda self: self.pending is not None)
    @rule()
    def finish_commit(self) -> None:
        pending = self.pending
        assert pending is not None
        pending.release.set()
        pending.thread.join(30)
        assert not pending.thread.is_alive()
        assert not pending.error, pending.error
        self.pending = None
        del self.manager._apply_edit  # type: ignore[attr-defined]
        self.committed_now([pending.txn], pending.keys, pending.writes)

    @precondition(lambda self: len(self.txns) >= 2)
    @rule(i=st.integers(0, 100), j=st.integers(0, 100), keys=st.sets(st.sampled_from(CONFLICT_KEYS), max_size=1),
          key=st.sampled_from(KEYS))
    def commit_all(self, i: int, j: int, keys: set[bytes], key: bytes) -> None:
        """Two transactions committed as one, with a metadata write and conflict keys of the
        group's own: both or neither; when one cannot, those still in progress are aborted."""
        group = [self.pick(i), self.pick(j)]
        if group[0] is group[1]:
            group.pop()
        conflicts = keys.union(*(t.conflicts for t in group))
        expected: type[Exception] | None = None
        now_ms = self.clock.now_ms()
        for txn in group:
            if txn.status is not TxnStatus.IN_PROGRESS or self.committing(txn):
                expected = self.not_live_error(txn)
                break
            if txn.expiry_ms <= now_ms:
                expected = TransactionTimedOutError
                break
        first_seq = min(t.begin_seq for t in group)
        if expected is None and self.conflicts(first_seq, conflicts):
            expected = TransactionConflictError
        if expected is not None:
            for txn in group:
                if txn.status is TxnStatus.IN_PROGRESS and not self.committing(txn):
                    self.end(txn, TxnStatus.TIMED_OUT if txn.expiry_ms <= now_ms else TxnStatus.ABORTED)
        writes = [(NS, k, v) for t in group for k, v in t.writes.items()] + [(NS, key, b"all")]
        try:
            self.sw.txn.commit_all([t.wp for t in group], conflicts, writes)
        except (UnknownTransactionError, TransactionNotInProgressError, TransactionConflictError) as exc:
            assert type(exc) is expected, (exc, expected)
            event(f"commit_all: {type(exc).__name__}")
            return
        assert expected is None, f"commit_all succeeded, {expected.__name__} expected"
        event("commit_all: committed")
        for txn in group:
            txn.committed_by_id = True
        self.committed_now(group, conflicts, {k: v for _, k, v in writes})

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), use_handle=st.booleans())
    def abort(self, i: int, use_handle: bool, txn: ModelTxn | None = None) -> None:
        """An abort through the handle, or by id (from elsewhere: the handle, and its writer, do not
        learn of it)."""
        txn = txn or self.pick(i)
        expected: type[Exception] | None = None
        if self.committing(txn):
            expected = TransactionNotInProgressError
        elif txn.status is TxnStatus.IN_PROGRESS:
            self.end(txn, TxnStatus.ABORTED)
        elif self.status(txn) not in _ENDED:
            expected = self.not_live_error(txn)
        handle = self.live_handle(txn, use_handle)
        try:
            if handle is not None:
                handle.abort()
            else:
                self.sw.txn.abort(txn.wp)
        except (UnknownTransactionError, TransactionNotInProgressError) as exc:
            assert type(exc) is expected, (exc, expected)
            return
        assert expected is None, f"the abort succeeded, {expected.__name__} expected"

    @rule(key=st.sampled_from(KEYS), value=st.binary(max_size=4))
    def put_outside(self, key: bytes, value: bytes) -> None:
        """A metadata write outside any transaction (a committed transaction's writes must not
        come back over it)."""
        self.sw.meta.put(NS, key, value)
        self.meta[key] = value

    @rule(seconds=st.sampled_from([0.5, 3, 6, 11]), time_out=st.booleans())
    def advance(self, seconds: float, time_out: bool) -> None:
        self.clock.advance(seconds)
        if time_out:
            self.manager.run_timeouts()
            now_ms = self.clock.now_ms()
            expired = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS and t.expiry_ms <= now_ms
                       and not self.committing(t)]
            for txn in sorted(expired, key=lambda t: (t.expiry_ms, t.wp)):
                self.end(txn, TxnStatus.TIMED_OUT)

    @rule()
    def prune(self) -> None:
        now_ms = self.clock.now_ms()
        gone = []
        for txn in self.txns:
            if not txn.invalid:
                continue
            logs = sorted(txn.logs)
            if txn.tails is None and now_ms - max(txn.since_ms, txn.expiry_ms) >= CONFIG.settle_s * 1000:
                txn.tails = tuple(self.tails[log_id] for log_id in logs)
            if txn.tails is not None:  # settled: listed as aborted in its logs, trimmed or not
                gone.append(txn)
        assert self.manager.run_pruning() == len(gone)
        event(f"prune: {min(len(gone), 2)} left the invalid list")
        for txn in gone:
            txn.invalid = False

    @rule()
    def prune_cycle(self) -> None:
        """The whole way out of the invalid list, which the single steps rarely take in a row: the
        settling time passes, pruning notes the tails, the logs are trimmed, pruning removes."""
        self.advance(CONFIG.settle_s, time_out=True)
        self.prune()
        self.trim(0)
        self.trim(1)
        self.prune()

    @precondition(lambda self: self.pending is None and any(
        t.status is TxnStatus.IN_PROGRESS and t.conflicts for t in self.txns))
    @rule(i=st.integers(0, 100), crash=st.booleans())
    def begin_while_committing_then_restart(self, i: int, crash: bool) -> None:
        """The interleaving the single steps rarely take in a row: a commit is held between its
        append and its visibility, a transaction declaring the same keys begins meanwhile (it does
        not see the commit), the commit finishes or the manager crashes there, the manager
        restarts, and the second commits: it must conflict, before a restart as after."""
        declaring = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS and t.conflicts]
        first = declaring[i % len(declaring)]
        self.start_commit_of(first)
        if self.pending is None:  # refused (timed out, a conflict)
            return
        if sum(t.status is TxnStatus.IN_PROGRESS for t in self.txns) < CONFIG.in_progress_max:
            self.begin(30, False, set(first.conflicts))
        second = self.txns[-1]
        if not crash:
            self.finish_commit()
        self.restart(save=False)
        if second is not first and second.status is TxnStatus.IN_PROGRESS:
            self.commit_txn(second, use_handle=False, reply_lost=False)

    @rule(save=st.booleans())
    def restart(self, save: bool) -> None:
        """A restart; while a commit is held, a crash there: its edit is in the log, not its
        visibility. It is committed after the restart, its writes applied then, and its keys count
        against every transaction in progress (none can be known to have seen it)."""
        pending = self.pending
        if pending is not None:
            self.pending = None
            pending.crash.set()
            pending.release.set()
            pending.thread.join(30)
            assert [type(e) for e in pending.error] == [StorageError], pending.error
            event("restart: a crash between a commit's append and its visibility")
            save = False
        if save:
            self.manager.save()
            self.began_wp = self.last_wp  # the saved state holds the last write pointer issued
            self.logged = True
        self.sw.close()
        self.sw = seaway.open(self.dir, SWCONFIG, clock=self.clock)
        # Begins are not waited onto the disk: the next write pointers start a gap above the last.
        if self.logged:  # the manager has a log (it issued a write pointer, or saved)
            self.last_wp = max(self.began_wp, self.clock.now_ms() * POINTERS_PER_MS) + RECOVERY_GAP_POINTERS
            self.began_wp = self.last_wp  # that floor is logged: the next recovery starts above it
        for txn in self.txns:
            txn.handle = None
        if pending is not None:
            self.committed_now([pending.txn], pending.keys, pending.writes)

    # --- checks -----------------------------------------------------------------------------------

    @invariant()
    def statuses_match(self) -> None:
        for txn in self.txns:
            assert self.sw.txn.status(txn.wp) is self.status(txn), txn
        assert self.sw.txn.status(self.last_wp + 1) is TxnStatus.UNKNOWN

    @invariant()
    def list_matches(self) -> None:
        live = sorted((t for t in self.txns if t.status is TxnStatus.IN_PROGRESS), key=lambda t: t.wp)
        dead = sorted((t for t in self.txns if t.invalid), key=lambda t: t.wp)
        assert [(i.id, i.status, i.logs, i.expiry_ms) for i in self.sw.txn.list()] == [
            *((t.wp, t.status, tuple(sorted(t.logs)), t.expiry_ms) for t in live),
            *((t.wp, t.status, tuple(sorted(t.logs)), None) for t in dead)]

    @invariant()
    def snapshot_matches(self) -> None:
        snapshot = self.sw.txn.snapshot()
        assert snapshot.read_pointer == self.last_wp
        assert snapshot.write_pointer == 0
        assert snapshot.in_progress == tuple(sorted(t.wp for t in self.txns if t.status is TxnStatus.IN_PROGRESS))
        assert snapshot.invalid == tuple(sorted(t.wp for t in self.txns if t.invalid))
        for txn in self.txns:
            if txn.status is TxnStatus.IN_PROGRESS:
                expected = Visibility.WAIT
            elif txn.invalid:
                expected = Visibility.SKIP
            else:  # committed, or ended with nothing written, or pruned once its data was gone
                expected = Visibility.VISIBLE
            assert snapshot.visibility(txn.wp) is expected, txn
        assert snapshot.visibility(self.last_wp + 1) is Visibility.WAIT  # may begin and commit later

    @invariant()
    def records_match(self) -> None:
        """Every record left in the logs is visible exactly when its transaction committed:
        nothing aborted or timed out is ever visible, pruned or not; nothing committed is lost."""
        snapshot = self.sw.txn.snapshot()
        if self.judges_of is not self.sw:  # one kept across steps, as a reader keeps it
            self.judges, self.judges_of = AbortedJudges(self.sw.meta), self.sw
        by_wp = {t.wp: t for t in self.txns}
        for log_id in self.log_ids:
            for item in self.sw.logs.get(log_id).read():
                if not isinstance(item, Record):
                    continue
                txn = by_wp[int(item.payload)]
                seen = self.judges.judge(log_id, snapshot, txn.wp)
                if txn.status is TxnStatus.COMMITTED:
                    assert seen is Visibility.VISIBLE, (txn, seen)
                elif txn.status is TxnStatus.IN_PROGRESS:
                    assert seen is Visibility.WAIT, (txn, seen)
                else:
                    assert seen is Visibility.SKIP, f"a record of {txn} is {seen.value}"

    @invariant()
    def no_lost_update(self) -> None:
        """Of two committed transactions that declared a key in common, one became visible before
        the other began (the model's own check: the manager's outcomes were checked against it)."""
        for n, (began, visible, keys) in enumerate(self.history):
            for other_began, other_visible, other_keys in self.history[n + 1:]:
                if keys & other_keys:
                    assert visible <= other_began or other_visible <= began, "a lost update"

    @invariant()
    def metadata_matches(self) -> None:
        for key in KEYS:
            got = self.sw.meta.get(NS, key)
            assert (None if got is None else got.value) == self.meta.get(key), key


EXAMPLES = int(os.environ.get("SEAWAY_TXN_MODEL_EXAMPLES", "50"))
TxnModel.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None)
test_txn_model = TxnModel.TestCase
