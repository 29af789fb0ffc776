"""Queues with consumer groups, embedded: placement, visibility, acknowledgement, resize, eviction.

Modelled on CDAP's QueueTest: every committed entry reaches exactly one consumer of each group,
HASH groups keep per-key order (across resizes too), aborts give entries back, and a producer that
commits late is not skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import InvalidArgumentError, TxnConfig
from seaway._errors import (
    ConsumerGroupExistsError,
    ConsumerOutsideGroupError,
    LsnOutOfRangeError,
    MissingHashKeyError,
    QueueExistsError,
    UnknownConsumerGroupError,
    UnknownQueueError,
)
from seaway.log import Record
from seaway.queues import Consumer, Entry, Position
from seaway.queues._records import hash_key


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as store:
        yield store


def drain(sw: seaway.Seaway, consumer: Consumer, rounds: int = 5, entries_max: int = 500) -> list[Entry]:
    got: list[Entry] = []
    for _ in range(rounds):
        with sw.transaction() as tx:
            batch = consumer.dequeue(tx, entries_max)
        got.extend(batch)
        if not batch:
            break
    return got


def produce(sw: seaway.Seaway, queue: str, items: list[tuple[bytes, dict[str, object]]]) -> None:
    producer = sw.queues.producer(queue)
    with sw.transaction() as tx:
        for payload, keys in items:
            producer.enqueue(tx, payload, keys)


def test_hash_places_each_entry_by_its_key_and_keeps_order(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "users", 3, "HASH", key="user")
    items = [(b"%d" % i, {"user": f"u{i % 7}"}) for i in range(200)]
    for start in range(0, 200, 50):
        produce(sw, "q", items[start:start + 50])
    seen: dict[int, list[bytes]] = {}
    for c in range(3):
        seen[c] = [e.payload for e in drain(sw, sw.queues.consumer("q", "users", c))]
    for c, payloads in seen.items():
        expected = [p for p, keys in items if hash_key(keys["user"]) % 3 == c]
        assert payloads == expected  # exactly its share, in the order enqueued
    assert sorted(p for ps in seen.values() for p in ps) == sorted(p for p, _ in items)


def test_round_robin_and_fifo_give_each_entry_to_one_consumer(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "rr", 2, "ROUND_ROBIN")
    sw.queues.create_group("q", "fifo", 3, "FIFO")
    for batch in range(6):
        produce(sw, "q", [(b"%d-%d" % (batch, i), {}) for i in range(10)])
    rr = [drain(sw, sw.queues.consumer("q", "rr", c)) for c in range(2)]
    assert sorted(e.payload for share in rr for e in share) == sorted(b"%d-%d" % (b, i) for b in range(6)
                                                                       for i in range(10))
    assert abs(len(rr[0]) - len(rr[1])) <= 1  # one producer: dealt in turn (test_producer.py has more)
    consumers = [sw.queues.consumer("q", "fifo", c) for c in range(3)]
    fifo: list[bytes] = []
    for _ in range(10):
        for consumer in consumers:
            with sw.transaction() as tx:
                fifo.extend(e.payload for e in consumer.dequeue(tx, 7))
    assert sorted(fifo) == sorted(e.payload for share in rr for e in share)


def test_abort_gives_entries_back_to_the_same_consumer(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="k")
    sw.queues.create_group("q", "f", 2, "FIFO")
    produce(sw, "q", [(b"%d" % i, {"k": i}) for i in range(20)])
    for group in ("h", "f"):
        first, other = sw.queues.consumer("q", group, 0), sw.queues.consumer("q", group, 1)
        tx = sw.transaction()
        taken = first.dequeue(tx, 5)
        tx.abort()
        assert taken
        again = drain(sw, first, entries_max=5)
        assert again[:len(taken)] == taken
        rest = drain(sw, other)
        assert not {e.id for e in taken} & {e.id for e in rest}
        assert len(again) + len(rest) == 20


def test_uncommitted_entries_wait_and_a_late_commit_is_not_skipped(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    producer = sw.queues.producer("q")
    consumer = sw.queues.consumer("q", "g", 0)
    late = sw.transaction()
    producer.enqueue(late, b"late")
    producer.flush(late)  # sent, not committed: its chunk is in the log, in progress
    produce(sw, "q", [(b"after", {})])
    assert drain(sw, consumer) == []  # stops at the in-progress chunk, does not step over it
    late.commit()
    assert [e.payload for e in drain(sw, consumer)] == [b"late", b"after"]


def test_aborted_and_timed_out_producers_are_never_seen(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    producer = sw.queues.producer("q")
    aborted = sw.transaction()
    producer.enqueue(aborted, b"aborted")
    producer.flush(aborted)
    aborted.abort()
    idle = sw.transaction(timeout_s=0.3)
    producer.enqueue(idle, b"timed out")
    producer.flush(idle)
    produce(sw, "q", [(b"kept", {})])
    deadline = time.monotonic() + 10
    while sw.txn.status(idle.id) is not seaway.TxnStatus.TIMED_OUT and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [e.payload for e in drain(sw, sw.queues.consumer("q", "g", 0))] == [b"kept"]


def test_hash_resize_2_3_1_keeps_exact_assignment_and_order(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="k")
    keys = [f"key{i}" for i in range(12)]

    def batch(tag: str) -> list[tuple[bytes, dict[str, object]]]:
        return [(f"{tag}:{k}".encode(), {"k": k}) for k in keys]

    produce(sw, "q", batch("a"))  # layout 1: size 2, not consumed before the resize
    sw.queues.resize_group("q", "h", 3, wait_s=None)
    produce(sw, "q", batch("b"))  # layout 2: size 3
    consumers = {c: sw.queues.consumer("q", "h", c) for c in range(3)}
    got = {c: [e.payload for e in drain(sw, consumers[c])] for c in (2, 1, 0)}
    # Consumer c of the new layout first drains old partitions p with p % 3 == c, and only after
    # every old partition is drained reads its own; consumer 2 inherits nothing and waits.
    assert got[2] == []
    got = {c: got[c] + [e.payload for e in drain(sw, consumers[c])] for c in range(3)}
    for c in range(3):
        old = [f"a:{k}".encode() for k in keys if hash_key(k) % 2 == c]
        new = [f"b:{k}".encode() for k in keys if hash_key(k) % 3 == c]
        assert got[c] == old + new
    assert not sw.queues.describe_group("q", "h").resizing
    info = sw.queues.resize_group("q", "h", 1, wait_s=None)
    assert info.resizing and info.size == 1
    produce(sw, "q", batch("c"))
    only = sw.queues.consumer("q", "h", 0)
    assert [e.payload for e in drain(sw, only)] == [f"c:{k}".encode() for k in keys]
    with pytest.raises(ConsumerOutsideGroupError), sw.transaction() as tx:
        consumers[2].dequeue(tx)


def test_resize_of_a_busy_group_completes_while_its_consumers_run(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="k")
    produce(sw, "q", [(b"%d" % i, {"k": i}) for i in range(1000)])
    consumers = [sw.queues.consumer("q", "h", c) for c in range(3)]
    stop = threading.Event()
    seen: list[bytes] = []

    def consume() -> None:
        while not stop.is_set():
            for consumer in consumers:
                try:
                    with sw.transaction() as tx:
                        seen.extend(e.payload for e in consumer.dequeue(tx, 100))
                except ConsumerOutsideGroupError:
                    pass

    worker = threading.Thread(target=consume)
    worker.start()
    try:
        # Returns once the old layout is drained (TimedOutError after wait_s, a bound for a stall).
        info = sw.queues.resize_group("q", "h", 3, wait_s=60)
    finally:
        stop.set()
        worker.join()
    assert not info.resizing and info.size == 3
    assert sorted(seen) == sorted(b"%d" % i for i in range(1000))


@pytest.mark.parametrize("strategy", ["HASH", "FIFO"])
def test_a_resize_passes_its_barrier_when_only_aborted_chunks_end_the_old_logs(sw: seaway.Seaway,
                                                                               strategy: str) -> None:
    """The last chunks of an old partition belong to aborted or timed-out transactions, and the
    consumers abort every transaction whose dequeue found nothing (a processor's usual loop):
    nothing ever commits a position past those chunks, yet the old partition holds nothing left
    to deliver, so the barrier passes and the entries sent after the resize are delivered."""
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, strategy, key="k" if strategy == "HASH" else None)
    produce(sw, "q", [(b"before-%d" % i, {"k": i}) for i in range(4)])
    producer = sw.queues.producer("q")
    aborted = sw.transaction()
    producer.enqueue_batch(aborted, [b"aborted-%d" % i for i in range(4)], [{"k": i} for i in range(4)])
    producer.flush(aborted)  # its chunks are in both old logs, after every committed one
    consumers = [sw.queues.consumer("q", "h", c) for c in range(2)]
    got = [e.payload for c in consumers for e in drain(sw, c)]
    assert sorted(got) == sorted(b"before-%d" % i for i in range(4))
    sw.queues.resize_group("q", "h", 2, wait_s=None)
    aborted.abort()
    produce(sw, "q", [(b"after-%d" % i, {"k": i}) for i in range(4)])
    after: list[bytes] = []
    for _ in range(20):
        for consumer in consumers:
            tx = sw.transaction()
            entries = consumer.dequeue(tx, 100)
            if entries:
                after += [e.payload for e in entries]
                tx.commit()
            else:
                tx.abort()  # nothing to do: nothing to commit
    assert sorted(after) == sorted(b"after-%d" % i for i in range(4))
    assert not sw.queues.describe_group("q", "h").resizing


def test_a_consumer_whose_old_log_is_deleted_at_the_barrier_while_it_reads_ends_that_log(sw: seaway.Seaway) -> None:
    """Consumer 1 looks at its sources while an open transaction's chunk still holds the resize
    back; the transaction aborts, consumer 0 passes the barrier and deletes the old logs, and only
    then does consumer 1 read the old log it was given: the log ended (the barrier deletes only
    drained logs), not an error, and the entries sent after the resize reach both."""
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="k")
    producer = sw.queues.producer("q")
    open_tx = sw.transaction()
    producer.enqueue_batch(open_tx, [b"aborted-%d" % i for i in range(4)], [{"k": i} for i in range(4)])
    producer.flush(open_tx)
    sw.queues.resize_group("q", "h", 2, wait_s=None)
    consumers = [sw.queues.consumer("q", "h", c) for c in range(2)]
    looked = consumers[1]._sources

    def racing() -> Any:
        sources = looked()
        assert sources and sources[0].layout.generation == 1  # the old log: still held back
        open_tx.abort()
        with sw.transaction() as tx:
            assert consumers[0].dequeue(tx, 10) == []
        assert not sw.queues.describe_group("q", "h").resizing  # passed: the old logs are deleted
        return sources

    consumers[1]._sources = racing  # type: ignore[method-assign]
    with sw.transaction() as tx:
        assert consumers[1].dequeue(tx, 10) == []
    consumers[1]._sources = looked  # type: ignore[method-assign]
    produce(sw, "q", [(b"after-%d" % i, {"k": i}) for i in range(4)])
    assert sorted(e.payload for c in consumers for e in drain(sw, c)) == sorted(b"after-%d" % i for i in range(4))


def test_bad_input_gets_typed_errors(sw: seaway.Seaway) -> None:
    with pytest.raises(UnknownQueueError):
        sw.queues.create_group("nope", "g", 1)
    sw.queues.create("q")
    with pytest.raises(QueueExistsError):
        sw.queues.create("q")
    with pytest.raises(InvalidArgumentError):
        sw.queues.create("bad name!")
    with pytest.raises(InvalidArgumentError):
        sw.queues.create_group("q", "g", 0, "HASH", key="k")
    with pytest.raises(InvalidArgumentError):
        sw.queues.create_group("q", "g", 2, "HASH")
    with pytest.raises(InvalidArgumentError):
        sw.queues.create_group("q", "g", 2, "SOMETIMES")
    sw.queues.create_group("q", "g", 2, "HASH", key="user")
    with pytest.raises(ConsumerGroupExistsError):
        sw.queues.create_group("q", "g", 1)
    with pytest.raises(InvalidArgumentError):
        sw.queues.resize_group("q", "g", 0)
    with pytest.raises(UnknownConsumerGroupError):
        sw.queues.consumer("q", "other", 0)
    producer = sw.queues.producer("q")
    tx = sw.transaction()
    producer.enqueue(tx, b"no key", {"page": 1})
    with pytest.raises(MissingHashKeyError):
        tx.commit()
    assert tx.status is seaway.TxnStatus.ABORTED
    with pytest.raises(ConsumerOutsideGroupError), sw.transaction() as tx:
        sw.queues.consumer("q", "g", 2).dequeue(tx)
    produce(sw, "q", [(b"x", {"user": 1})])  # what was committed before is still there
    assert len(drain(sw, sw.queues.consumer("q", "g", hash_key(1) % 2))) == 1


def test_exactly_once_processor_and_poison_count(sw: seaway.Seaway) -> None:
    sw.queues.create("in")
    sw.queues.create("out")
    sw.queues.create_group("in", "workers", 1, "FIFO")
    sw.queues.create_group("out", "sink", 1, "FIFO")
    produce(sw, "in", [(b"%d" % i, {}) for i in range(30)])
    consumer = sw.queues.consumer("in", "workers", 0)
    output = sw.queues.producer("out")
    failures = 0
    while True:
        tx = sw.transaction()
        entries = consumer.dequeue(tx, 4)
        if not entries:
            tx.commit()
            break
        if failures < 3:  # the processor fails: nothing it wrote shows, its entries come back
            output.enqueue(tx, b"lost")
            tx.abort()
            failures += 1
            continue
        poison = [e for e in entries if e.payload == b"13"]
        consumer.skip(tx, poison)
        for entry in entries:
            if entry not in poison:
                output.enqueue(tx, entry.payload + b"!")
        tx.commit()
    out = [e.payload for e in drain(sw, sw.queues.consumer("out", "sink", 0))]
    assert out == [b"%d!" % i for i in range(30) if i != 13]
    assert sw.queues.describe_group("in", "workers").skipped == 1


def test_consumed_ranges_are_evicted(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="k")
    sw.queues.create_group("q", "f", 1, "FIFO")
    consumers = [sw.queues.consumer("q", "h", c) for c in range(2)] + [sw.queues.consumer("q", "f", 0)]
    for _ in range(20):
        produce(sw, "q", [(b"x" * 1000, {"k": i}) for i in range(50)])
        for consumer in consumers:
            drain(sw, consumer)
    for consumer in consumers:
        consumer.close()  # a consumer trims at most every TRIM_INTERVAL_S, and when it closes
    info = {p.log_id: p for g in ("h", "f") for p in sw.queues.describe_group("q", g).partitions}
    for log_id in info:
        log = sw.logs.get(log_id)
        # Everything consumed is trimmed (a FIFO log once every few commits): what is left is bounded.
        assert log.tail_lsn() - log.trim_point() <= 8, (log_id, log.tail_lsn(), log.trim_point())


def test_queue_and_group_deletion(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
    logs = [p.log_id for p in sw.queues.describe_group("q", "g").partitions]
    produce(sw, "q", [(b"x", {})])
    sw.queues.delete("q")
    assert "q" not in sw.queues.list()
    for log_id in logs:
        with pytest.raises(seaway.UnknownLogError):
            sw.logs.get(log_id).tail_lsn()


def test_two_instances_of_a_consumer_never_deliver_twice(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    produce(sw, "q", [(b"%d" % i, {}) for i in range(6)])
    first, second = sw.queues.consumer("q", "g", 0), sw.queues.consumer("q", "g", 0)
    t1, t2 = sw.transaction(), sw.transaction()
    a = first.dequeue(t1, 3)
    b = second.dequeue(t2, 3)
    assert a == b  # both read from the same committed position
    t1.commit()
    with pytest.raises(seaway.TransactionConflictError):
        t2.commit()  # the loser is aborted, and goes back to the position as stored
    rest = drain(sw, second)
    assert [e.payload for e in a + rest] == [b"%d" % i for i in range(6)]


def test_entry_ids_are_unique_per_transaction_across_producer_objects(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "FIFO")
    with sw.transaction() as tx:
        sw.queues.producer("q").enqueue(tx, b"a")
        sw.queues.producer("q").enqueue(tx, b"b")
    got = drain(sw, sw.queues.consumer("q", "g", 0))
    assert [e.payload for e in got] == [b"a", b"b"]
    assert len({e.id for e in got}) == 2


def test_dequeue_waits_for_an_open_transaction_within_its_timeout(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    producer = sw.queues.producer("q")
    late = sw.transaction()
    producer.enqueue(late, b"late")
    producer.flush(late)
    waiting = threading.Event()
    wait_ended = sw.queues.txn.wait_ended

    def waited(ids: Any, timeout_s: float) -> list[int]:
        waiting.set()  # the dequeue stopped at the open chunk and waits for its transaction's end
        return wait_ended(ids, timeout_s)

    def commit_once_waiting() -> None:
        if waiting.wait(60):
            late.commit()

    sw.queues.txn.wait_ended = waited  # type: ignore[method-assign]
    committer = threading.Thread(target=commit_once_waiting)
    committer.start()
    consumer = sw.queues.consumer("q", "g", 0)
    with sw.transaction() as tx:  # began before the commit: read committed, not stepped over
        started = time.monotonic()
        got = consumer.dequeue(tx, 10, timeout_s=120.0)
        took = time.monotonic() - started
    committer.join()
    assert waiting.is_set() and [e.payload for e in got] == [b"late"]
    assert took < 60.0  # it returned on the commit, long before its timeout


def test_resize_changes_strategy_and_keeps_a_hash_key_unless_given(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "hash", key="u")
    assert sw.queues.resize_group("q", "h", 3, wait_s=None).key == "u"
    sw.queues.create_group("q", "f", 2)
    with pytest.raises(InvalidArgumentError):
        sw.queues.resize_group("q", "f", 3, strategy="HASH")  # a HASH group needs its key
    info = sw.queues.resize_group("q", "f", 3, strategy="hash", key="p")
    assert (info.strategy, info.key, info.size, info.resizing) == (seaway.Strategy.HASH, "p", 3, False)


def _records(sw: seaway.Seaway, log_id: int) -> list[int]:
    return [item.lsn for item in sw.logs.get(log_id).read() if isinstance(item, Record)]


@pytest.mark.parametrize("strategy", ["ROUND_ROBIN", "FIFO"])
def test_a_range_trimmed_before_it_was_consumed_is_an_error_not_a_skip(sw: seaway.Seaway, strategy: str) -> None:
    """Finding 13: a consumer stepped over a TRIM gap above its position (a FIFO claim claimed
    over it), losing the entries there without a word; read_committed raises."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, strategy)
    for i in range(3):
        produce(sw, "q", [(b"%d" % i, {})])
    log_id = sw.queues.describe_group("q", "g").partitions[0].log_id
    lsns = _records(sw, log_id)
    sw.logs.get(log_id).trim(lsns[1])  # not by the group: entries 0 and 1 were never consumed
    consumer = sw.queues.consumer("q", "g", 0)
    for _ in range(2):  # every time, not only the first
        with pytest.raises(LsnOutOfRangeError, match="trimmed"), sw.transaction() as tx:
            consumer.dequeue(tx, 10)
    assert sw.queues.describe_group("q", "g").partitions[0].position == Position(1, 0)


def test_a_racing_claim_under_the_same_consumer_id_never_replaces_one(sw: seaway.Seaway) -> None:
    """Finding 14: the claim batch had no condition on the claim's key: a second instance of FIFO
    consumer 0 that claimed while the first held a claim replaced it, and the entries of one of
    the two claims were never delivered."""
    sw.queues.create("q")
    sw.queues.create_group("q", "f", 1, "FIFO")
    for i in range(10):
        produce(sw, "q", [(b"%d" % i, {})])
    first, second = sw.queues.consumer("q", "f", 0), sw.queues.consumer("q", "f", 0)
    t1, t2 = sw.transaction(), sw.transaction()
    got: list[Entry] = []
    claim = second._claim

    def claim_after_the_first(*args: object) -> object:
        got.extend(first.dequeue(t1, 5))  # the first instance claims in between
        return claim(*args)  # type: ignore[arg-type]

    second._claim = claim_after_the_first  # type: ignore[method-assign]
    also = second.dequeue(t2, 5)
    assert got and also == got  # the second delivers the claim it found, not a new one
    t1.commit()
    with pytest.raises(seaway.TransactionConflictError):
        t2.commit()
    rest = drain(sw, sw.queues.consumer("q", "f", 0))
    assert sorted(int(e.payload) for e in got + rest) == list(range(10))


def test_a_group_created_while_its_namesake_is_deleted_works(sw: seaway.Seaway) -> None:
    """Finding 19: create_group looked its logs up by name and could take those of the group a
    concurrent delete_group was deleting; the new group's logs were then gone, and every
    producer commit of the queue failed."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
    sw.queues.create_group("q", "other", 1, "FIFO")
    logs = sw.queues.logs
    recreated: list[bool] = []

    class RecreatingInBetween:
        """The deletion's batch is committed; its logs are not deleted yet."""

        def __getattr__(self, name: str) -> object:
            return getattr(logs, name)

        def delete(self, log: object) -> None:
            if not recreated:
                recreated.append(True)
                sw.queues.logs = logs
                sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
                sw.queues.logs = self  # type: ignore[assignment]
            logs.delete(log)

    sw.queues.logs = RecreatingInBetween()  # type: ignore[assignment]
    try:
        sw.queues.delete_group("q", "g")
    finally:
        sw.queues.logs = logs
    assert recreated
    produce(sw, "q", [(b"%d" % i, {}) for i in range(4)])
    got = [e for c in range(2) for e in drain(sw, sw.queues.consumer("q", "g", c))]
    assert sorted(e.payload for e in got) == [b"0", b"1", b"2", b"3"]
    assert len(drain(sw, sw.queues.consumer("q", "other", 0))) == 4


@pytest.mark.parametrize("strategy", ["ROUND_ROBIN", "FIFO"])
def test_a_failed_eviction_after_a_commit_does_not_fail_the_commit(sw: seaway.Seaway, strategy: str) -> None:
    """The queue side of finding 9: the consumer's trim (and a FIFO consumer's eviction) after a
    commit raised out of commit() though the transaction had committed; a caller would retry and
    process the entries twice. The eviction is best-effort: a later commit trims again."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, strategy)
    for i in range(16):
        produce(sw, "q", [(b"%d" % i, {})])
    logs = sw.queues.logs

    class FailingTrims:
        def __getattr__(self, name: str) -> object:
            return getattr(logs, name)

        def get(self, log: object) -> object:
            handle = logs.get(log)  # type: ignore[arg-type]

            class Handle:
                def __getattr__(self, name: str) -> object:
                    return getattr(handle, name)

                def trim(self, lsn: int) -> None:
                    raise seaway.UnavailableError("the store is not answering")

            return Handle()

    consumer = sw.queues.consumer("q", "g", 0)
    sw.queues.logs = FailingTrims()  # type: ignore[assignment]
    got: list[bytes] = []
    try:
        for _ in range(16):  # a FIFO consumer evicts once every 8 commits
            tx = sw.transaction()
            got += [e.payload for e in consumer.dequeue(tx, 1)]
            tx.commit()
            assert tx.status is seaway.TxnStatus.COMMITTED
    finally:
        sw.queues.logs = logs
    assert got == [b"%d" % i for i in range(16)]


def test_a_fifo_consumer_added_by_a_resize_claims_nothing_of_the_old_layout(sw: seaway.Seaway) -> None:
    """Consumer 2 of a FIFO group grown from 2 to 3 inherits no claims of the old layout (2 % 3 is
    none of 0, 1): it claimed in the old log under its own id all the same, its transaction aborted,
    and then it counted the old layout as drained (none of *its* claims left), never delivered that
    claim again, and the barrier waited on it forever (found by the queue model)."""
    sw.queues.create("q")
    sw.queues.create_group("q", "f", 2, "FIFO")
    produce(sw, "q", [(b"e%d" % i, {}) for i in range(3)])
    sw.queues.resize_group("q", "f", 3, wait_s=None)
    consumers = [sw.queues.consumer("q", "f", c) for c in range(3)]
    with sw.transaction() as tx:
        assert consumers[2].dequeue(tx, 10) == []  # at the barrier: the old log is not its share
        tx.abort()
    got = [e.payload for _ in range(4) for c in consumers for e in drain(sw, c, rounds=1)]
    assert sorted(got) == [b"e0", b"e1", b"e2"]
    assert not sw.queues.describe_group("q", "f").resizing
    produce(sw, "q", [(b"new", {})])
    assert [e.payload for c in consumers for e in drain(sw, c)] == [b"new"]


def test_a_barrier_check_that_read_a_position_a_consumer_then_moved_and_evicted_past_is_not_an_error(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resize's barrier check reads an old partition's committed position, then reads on from it;
    meanwhile the consumer commits past it and trims (eviction). Found by the queue crash test: the
    check raised LsnOutOfRangeError out of resize_group. The partition is simply not known drained
    yet: the check says so, and the next one reads the new position."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    for i in range(3):
        produce(sw, "q", [(b"%d" % i, {})])
    consumer = sw.queues.consumer("q", "g", 0)
    assert [e.payload for e in drain(sw, consumer)] == [b"0", b"1", b"2"]
    record = sw.queues.group_record("q", "g")[0]
    log = sw.logs.get(record.current.logs[0])
    stale = Position(1, 0)  # as read before the consumer moved on
    log.trim(int(log.tail_lsn()) - 1)  # its eviction, below the position it committed
    log.seal()
    monkeypatch.setattr(sw.queues, "position", lambda *args: stale)
    assert sw.queues._partition_drained("q", "g", record.current, 0) is False
    monkeypatch.undo()
    assert sw.queues._partition_drained("q", "g", record.current, 0) is True
    consumer.close()
