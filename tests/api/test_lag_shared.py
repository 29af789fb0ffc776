"""Lag (events or entries left to read, counted without reading them) of reader groups and consumer
groups, embedded and through a server, at known points: after writes, reads, a scaling, a resize, a
trim, and with a transaction open."""

from __future__ import annotations

from seaway.streams import ReaderConfig, Stream
from tests.api.conftest import Api

QUICK = ReaderConfig(batch_items_max=1, sync_interval_s=0.05, txn_poll_s_max=0.02)


def _stream(api: Api, segments: int, *, transactional: bool = False) -> Stream:
    scope = api.name("lag")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/s", segments=segments, transactional=transactional)
    return stream


def _write(stream: Stream, count: int, start: int = 0) -> None:
    with stream.writer() as writer:
        for i in range(start, start + count):
            writer.write(b"%d" % i, f"k{i}").result(10)


def test_a_reader_groups_lag_counts_the_events_it_has_not_read(api: Api) -> None:
    stream = _stream(api, 2)
    _write(stream, 10)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    info = group.describe()
    assert info.lag == 10 == sum(info.lags.values())
    assert set(info.lags) == {s.id for s in stream.current_segments()}
    assert group.name in api.sw.streams.list_reader_groups()
    with group.reader("r", QUICK) as reader:
        for _ in range(4):
            assert reader.read_next(10) is not None
        reader.checkpoint()
        assert group.describe().lag == 6 == group.lag()
        # A scaling: the sealed segments keep what is left in them; the new one counts from its start.
        stream.merge([s.id for s in stream.current_segments()])
        _write(stream, 5, 10)
        info = group.describe()
        assert info.lag == 11 and len(info.lags) == 3
        (merged,) = stream.current_segments()
        assert info.lags[merged.id] == 5
        for _ in range(11):
            assert reader.read_next(10) is not None
        reader.checkpoint()
    assert group.describe().lag == 0


def test_a_reader_groups_lag_counts_a_transactions_events_once_written(api: Api) -> None:
    stream = _stream(api, 1, transactional=True)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    with stream.writer() as writer:
        tx = api.sw.transaction()
        writer.write_batch([b"a", b"b"], "k", txn=tx).result(10)
        # Stored, not yet visible: counted all the same (telling them apart would mean reading them).
        assert group.describe().lag == 2
        tx.abort()
    assert group.describe().lag == 2


def _queue(api: Api, size: int, strategy: str, key: str | None = None) -> str:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "g", size, strategy, key=key)
    return queue


def _enqueue(api: Api, queue: str, count: int, keys: bool = False) -> None:
    producer = api.sw.queues.producer(queue)
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"e%d" % i for i in range(count)],
                               [{"k": f"k{i}"} for i in range(count)] if keys else None)


def _dequeue(api: Api, queue: str, consumer_id: int, count: int) -> None:
    consumer = api.sw.queues.consumer(queue, "g", consumer_id)
    got = 0
    for _ in range(200):  # a remote consumer's first reads may come back empty
        with api.sw.transaction() as tx:
            got += len(consumer.dequeue(tx, count - got, 0.2))
        if got == count:
            break
    assert got == count
    consumer.close()


def test_a_consumer_groups_lag_counts_committed_entries_not_acknowledged(api: Api) -> None:
    queue = _queue(api, 2, "ROUND_ROBIN")
    assert api.sw.queues.describe_group(queue, "g").lag == 0
    _enqueue(api, queue, 10)
    info = api.sw.queues.describe_group(queue, "g")
    assert info.lag == 10 == sum(p.lag for p in info.partitions)
    assert [p.lag for p in info.partitions] == [5, 5]
    assert info.lag_bytes == 20 and [p.lag_bytes for p in info.partitions] == [10, 10]  # b"e0".."e9"
    assert info.to_json()["lag"] == 10 and [p["lag"] for p in info.to_json()["partitions"]] == [5, 5]
    _dequeue(api, queue, 0, 3)  # three of consumer 0's five, acknowledged by the commit
    info = api.sw.queues.describe_group(queue, "g")
    assert [p.lag for p in info.partitions] == [2, 5] and info.partitions[0].lag_bytes == 4
    # A transaction in progress, then one aborted: neither counts (a consumer will never get them).
    producer = api.sw.queues.producer(queue)
    tx = api.sw.transaction()
    producer.enqueue_batch(tx, [b"open"] * 4)
    producer.flush(tx)
    assert api.sw.queues.describe_group(queue, "g").lag == 7
    tx.abort()
    assert api.sw.queues.describe_group(queue, "g").lag == 7
    _dequeue(api, queue, 0, 2)
    _dequeue(api, queue, 1, 5)
    assert api.sw.queues.describe_group(queue, "g").lag == 0


def test_a_consumer_groups_lag_across_a_resize_and_fifo(api: Api) -> None:
    queue = _queue(api, 2, "HASH", "k")
    _enqueue(api, queue, 9, keys=True)
    info = api.sw.queues.resize_group(queue, "g", 3, wait_s=None)
    assert info.resizing and api.sw.queues.describe_group(queue, "g").lag == 9
    _enqueue(api, queue, 6, keys=True)
    info = api.sw.queues.describe_group(queue, "g")
    assert info.lag == 15 and sum(p.lag for p in info.partitions if p.generation == 2) == 6
    fifo = _queue(api, 2, "FIFO")
    _enqueue(api, fifo, 8)
    assert api.sw.queues.describe_group(fifo, "g").lag == 8
    _dequeue(api, fifo, 0, 3)
    assert api.sw.queues.describe_group(fifo, "g").lag == 5
