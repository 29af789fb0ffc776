"""Begins, commits and metadata batches of many threads joined into one call (``commit_many`` and
the client's joined calls): each item answered on its own, conflicts between items of one call
caught, a joined call cut off in transport settled item by item, syncs shared."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from unittest.mock import ANY

import pytest

import seaway
from seaway import (
    ConditionFailedError,
    InvalidArgumentError,
    PayloadTooLargeError,
    TransactionConflictError,
    TxnStatus,
)
from seaway.log import COMMIT_MANY_MAX, Record
from seaway.server import Server, ServerConfig, ServerProcess, ServiceLimits
from seaway.txn import LOGS_MAX, WAL_LOG, Snapshot
from seaway.txn._state import Begin, Commit, decode_edit
from seaway.wire import invalid_version_to_msg
from seaway.wire import seaway_pb2 as pb
from tests.api.conftest import Api, Refused

WAIT_S = 10.0


def test_commit_many_answers_each_batch_on_its_own(api: Api) -> None:
    meta = api.sw.meta
    ns = api.name("many")
    meta.put(ns, b"held", b"0")
    results = meta.commit_many([
        meta.batch().put(ns, b"a", b"1"),
        meta.batch().expect_version(ns, b"held", 99).put(ns, b"b", b"2"),  # refused: nothing of it applied
        meta.batch().put(ns, b"c", b"3").expect_absent(ns, b"d"),
    ])
    assert isinstance(results[0], int) and isinstance(results[2], int) and results[2] > results[0]
    assert isinstance(results[1], ConditionFailedError) and results[1].key == b"held"
    assert [k for k, _ in meta.scan(ns)] == [b"a", b"c", b"held"]
    single = meta.commit_many([meta.batch().expect_absent(ns, b"a").put(ns, b"e", b"5")])
    assert len(single) == 1 and isinstance(single[0], ConditionFailedError)
    assert meta.commit_many([]) == []
    with pytest.raises(PayloadTooLargeError):
        meta.commit_many([meta.batch().put(ns, b"x", b"x")] * (COMMIT_MANY_MAX + 1))


def test_commit_many_shares_syncs_embedded(tmp_path: Any) -> None:
    with seaway.open(tmp_path / "d") as sw:
        before = sw.disk_syncs
        results = sw.meta.commit_many([sw.meta.batch().put("ns", b"k%d" % i, b"v") for i in range(50)])
        assert all(isinstance(r, int) for r in results)
        assert sw.disk_syncs - before == 1  # fifty batches, one sync
        txns = [sw.txn.begin() for _ in range(20)]
        before = sw.disk_syncs
        outcomes = sw.txn_manager.commit_many([(tx.id, [b"ns/t%d" % i], [("ns", b"t%d" % i, b"v")])
                                               for i, tx in enumerate(txns)])
        assert outcomes == [None] * 20
        assert sw.disk_syncs - before < 10  # appended together; twenty commits one after the other: 20
        assert all(sw.txn.status(tx.id) is TxnStatus.COMMITTED for tx in txns)
        assert sw.meta.get("ns", b"t19") is not None


def test_commit_many_refuses_the_second_of_two_commits_on_one_key_and_answers_the_others(tmp_path: Any) -> None:
    with seaway.open(tmp_path / "d") as sw:
        first, second, third = (sw.txn.begin() for _ in range(3))
        outcomes = sw.txn_manager.commit_many([(first.id, [b"k"], [("ns", b"k", b"1")]),
                                               (second.id, [b"k"], [("ns", b"k", b"2")]),
                                               (12345, [], []),  # never begun
                                               (third.id, [b"other"], [])])
        assert outcomes[0] is None and outcomes[3] is None
        assert isinstance(outcomes[1], TransactionConflictError)
        assert isinstance(outcomes[2], seaway.UnknownTransactionError)
        assert sw.meta.get("ns", b"k").value == b"1"  # type: ignore[union-attr]
        assert sw.txn.status(second.id) is TxnStatus.ABORTED


def _counting(sw: Any, calls: list[str], hold: threading.Event | None = None,
              refuse: str | None = None) -> None:
    """Wrap the connection's stub: record each method called; hold the first single ``TxnCommit``
    until ``hold`` is set; refuse the first call of ``refuse`` in transport (never sent)."""
    stub = sw._stub
    refused: list[str] = []

    class Counting:
        def __getattr__(self, method: str) -> Any:
            real = getattr(stub, method)

            def call(request: Any, **kwargs: Any) -> Any:
                calls.append(method)
                if hold is not None and method == "TxnCommit" and calls.count("TxnCommit") == 1:
                    assert hold.wait(WAIT_S)
                if method == refuse and not refused:
                    refused.append(method)
                    raise Refused()
                return real(request, **kwargs)
            return call

    sw._stub = Counting()


def _commit_together(sw: Any, txns: list[Any], hold: threading.Event | None = None) -> list[BaseException | None]:
    """Commit ``txns`` from a thread each; with ``hold``, once all but the first are queued behind
    the first (held on the wire), release it: the others go in one joined call."""
    outcomes: list[BaseException | None] = [None] * len(txns)

    def commit(i: int) -> None:
        try:
            txns[i].commit()
        except BaseException as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(txns))]
    threads[0].start()
    if hold is not None:
        deadline = time.monotonic() + WAIT_S
        while not sw._commits._in_flight and time.monotonic() < deadline:
            time.sleep(0.005)
    for thread in threads[1:]:
        thread.start()
    if hold is not None:
        deadline = time.monotonic() + WAIT_S
        while len(sw._commits._queued) < len(txns) - 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        hold.set()
    for thread in threads:
        thread.join(WAIT_S * 3)
    return outcomes


def test_commits_of_many_threads_go_in_one_call_each_answered_on_its_own(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        calls: list[str] = []
        hold = threading.Event()
        _counting(sw, calls, hold)
        txns = [sw.transaction() for _ in range(6)]
        for i, tx in enumerate(txns):
            key = b"shared" if i in (2, 4) else b"own%d" % i  # two of them race on one key
            tx.stage_put("joined", key, b"%d" % i)
            tx.add_conflicts(b"joined/" + key)
        outcomes = _commit_together(sw, txns, hold)
        assert calls.count("TxnCommit") == 1 and calls.count("TxnCommitMany") == 1, calls
        conflicts = [i for i, o in enumerate(outcomes) if isinstance(o, TransactionConflictError)]
        assert len(conflicts) == 1 and conflicts[0] in (2, 4), outcomes
        assert all(o is None for i, o in enumerate(outcomes) if i not in conflicts), outcomes
        assert sw.meta.get("joined", b"shared").value == (b"4" if conflicts == [2] else b"2")  # type: ignore[union-attr]
        for i, tx in enumerate(txns):
            assert sw.txn.status(tx.id) is (TxnStatus.ABORTED if i in conflicts else TxnStatus.COMMITTED)


def test_a_joined_commit_cut_off_in_transport_is_settled_commit_by_commit(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        calls: list[str] = []
        hold = threading.Event()
        _counting(sw, calls, hold, refuse="TxnCommitMany")
        txns = [sw.transaction() for _ in range(4)]
        for i, tx in enumerate(txns):
            tx.stage_put("cut", b"k%d" % i, b"v")
        outcomes = _commit_together(sw, txns, hold)
        assert outcomes == [None] * 4, outcomes
        assert "TxnCommitMany" in calls and "TxnStatus" in calls, calls  # asked, then sent again
        assert all(sw.txn.status(tx.id) is TxnStatus.COMMITTED for tx in txns)
        assert [k for k, _ in sw.meta.scan("cut")] == [b"k0", b"k1", b"k2", b"k3"]


def test_begins_of_many_threads_are_joined(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        calls: list[str] = []
        _counting(sw, calls)
        gate = threading.Barrier(16)
        began: list[int] = []

        def begin() -> None:
            gate.wait()
            for _ in range(10):
                tx = sw.transaction()
                began.append(tx.id)
                tx.abort()

        threads = [threading.Thread(target=begin) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S * 3)
        assert len(set(began)) == 160
        begin_calls = calls.count("TxnBegin") + calls.count("TxnBeginMany")
        assert "TxnBeginMany" in calls and begin_calls < 160, calls


def test_joined_begins_register_each_its_own_logs(server: ServerProcess) -> None:
    """``begin(logs=...)`` of many threads, joined into ``TxnBeginMany`` calls: each transaction
    holds its own logs; a begin over the limit of logs is refused on its own."""
    with seaway.connect(server.url) as sw:
        suffix = os.urandom(4).hex()
        logs = [sw.logs.create(f"joined-begin-{suffix}-{t}").id for t in range(16)]
        direct = sw._stub.TxnBeginMany(pb.TxnBeginManyRequest(begins=[
            pb.TxnBeginRequest(log_ids=[logs[0]]), pb.TxnBeginRequest(log_ids=range(1, LOGS_MAX + 2)),
            pb.TxnBeginRequest(log_ids=[logs[1], logs[2]])]))
        assert [r.WhichOneof("result") for r in direct.results] == ["begun", "error", "begun"]
        assert direct.results[1].error.code == InvalidArgumentError.code
        for result, wanted in ((direct.results[0], (logs[0],)), (direct.results[2], (logs[1], logs[2]))):
            wp = Snapshot.decode(result.begun.snapshot).write_pointer
            assert [info.logs for info in sw.txn.list() if info.id == wp] == [wanted]
            sw.txn.abort(wp)
        calls: list[str] = []
        _counting(sw, calls)
        gate = threading.Barrier(16)
        began: dict[int, int] = {}

        def begin(t: int) -> None:
            gate.wait()
            for _ in range(10):
                tx = sw.transaction(logs=[logs[t]])
                began[tx.id] = logs[t]

        threads = [threading.Thread(target=begin, args=(t,)) for t in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S * 3)
        assert len(began) == 160 and "TxnBeginMany" in calls, calls
        held = {info.id: info.logs for info in sw.txn.list() if info.id in began}
        assert held == {wp: (log_id,) for wp, log_id in began.items()}
        sw.txn.commit_all(list(began))


def test_a_begin_with_logs_is_one_edit_and_one_sync_embedded(tmp_path: Any) -> None:
    with seaway.open(tmp_path / "d") as sw:
        log = sw.logs.create("l")
        sw.txn.begin().abort()  # the manager's log exists
        wal = sw.logs.get(WAL_LOG)
        tail, syncs = wal.tail_lsn(), sw.disk_syncs
        tx = sw.txn.begin(logs=[log.id])
        assert sw.disk_syncs - syncs == 1  # waited for: durable when it returns
        edits = [decode_edit(item.payload) for item in wal.read(tail + 1) if isinstance(item, Record)]
        assert edits == [Begin(tx.id, ANY, ANY, (log.id,))]
        assert sw.txn.list()[0].logs == (log.id,)
        tail, syncs = wal.tail_lsn(), sw.disk_syncs
        begun = sw.txn_manager.begin_many([(None, [log.id])] * 20 + [(None, [0])])
        assert isinstance(begun[-1], InvalidArgumentError)
        snapshots = [s for s in begun if isinstance(s, Snapshot)]
        assert len(snapshots) == 20 and sw.disk_syncs - syncs < 10  # appended together; one by one: 20
        edits = [decode_edit(item.payload) for item in wal.read(tail + 1) if isinstance(item, Record)]
        assert edits == [Begin(s.write_pointer, ANY, ANY, (log.id,)) for s in snapshots]
        sw.txn.commit_all([tx.id] + [s.write_pointer for s in snapshots])


def test_commits_each_under_the_servers_message_bound_are_not_refused_joined(tmp_path: Any) -> None:
    """Commits of 400 KiB each fit the server's request bound (here 1 MiB) alone; three joined do
    not, and the call was refused as a whole (PayloadTooLargeError for each). A joined call refused
    for its size never reached the server: its items are sent again in smaller calls."""
    server = Server(ServerConfig(data_dir=tmp_path / "d", listen="127.0.0.1:0",
                                 limits=ServiceLimits(request_bytes_max=1 << 20)))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}") as sw:
            calls: list[str] = []
            hold = threading.Event()
            _counting(sw, calls, hold)
            txns = [sw.transaction() for _ in range(4)]
            for i, tx in enumerate(txns):
                tx.stage_put("big", b"k%d" % i, b"x" * (400 << 10 if i else 10))
            outcomes = _commit_together(sw, txns, hold)
            assert "TxnCommitMany" in calls, calls  # the large ones were joined
            assert outcomes == [None] * 4, outcomes
            assert all(sw.txn.status(tx.id) is TxnStatus.COMMITTED for tx in txns)
            with ThreadPoolExecutor(2) as pool:  # the same for metadata batches
                results = list(pool.map(lambda i: sw.meta.put("big", b"m%d" % i, b"y" * (600 << 10)), range(4)))
            assert all(isinstance(r, int) for r in results)
    finally:
        server.stop()


def test_each_begin_of_a_joined_call_gets_an_invalid_list_as_new_as_its_snapshot(tmp_path: Any) -> None:
    """``TxnBeginMany`` computed the invalid list's changes once per version known, after the first
    begin of that version, and gave them to the later begins of the call too: a transaction aborted
    between two begins of one call was missing from the second's list while its snapshot already
    counted it as finished, so the second transaction saw the aborted transaction's writes."""
    server = Server(ServerConfig(data_dir=tmp_path / "d", listen="127.0.0.1:0"))
    server.start()
    try:
        store = server.store
        log_id = store.logs.create("aborted-writes").id
        aborted = store.txn.begin()
        aborted.register_logs([log_id])  # aborted, it goes to the invalid list
        manager = store.txn_manager
        real_begin = manager._start_begin  # each begin of a joined call (begin_many) starts here
        begun: list[int] = []

        def begin(timeout_s: float | None, logs: Any) -> Any:
            begun.append(1)
            if len(begun) == 2:  # between the first and the second begin of the joined call
                aborted.abort()
            return real_begin(timeout_s, logs)

        with seaway.connect(f"seaway://{server.address}") as sw:
            remote: Any = sw.txn.api
            request = pb.TxnBeginRequest()
            request.invalid_known.CopyFrom(invalid_version_to_msg(remote._invalid.known))
            manager._start_begin = begin  # type: ignore[method-assign]
            replies = sw._many("TxnBegin", [request, request], idempotent=True)
            manager._start_begin = real_begin  # type: ignore[method-assign]
            assert len(begun) == 2 and all(not isinstance(r, Exception) for r in replies), replies
            second = remote._with_invalid(Snapshot.decode(replies[1].snapshot), replies[1])
            assert aborted.id <= second.read_pointer
            assert not second.visible(aborted.id), "the second begin's snapshot sees an aborted transaction"
    finally:
        server.stop()


def test_commit_many_does_not_deadlock_with_a_save(tmp_path: Any) -> None:
    """A save of the manager's state waits for the commits being logged; a commit waited for the
    save to end before it started. ``commit_many`` starts its commits one after the other before
    finishing any: a save that began after its first one waited for it, and its second one waited
    for the save, for ever (and every later commit of the store with it)."""
    with seaway.open(tmp_path / "d") as sw:
        manager = sw.txn_manager
        txns = [sw.txn.begin() for _ in range(2)]
        real_start = manager._start_commit
        saver: list[threading.Thread] = []

        def start(*args: Any, **kwargs: Any) -> Any:
            started = real_start(*args, **kwargs)
            if not saver:  # a save begins between the first and the second commit's start
                saver.append(threading.Thread(target=manager.save, daemon=True))
                saver[0].start()
                deadline = time.monotonic() + WAIT_S
                while not manager._saving and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert manager._saving
            return started

        manager._start_commit = start  # type: ignore[method-assign]
        outcomes: list[Any] = []
        committer = threading.Thread(target=lambda: outcomes.extend(manager.commit_many(
            [(tx.id, [], [("ns", b"k%d" % i, b"v")]) for i, tx in enumerate(txns)])), daemon=True)
        committer.start()
        committer.join(WAIT_S)
        stuck = committer.is_alive()
        if stuck:  # free the waiters, so that the store can close
            with contextlib.suppress(seaway.SeawayError):
                manager._stop("the test found commit_many and a save waiting for each other",
                              seaway.StorageError("deadlock"))
            committer.join(WAIT_S)
        saver[0].join(WAIT_S)
        assert not stuck, "commit_many and the save wait for each other"
        assert outcomes == [None, None]
        assert all(sw.txn.status(tx.id) is TxnStatus.COMMITTED for tx in txns)


def test_commit_many_finishes_every_started_commit_when_one_fails_unexpectedly(tmp_path: Any) -> None:
    """An error that is not a SeawayError while one commit of ``commit_many`` is waited for (an
    append that failed with a bug's RuntimeError) ended the call at once: the commits started
    after it stayed "being committed" for ever, and the next save waited for them for ever."""
    with seaway.open(tmp_path / "d") as sw:
        manager = sw.txn_manager
        txns = [sw.txn.begin() for _ in range(2)]
        real_append = manager._append
        failed: list[int] = []

        def append(edit: Any) -> Any:
            if isinstance(edit, Commit) and not failed:
                failed.append(edit.write_pointer)
                future: Future[int] = Future()
                future.set_exception(RuntimeError("a bug in the append path"))
                return future
            return real_append(edit)

        manager._append = append  # type: ignore[method-assign]
        try:
            outcomes = manager.commit_many([(tx.id, [], [("ns", b"k%d" % i, b"v")]) for i, tx in enumerate(txns)])
        except RuntimeError:
            outcomes = None
        manager._append = real_append  # type: ignore[method-assign]
        saver = threading.Thread(target=manager.save, daemon=True)
        saver.start()
        saver.join(WAIT_S)
        stuck = saver.is_alive()
        if stuck:  # free the save, so that the store can close
            with contextlib.suppress(seaway.SeawayError):
                manager._stop("the test found a save waiting for ever", seaway.StorageError("stuck"))
            saver.join(WAIT_S)
        assert not stuck, "the save waits for a commit that is never finished"
        assert outcomes is not None and outcomes[1] is None, outcomes
        assert sw.txn.status(txns[1].id) is TxnStatus.COMMITTED
