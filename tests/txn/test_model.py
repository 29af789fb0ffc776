"""The transaction manager as a Hypothesis state machine against a small reference model: begin,
register, writes to logs, staged metadata writes, conflict keys, commit, abort, time passing and
timeouts, saving, trimming and pruning, writes outside transactions, and restarts. After every step
each transaction's status, the manager's list, a fresh snapshot's contents and the visibility of
every write pointer seen, and the metadata are checked against the model.

The manager's background passes are switched off (``tick_s`` and ``prune_interval_s`` far beyond
any run) and driven from the rules instead (``run_timeouts``, ``run_pruning``), with a fake clock,
so that every run replays exactly.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import seaway
from seaway import (
    OverloadedError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    TxnConfig,
    TxnStatus,
    UnknownTransactionError,
)
from seaway.testing import FakeClock
from seaway.txn import Transaction, TransactionManager, Visibility
from seaway.txn._manager import RECOVERY_GAP_POINTERS
from seaway.txn._state import POINTERS_PER_MS

NS = "m"
KEYS = [b"k0", b"k1", b"k2"]
CONFLICT_KEYS = [b"c0", b"c1"]
LOGS = ["a", "b"]
CONFIG = TxnConfig(timeout_s=10, timeout_s_max=60, in_progress_max=4, outcomes_max=3, tick_s=3600,
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
        self.finished: list[int] = []  # write pointers in the order they ended
        self.meta: dict[bytes, bytes] = {}
        self.last_wp = 0
        self.began_wp = 0
        self.logged = False
        """The last write pointer issued, and the last one a begin recorded (what recovery goes on from)."""
        self.tails = dict.fromkeys(self.log_ids, 0)
        self.trimmed = dict.fromkeys(self.log_ids, 0)

    def teardown(self) -> None:
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def manager(self) -> TransactionManager:
        api = self.sw.txn.api
        assert isinstance(api, TransactionManager)
        return api

    # --- the model --------------------------------------------------------------------------------

    def status(self, txn: ModelTxn) -> TxnStatus:
        if txn.status is TxnStatus.IN_PROGRESS or txn.invalid:
            return txn.status
        if txn.wp in self.finished[-CONFIG.outcomes_max:]:
            return txn.status
        return TxnStatus.UNKNOWN

    def end(self, txn: ModelTxn, status: TxnStatus) -> None:
        txn.status = status
        if status in _ENDED and txn.logs:
            txn.invalid, txn.since_ms = True, self.clock.now_ms()
        self.finished.append(txn.wp)

    def not_live_error(self, txn: ModelTxn) -> type[Exception]:
        """What the manager raises for a transaction that is not in progress."""
        status = self.status(txn)
        if status is TxnStatus.UNKNOWN:
            return UnknownTransactionError
        if status is TxnStatus.TIMED_OUT:
            return TransactionTimedOutError
        return TransactionNotInProgressError

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
        self.begin(None, use_handle)
        self.begin(30, not use_handle)

    @rule(timeout_s=st.sampled_from([None, 1, 30]), use_handle=st.booleans())
    def begin(self, timeout_s: float | None, use_handle: bool) -> None:
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
        self.txns.append(ModelTxn(expected_wp, self.seq, now_ms + timeout_ms, handle=handle))

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), logs=st.sets(st.sampled_from([0, 1]), min_size=1), use_handle=st.booleans())
    def register(self, i: int, logs: set[int], use_handle: bool) -> None:
        txn = self.pick(i)
        ids = {self.log_ids[n] for n in logs}
        handle = self.live_handle(txn, use_handle)
        expected: type[Exception] | None = None
        if txn.status is not TxnStatus.IN_PROGRESS and not (handle is not None and ids <= txn.handle_logs):
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

    @precondition(lambda self: any(t.logs for t in self.txns))
    @rule(i=st.integers(0, 100), n=st.integers(0, 1))
    def write(self, i: int, n: int) -> None:
        """A write tagged with the transaction's write pointer, to a log it registered (also late:
        a writer that did not learn yet that its transaction ended)."""
        txn = [t for t in self.txns if t.logs][i % sum(1 for t in self.txns if t.logs)]
        log_id = sorted(txn.logs)[n % len(txn.logs)]
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
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS]
        txn = live[i % len(live)]
        if (handle := self.live_handle(txn, True)) is not None:
            if value is None:
                handle.stage_delete(NS, key)
            else:
                handle.stage_put(NS, key, value)
        txn.writes[key] = value

    @precondition(lambda self: any(t.status is TxnStatus.IN_PROGRESS for t in self.txns))
    @rule(i=st.integers(0, 100), keys=st.sets(st.sampled_from(CONFLICT_KEYS), min_size=1, max_size=2))
    def declare_conflicts(self, i: int, keys: set[bytes]) -> None:
        live = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS]
        txn = live[i % len(live)]
        if (handle := self.live_handle(txn, True)) is not None:
            handle.add_conflicts(*keys)
        txn.conflicts |= keys

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), use_handle=st.booleans())
    def commit(self, i: int, use_handle: bool) -> None:
        txn = self.pick(i)
        expected: type[Exception] | None = None
        if txn.status is not TxnStatus.IN_PROGRESS:
            expected = self.not_live_error(txn)
        elif txn.expiry_ms <= self.clock.now_ms():
            expected = TransactionTimedOutError
            self.end(txn, TxnStatus.TIMED_OUT)
        elif any(seq > txn.begin_seq and keys & txn.conflicts for seq, keys in self.committed):
            expected = TransactionConflictError
            self.end(txn, TxnStatus.ABORTED)
        handle = self.live_handle(txn, use_handle)
        try:
            if handle is not None:
                handle.commit()
            else:
                writes = [(NS, key, value) for key, value in txn.writes.items()]
                self.sw.txn.commit(txn.wp, txn.conflicts, writes)
        except (UnknownTransactionError, TransactionNotInProgressError, TransactionConflictError) as exc:
            assert type(exc) is expected, (exc, expected)
            event(f"commit: {type(exc).__name__}")
            return
        assert expected is None, f"the commit succeeded, {expected.__name__} expected"
        self.seq += 1
        self.committed.append((self.seq, set(txn.conflicts)))
        self.end(txn, TxnStatus.COMMITTED)
        for key, value in txn.writes.items():
            if value is None:
                self.meta.pop(key, None)
            else:
                self.meta[key] = value

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
            if txn.status is not TxnStatus.IN_PROGRESS:
                expected = self.not_live_error(txn)
                break
            if txn.expiry_ms <= now_ms:
                expected = TransactionTimedOutError
                break
        first_seq = min(t.begin_seq for t in group)
        if expected is None and any(seq > first_seq and c & conflicts for seq, c in self.committed):
            expected = TransactionConflictError
        if expected is not None:
            for txn in group:
                if txn.status is TxnStatus.IN_PROGRESS:
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
        self.seq += 1
        self.committed.append((self.seq, conflicts))
        for txn in group:
            self.end(txn, TxnStatus.COMMITTED)
        for _, k, v in writes:
            if v is None:
                self.meta.pop(k, None)
            else:
                self.meta[k] = v

    @precondition(lambda self: self.txns)
    @rule(i=st.integers(0, 100), use_handle=st.booleans())
    def abort(self, i: int, use_handle: bool) -> None:
        txn = self.pick(i)
        expected: type[Exception] | None = None
        if txn.status is TxnStatus.IN_PROGRESS:
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
            expired = [t for t in self.txns if t.status is TxnStatus.IN_PROGRESS and t.expiry_ms <= now_ms]
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
            if txn.tails is None:
                if now_ms - txn.since_ms >= CONFIG.settle_s * 1000:
                    txn.tails = tuple(self.tails[log_id] for log_id in logs)
            elif all(self.trimmed[log_id] >= tail for log_id, tail in zip(logs, txn.tails, strict=True)):
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

    @rule(save=st.booleans())
    def restart(self, save: bool) -> None:
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
    def metadata_matches(self) -> None:
        for key in KEYS:
            got = self.sw.meta.get(NS, key)
            assert (None if got is None else got.value) == self.meta.get(key), key


TxnModel.TestCase.settings = settings(max_examples=30, stateful_step_count=35, deadline=None)
test_txn_model = TxnModel.TestCase
