"""The transaction manager of an embedded store, piece by piece: write pointers, bounds, group
commit, saving and recovery, timeouts across a restart, and the ``Transaction`` handle."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import (
    OverloadedError,
    SeawayError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TxnConfig,
    TxnStatus,
    UnknownTransactionError,
)
from seaway.log import CoalesceConfig, DiskWrite, MetaApi, Record
from seaway.logsdb import PutRecords
from seaway.testing import AppendFaults, FakeClock
from seaway.txn import WAL_LOG, TransactionManager, Visibility
from seaway.txn._expiry import EXPIRIES_SLACK
from seaway.txn._state import decode_edit

QUIET = {"tick_s": 3600.0, "prune_interval_s": 3600.0}
"""No background passes: the tests run them."""


def _config(**txn: Any) -> seaway.SeawayConfig:
    return seaway.SeawayConfig(txn=TxnConfig(**{**QUIET, **txn}), retention=None)


def manager_of(sw: seaway.Seaway) -> TransactionManager:
    api = sw.txn.api
    assert isinstance(api, TransactionManager)
    return api


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[seaway.Seaway]:
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        yield sw


def wal_edits(sw: seaway.Seaway) -> list[str]:
    """The kinds of the edits the write-ahead log holds (above its trim point)."""
    return [type(decode_edit(item.payload)).__name__ for item in sw.logs.get(WAL_LOG).read()
            if isinstance(item, Record)]


def value(sw: seaway.Seaway, key: bytes) -> bytes | None:
    got = sw.meta.get("m", key)
    return None if got is None else got.value


class SteppingClock:
    """A wall clock a test may set back, as NTP sometimes does."""

    def __init__(self, now_ms: int) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now

    def monotonic_s(self) -> float:
        return 0.0


def test_write_pointers_increase_when_the_clock_steps_back(tmp_path: Path) -> None:
    clock = SteppingClock(1_700_000_000_000)
    issued = []
    for back_ms in (0, 10_000, 60_000):
        clock.now -= back_ms
        with seaway.open(tmp_path, _config(), clock=clock) as sw:
            issued += [sw.txn.begin().id for _ in range(3)]
            clock.now -= 5_000
            issued.append(sw.txn.begin().id)
    assert issued == sorted(issued) and len(set(issued)) == len(issued), issued


def test_a_pointer_issued_by_a_begin_lost_in_a_crash_is_never_issued_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Begins are not waited onto the disk: a crash may lose one. The pointers it used must stay
    used even when they run ahead of the clock and the run made no other edit (the clock stands
    still here, so each recovery's floor comes from the log alone)."""
    clock = SteppingClock(1_700_000_000_000)
    with seaway.open(tmp_path, _config(), clock=clock) as sw:
        sw.txn.commit(sw.txn.begin().id)
    issued = []
    for _ in range(3):
        with seaway.open(tmp_path, _config(), clock=clock) as sw:
            manager = manager_of(sw)
            real = manager._append

            def lose_begins(edit: Any, real: Any = real) -> Any:
                if type(edit).__name__ != "Begin":
                    return real(edit)
                lost: Future[int] = Future()  # as if the process died before the append
                lost.set_result(0)
                return lost

            monkeypatch.setattr(manager, "_append", lose_begins)
            issued.append(sw.txn.begin().id)
            monkeypatch.undo()
    assert len(set(issued)) == len(issued), issued


def test_outcomes_are_bounded(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path, _config(outcomes_max=3), clock=clock) as sw:
        ids = []
        for _ in range(5):
            tx = sw.txn.begin()
            tx.commit()
            ids.append(tx.id)
        assert [sw.txn.status(i) for i in ids] == [TxnStatus.UNKNOWN] * 2 + [TxnStatus.COMMITTED] * 3
        with pytest.raises(UnknownTransactionError):  # a retried commit learns nothing wrong
            sw.txn.commit(ids[0])
        with pytest.raises(UnknownTransactionError):
            sw.txn.abort(ids[1])
        with pytest.raises(TransactionNotInProgressError):
            sw.txn.commit(ids[4])


def test_outcomes_are_remembered_for_outcomes_s_whatever_finishes_meanwhile(tmp_path: Path, clock: FakeClock) -> None:
    """Finding 11: a cut-off commit's outcome is answerable for ``outcomes_s`` after it ended, also
    across a restart, however many transactions (read-only polls, say) finished since, up to the
    memory bound; then it is forgotten."""
    config = _config(outcomes_s=60, outcomes_max=10_000)
    with seaway.open(tmp_path, config, clock=clock) as sw:
        cut_off = sw.txn.begin()
        cut_off.commit()
        for _ in range(200):  # polls that find nothing, each ends a transaction
            sw.txn.begin().abort()
        clock.advance(59)
        sw.txn.begin().abort()
        assert sw.txn.status(cut_off.id) is TxnStatus.COMMITTED
    with seaway.open(tmp_path, config, clock=clock) as sw:
        assert sw.txn.status(cut_off.id) is TxnStatus.COMMITTED
        clock.advance(2)
        sw.txn.begin().abort()
        assert sw.txn.status(cut_off.id) is TxnStatus.UNKNOWN


def test_transactions_in_progress_are_bounded(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path, _config(in_progress_max=2), clock=clock) as sw:
        first, _ = sw.txn.begin(), sw.txn.begin()
        with pytest.raises(OverloadedError) as info:
            sw.txn.begin()
        assert info.value.retriable
        first.abort()
        sw.txn.begin()


def test_the_expiry_order_holds_what_is_open_not_what_ended_within_the_timeout(store: seaway.Seaway) -> None:
    """Finding 27: a committed or aborted transaction's expiry entry used to stay until its timeout
    came (an hour, at timeout_s_max): begins per second times that. Now the timeout pass drops
    them once they outnumber those in progress."""
    manager = manager_of(store)
    held = [store.txn.begin(timeout_s=3600) for _ in range(10)]
    for _ in range(2_000):  # no time passes: none of them is due
        store.txn.begin(timeout_s=3600).commit()
        store.txn.begin(timeout_s=3600).abort()
    manager.run_timeouts()
    assert len(manager._expiries) <= 2 * len(held) + EXPIRIES_SLACK
    assert sorted(wp for _, wp in manager._expiries) == [tx.id for tx in held]
    for tx in held:
        tx.abort()


def test_concurrent_begins_share_log_appends(tmp_path: Path, clock: FakeClock) -> None:
    """Group commit: while one edit's append is on its way to the disk, the begins of other threads
    wait for it and then go out together, as one append (one disk write and sync)."""
    threads_n = 32
    wal: list[int] = []  # the log id, once known
    batches: list[int] = []  # records per append to the write-ahead log
    hold = threading.Event()

    def count(write: DiskWrite) -> None:
        for op in write.ops:
            if isinstance(op, PutRecords) and wal and op.log_id == wal[0]:
                batches.append(len(op.payloads))
                hold.wait(30)  # the first append is on its way while the others begin

    with seaway.Seaway(tmp_path, _config(), clock, disk_fault=count) as sw:
        manager = manager_of(sw)
        sw.transaction().commit()  # the manager's log exists from its first edit on
        batches.clear()
        wal.append(sw.logs.get(WAL_LOG).id)
        threads = [threading.Thread(target=manager.begin) for _ in range(threads_n)]
        for t in threads:
            t.start()
        # Every begin has issued its edit once all are in the list (the edit is appended with it).
        while len(manager.list()) < threads_n:
            threading.Event().wait(0.001)
        hold.set()
        for t in threads:
            t.join(30)
        assert len(manager.list()) == threads_n
    assert sum(batches) == threads_n, batches
    # The first few alone (as many as a log keeps in flight), then all the others together.
    assert len(batches) <= CoalesceConfig().batches_in_flight_max + 1, batches


def test_saving_trims_the_log_and_recovery_goes_on_from_the_saved_state(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path, _config(), clock=clock) as sw:
        log_id = sw.logs.create("data").id
        committed = sw.txn.begin()
        committed.stage_put("m", b"k", b"before the save")
        committed.commit()
        aborted = sw.txn.begin()
        aborted.register_logs([log_id])
        aborted.abort()
        open_before = sw.txn.begin(timeout_s=60)
        manager_of(sw).save()
        wal = sw.logs.get(WAL_LOG)
        assert wal.trim_point() == wal.tail_lsn() and wal_edits(sw) == []
        after = sw.txn.begin()
        after.stage_put("m", b"k2", b"after the save")
        after.commit()
        open_before.register_logs([log_id])
        assert wal_edits(sw) == ["Begin", "Commit", "Register"]
        snapshot = sw.txn.snapshot()
    with seaway.open(tmp_path, _config(), clock=clock) as sw:
        assert sw.txn.status(committed.id) is TxnStatus.COMMITTED
        assert sw.txn.status(aborted.id) is TxnStatus.ABORTED
        assert sw.txn.status(open_before.id) is TxnStatus.IN_PROGRESS
        assert sw.txn.status(after.id) is TxnStatus.COMMITTED
        recovered = sw.txn.snapshot()  # the read pointer jumps: begins lost in a crash stay below it
        assert (recovered.in_progress, recovered.invalid) == (snapshot.in_progress, snapshot.invalid)
        assert recovered.read_pointer > snapshot.read_pointer
        assert [(i.id, i.logs) for i in sw.txn.list()] == [(open_before.id, (log_id,)), (aborted.id, (log_id,))]
        assert [value(sw, k) for k in (b"k", b"k2")] == [b"before the save", b"after the save"]
        assert sw.txn.begin().id > after.id


def test_saving_is_due_again_only_after_more_edits(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path, _config(save_edits=3, save_interval_s=100), clock=clock) as sw:
        manager = manager_of(sw)
        for _ in range(2):
            sw.txn.begin()
        assert not manager.run_timeouts()
        sw.txn.begin()
        assert manager.run_timeouts()
        manager.save()
        assert not manager.run_timeouts(), "a save is due after every tick once save_edits were made"
        clock.advance(100)
        assert manager.run_timeouts()
        manager.save()
        assert not manager.run_timeouts()


class _GatedMeta:
    """The metadata store, but the first ``batch()`` that a thread named ``gated`` asks for waits
    until released: so that a test can hold one save between its checkpoint and its saved state."""

    def __init__(self, meta: MetaApi) -> None:
        self._meta = meta
        self.reached = threading.Event()
        self.release = threading.Event()

    def batch(self) -> Any:
        if threading.current_thread().name == "gated" and not self.reached.is_set():
            self.reached.set()
            self.release.wait(30)
        return self._meta.batch()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meta, name)


def test_saves_at_once_leave_the_newest_state(tmp_path: Path, clock: FakeClock) -> None:
    """A save that reached the disk before another one that began earlier is not undone by it: the
    older saved state would cover less than the log has since been trimmed of."""
    with seaway.open(tmp_path, _config(), clock=clock) as sw:
        meta = _GatedMeta(sw.meta)
        manager = TransactionManager(sw.logs, meta, clock, TxnConfig(**QUIET))  # type: ignore[arg-type]
        first = threading.Thread(target=manager.save, name="gated")
        first.start()
        assert meta.reached.wait(30)
        txn = manager.begin().write_pointer
        manager.commit(txn)
        second = threading.Thread(target=manager.save)
        second.start()
        # The second save either finishes now (and the first must not undo it) or waits for the first.
        second.join(0.5)
        meta.release.set()
        first.join(30)
        second.join(30)
        assert not first.is_alive() and not second.is_alive()
    with seaway.open(tmp_path, _config(), clock=clock) as sw:
        assert sw.txn.status(txn) is TxnStatus.COMMITTED


def test_a_commits_writes_do_not_come_back_over_later_writes(store: seaway.Seaway, tmp_path: Path,
                                                             clock: FakeClock) -> None:
    tx = store.txn.begin()
    tx.stage_put("m", b"position", b"1")
    tx.stage_delete("m", b"gone")
    tx.commit()
    store.meta.put("m", b"position", b"2")
    store.meta.put("m", b"gone", b"back")
    store.close()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert value(sw, b"position") == b"2"
        assert value(sw, b"gone") == b"back"


def test_in_progress_transactions_survive_a_restart_until_their_timeout(store: seaway.Seaway, tmp_path: Path,
                                                                         clock: FakeClock) -> None:
    tx = store.txn.begin(timeout_s=5)
    tx.register_logs([store.logs.create("l").id])
    store.close()
    clock.advance(4)
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        manager = manager_of(sw)
        manager.run_timeouts()
        assert sw.txn.status(tx.id) is TxnStatus.IN_PROGRESS
        assert tx.id in sw.txn.snapshot().in_progress
        clock.advance(1)
        manager.run_timeouts()
        assert sw.txn.status(tx.id) is TxnStatus.TIMED_OUT
        assert sw.txn.snapshot().invalid == (tx.id,)


def test_the_handle_commits_on_leaving_the_block_and_aborts_on_an_exception(store: seaway.Seaway) -> None:
    with store.transaction() as tx:
        tx.stage_put("m", b"a", b"1")
    assert tx.status is TxnStatus.COMMITTED and store.txn.status(tx.id) is TxnStatus.COMMITTED
    with pytest.raises(RuntimeError), store.transaction() as failed:
        failed.stage_put("m", b"b", b"1")
        raise RuntimeError("the work failed")
    assert store.txn.status(failed.id) is TxnStatus.ABORTED
    assert store.meta.get("m", b"a") is not None and store.meta.get("m", b"b") is None


def test_the_later_of_two_conflicting_commits_fails_and_is_aborted(store: seaway.Seaway) -> None:
    first, second, other = store.txn.begin(), store.txn.begin(), store.txn.begin()
    for tx in (first, second):
        tx.add_conflicts(b"account/7")
        tx.stage_put("m", b"balance", b"%d" % tx.id)
    other.add_conflicts(b"account/8")
    second.commit()
    with pytest.raises(TransactionConflictError):
        first.commit()
    other.commit()
    assert first.status is TxnStatus.ABORTED and store.txn.status(first.id) is TxnStatus.ABORTED
    assert value(store, b"balance") == b"%d" % second.id
    late = store.txn.begin()  # began after the commit: no conflict
    late.add_conflicts(b"account/7")
    late.commit()


def test_a_log_trimmed_past_the_saved_state_fails_recovery_loudly(store: seaway.Seaway, tmp_path: Path,
                                                                    clock: FakeClock) -> None:
    tx = store.txn.begin()
    tx.commit()
    wal = store.logs.get(WAL_LOG)
    wal.trim(wal.tail_lsn())  # the commit's edit is gone, and no saved state holds it
    store.close()
    with pytest.raises(seaway.CorruptionError):
        seaway.open(tmp_path / "data", _config(), clock=clock)


def test_commit_all_is_one_edit_and_recovers_whole(store: seaway.Seaway, tmp_path: Path, clock: FakeClock) -> None:
    log = store.logs.create("l")
    group = [store.txn.begin() for _ in range(3)]
    for tx in group:
        tx.register_logs([log.id])
    before = wal_edits(store).count("Commit")
    store.txn.commit_all([tx.id for tx in group], conflicts=[b"sink"], writes=[("m", b"marker", b"4")])
    assert wal_edits(store).count("Commit") == before + 1  # one edit: after a crash, all or none
    store.close()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert [sw.txn.status(tx.id) for tx in group] == [TxnStatus.COMMITTED] * 3
        assert value(sw, b"marker") == b"4"
        assert not set(sw.txn.snapshot().in_progress) & {tx.id for tx in group}


def test_a_commit_being_logged_conflicts_with_transactions_begun_meanwhile(store: seaway.Seaway) -> None:
    """A transaction that began after a commit was logged but before it was visible did not see it:
    it conflicts on the same key, while the commit is pending and after it is visible."""
    manager = manager_of(store)
    entered, release = threading.Event(), threading.Event()
    apply_edit = manager._apply_edit

    def held(*args: Any) -> None:
        entered.set()
        assert release.wait(10)
        apply_edit(*args)

    first = store.txn.begin()
    first.add_conflicts(b"row")
    first.stage_put("m", b"row", b"first")
    manager._apply_edit = held  # type: ignore[method-assign,assignment]
    committing = threading.Thread(target=first.commit)
    committing.start()
    try:
        assert entered.wait(10)
        during, after = store.txn.begin(), store.txn.begin()
        assert first.id in during.snapshot.in_progress  # it cannot see the first commit
        during.add_conflicts(b"row")
        with pytest.raises(TransactionConflictError):
            during.commit()
    finally:
        release.set()
        committing.join(10)
    assert store.txn.status(first.id) is TxnStatus.COMMITTED
    after.add_conflicts(b"row")
    with pytest.raises(TransactionConflictError):  # began before the first was visible
        after.commit()
    late = store.txn.begin()
    late.add_conflicts(b"row")
    late.commit()


def test_a_commit_being_logged_conflicts_with_transactions_begun_meanwhile_after_a_restart(
        store: seaway.Seaway, tmp_path: Path, clock: FakeClock) -> None:
    """Finding 2: the same rule holds for a commit recovered from the log. A transaction that
    began while the commit was being logged conflicts after a restart too (a lost update else);
    one that began once it was visible does not."""
    manager = manager_of(store)
    entered, release = threading.Event(), threading.Event()
    apply_edit = manager._apply_edit

    def held(*args: Any) -> None:
        entered.set()
        assert release.wait(10)
        apply_edit(*args)

    first = store.txn.begin()
    first.add_conflicts(b"row")
    manager._apply_edit = held  # type: ignore[method-assign,assignment]
    committing = threading.Thread(target=first.commit)
    committing.start()
    try:
        assert entered.wait(10)
        during = store.txn.begin()
    finally:
        release.set()
        committing.join(10)
    manager._apply_edit = apply_edit  # type: ignore[method-assign]
    assert store.txn.status(first.id) is TxnStatus.COMMITTED
    seen = store.txn.begin()  # began once the first commit was visible: it saw it
    assert first.id not in seen.snapshot.in_progress
    store.close()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        with pytest.raises(TransactionConflictError):
            sw.txn.commit(during.id, [b"row"])
        sw.txn.commit(seen.id, [b"row"])
        assert sw.txn.status(seen.id) is TxnStatus.COMMITTED


def test_an_aborted_writer_that_writes_until_its_deadline_stays_invisible(store: seaway.Seaway,
                                                                         clock: FakeClock) -> None:
    """Finding 1: a transaction aborted by id is settled (and can leave the invalid list) no
    earlier than its own expiry plus ``settle_s``: its handle, which does not know of the abort,
    may write until its deadline, and such a write must stay invisible, pruned or not."""
    manager = manager_of(store)
    log = store.logs.create("late")
    settle_s = manager.config.settle_s
    tx = store.txn.begin(timeout_s=3 * settle_s)
    tx.register_logs([log.id])
    log.append(b"%d" % tx.id)
    store.txn.abort(tx.id)  # by id, from elsewhere: the handle does not know
    clock.advance(settle_s + 1)
    manager.run_pruning()  # settles, if it may
    log.trim(log.tail_lsn())
    assert manager.run_pruning() == 0, "left the invalid list before its writer's deadline"
    tx.check_open()  # the handle may still write
    log.append(b"%d" % tx.id)
    assert store.txn.snapshot().visibility(tx.id) is seaway.txn.Visibility.SKIP
    # Once its expiry and the settling time passed, it leaves the list: its log lists it as
    # aborted, and its records, the late one too, stay invisible.
    clock.advance(3 * settle_s)
    assert manager.run_pruning() == 1
    snapshot = store.txn.snapshot()
    assert tx.id not in snapshot.invalid
    judges = seaway.txn.AbortedJudges(store.meta)
    records = [item for item in log.read() if isinstance(item, Record)]
    assert records and all(judges.judge(log.id, snapshot, tx.id) is seaway.txn.Visibility.SKIP for _ in records)


@pytest.mark.parametrize("stored", [True, False])
def test_a_commit_whose_log_append_failed_has_the_same_outcome_live_and_after_a_restart(
        tmp_path: Path, clock: FakeClock, stored: bool) -> None:
    """Finding 12: a commit whose append failed, written (a lost reply) or not, is aborted, and a
    restart finds it aborted too: its writes are never applied, over newer values or at all."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        sw.transaction().abort()  # the manager's log exists
        wal = sw.logs.get(WAL_LOG).id
        tx = sw.txn.begin()
        tx.register_logs([log.id])
        log.append(b"%d" % tx.id)
        tx.stage_put("m", b"position", b"old")
        faults = (AppendFaults(1, lose_reply=1.0, limit=1, logs={wal}) if stored
                  else AppendFaults(1, refuse_later=1.0, limit=1, logs={wal}))
        with faults.applied(sw), pytest.raises(SeawayError):
            tx.commit()
        assert len(faults.injected) == 1
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED and tx.status is TxnStatus.ABORTED
        assert sw.txn.snapshot().visibility(tx.id) is Visibility.SKIP
        sw.meta.put("m", b"position", b"newer")  # written since, outside the transaction
        later = sw.txn.begin()  # the manager goes on
        later.commit()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED
        assert sw.txn.snapshot().visibility(tx.id) is Visibility.SKIP
        assert value(sw, b"position") == b"newer"
        assert sw.txn.status(later.id) is TxnStatus.COMMITTED


def test_the_timeout_pass_goes_past_a_commit_being_logged(store: seaway.Seaway, clock: FakeClock) -> None:
    """Finding 20: a transaction being committed at the head of the expiry order is left alone,
    and the pass goes on to time out the others past their expiry."""
    manager = manager_of(store)
    entered, release = threading.Event(), threading.Event()
    apply_edit = manager._apply_edit

    def held(*args: Any) -> None:
        if not entered.is_set():  # only the commit's: the time-out's ledger entry goes through
            entered.set()
            assert release.wait(10)
        apply_edit(*args)

    first = store.txn.begin(timeout_s=1)
    idle = store.txn.begin(timeout_s=2)
    manager._apply_edit = held  # type: ignore[method-assign,assignment]
    committing = threading.Thread(target=first.commit)
    committing.start()
    try:
        assert entered.wait(10)
        clock.advance(3)
        manager.run_timeouts()
        assert store.txn.status(idle.id) is TxnStatus.TIMED_OUT
        assert store.txn.status(first.id) is TxnStatus.IN_PROGRESS  # being committed: not timed out
    finally:
        release.set()
        committing.join(10)
    assert store.txn.status(first.id) is TxnStatus.COMMITTED


def test_a_commit_recovered_without_its_visibility_is_dated_once(tmp_path: Path, clock: FakeClock) -> None:
    """A commit logged by a process that died before it became visible counts against every
    transaction in progress when the manager reopens; that dating is logged, so that a later
    reopening does not date it again, against transactions begun since (which saw it). Found by
    the model: a spurious conflict after the second restart."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        manager = manager_of(sw)
        before = sw.txn.begin()  # in progress across the crash: it cannot have seen the commit
        died = sw.txn.begin()

        def crash(*args: Any) -> None:
            raise seaway.StorageError("injected: the process died before the commit became visible")

        manager._apply_edit = crash  # type: ignore[method-assign,assignment]
        with pytest.raises(seaway.StorageError):
            sw.txn.commit(died.id, [b"row"], [("m", b"row", b"died")])
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(died.id) is TxnStatus.COMMITTED and value(sw, b"row") == b"died"
        with pytest.raises(TransactionConflictError):
            sw.txn.commit(before.id, [b"row"])
        after = sw.txn.begin()  # sees the commit
        assert died.id not in after.snapshot.in_progress
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        sw.txn.commit(after.id, [b"row"])
        assert sw.txn.status(after.id) is TxnStatus.COMMITTED


def test_a_begin_that_was_not_logged_raises_and_no_transaction_goes_on_without_it(
        tmp_path: Path, clock: FakeClock) -> None:
    """Found twice by the queue model over append faults while begins were not waited for: a begin
    refused by the log left a transaction whose register or commit could land after the hole
    (aborted data visible after a restart, a commit's outcome lost), then, once those waited for
    the begin, one that a failed abort and a restart left UNKNOWN to the caller who had begun it.
    A begin is now waited for: refused, it raises (retriable), and its transaction, whose id nobody
    learnt, is aborted; the next begin goes on."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        sw.transaction().abort()  # the manager's log exists
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=1, logs={wal}).applied(sw) as faults, \
                pytest.raises(OverloadedError):
            sw.txn.begin()
        assert [f.kind for f in faults.injected] == ["refuse_later"]
        assert [info for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS] == []
        tx = sw.txn.begin()
        tx.stage_put("m", b"k", b"v")
        tx.commit()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(tx.id) is TxnStatus.COMMITTED
        assert value(sw, b"k") == b"v"


@pytest.mark.parametrize("refusals", [1, 2])
def test_an_abort_refused_by_the_log_is_logged_again_or_stops_the_manager(
        tmp_path: Path, clock: FakeClock, refusals: int) -> None:
    """Found by the queue model over append faults: an abort takes effect before it is logged
    (readers skip the transaction's data at once); refused by the log, it raised, but the
    transaction stayed ABORTED here while a restart found it IN_PROGRESS: a reader that had
    stepped over its data and acknowledged past it was then refused. The abort is now logged
    again; refused twice, the manager stops (no snapshot is given that the log does not back)."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        tx = sw.txn.begin()
        tx.register_logs([log.id])
        log.append(b"%d" % tx.id)
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=refusals, logs={wal}).applied(sw):
            try:
                tx.abort()
            except SeawayError as exc:
                error: SeawayError | None = exc
            else:
                error = None
        if refusals == 1:
            assert error is None
            assert sw.txn.status(tx.id) is TxnStatus.ABORTED
            assert sw.txn.snapshot().visibility(tx.id) is Visibility.SKIP
        else:
            assert isinstance(error, seaway.StorageError) and "reopen the store" in str(error)
            with pytest.raises(seaway.StorageError):
                sw.txn.snapshot()
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(tx.id) is (TxnStatus.ABORTED if refusals == 1 else TxnStatus.IN_PROGRESS)


def _durable_begin(sw: seaway.Seaway) -> seaway.Transaction:
    """A transaction whose begin is in the manager's log (a later edit's append was waited for)."""
    tx = sw.txn.begin()
    sw.transaction().commit()  # appended after the begin, and waited for
    return tx


@pytest.mark.parametrize("by_id", [False, True])
def test_an_abort_that_returned_survives_a_restart_when_the_transaction_wrote_no_log(
        tmp_path: Path, clock: FakeClock, by_id: bool) -> None:
    """Found by the transaction API model over append faults: an abort of a transaction that
    registered no log (a queue consumer's) is not waited for; refused by the log, it returned all
    the same, and after a restart the transaction was IN_PROGRESS again, and could be committed
    by id: an aborted transaction committed. The docs promise that an abort that returned
    survives a crash."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        tx = _durable_begin(sw)
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=1, logs={wal}).applied(sw) as faults:
            sw.txn.abort(tx.id) if by_id else tx.abort()
        assert [f.kind for f in faults.injected] == ["refuse_later"]
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED, "an abort that returned was lost by a restart"
        with pytest.raises(TransactionNotInProgressError):
            sw.txn.commit(tx.id)


def test_a_register_refused_by_the_log_is_logged_when_asked_again(tmp_path: Path, clock: FakeClock) -> None:
    """Found by the transaction API model over append faults: a register is applied before its
    edit is logged; refused by the log, it raised, but the manager kept the log as registered, so
    the writer's next register of it returned at once, logging nothing. The writer wrote; after a
    restart the manager did not know the transaction wrote that log, and once aborted it was not
    on the invalid list: its record was visible."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        tx = _durable_begin(sw)
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=1, logs={wal}).applied(sw) as faults, \
                pytest.raises(OverloadedError):
            tx.register_logs([log.id])
        assert [f.kind for f in faults.injected] == ["refuse_later"]
        tx.register_logs([log.id])  # asked again, it returns: durable, the docs say
        log.append(b"%d" % tx.id)
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        sw.txn.abort(tx.id)
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED
        assert sw.txn.snapshot().visibility(tx.id) is Visibility.SKIP, "an aborted transaction's record is visible"


def test_a_commit_refused_for_a_conflict_stays_aborted_after_a_restart_when_its_abort_was_refused(
        tmp_path: Path, clock: FakeClock) -> None:
    """Found by the transaction API model over append faults: a commit that conflicts aborts its
    transaction (readers skip its data at once) and waits for the abort's edit; refused by the log,
    the commit raised the append's error and nothing more happened: after a restart the
    transaction was IN_PROGRESS again, and could be committed by id, its aborted record then
    visible. An abort by id logs its edit again, or stops the manager (22bab8b); this one must too."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        tx = sw.txn.begin()
        tx.register_logs([log.id])
        log.append(b"%d" % tx.id)
        tx.add_conflicts(b"k")
        with sw.transaction() as winner:
            winner.add_conflicts(b"k")
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=1, logs={wal}).applied(sw) as faults, \
                pytest.raises(SeawayError) as failed:
            tx.commit()
        assert [f.kind for f in faults.injected] == ["refuse_later"]
        stopped = isinstance(failed.value, seaway.StorageError) and "reopen the store" in str(failed.value)
        assert isinstance(failed.value, TransactionConflictError) or failed.value.retriable or stopped, failed.value
        if not stopped:
            assert sw.txn.status(tx.id) is TxnStatus.ABORTED
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED, "a commit refused for a conflict was not aborted for good"
        with pytest.raises(TransactionNotInProgressError):
            sw.txn.commit(tx.id)


def test_a_stopped_manager_refuses_an_abort_of_an_aborted_transaction(tmp_path: Path, clock: FakeClock) -> None:
    """Found by the transaction API model over append faults through a server: an abort refused
    twice stops the manager (StorageError, retriable), and the client retried the call; the
    manager, holding the transaction aborted in memory, answered the retry as done before checking
    that it runs, so the caller heard of an abort the log may not hold, and not of the stop. The
    docs: once stopped, every call raises StorageError until the store is reopened."""
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        tx = sw.txn.begin()
        tx.register_logs([log.id])
        wal = sw.logs.get(WAL_LOG).id
        with AppendFaults(1, refuse_later=1.0, limit=2, logs={wal}).applied(sw), \
                pytest.raises(seaway.StorageError, match="reopen the store"):
            sw.txn.abort(tx.id)
        with pytest.raises(seaway.StorageError, match="reopen the store"):
            sw.txn.abort(tx.id)  # what a client's retry of the call does
