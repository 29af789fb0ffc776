"""A commit that appends first, in one step (``Transaction.append_at_commit``, the manager's
``commit_appending``, the linked appends of ``seaway.log``), embedded and through a server; and what
it buys a queue producer: in steady state a producer transaction costs two calls (its begin, and its
commit with every append), and a fault of that call never makes entries visible twice or partly."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from typing import Any

import grpc
import pytest

import seaway
from seaway import InvalidArgumentError, LogSealedError, TransportError, TxnStatus
from seaway.log import LinkedBatch, LsnSlot, Record, append_linked
from seaway.queues import _producer
from seaway.server import ServerProcess
from seaway.txn import LinkedWrite
from seaway.wire import seaway_pb2 as pb
from tests.api.conftest import Api, Refused

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""
SPLIT_EXCEPT = ("test_entries_that_do_not_fit_the_commit_step_are_sent_before_it",)
CLUSTER_EXCEPT = SPLIT_EXCEPT
"""18 s each, and the same appends as the others, only more of them."""

DRAIN_S = 60.0
"""How long a drain waits for the entries it expects (a bound for a stalled test, not a timing)."""


def queue_with(api: Api, *groups: tuple[str, int, str, str | None]) -> str:
    queue = api.name("q")
    api.sw.queues.create(queue)
    for group, size, strategy, key in groups:
        api.sw.queues.create_group(queue, group, size, strategy, key=key)
    return queue


def drain_all(api: Api, consumers: list[Any], count: int, entries_max: int = 500) -> list[list[Any]]:
    """Dequeue (and commit) round the consumers until they delivered ``count`` entries together (or
    DRAIN_S passed), then one round more, which must find nothing new to be right."""
    got: list[list[Any]] = [[] for _ in consumers]
    deadline = time.monotonic() + DRAIN_S
    while sum(map(len, got)) < count and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            with api.sw.transaction() as tx:
                got[i].extend(consumer.dequeue(tx, entries_max, 0.5))
    for i, consumer in enumerate(consumers):
        with api.sw.transaction() as tx:
            got[i].extend(consumer.dequeue(tx, entries_max, 0.5))
    return got


def _records(sw: Any, log: Any) -> list[bytes]:
    return [item.payload for item in sw.logs.read({log: seaway.OLDEST}, log.tail_lsn()) if isinstance(item, Record)]


def test_a_linked_append_writes_the_lsns_of_earlier_batches_into_later_records(api: Api) -> None:
    data = api.sw.logs.create(api.name("data"))
    data.append(b"first")  # the data log's LSNs do not start at the beginning
    pointers = api.sw.logs.create(api.name("pointers"))
    outcomes = append_linked(api.sw.logs, [
        LinkedBatch(data.id, [b"a", b"b"]),
        LinkedBatch(pointers.id, [b"x" * 8 + b"y" * 16, b"\0" * 8],
                    [(0, LsnSlot(0, 1, 0)), (0, LsnSlot(0, 0, 8, hex=True)), (1, LsnSlot(0, 0, 0))]),
    ])
    assert all(isinstance(o, range) for o in outcomes), outcomes
    first, second = outcomes[0][0], outcomes[0][1]  # type: ignore[index]
    assert _records(api.sw, data)[1:] == [b"a", b"b"]
    assert _records(api.sw, pointers) == [second.to_bytes(8, "big") + b"%016x" % first, first.to_bytes(8, "big")]


def test_a_linked_append_refuses_a_slot_that_names_no_earlier_record_and_appends_nothing(api: Api) -> None:
    log = api.sw.logs.create(api.name("log"))
    for bad in ([LinkedBatch(log.id, [b"\0" * 8], [(0, LsnSlot(0, 0, 0))])],  # itself, not an earlier batch
                [LinkedBatch(log.id, [b"a"]), LinkedBatch(log.id, [b"\0" * 8], [(0, LsnSlot(0, 1, 0))])],
                [LinkedBatch(log.id, [b"a"]), LinkedBatch(log.id, [b"\0" * 7], [(0, LsnSlot(0, 0, 0))])],
                [LinkedBatch(log.id, [])], []):
        with pytest.raises(InvalidArgumentError):
            append_linked(api.sw.logs, bad)
    assert log.is_empty()


def test_append_at_commit_appends_and_commits_in_one_step_with_writes_completed_by_the_lsns(api: Api) -> None:
    data = api.sw.logs.create(api.name("data"))
    pointers = api.sw.logs.create(api.name("pointers"))
    ns = api.name("ns")
    tx = api.sw.transaction()
    tx.stage_put(ns, b"plain", b"1")
    failures: list[Any] = []
    tx.append_at_commit([LinkedBatch(data.id, [b"payload"]),
                         LinkedBatch(pointers.id, [b"\0" * 8], [(0, LsnSlot(0, 0, 0))])],
                        [LinkedWrite(ns, b"k/" + b"0" * 16, b"\0" * 8, [LsnSlot(1, 0, 2, hex=True)],
                                     [LsnSlot(0, 0, 0)])], failures.append)
    tx.commit()
    assert failures == [] and api.sw.txn.status(tx.id) is TxnStatus.COMMITTED
    data_lsn, pointer_lsn = data.tail_lsn(), pointers.tail_lsn()
    assert _records(api.sw, pointers) == [data_lsn.to_bytes(8, "big")]
    assert [k for k, _ in api.sw.meta.scan(ns)] == [b"k/%016x" % pointer_lsn, b"plain"]
    assert api.sw.meta.get(ns, b"k/%016x" % pointer_lsn).value == data_lsn.to_bytes(8, "big")  # type: ignore[union-attr]


def test_a_step_whose_append_fails_does_not_commit_until_the_writer_wrote_again(api: Api) -> None:
    """A batch to a sealed log fails: the step commits nothing, the writer hears each batch's
    outcome (the data landed, the pointer did not) and writes the pointer elsewhere; then the
    transaction commits, without the linked writes."""
    data = api.sw.logs.create(api.name("data"))
    sealed = api.sw.logs.create(api.name("sealed"))
    sealed.seal()
    elsewhere = api.sw.logs.create(api.name("elsewhere"))
    ns = api.name("ns")
    tx = api.sw.transaction()
    heard: list[list[Any]] = []

    def failed(outcomes: list[Any]) -> None:
        heard.append(outcomes)
        tx.register_logs([elsewhere.id])
        elsewhere.append(outcomes[0][0].to_bytes(8, "big"))
        tx.stage_put(ns, b"again", b"1")

    tx.append_at_commit([LinkedBatch(data.id, [b"payload"]),
                         LinkedBatch(sealed.id, [b"\0" * 8], [(0, LsnSlot(0, 0, 0))])],
                        [LinkedWrite(ns, b"linked", b"\0" * 8, [], [LsnSlot(1, 0, 0)])], failed)
    tx.commit()
    assert len(heard) == 1 and isinstance(heard[0][0], range) and isinstance(heard[0][1], LogSealedError), heard
    assert api.sw.txn.status(tx.id) is TxnStatus.COMMITTED
    assert _records(api.sw, elsewhere) == [data.tail_lsn().to_bytes(8, "big")]
    assert [k for k, _ in api.sw.meta.scan(ns)] == [b"again"]


def test_a_writer_that_fails_after_a_failed_step_aborts_the_transaction(api: Api) -> None:
    data = api.sw.logs.create(api.name("data"))
    sealed = api.sw.logs.create(api.name("sealed"))
    sealed.seal()
    tx = api.sw.transaction()

    def failed(outcomes: list[Any]) -> None:
        raise outcomes[1]

    tx.append_at_commit([LinkedBatch(data.id, [b"p"]), LinkedBatch(sealed.id, [b"\0" * 8], [(0, LsnSlot(0, 0, 0))])],
                        [], failed)
    with pytest.raises(LogSealedError):
        tx.commit()
    assert api.sw.txn.status(tx.id) is TxnStatus.ABORTED


# --- a queue producer through a server: calls counted, faults injected ------------------------------


class _Stub:
    """The connection's stub, each call's method recorded; ``fault(method, call)`` may replace a call."""

    def __init__(self, sw: Any, calls: list[str], fault: Any = None) -> None:
        self._stub = sw._stub
        self._calls = calls
        self._fault = fault
        sw._stub = self

    def __getattr__(self, method: str) -> Any:
        real = getattr(self._stub, method)

        def call(request: Any, **kwargs: Any) -> Any:
            self._calls.append(method)
            if self._fault is not None:
                return self._fault(method, lambda: real(request, **kwargs))
            return real(request, **kwargs)
        return call


def _entries(n: int, start: int = 0) -> tuple[list[bytes], list[dict[str, int]]]:
    return [b"e%d" % i for i in range(start, start + n)], [{"k": i} for i in range(start, start + n)]


def _delivered(sw: Any, queue: str, groups: dict[str, int], count: int) -> dict[str, Counter[bytes]]:
    api = Api(sw, "remote")
    return {group: Counter(e.payload for got in drain_all(api, [sw.queues.consumer(queue, group, c)
                                                               for c in range(size)], count) for e in got)
            for group, size in groups.items()}


def _queue(sw: Any) -> str:
    return queue_with(Api(sw, "remote"), ("h", 3, "HASH", "k"), ("r", 2, "ROUND_ROBIN", None))


def test_a_producer_transaction_costs_two_calls_in_steady_state(server: ServerProcess,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(sw)
        monkeypatch.setattr(_producer, "PRODUCER_GROUPS_REFRESH_S", 3600.0)  # the groups' periodic read aside
        producer = sw.queues.producer(queue)
        with sw.transaction() as tx:  # the first: the groups and the data log are looked up
            producer.enqueue_batch(tx, *_entries(20))
        calls: list[str] = []
        _Stub(sw, calls)
        for n in range(1, 6):
            with sw.transaction(logs=producer.logs() if n % 2 else ()) as tx:  # logs declared at begin, or not
                producer.enqueue_batch(tx, *_entries(20, 20 * n))
            assert calls == ["TxnBegin", "TxnAppendCommit"], calls
            calls.clear()
        got = _delivered(sw, queue, {"h": 3, "r": 2}, 120)
        assert got["h"] == got["r"] == Counter(_entries(120)[0])  # every entry once per group


def test_a_refused_commit_step_fails_the_transaction_and_the_next_one_commits(server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(sw)
        producer = sw.queues.producer(queue)
        refused: list[str] = []

        def refuse_once(method: str, call: Any) -> Any:
            if method == "TxnAppendCommit" and not refused:
                refused.append(method)
                raise Refused()  # never reached the server
            return call()

        _Stub(sw, [], refuse_once)
        tx = sw.transaction()
        producer.enqueue_batch(tx, *_entries(10))
        with pytest.raises(TransportError) as caught:
            tx.commit()
        assert caught.value.retriable and refused
        assert sw.txn.status(tx.id) is TxnStatus.ABORTED
        with sw.transaction() as tx:  # the caller tries again, in a new transaction
            producer.enqueue_batch(tx, *_entries(10))
        got = _delivered(sw, queue, {"h": 3, "r": 2}, 10)
        assert got["h"] == got["r"] == Counter(_entries(10)[0])


def test_a_commit_step_whose_answer_was_lost_after_it_committed_is_committed_once(server: ServerProcess) -> None:
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(sw)
        producer = sw.queues.producer(queue)
        calls: list[str] = []

        def lose_answer(method: str, call: Any) -> Any:
            result = call()
            if method == "TxnAppendCommit" and calls.count(method) == 1:
                raise Refused()  # applied, and the answer lost on its way back
            return result

        _Stub(sw, calls, lose_answer)
        with sw.transaction() as tx:
            producer.enqueue_batch(tx, *_entries(10))
        assert calls.count("TxnAppendCommit") == 1 and "TxnStatus" in calls, calls  # asked, never sent again
        assert sw.txn.status(tx.id) is TxnStatus.COMMITTED
        got = _delivered(sw, queue, {"h": 3, "r": 2}, 10)
        assert got["h"] == got["r"] == Counter(_entries(10)[0])


def test_a_commit_step_cut_off_while_the_server_applies_it_ends_one_way_for_all(server: ServerProcess) -> None:
    """The call is cut off while the server still applies it (its appends landed or landing, its
    commit not yet made): the client, which never sends it again, asks the status, aborts, and the
    abort and the server's commit settle the outcome one way; the caller hears that way."""
    with seaway.connect(server.url, timeout_s=30) as sw:
        queue = _queue(sw)
        producer = sw.queues.producer(queue)
        applied = threading.Event()

        def cut_off(method: str, call: Any) -> Any:
            if method != "TxnAppendCommit" or applied.is_set():
                return call()
            def apply() -> None:
                with contextlib.suppress(grpc.RpcError):  # refused if the client's abort came first
                    call()
                applied.set()

            threading.Thread(target=apply, daemon=True).start()
            raise Refused()

        _Stub(sw, [], cut_off)
        tx = sw.transaction()
        producer.enqueue_batch(tx, *_entries(10))
        try:
            tx.commit()
            committed = True
        except TransportError:
            committed = False
        assert applied.wait(30)
        assert (sw.txn.status(tx.id) is TxnStatus.COMMITTED) == committed
        expected = Counter(_entries(10)[0]) if committed else Counter[bytes]()
        with sw.transaction() as marker:  # a last entry, so that the drain knows when to stop
            producer.enqueue_batch(marker, [b"last"], [{"k": 0}])
        expected[b"last"] += 1
        got = _delivered(sw, queue, {"h": 3, "r": 2}, sum(expected.values()))
        assert got["h"] == got["r"] == expected


def test_a_producer_transaction_begun_with_the_producers_logs_registers_nothing_at_commit(api: Api) -> None:
    queue = queue_with(api, ("h", 3, "HASH", "k"), ("r", 2, "ROUND_ROBIN", None))
    producer = api.sw.queues.producer(queue)
    logs = producer.logs()
    assert len(logs) == 1 + 3 + 2  # the data log, then each partition's
    registered: list[int] = []
    manager = api.sw.txn_manager if api.kind == "embedded" else None
    if manager is not None:
        real = manager.register
        manager.register = lambda wp, ids: (registered.append(wp), real(wp, ids))[1]
    with api.sw.transaction(logs=logs) as declared:
        producer.enqueue_batch(declared, *_entries(20))
    with api.sw.transaction() as undeclared:
        producer.enqueue_batch(undeclared, *_entries(20, 20))
    if manager is not None:
        assert registered == [undeclared.id], registered  # the step registered the undeclared one's logs only
    got = drain_all(api, [api.sw.queues.consumer(queue, "h", c) for c in range(3)], 40)
    assert Counter(e.payload for mine in got for e in mine) == Counter(_entries(40)[0])


def test_entries_that_do_not_fit_the_commit_step_are_sent_before_it(api: Api) -> None:
    """Two queues' producers in one transaction, each with more batches than half a step (34: a
    data batch and 33 groups of one), and a third queue with more than a step alone (65): every
    group gets every entry once, whatever went in the step and what was sent before it."""
    sizes = (33, 33, 64)
    queues = [queue_with(api, *((f"g{g}", 1, "ROUND_ROBIN", None) for g in range(n))) for n in sizes]
    with api.sw.transaction() as tx:
        for queue in queues:
            api.sw.queues.producer(queue).enqueue_batch(tx, [b"%s/%d" % (queue.encode(), i) for i in range(5)])
    for queue, n in zip(queues, sizes, strict=True):
        assert [api.sw.queues.describe_group(queue, f"g{g}").lag for g in range(n)] == [5] * n, queue
        for g in (0, n - 1):
            with api.sw.queues.consumer(queue, f"g{g}", 0) as consumer:
                got = drain_all(api, [consumer], 5)[0]
            assert [e.payload for e in got] == [b"%s/%d" % (queue.encode(), i) for i in range(5)], (queue, g)


def test_a_commit_step_carries_64_batches_and_refuses_65_for_good(api: Api) -> None:
    log = api.sw.logs.create(api.name("log"))
    tx = api.sw.transaction()
    assert api.sw.txn.api.commit_appending(tx.id, [LinkedBatch(log.id, [b"%d" % i]) for i in range(64)]) is None
    assert api.sw.txn.status(tx.id) is TxnStatus.COMMITTED and len(_records(api.sw, log)) == 64
    tx = api.sw.transaction()
    with pytest.raises(InvalidArgumentError) as caught:
        api.sw.txn.api.commit_appending(tx.id, [LinkedBatch(log.id, [b"x"])] * 65)
    assert not caught.value.retriable
    if api.kind == "remote":  # the server's own check, for a client that does not check first
        request = pb.TxnAppendCommitRequest(id=tx.id, batches=[pb.LinkedBatch(log_id=log.id, payloads=[b"x"])] * 65)
        with pytest.raises(InvalidArgumentError):
            api.sw._call("TxnAppendCommit", request, idempotent=False)
    assert len(_records(api.sw, log)) == 64 and api.sw.txn.status(tx.id) is TxnStatus.IN_PROGRESS
