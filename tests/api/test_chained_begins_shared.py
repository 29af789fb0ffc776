"""Begins that carry reads (``sw.txn.begin(reads=...)``) and commits that carry the next begin
(``tx.commit_and_begin``), embedded and through a server; and what they buy a queue consumer: in
steady state a consumer transaction costs one call (its commit with the next begin) plus its
dequeue's reads, and a fault of that call never has an entry processed twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import seaway
from seaway import (
    InvalidArgumentError,
    PermissionDeniedError,
    TransactionConflictError,
    TransportError,
    TxnStatus,
)
from seaway.queues import Consumer, _consumer, _cursor
from seaway.server import ServerProcess
from seaway.txn import READS_MAX, Visibility
from seaway.wire import error_to_msg
from seaway.wire import seaway_pb2 as pb
from tests.api.conftest import Api, Refused

WAIT_S = 20.0
"""A bound for a stalled test (each wait ends as soon as its condition holds)."""


def _in_progress(api: Api) -> set[int]:
    return {info.id for info in api.sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}


def test_a_begin_reads_its_keys_with_their_versions_after_its_snapshot(api: Api) -> None:
    ns = api.name("reads")
    api.sw.meta.put(ns, b"a", b"1")
    api.sw.meta.put(ns, b"a", b"2")
    found = api.sw.meta.get(ns, b"a")
    tx = api.sw.txn.begin(reads=[(ns, b"a"), (ns, b"absent")])
    assert tx.reads == {(ns, b"a"): found, (ns, b"absent"): None}
    assert tx.reads[(ns, b"a")].version == found.version  # type: ignore[union-attr]
    with api.sw.txn.begin() as writer:  # committed after the begin: not in its reads
        writer.stage_put(ns, b"a", b"3")
    assert tx.reads[(ns, b"a")].value == b"2"  # type: ignore[union-attr]
    tx.abort()
    plain = api.sw.txn.begin(logs=[], timeout_s=5.0)
    assert plain.reads == {}
    plain.abort()


def test_a_begin_reads_at_most_reads_max_keys_and_refuses_bad_reads_before_beginning(api: Api) -> None:
    ns = api.name("reads")
    big = b"v" * (1 << 20)  # the largest value, READS_MAX of them in one answer
    for i in range(READS_MAX):
        api.sw.meta.put(ns, b"k%d" % i, big)
    tx = api.sw.txn.begin(reads=[(ns, b"k%d" % i) for i in range(READS_MAX)])
    assert [tx.reads[(ns, b"k%d" % i)].value for i in range(READS_MAX)] == [big] * READS_MAX  # type: ignore[union-attr]
    tx.abort()
    before = _in_progress(api)
    for bad in ([(ns, b"k%d" % i) for i in range(READS_MAX + 1)], [(ns, "text")], [("bad ns", b"k")],
                [(ns,)], "ns", [b"k"]):
        with pytest.raises(InvalidArgumentError):
            api.sw.txn.begin(reads=bad)  # type: ignore[arg-type]
    assert _in_progress(api) == before


def test_commit_and_begin_begins_after_the_commit_and_sees_its_writes(api: Api) -> None:
    ns = api.name("chain")
    tx = api.sw.txn.begin(reads=[(ns, b"k")])
    assert tx.reads[(ns, b"k")] is None
    tx.stage_put(ns, b"k", b"1")
    ended: list[bool] = []
    tx.after_end(ended.append)
    nxt = tx.commit_and_begin(reads=[(ns, b"k")])
    assert tx.status is TxnStatus.COMMITTED and ended == [True]
    assert nxt.id > tx.id and nxt.status is TxnStatus.IN_PROGRESS
    assert api.sw.txn.status(nxt.id) is TxnStatus.IN_PROGRESS
    assert nxt.snapshot.visibility(tx.id) is Visibility.VISIBLE  # its snapshot is after the commit
    assert nxt.reads[(ns, b"k")].value == b"1"  # type: ignore[union-attr]
    nxt.stage_put(ns, b"k", b"2")
    last = nxt.commit_and_begin(timeout_s=5.0)
    assert last.reads == {} and api.sw.meta.get(ns, b"k").value == b"2"  # type: ignore[union-attr]
    last.abort()
    assert api.sw.txn.status(last.id) is TxnStatus.ABORTED


def test_a_commit_and_begin_whose_commit_fails_begins_nothing(api: Api) -> None:
    ns = api.name("chain")
    first, second = api.sw.txn.begin(), api.sw.txn.begin()
    for tx in (first, second):
        tx.stage_put(ns, b"k", b"%d" % tx.id)
        tx.add_conflicts(ns.encode() + b"/k")
    first.commit()
    before = _in_progress(api)
    with pytest.raises(TransactionConflictError) as caught:
        second.commit_and_begin(reads=[(ns, b"k")])
    assert caught.value.retriable and second.status is TxnStatus.ABORTED
    assert _in_progress(api) == before - {second.id}  # nothing begun
    with api.sw.txn.begin() as again:  # the caller tries again, in a new transaction
        again.stage_put(ns, b"k", b"again")
    assert api.sw.meta.get(ns, b"k").value == b"again"  # type: ignore[union-attr]


def test_a_commit_and_begin_refuses_bad_arguments_before_committing(api: Api) -> None:
    ns = api.name("chain")
    tx = api.sw.txn.begin()
    tx.stage_put(ns, b"k", b"1")
    for kwargs in ({"reads": [("bad ns", b"k")]}, {"reads": [(ns, b"k")] * (READS_MAX + 1)},
                   {"timeout_s": -1.0}, {"logs": [0]}):
        with pytest.raises(InvalidArgumentError):
            tx.commit_and_begin(**kwargs)  # type: ignore[arg-type]
        assert tx.status is TxnStatus.IN_PROGRESS
    tx.commit_and_begin().abort()
    assert api.sw.meta.get(ns, b"k").value == b"1"  # type: ignore[union-attr]
    refused = api.sw.txn.begin()
    refused.stage_put(ns, b"k", b"2")
    before = _in_progress(api)
    with pytest.raises(InvalidArgumentError):  # over the manager's longest: the commit refused, as any refused
        refused.commit_and_begin(timeout_s=10**9)  # commit's, and the transaction aborted: nothing committed
    assert refused.status is TxnStatus.ABORTED and api.sw.txn.status(refused.id) is TxnStatus.ABORTED
    assert api.sw.meta.get(ns, b"k").value == b"1" and _in_progress(api) == before - {refused.id}  # type: ignore[union-attr]


def test_a_begin_through_a_server_may_not_read_the_stores_own_namespaces(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        before = {info.id for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}
        with pytest.raises(PermissionDeniedError):
            sw.txn.begin(reads=[("notify", b"configs")])
        tx = sw.txn.begin()
        with pytest.raises(PermissionDeniedError):
            tx.commit_and_begin(reads=[("txn", b"state")])
        # Refused before its commit, and the transaction aborted as any refused commit's is.
        assert tx.status is TxnStatus.ABORTED and sw.txn.status(tx.id) is TxnStatus.ABORTED
        assert {info.id for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS} <= before


def test_begins_of_many_threads_with_reads_are_joined_each_with_its_own_reads(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        ns = f"joined-{time.time_ns()}"
        for i in range(16):
            sw.meta.put(ns, b"k%d" % i, b"v%d" % i)
        calls: list[tuple[str, str]] = []
        _Stub(sw, calls)
        gate = threading.Barrier(16)
        got: dict[int, list[Any]] = {}

        def begin(i: int) -> None:
            gate.wait()
            for _ in range(5):
                tx = sw.txn.begin(reads=[(ns, b"k%d" % i), (ns, b"none")])
                got.setdefault(i, []).append(tx.reads)
                tx.abort()

        threads = [threading.Thread(target=begin, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert ("TxnBeginMany" in [m for m, _ in calls]), calls
        for i in range(16):
            assert len(got[i]) == 5
            assert all(r[(ns, b"k%d" % i)].value == b"v%d" % i and r[(ns, b"none")] is None for r in got[i])


# --- a queue consumer: its calls counted, faults of its one call injected ------------------------


class _Stub:
    """The connection's stub: each call's method and thread recorded; ``fault(method, call)`` may
    replace a call."""

    def __init__(self, sw: Any, calls: list[tuple[str, str]],
                 fault: Callable[[str, Callable[[], Any]], Any] | None = None) -> None:
        self._stub = sw._stub
        self._calls = calls
        self._fault = fault
        sw._stub = self

    def __getattr__(self, method: str) -> Any:
        real = getattr(self._stub, method)

        def call(request: Any, **kwargs: Any) -> Any:
            self._calls.append((method, threading.current_thread().name))
            if self._fault is not None:
                return self._fault(method, lambda: real(request, **kwargs))
            return real(request, **kwargs)
        return call


def _queue(api: Api, entries: int, size: int = 1, strategy: str = "ROUND_ROBIN") -> str:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "g", size, strategy)
    producer = api.sw.queues.producer(queue)
    for n in range(0, entries, 10):
        with api.sw.transaction() as tx:
            producer.enqueue_batch(tx, [b"%d" % i for i in range(n, min(n + 10, entries))])
    return queue


def _take(consumer: Consumer, tx: seaway.Transaction, count: int) -> list[bytes]:
    """Dequeue ``count`` entries in ``tx`` (a remote consumer's first reads may come back empty)."""
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        got.extend(e.payload for e in consumer.dequeue(tx, count - len(got), 0.2))
    return got


def test_a_consumer_transaction_costs_one_call_plus_its_dequeue_in_steady_state(
        server: ServerProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    # What runs on a timer rather than per transaction is put aside: the group record read again
    # every second, and the trim of the partition every 0.5 s.
    monkeypatch.setattr(_consumer, "CONSUMER_RECORD_REFRESH_S", 3600.0)
    monkeypatch.setattr(_cursor, "TRIM_INTERVAL_S", 3600.0)
    with seaway.connect(server.url, timeout_s=30) as sw:
        api = Api(sw, "remote")
        queue = _queue(api, 200)
        consumer = sw.queues.consumer(queue, "g", 0)
        tx = sw.txn.begin(reads=consumer.reads())
        got = _take(consumer, tx, 10)  # the first: cursors made, the group read
        tx = tx.commit_and_begin(reads=consumer.reads())
        calls: list[tuple[str, str]] = []
        _Stub(sw, calls)
        me = threading.current_thread().name
        for _ in range(15):
            got.extend(_take(consumer, tx, 10))
            # The dequeue's own calls are reads of the logs (the read stream, log states):
            # no transaction or metadata call.
            assert not [m for m, t in calls if t == me and m.startswith(("Txn", "Meta"))], calls
            calls.clear()
            tx = tx.commit_and_begin(reads=consumer.reads())
            assert [m for m, t in calls if t == me] == ["TxnCommitBegin"], calls
            calls.clear()
        tx.abort()
        consumer.close()
        assert got == [b"%d" % i for i in range(160)]  # in order, each once


def test_a_consumer_chain_whose_call_never_reached_the_server_is_sent_again_once(server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(Api(sw, "remote"), 30)
        consumer = sw.queues.consumer(queue, "g", 0)
        calls: list[tuple[str, str]] = []

        def refuse_first(method: str, call: Callable[[], Any]) -> Any:
            if method == "TxnCommitBegin" and [m for m, _ in calls].count(method) == 1:
                raise Refused()  # never reached the server
            return call()

        tx = sw.txn.begin(reads=consumer.reads())
        got = _take(consumer, tx, 10)
        _Stub(sw, calls, refuse_first)
        tx = tx.commit_and_begin(reads=consumer.reads())
        methods = [m for m, _ in calls if m.startswith("Txn")]
        assert methods == ["TxnCommitBegin", "TxnStatus", "TxnCommitBegin"], methods
        got.extend(_take(consumer, tx, 20))
        tx.commit_and_begin(reads=consumer.reads()).abort()
        consumer.close()
        assert got == [b"%d" % i for i in range(30)]
        assert sw.queues.describe_group(queue, "g").lag == 0


def test_a_consumer_chain_whose_answer_was_lost_after_it_committed_is_committed_once(
        server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(Api(sw, "remote"), 30)
        consumer = sw.queues.consumer(queue, "g", 0)
        calls: list[tuple[str, str]] = []
        begun_before = {info.id for info in sw.txn.list()}

        def lose_answer(method: str, call: Callable[[], Any]) -> Any:
            reply = call()
            if method == "TxnCommitBegin" and [m for m, _ in calls].count(method) == 1:
                raise Refused()  # applied (committed, and the next begun), the answer lost on its way back
            return reply

        tx = sw.txn.begin(reads=consumer.reads())
        first = _take(consumer, tx, 10)
        _Stub(sw, calls, lose_answer)
        nxt = tx.commit_and_begin(timeout_s=1.0, reads=consumer.reads())
        methods = [m for m, _ in calls if m.startswith("Txn")]
        assert methods == ["TxnCommitBegin", "TxnStatus", "TxnBegin"], methods  # asked, never sent twice
        assert tx.status is TxnStatus.COMMITTED and sw.txn.status(tx.id) is TxnStatus.COMMITTED
        # The begin the lost answer carried is no one's: it wrote nothing and times out by itself.
        orphans = [info.id for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS
                   and info.id not in begun_before and info.id not in (tx.id, nxt.id)]
        assert len(orphans) == 1 and tx.id < orphans[0] < nxt.id, orphans
        assert sw.txn.wait_ended(orphans, WAIT_S) == orphans
        assert sw.txn.status(orphans[0]) in (TxnStatus.TIMED_OUT, TxnStatus.UNKNOWN)
        nxt.abort()  # (timed out too by now, with the same timeout)
        with sw.txn.begin(reads=consumer.reads()) as last:
            rest = _take(consumer, last, 20)
        consumer.close()
        assert first + rest == [b"%d" % i for i in range(30)]  # the first ten once, not again


def test_a_reset_racing_a_consumer_chain_never_has_an_entry_processed_twice(api: Api) -> None:
    queue = _queue(api, 5)
    consumer = api.sw.queues.consumer(queue, "g", 0)
    processed: list[bytes] = []
    tx = api.sw.txn.begin(reads=consumer.reads())
    processed.extend(_take(consumer, tx, 2))
    racing = tx.commit_and_begin(reads=consumer.reads())  # begun (its reads made) before the reset...
    api.sw.queues.reset_group(queue, "g", "head")  # ...which commits before its first dequeue
    assert _take(consumer, racing, 3) == [b"2", b"3", b"4"]  # its cursors, as its begin read the count
    with pytest.raises(TransactionConflictError):
        racing.commit_and_begin(reads=consumer.reads())  # its work is not committed: nothing processed
    assert racing.status is TxnStatus.ABORTED
    tx = api.sw.txn.begin(reads=consumer.reads())  # begun after the reset: reads from the head
    processed.extend(_take(consumer, tx, 5))
    tx = tx.commit_and_begin(reads=consumer.reads())  # begun before the entries and the reset below
    with api.sw.transaction() as producing:
        api.sw.queues.producer(queue).enqueue_batch(producing, [b"5", b"6", b"7"])
    api.sw.queues.reset_group(queue, "g", "tail")
    assert _take(consumer, tx, 3) == [b"5", b"6", b"7"]  # read committed, from the cursor its begin's count kept
    with pytest.raises(TransactionConflictError):
        tx.commit_and_begin(reads=consumer.reads())
    with api.sw.txn.begin(reads=consumer.reads()) as tx:
        assert consumer.dequeue(tx, 10, 0.2) == []  # the reset to the tail is seen
    assert processed == [b"0", b"1", b"0", b"1", b"2", b"3", b"4"]  # each once since each reset
    consumer.close()


def test_fifo_consumers_chained_across_resets_never_deliver_twice(api: Api) -> None:
    """Two FIFO consumers, each chaining its transactions (the reset count read by each begin),
    while resets to the tail commit among them: no entry twice, every entry after the last reset."""
    queue = _queue(api, 0, 2, "FIFO")
    delivered: list[bytes] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def consume(consumer: Consumer) -> None:
        try:
            tx = api.sw.txn.begin(reads=consumer.reads())
            while not stop.is_set():
                got = consumer.dequeue(tx, 3, 0.02)
                try:
                    tx = tx.commit_and_begin(reads=consumer.reads())
                except TransactionConflictError:  # a reset committed first: nothing of it processed
                    tx = api.sw.txn.begin(reads=consumer.reads())
                    continue
                with lock:
                    delivered.extend(e.payload for e in got)
            tx.abort()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    consumers = [api.sw.queues.consumer(queue, "g", c) for c in (0, 1)]
    threads = [threading.Thread(target=consume, args=(c,)) for c in consumers]
    for thread in threads:
        thread.start()
    producer = api.sw.queues.producer(queue)
    sent = 0
    for round_ in range(6):
        for _ in range(4):
            with api.sw.transaction() as tx:
                producer.enqueue_batch(tx, [b"%d" % (sent + i) for i in range(2)])
            sent += 2
        if round_ < 5:
            api.sw.queues.reset_group(queue, "g", "tail")
    last = sent - 8
    deadline = time.monotonic() + WAIT_S * 2
    while time.monotonic() < deadline:
        with lock:
            if {int(p) for p in delivered} >= set(range(last, sent)):
                break
        stop.wait(0.02)
    stop.set()
    for thread in threads:
        thread.join(WAIT_S)
    for consumer in consumers:
        consumer.close()
    assert not errors, errors
    numbers = [int(p) for p in delivered]
    assert len(numbers) == len(set(numbers)), "an entry was delivered twice"
    assert set(range(last, sent)) <= set(numbers)


def test_a_transport_failure_of_a_chain_whose_status_cannot_be_asked_raises_and_begins_nothing(
        server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        ns = f"cut-{time.time_ns()}"
        calls: list[tuple[str, str]] = []

        def cut(method: str, call: Callable[[], Any]) -> Any:
            if method in ("TxnCommitBegin", "TxnStatus"):
                raise Refused()
            return call()

        tx = sw.txn.begin()
        tx.stage_put(ns, b"k", b"1")
        _Stub(sw, calls, cut)
        with pytest.raises(TransportError):
            tx.commit_and_begin()
        assert tx.status is TxnStatus.ABORTED  # as a commit cut off so ends its handle


def test_a_begin_whose_read_fails_aborts_the_transaction_it_began(tmp_path: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with seaway.open(tmp_path / "d") as sw:
        manager = sw.txn_manager
        real = manager._meta

        class Failing:  # the manager's metadata store, whose reads fail
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def get(self, namespace: str, key: bytes) -> Any:
                raise seaway.StorageError("the disk is gone")

        monkeypatch.setattr(manager, "_meta", Failing())
        with pytest.raises(seaway.StorageError):
            sw.txn.begin(reads=[("ns", b"k")])
        monkeypatch.setattr(manager, "_meta", real)
        began = [info for info in sw.txn.list()]
        assert began == [] or all(info.status is not TxnStatus.IN_PROGRESS for info in began), began
        tx = sw.txn.begin()
        tx.stage_put("ns", b"k", b"1")
        monkeypatch.setattr(manager, "_meta", Failing())
        with pytest.raises(seaway.StorageError):
            tx.commit_and_begin(reads=[("ns", b"k")])
        assert tx.status is TxnStatus.COMMITTED  # the commit stands; its next begin failed, and was aborted
        monkeypatch.setattr(manager, "_meta", real)
        assert sw.meta.get("ns", b"k").value == b"1"  # type: ignore[union-attr]
        assert not [info for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS]


def test_a_begins_reads_are_made_after_its_snapshot_and_after_the_commit_it_follows(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes a read at begin as good as one the transaction makes itself: when the store is
    read, the transaction is begun (its snapshot taken), and the commit before it is visible."""
    with seaway.open(tmp_path / "d") as sw:
        manager = sw.txn_manager
        real = manager._meta
        seen: list[tuple[set[int], TxnStatus | None]] = []
        committing: list[int] = []

        class Watching:  # the manager's metadata store, each read noting what the manager holds then
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def get(self, namespace: str, key: bytes) -> Any:
                seen.append((set(manager.state.in_progress), manager.status(committing[0]) if committing else None))
                return real.get(namespace, key)

        monkeypatch.setattr(manager, "_meta", Watching())
        tx = sw.txn.begin(reads=[("ns", b"k")])
        assert seen == [({tx.id}, None)]
        committing.append(tx.id)
        nxt = tx.commit_and_begin(reads=[("ns", b"k")])
        assert seen[1] == ({nxt.id}, TxnStatus.COMMITTED)
        nxt.abort()


def test_a_next_begin_refused_after_the_commit_raises_its_error_and_the_commit_stands(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with seaway.open(tmp_path / "d") as sw:
        manager = sw.txn_manager
        real_begin = manager.begin
        refused: list[int] = []

        def begin_once_refused(timeout_s: float | None = None, logs: Any = ()) -> Any:
            if not refused:
                refused.append(1)
                raise seaway.OverloadedError("100000 transactions are in progress; commit or abort some first")
            return real_begin(timeout_s, logs)

        tx = sw.txn.begin()
        tx.stage_put("ns", b"k", b"1")
        monkeypatch.setattr(manager, "begin", begin_once_refused)
        with pytest.raises(seaway.OverloadedError) as caught:
            tx.commit_and_begin(reads=[("ns", b"k")])
        assert caught.value.retriable and refused
        assert tx.status is TxnStatus.COMMITTED and sw.txn.status(tx.id) is TxnStatus.COMMITTED
        assert not [info for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS]  # nothing begun
        nxt = sw.txn.begin(reads=[("ns", b"k")])  # a later begin succeeds, and sees the commit
        assert nxt.reads[("ns", b"k")].value == b"1"  # type: ignore[union-attr]
        nxt.abort()


def test_a_servers_refusal_of_the_next_begin_reaches_the_client_as_its_error(server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        ns = f"refused-{time.time_ns()}"
        calls: list[tuple[str, str]] = []

        def refuse_the_begin(method: str, call: Callable[[], Any]) -> Any:
            reply = call()
            if method == "TxnCommitBegin":  # answered as a server whose begin was refused answers
                refusal = seaway.OverloadedError("100000 transactions are in progress; commit or abort some first")
                return pb.TxnCommitBeginReply(begin_error=error_to_msg(refusal))
            return reply

        tx = sw.txn.begin()
        tx.stage_put(ns, b"k", b"1")
        _Stub(sw, calls, refuse_the_begin)
        with pytest.raises(seaway.OverloadedError) as caught:
            tx.commit_and_begin(timeout_s=1.0)
        assert caught.value.retriable and [m for m, _ in calls] == ["TxnCommitBegin"]
        assert tx.status is TxnStatus.COMMITTED and sw.txn.status(tx.id) is TxnStatus.COMMITTED
        assert sw.meta.get(ns, b"k").value == b"1"  # type: ignore[union-attr]
