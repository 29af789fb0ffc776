"""Queues and consumer groups, embedded and through a server, with the same API.

The semantics in depth are in ``tests/queues``; here each behaviour a remote user relies on runs
against both: placement and order, abort and redelivery, a late commit, resize with per-key order,
exactly-once processing, and the typed errors crossing the wire with their codes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import seaway
from seaway import InvalidArgumentError
from seaway._errors import (
    ConsumerGroupExistsError,
    ConsumerOutsideGroupError,
    MissingHashKeyError,
    QueueExistsError,
    TransactionNotInProgressError,
    UnknownConsumerGroupError,
    UnknownQueueError,
)
from seaway.queues import Consumer, Entry, Position
from seaway.queues._records import ENTRY_BYTES_MAX, READ_BYTES_DEFAULT, hash_key
from tests.api.conftest import Api

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""

WAIT_S = 0.5
"""A remote consumer's first read waits for its stream to deliver: dequeue with a timeout."""
DRAIN_S = 60.0
"""How long a drain waits for the entries it expects (a bound for a stalled test, not a timing)."""


def drain_all(api: Api, consumers: list[Consumer], count: int, entries_max: int = 500) -> list[list[Entry]]:
    """Dequeue (and commit) round the consumers until they delivered ``count`` entries together,
    then one round more, which must find nothing: a remote consumer's empty dequeue may only mean
    that its read stream has not delivered yet, so an empty batch never ends the drain early."""
    got: list[list[Entry]] = [[] for _ in consumers]
    deadline = time.monotonic() + DRAIN_S
    while sum(map(len, got)) < count and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            with api.sw.transaction() as tx:
                got[i].extend(consumer.dequeue(tx, entries_max, WAIT_S))
    for i, consumer in enumerate(consumers):
        with api.sw.transaction() as tx:
            got[i].extend(consumer.dequeue(tx, entries_max, WAIT_S))
    return got


def drain(api: Api, consumer: Consumer, count: int, entries_max: int = 500) -> list[Entry]:
    return drain_all(api, [consumer], count, entries_max)[0]


def drain_in(api: Api, consumer: Consumer, tx: seaway.Transaction, count: int) -> list[Entry]:
    """Dequeue in ``tx`` until ``count`` entries came (or DRAIN_S passed)."""
    got: list[Entry] = []
    deadline = time.monotonic() + DRAIN_S
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.dequeue(tx, 10, WAIT_S))
    return got


def queue_with(api: Api, *groups: tuple[str, int, str, str | None]) -> str:
    queue = api.name("q")
    api.sw.queues.create(queue)
    for group, size, strategy, key in groups:
        api.sw.queues.create_group(queue, group, size, strategy, key=key)
    return queue


def test_each_group_gets_every_entry_once_hash_in_key_order(api: Api) -> None:
    queue = queue_with(api, ("h", 2, "HASH", "user"), ("f", 2, "FIFO", None), ("r", 3, "ROUND_ROBIN", None))
    producer = api.sw.queues.producer(queue)
    sent = [(b"%d" % i, {"user": i % 5}) for i in range(60)]
    for start in range(0, 60, 20):
        with api.sw.transaction() as tx:
            producer.enqueue_batch(tx, [p for p, _ in sent[start:start + 20]], [k for _, k in sent[start:start + 20]])
    for c in range(2):
        mine = [p for p, k in sent if hash_key(k["user"]) % 2 == c]
        got = [e.payload for e in drain(api, api.sw.queues.consumer(queue, "h", c), len(mine))]
        assert got == mine
    for group, size in (("f", 2), ("r", 3)):
        consumers = [api.sw.queues.consumer(queue, group, c) for c in range(size)]
        got = [e.payload for share in drain_all(api, consumers, len(sent), 7) for e in share]
        assert sorted(got) == sorted(p for p, _ in sent)


def test_abort_redelivers_and_a_late_commit_is_not_skipped(api: Api) -> None:
    queue = queue_with(api, ("g", 1, "ROUND_ROBIN", None))
    producer = api.sw.queues.producer(queue)
    consumer = api.sw.queues.consumer(queue, "g", 0)
    late = api.sw.transaction()
    producer.enqueue(late, b"late")
    producer.flush(late)  # sent, not committed
    with api.sw.transaction() as tx:
        producer.enqueue(tx, b"after")
    assert drain(api, consumer, 0) == []  # held back by the open chunk
    late.commit()
    tx = api.sw.transaction()
    taken = drain_in(api, consumer, tx, 2)
    assert [e.payload for e in taken] == [b"late", b"after"]
    tx.abort()
    assert [e.payload for e in drain(api, consumer, 2)] == [b"late", b"after"]
    assert drain(api, consumer, 0) == []


def test_resize_keeps_key_order_and_describe_shows_it(api: Api) -> None:
    queue = queue_with(api, ("h", 2, "HASH", "k"))
    producer = api.sw.queues.producer(queue)
    keys = [f"k{i}" for i in range(9)]
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, [f"old:{k}".encode() for k in keys], [{"k": k} for k in keys])
    info = api.sw.queues.resize_group(queue, "h", 3, wait_s=None)
    assert info.resizing and info.generation == 2 and len(info.partitions) == 5
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, [f"new:{k}".encode() for k in keys], [{"k": k} for k in keys])
    consumers = [api.sw.queues.consumer(queue, "h", c) for c in range(3)]
    shares = drain_all(api, consumers, 2 * len(keys))
    got = {c: [e.payload for e in shares[c]] for c in range(3)}
    for c in range(3):
        assert got[c] == ([f"old:{k}".encode() for k in keys if hash_key(k) % 2 == c]
                          + [f"new:{k}".encode() for k in keys if hash_key(k) % 3 == c])
    assert not api.sw.queues.describe_group(queue, "h").resizing


def test_exactly_once_processor(api: Api) -> None:
    source = queue_with(api, ("w", 1, "FIFO", None))
    sink = queue_with(api, ("s", 1, "FIFO", None))
    with api.sw.transaction() as tx:
        api.sw.queues.producer(source).enqueue_batch(tx, [b"%d" % i for i in range(25)])
    consumer = api.sw.queues.consumer(source, "w", 0)
    output = api.sw.queues.producer(sink)
    aborted = False
    processed = 0
    deadline = time.monotonic() + DRAIN_S
    while processed < 25 and time.monotonic() < deadline:
        with api.sw.transaction() as tx:
            entries = consumer.dequeue(tx, 10, WAIT_S)
            for entry in entries:
                output.enqueue(tx, entry.payload + b"!")
            if entries and not aborted:
                aborted = True
                tx.abort()  # a failure in the middle: nothing written, the entries come back
        if tx.status is seaway.TxnStatus.COMMITTED:
            processed += len(entries)
    got = drain(api, api.sw.queues.consumer(sink, "s", 0), 25)
    assert [e.payload for e in got] == [b"%d!" % i for i in range(25)]


def test_read_committed_by_position_and_acknowledge(api: Api) -> None:
    queue = queue_with(api, ("h", 2, "HASH", "user"))
    producer = api.sw.queues.producer(queue)
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"%d" % i for i in range(20)], [{"user": i % 4} for i in range(20)])
    open_tx = api.sw.transaction()
    producer.enqueue_batch(open_tx, [b"late"] * 4, [{"user": u} for u in range(4)])
    producer.flush(open_tx)
    aborted = api.sw.transaction()
    producer.enqueue_batch(aborted, [b"never"] * 4, [{"user": u} for u in range(4)])
    producer.flush(aborted)
    aborted.abort()
    for c in range(2):
        mine = [b"%d" % i for i in range(20) if hash_key(i % 4) % 2 == c]
        got = api.sw.queues.read_committed(queue, "h", 1, c, Position(1, 0), entries_max=100)
        assert [e.payload for e in got.entries] == mine and got.blocked
        assert api.sw.queues.read_committed(queue, "h", 1, c, Position(1, 0), got.next) == (got.entries, got.next,
                                                                                              False)
        api.sw.queues.acknowledge(queue, "h", 1, {c: got.next})
        assert api.sw.queues.describe_group(queue, "h").partitions[c].position == got.next
    open_tx.commit()
    consumers = [api.sw.queues.consumer(queue, "h", c) for c in range(2)]
    rest = sorted(e.payload for share in drain_all(api, consumers, 4) for e in share)
    assert rest == [b"late"] * 4  # from the acknowledged positions on; the aborted entries never


def test_bad_input_crosses_the_wire_typed(api: Api) -> None:
    with pytest.raises(UnknownQueueError):
        api.sw.queues.create_group(api.name("none"), "g", 1)
    queue = queue_with(api, ("h", 2, "HASH", "user"))
    with pytest.raises(QueueExistsError):
        api.sw.queues.create(queue)
    with pytest.raises(ConsumerGroupExistsError):
        api.sw.queues.create_group(queue, "h", 1)
    with pytest.raises(InvalidArgumentError):
        api.sw.queues.resize_group(queue, "h", 0)
    with pytest.raises(UnknownConsumerGroupError):
        api.sw.queues.consumer(queue, "x", 0)
    tx = api.sw.transaction()
    api.sw.queues.producer(queue).enqueue(tx, b"no key", {"page": 1})
    with pytest.raises(MissingHashKeyError):
        tx.commit()
    with pytest.raises(TransactionNotInProgressError):
        tx.commit()
    with pytest.raises(ConsumerOutsideGroupError), api.sw.transaction() as tx:
        api.sw.queues.consumer(queue, "h", 2).dequeue(tx)
    assert api.sw.txn.status(tx.id) is seaway.TxnStatus.ABORTED


@pytest.mark.parametrize("strategy", ["ROUND_ROBIN", "FIFO"])
def test_reads_are_bounded_by_bytes(api: Api, strategy: str) -> None:
    """Finding 21: dequeue and read_committed returned up to 10,000 entries of up to 1 MiB each.
    They stop before an entry that would take them past ``bytes_max`` (8 MiB by default), and
    always return at least one entry; the rest comes with the next call."""
    queue = queue_with(api, ("g", 1, strategy, None))
    entry = b"x" * ENTRY_BYTES_MAX
    with api.sw.transaction() as tx:
        api.sw.queues.producer(queue).enqueue_batch(tx, [entry] * 10 + [b"small"] * 4)
    if strategy == "ROUND_ROBIN":
        got = api.sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=100)
        assert len(got.entries) == READ_BYTES_DEFAULT // ENTRY_BYTES_MAX
        small = api.sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=100, bytes_max=100)
        assert len(small.entries) == 1  # one entry at least, even above bytes_max
        rest = api.sw.queues.read_committed(queue, "g", 1, 0, got.next, entries_max=100,
                                            bytes_max=2 * ENTRY_BYTES_MAX + 10)
        assert [len(e.payload) for e in rest.entries] == [ENTRY_BYTES_MAX, ENTRY_BYTES_MAX, 5, 5]
        with pytest.raises(InvalidArgumentError):
            api.sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), bytes_max=0)
    # A remote consumer returns what its read stream delivered so far: each dequeue is checked
    # against its bound, and all of them together against what was enqueued.
    consumer = api.sw.queues.consumer(queue, "g", 0)
    got_sizes: list[int] = []
    for bytes_max in [None, 2 * ENTRY_BYTES_MAX + 7, 1, ENTRY_BYTES_MAX] + [ENTRY_BYTES_MAX] * 20:
        with api.sw.transaction() as tx:
            taken = [len(e.payload) for e in (consumer.dequeue(tx, 100, WAIT_S) if bytes_max is None
                                             else consumer.dequeue(tx, 100, WAIT_S, bytes_max=bytes_max))]
        assert len(taken) <= 1 or sum(taken) <= (bytes_max or READ_BYTES_DEFAULT), (bytes_max, taken)
        got_sizes += taken
        if len(got_sizes) == 14:
            break
    assert got_sizes == [ENTRY_BYTES_MAX] * 10 + [5] * 4
    with pytest.raises(InvalidArgumentError), api.sw.transaction() as tx:
        consumer.dequeue(tx, 10, bytes_max=0)


def test_each_payload_is_stored_once_with_three_groups(api: Api) -> None:
    """The payloads go once into the queue's data log; each group's partitions get pointers of a
    few bytes per entry (the earlier format stored every payload once per group)."""
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "hash", 2, "HASH", key="k")
    api.sw.queues.create_group(queue, "fifo", 1, "FIFO")
    api.sw.queues.create_group(queue, "rr", 2, "ROUND_ROBIN")
    sent = [b"%04d" % i + b"x" * 1020 for i in range(200)]
    producer = api.sw.queues.producer(queue)
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, sent, [{"k": i % 5} for i in range(len(sent))])
    data_log = api.sw.queues.data_log(queue)
    logs = [data_log, *(p.log_id for g in ("hash", "fifo", "rr")
                        for p in api.sw.queues.describe_group(queue, g).partitions)]
    written = sum(len(item.payload) for log_id in logs for item in api.sw.logs.get(log_id).read()
                  if isinstance(item, seaway.log.Record))
    assert 200 * 1024 <= written < 1.1 * 200 * 1024, written
    for group, size in (("hash", 2), ("fifo", 1), ("rr", 2)):
        members = [api.sw.queues.consumer(queue, group, c) for c in range(size)]
        got = drain_all(api, members, len(sent))
        assert sorted(e.payload for share in got for e in share) == sent, group
        for c in members:
            c.close()


class _CountingTxn:
    """The store's transaction manager (embedded, or the server's through the client), counting the
    calls made to it; ``waiting`` is set once a ``wait_ended`` call begins."""

    def __init__(self, api: Any) -> None:
        self._api = api
        self.calls: list[str] = []
        self.waiting = threading.Event()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._api, name)
        if not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if name == "wait_ended":
                self.waiting.set()
            return real(*args, **kwargs)
        return call


def test_a_consumer_blocked_on_an_open_transaction_is_woken_by_its_commit_not_polling(api: Api) -> None:
    """A dequeue stopped at the chunk of a producer transaction still in progress waits for that
    transaction's end (one long wait, through a server one call a few seconds at most), takes one
    fresh snapshot when it ends, and delivers: no snapshot every few milliseconds while it waits."""
    queue = queue_with(api, ("g", 1, "ROUND_ROBIN", None))
    sw = api.sw
    producing = sw.transaction()
    producer = sw.queues.producer(queue)
    producer.enqueue_batch(producing, [b"a", b"b"])
    producer.flush(producing)  # its chunks are in the log; the transaction goes on
    counting = _CountingTxn(sw.txn._api)
    sw.txn._api = counting
    got: list[Entry] = []

    def consume() -> None:
        with sw.queues.consumer(queue, "g", 0) as consumer:
            tx = sw.transaction()
            got.extend(consumer.dequeue(tx, 10, timeout_s=DRAIN_S))
            tx.commit()

    thread = threading.Thread(target=consume)
    thread.start()
    try:
        assert counting.waiting.wait(DRAIN_S), f"the consumer did not wait for the transaction's end: {counting.calls}"
        snapshots = counting.calls.count("snapshot")
    finally:
        producing.commit()
        thread.join(DRAIN_S)
        sw.txn._api = counting._api
    assert not thread.is_alive()
    assert [e.payload for e in got] == [b"a", b"b"]
    assert snapshots == 0  # none while it waited
    assert counting.calls.count("snapshot") <= 1 and counting.calls.count("wait_ended") <= 2, counting.calls


def test_a_resize_waiting_at_its_barrier_is_woken_by_the_consumers_commit_not_polling(api: Api) -> None:
    """``resize_group`` waiting for the old layout to drain waits for the end of the transactions in
    progress (the consumer holding the last entries), woken by the commit that drains it: it does
    not check the barrier (several calls through a server) every few milliseconds meanwhile."""
    queue = queue_with(api, ("g", 1, "ROUND_ROBIN", None))
    sw = api.sw
    with sw.transaction() as tx:
        sw.queues.producer(queue).enqueue_batch(tx, [b"a", b"b"])
    consumer = sw.queues.consumer(queue, "g", 0)
    consuming = sw.transaction()
    assert [e.payload for e in drain_in(api, consumer, consuming, 2)] == [b"a", b"b"]
    counting = _CountingTxn(sw.txn._api)
    sw.txn._api = counting
    resized: list[Any] = []
    thread = threading.Thread(target=lambda: resized.append(sw.queues.resize_group(queue, "g", 2, wait_s=DRAIN_S)))
    thread.start()
    try:
        assert counting.waiting.wait(DRAIN_S), f"the resize did not wait for a transaction's end: {counting.calls}"
        checks = counting.calls.count("list")
    finally:
        consuming.commit()  # drains the old layout
        thread.join(DRAIN_S)
        sw.txn._api = counting._api
        consumer.close()
    assert not thread.is_alive() and resized and not resized[0].resizing
    assert checks == 1  # one look at the transactions in progress, then the wait
    assert counting.calls.count("list") <= 3 and counting.calls.count("wait_ended") <= 2, counting.calls


def test_a_fifo_dequeue_waits_for_an_entry_up_to_its_timeout(api: Api) -> None:
    """A FIFO consumer with nothing to claim waits up to ``timeout_s`` for the next entry, as a
    partitioned one does: an entry enqueued while it waits is delivered by that same dequeue."""
    queue = queue_with(api, ("g", 2, "FIFO", None))
    sw = api.sw
    with sw.queues.consumer(queue, "g", 0) as consumer:
        with sw.transaction() as tx:
            assert consumer.dequeue(tx, 10) == []  # nothing yet, and no wait asked
        got: list[Entry] = []
        started = threading.Event()

        def consume() -> None:
            with sw.transaction() as tx:
                started.set()
                got.extend(consumer.dequeue(tx, 10, timeout_s=DRAIN_S))

        thread = threading.Thread(target=consume)
        thread.start()
        assert started.wait(DRAIN_S)
        time.sleep(0.3)  # the dequeue is waiting by now (if it returned at once, nothing is got)
        with sw.transaction() as tx:
            sw.queues.producer(queue).enqueue(tx, b"late")
        thread.join(DRAIN_S)
        assert not thread.is_alive()
        assert [e.payload for e in got] == [b"late"]
