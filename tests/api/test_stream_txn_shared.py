"""Transactional streams, as the shared suite sees them.

Every test runs against the embedded store and a server.
"""

from __future__ import annotations

import pytest

import seaway
from seaway import InvalidArgumentError
from seaway.log import Record
from seaway.streams import ReaderConfig, Stream, unframe
from tests.api.conftest import Api

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""

QUICK = ReaderConfig(sync_interval_s=0.05, txn_poll_s_max=0.02)


def make(api: Api, segments: int = 1) -> Stream:
    scope = api.name("txn")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/events", segments=segments, transactional=True)
    return stream


def read(api: Api, stream: Stream, count: int, group: str | None = None) -> list[bytes]:
    reader = api.sw.streams.create_reader_group(group or api.name("g"), stream).reader("r", QUICK)
    out: list[bytes] = []
    try:
        while len(out) < count:
            event = reader.read_next(10)
            assert event is not None, f"only {out} came of {count}"
            out.append(event.payload)
        assert reader.read_next(0.2) is None, "more events than expected"
    finally:
        reader.close()
    return out


def test_the_flag_is_kept_and_fixed_and_plain_events_are_framed(api: Api) -> None:
    stream = make(api)
    assert api.sw.streams.get(stream.name).config.transactional
    with pytest.raises(InvalidArgumentError, match="fixed"):
        api.sw.streams.controller.update(stream.metadata, seaway.StreamConfig(transactional=False))
    with stream.writer() as writer:
        ack = writer.write(b"plain", "k").result(10)
    stored = next(iter(api.sw.logs.get(stream.current_segments()[0].log_id).read(ack.lsn, ack.lsn)))
    assert isinstance(stored, Record) and unframe(stored.payload) == (0, b"plain")


def test_one_transaction_over_two_streams_is_seen_whole_or_not_at_all(api: Api) -> None:
    sw = api.sw
    orders, audit = make(api, segments=2), make(api)
    with orders.writer() as w1, audit.writer() as w2:
        with sw.transaction() as tx:
            w1.write_batch([b"o1", b"o2"], "user-1", txn=tx)
            w1.write(b"o3", "user-2", txn=tx)
            w2.write(b"a1", txn=tx)
            assert read(api, orders, 0) == [] and read(api, audit, 0) == []
        with pytest.raises(KeyError), sw.transaction() as dropped:
            w1.write(b"lost", "user-1", txn=dropped)
            w2.write(b"lost", txn=dropped)
            raise KeyError("abort")
    assert sorted(read(api, orders, 3)) == [b"o1", b"o2", b"o3"]
    assert read(api, audit, 1) == [b"a1"]


def test_a_late_commit_is_delivered_in_key_order(api: Api) -> None:
    sw = api.sw
    stream = make(api)
    group = sw.streams.create_reader_group(api.name("g"), stream)
    reader = group.reader("r", QUICK)
    with stream.writer() as writer:
        tx = sw.transaction()
        writer.write(b"first", "k", txn=tx).result(10)
        writer.write(b"second", "k").result(10)
        assert reader.read_next(0.3) is None
        tx.commit()
    got = [reader.read_next(10), reader.read_next(10)]
    assert [e.payload for e in got if e is not None] == [b"first", b"second"]
    reader.close()


def test_one_transaction_over_a_stream_and_a_queue(api: Api) -> None:
    sw = api.sw
    stream = make(api)
    queue = api.name("q")
    sw.queues.create(queue)
    sw.queues.create_group(queue, "g", 1, "FIFO")
    producer = sw.queues.producer(queue)
    consumer = sw.queues.consumer(queue, "g", 0)
    with stream.writer() as writer:
        with pytest.raises(KeyError), sw.transaction() as dropped:
            writer.write(b"never", "k", txn=dropped)
            producer.enqueue(dropped, b"never")
            raise KeyError("the work failed")
        with sw.transaction() as tx:
            writer.write(b"event", "k", txn=tx)
            producer.enqueue(tx, b"entry")
    assert read(api, stream, 1) == [b"event"]
    with sw.transaction() as tx:
        assert [e.payload for e in consumer.dequeue(tx, 10, 2.0)] == [b"entry"]
