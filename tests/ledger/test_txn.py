"""Transactions committed or timed out write one ledger entry each (summary fields only), in the
metadata batch that applies the log edit; an edit logged but whose batch failed (as a crash between
the two would leave it) gets its entry when the store reopens, and never a second one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import TransactionConflictError, TransactionTimedOutError, TxnConfig
from seaway._errors import StorageError
from seaway.ledger import TxnAbortedByTimeout, TxnCommitted
from seaway.testing import FakeClock
from seaway.txn import TransactionManager
from tests.ledger.helpers import changes, head
from tests.txn.test_stop import _FailingCommits


def _config() -> seaway.SeawayConfig:
    # No background passes: the tests run them.
    return seaway.SeawayConfig(txn=TxnConfig(timeout_s=10, tick_s=3600.0, prune_interval_s=3600.0), retention=None)


def manager_of(sw: seaway.Seaway) -> TransactionManager:
    api = sw.txn.api
    assert isinstance(api, TransactionManager)
    return api


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[seaway.Seaway]:
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        yield sw


def _txn_changes(sw: seaway.Seaway, after: int = 0) -> list[Any]:
    return [c for c in changes(sw, after) if isinstance(c, TxnCommitted | TxnAbortedByTimeout)]


def test_commits_record_their_summary_and_refused_commits_nothing(store: seaway.Seaway, clock: FakeClock) -> None:
    log = store.logs.create("data")
    mark = head(store)
    plain = store.txn.begin()
    plain.commit()
    written = store.txn.begin()
    store.txn.api.register(written.id, [int(log.id)])
    written.stage_put("m", b"a", b"1")
    written.stage_delete("m", b"b")
    written.add_conflicts(b"row")
    loser = store.txn.begin()  # began before `written` committed, on the same key
    written.commit()
    loser.add_conflicts(b"row")
    with pytest.raises(TransactionConflictError):
        loser.commit()
    first, second = store.txn.begin(), store.txn.begin()
    store.txn.api.commit_all([first.id, second.id])
    assert _txn_changes(store, mark) == [TxnCommitted(plain.id, 0, 0, 1), TxnCommitted(written.id, 1, 2, 1),
                                         TxnCommitted(first.id, 0, 0, 2)]
    assert _txn_changes(store, mark)[1].resource() == f"txn/{written.id}"


def test_time_outs_are_recorded_by_the_pass_and_by_a_refused_commit(store: seaway.Seaway, clock: FakeClock) -> None:
    log = store.logs.create("data")
    mark = head(store)
    idle = store.txn.begin()
    late = store.txn.begin()
    store.txn.api.register(late.id, [int(log.id)])
    kept = store.txn.begin(timeout_s=100)
    clock.advance(11)
    with pytest.raises(TransactionTimedOutError):  # the commit finds it timed out: it times it out
        late.commit()
    manager_of(store).run_timeouts()
    manager_of(store).run_timeouts()  # nothing left to time out: nothing recorded
    assert _txn_changes(store, mark) == [TxnAbortedByTimeout(late.id, 1), TxnAbortedByTimeout(idle.id, 0)]
    kept.abort()  # an abort is not a change the ledger records
    assert len(_txn_changes(store, mark)) == 2


def _fail_applies(sw: seaway.Seaway) -> _FailingCommits:
    manager = manager_of(sw)
    failing = _FailingCommits(manager._meta)  # the seam between the log edit and its batch
    manager._meta = failing  # type: ignore[assignment]
    return failing


def test_a_commit_cut_off_before_its_batch_is_recorded_once_when_the_store_reopens(
        tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        done = sw.txn.begin()
        done.commit()
        tx = sw.txn.begin()
        tx.stage_put("m", b"k", b"v")
        _fail_applies(sw).failing = True
        with pytest.raises(StorageError, match="reopen the store"):
            tx.commit()  # logged, not applied: as if the process died between the two
        assert _txn_changes(sw) == [TxnCommitted(done.id, 0, 0, 1)]
        assert sw.meta.get("m", b"k") is None
    for _ in range(2):  # the first reopen writes it, the second finds it there
        with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
            assert _txn_changes(sw) == [TxnCommitted(done.id, 0, 0, 1), TxnCommitted(tx.id, 0, 1, 1)]
            found = sw.meta.get("m", b"k")
            assert found is not None and found.value == b"v"
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        manager_of(sw).save()  # the log is trimmed past both: they stay recorded once
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        assert len(_txn_changes(sw)) == 2


def test_a_time_out_cut_off_before_its_entry_is_recorded_once_when_the_store_reopens(
        tmp_path: Path, clock: FakeClock) -> None:
    with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
        log = sw.logs.create("data")
        tx = sw.txn.begin()
        sw.txn.api.register(tx.id, [int(log.id)])
        clock.advance(11)
        _fail_applies(sw).failing = True
        with pytest.raises(StorageError, match="reopen the store"):
            manager_of(sw).run_timeouts()
        assert _txn_changes(sw) == []
        with pytest.raises(StorageError):
            manager_of(sw).save()  # stopped: a save must not trim the edit away before it is recorded
    for _ in range(2):
        with seaway.open(tmp_path / "data", _config(), clock=clock) as sw:
            assert sw.txn.status(tx.id) is seaway.TxnStatus.TIMED_OUT
            assert _txn_changes(sw) == [TxnAbortedByTimeout(tx.id, 1)]
            manager_of(sw).run_timeouts()
            assert len(_txn_changes(sw)) == 1
