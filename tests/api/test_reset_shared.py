"""Resetting a group's position (to the head, the tail, a time or a cut), embedded and through a
server: reader groups and consumer groups."""

from __future__ import annotations

import pytest

import seaway
import seaway.queues
from seaway import InvalidArgumentError, ReaderOfflineError, TransactionConflictError
from seaway.streams import ReaderConfig, Stream
from tests.api.conftest import Api

QUICK = ReaderConfig(batch_items_max=1, sync_interval_s=0.05)


def _stream(api: Api, count: int) -> Stream:
    scope = api.name("reset")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/s", segments=2)
    with stream.writer() as writer:
        for i in range(count):
            writer.write(b"%d" % i, f"k{i}").result(10)
    return stream


def test_a_reader_group_resets_to_the_head_the_tail_a_time_and_a_cut(api: Api) -> None:
    stream = _stream(api, 6)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    reader = group.reader("r", QUICK)
    events = [reader.read_next(10) for _ in range(6)]
    assert all(e is not None for e in events)
    reader.checkpoint()
    assert group.lag() == 0
    head = group.reset("head")
    assert head == stream.head() and group.lag() == 6
    assert group.describe().readers == ()  # removed by the reset
    with pytest.raises(ReaderOfflineError):
        for _ in range(10):  # at most the batch it held, then it finds itself gone
            reader.read_next(0.1)
    group.reset("tail")
    assert group.lag() == 0
    group.reset(time_ms=0)
    assert group.lag() == 6
    late = sorted(e.timestamp_ms for e in events if e is not None)[3]
    group.reset(time_ms=late)
    assert group.lag() == sum(1 for e in events if e is not None and e.timestamp_ms >= late)
    group.reset(head)
    again = group.reader("r2", QUICK)
    read = [again.read_next(10) for _ in range(6)]
    assert sorted(e.payload for e in read if e is not None) == sorted(b"%d" % i for i in range(6))
    again.close()
    with pytest.raises(InvalidArgumentError):
        group.reset("oldest")


def _queue(api: Api, count: int, size: int = 1, strategy: str = "ROUND_ROBIN") -> str:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "g", size, strategy)
    with api.sw.transaction() as tx:
        api.sw.queues.producer(queue).enqueue_batch(tx, [b"%d" % i for i in range(count)])
    return queue


def _take(api: Api, consumer: seaway.queues.Consumer, tx: seaway.Transaction, count: int) -> list[bytes]:
    got: list[bytes] = []
    for _ in range(100):  # a remote consumer's first reads may come back empty
        got.extend(e.payload for e in consumer.dequeue(tx, count - len(got), 0.2))
        if len(got) >= count:
            break
    return got


def test_a_consumer_group_resets_to_the_head_the_tail_and_a_time(api: Api) -> None:
    queue = _queue(api, 6)
    consumer = api.sw.queues.consumer(queue, "g", 0)
    with api.sw.transaction() as tx:
        assert _take(api, consumer, tx, 4) == [b"0", b"1", b"2", b"3"]
    assert api.sw.queues.describe_group(queue, "g").lag == 2
    assert api.sw.queues.reset_group(queue, "g", time_ms=0).lag == 6  # the chunk is not evicted yet
    assert api.sw.queues.reset_group(queue, "g", "tail").lag == 0
    # The consumer's cursor is at entry 4; a reset to the head is found by its next transaction.
    assert api.sw.queues.reset_group(queue, "g", "head").lag == 6
    with api.sw.transaction() as tx:
        assert _take(api, consumer, tx, 6) == [b"%d" % i for i in range(6)]
    assert api.sw.queues.reset_group(queue, "g", "tail").lag == 0
    with api.sw.transaction() as tx:
        assert consumer.dequeue(tx, 10, 0.2) == []
    consumer.close()
    with pytest.raises(InvalidArgumentError):
        api.sw.queues.reset_group(queue, "g", "oldest")


def test_a_reset_racing_a_consumers_commit_fails_the_commit_and_nothing_is_processed_twice(api: Api) -> None:
    queue = _queue(api, 5)
    consumer = api.sw.queues.consumer(queue, "g", 0)
    processed: list[bytes] = []
    with api.sw.transaction() as tx:
        processed.extend(_take(api, consumer, tx, 2))
    racing = api.sw.transaction()
    seen = _take(api, consumer, racing, 3)  # delivered in a transaction still open...
    assert seen == [b"2", b"3", b"4"]
    api.sw.queues.reset_group(queue, "g", "tail")  # ...when the reset commits
    with pytest.raises(TransactionConflictError):
        racing.commit()  # its work is not committed: the entries were not processed
    with api.sw.transaction() as tx:
        assert consumer.dequeue(tx, 10, 0.2) == []  # from the reset position: nothing left
    assert processed == [b"0", b"1"] and api.sw.queues.describe_group(queue, "g").lag == 0
    api.sw.queues.reset_group(queue, "g", "head")
    for _ in range(100):
        with api.sw.transaction() as tx:
            processed.extend(e.payload for e in consumer.dequeue(tx, 10, 0.2))
        if len(processed) >= 2 + 5:
            break
    # From the head again: each entry once more, none twice within the processing after the reset.
    assert processed[2:] == [b"%d" % i for i in range(5)]
    consumer.close()


def test_a_time_before_a_truncated_streams_head_resets_to_the_head(api: Api) -> None:
    stream = _stream(api, 4)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    stream.merge([s.id for s in stream.current_segments()])
    with stream.writer() as writer:
        writer.write(b"late", "k").result(10)
    stream.truncate(stream.tail())  # the first segments are deleted: only what comes next is readable
    group.reset(time_ms=0)
    assert group.lag() == 0


def _fifo_queue(api: Api, count: int) -> str:
    return _queue(api, count, 2, "FIFO")


def test_a_fifo_group_resets_to_the_head_the_tail_and_a_time(api: Api) -> None:
    queue = _fifo_queue(api, 6)
    first, second = (api.sw.queues.consumer(queue, "g", c) for c in (0, 1))
    with api.sw.transaction() as tx:
        assert _take(api, first, tx, 4) == [b"0", b"1", b"2", b"3"]
    assert api.sw.queues.describe_group(queue, "g").lag == 2
    assert api.sw.queues.reset_group(queue, "g", time_ms=0).lag == 6  # the chunk is not evicted yet
    assert api.sw.queues.reset_group(queue, "g", "tail").lag == 0
    with api.sw.transaction() as tx:
        assert second.dequeue(tx, 10, 0.2) == []
    assert api.sw.queues.reset_group(queue, "g", "head").lag == 6
    # Either consumer takes them again, each entry once: the first's cursor is found stale.
    with api.sw.transaction() as tx:
        assert _take(api, first, tx, 6) == [b"%d" % i for i in range(6)]
    with api.sw.transaction() as tx:
        assert second.dequeue(tx, 10, 0.2) == []
    assert api.sw.queues.describe_group(queue, "g").lag == 0
    first.close()
    second.close()


def test_a_fifo_reset_racing_a_held_claim_fails_its_commit_and_the_claim_is_gone(api: Api) -> None:
    queue = _fifo_queue(api, 5)
    first, second = (api.sw.queues.consumer(queue, "g", c) for c in (0, 1))
    racing = api.sw.transaction()
    assert _take(api, first, racing, 3) == [b"0", b"1", b"2"]  # claimed, delivered, not committed
    api.sw.queues.reset_group(queue, "g", "tail")
    with pytest.raises(TransactionConflictError):
        racing.commit()
    # The claim went with the reset: nothing is held, nothing is left to claim.
    assert api.sw.queues.describe_group(queue, "g").lag == 0
    for consumer in (first, second):
        with api.sw.transaction() as tx:
            assert consumer.dequeue(tx, 10, 0.2) == []
    with api.sw.transaction() as tx:
        api.sw.queues.producer(queue).enqueue_batch(tx, [b"late"])
    with api.sw.transaction() as tx:
        assert _take(api, second, tx, 1) == [b"late"]
    first.close()
    second.close()
