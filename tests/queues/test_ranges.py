"""Reading a partition by position without a transaction, and acknowledging up to a position.

What a processor with its own checkpoint (Spark) relies on: a range read again gives the same
entries; a read stops before a transaction still in progress and later delivers it; aborted
entries never appear; an acknowledgement commits the group's positions, never backwards, evicts
what lies below them, conflicts with a consumer instance holding the same entries, and passes a
resize's barrier.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import InvalidArgumentError, TxnConfig
from seaway._errors import CorruptionError, LsnOutOfRangeError, TransactionConflictError, UnknownConsumerGroupError
from seaway.log import Record
from seaway.queues import Entry, Position
from seaway.queues._records import GroupRecord, hash_key


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as store:
        yield store


def enqueue(sw: seaway.Seaway, queue: str, payloads: list[bytes], user: int = 0, *, commit: bool = True) -> int:
    """One transaction's entries, all of one key; committed or aborted (after they were sent)."""
    producer = sw.queues.producer(queue)
    tx = sw.transaction()
    producer.enqueue_batch(tx, payloads, [{"user": user}] * len(payloads))
    producer.flush(tx)
    if commit:
        tx.commit()
    else:
        tx.abort()
    return tx.id


def read_all(sw: seaway.Seaway, queue: str, group: str, partition: int, start: Position,
             end: Position | None = None, piece: int = 500) -> tuple[list[Entry], Position, bool]:
    entries: list[Entry] = []
    position = start
    while True:
        got = sw.queues.read_committed(queue, group, 1, partition, position, end, entries_max=piece)
        entries += got.entries
        if got.blocked or got.next == position or not got.entries:
            return entries, got.next, got.blocked
        position = got.next


def chunk_lsns(sw: seaway.Seaway, queue: str, group: str = "g", partition: int = 0) -> list[int]:
    """The LSNs of a partition's chunks, in order (LSNs carry the epoch: not 1, 2, 3...)."""
    log_id = sw.queues.describe_group(queue, group).partitions[partition].log_id
    return [item.lsn for item in sw.logs.get(log_id).read() if isinstance(item, Record)]


def hash_queue(sw: seaway.Seaway, size: int = 1) -> str:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", size, "HASH", key="user")
    return "q"


def test_reads_committed_entries_stops_at_one_in_progress_and_repeats_exactly(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw)
    enqueue(sw, queue, [b"a1", b"a2"])
    enqueue(sw, queue, [b"x1", b"x2"], commit=False)
    late = sw.transaction()
    producer = sw.queues.producer(queue)
    producer.enqueue_batch(late, [b"late1", b"late2"], [{"user": 0}] * 2)
    producer.flush(late)  # sent, not decided
    enqueue(sw, queue, [b"b1"])

    first, stop, blocked = read_all(sw, queue, "g", 0, Position(1, 0))
    assert [e.payload for e in first] == [b"a1", b"a2"] and blocked
    # Before the third chunk, the one in progress (the aborted second one stepped over).
    assert stop == Position(chunk_lsns(sw, queue)[2], 0)
    again, end, _ = read_all(sw, queue, "g", 0, Position(1, 0), stop)
    assert again == first and end == stop

    late.commit()  # late, and not skipped
    rest, tail, blocked = read_all(sw, queue, "g", 0, stop)
    assert [e.payload for e in rest] == [b"late1", b"late2", b"b1"] and not blocked
    assert rest[0].write_pointer == late.id and [e.counter for e in rest[:2]] == [0, 1]
    assert tail == Position(sw.logs.get(sw.queues.describe_group(queue, "g").partitions[0].log_id).tail_lsn() + 1, 0)
    assert sw.queues.read_committed(queue, "g", 1, 0, tail) == ([], tail, False)
    assert sw.queues.describe_group(queue, "g").partitions[0].position == Position(1, 0)  # reading moves nothing


def test_pieces_and_ends_inside_a_chunk_read_the_same_entries(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw)
    for start in range(0, 30, 10):
        enqueue(sw, queue, [b"%d" % i for i in range(start, start + 10)])
    whole, end, _ = read_all(sw, queue, "g", 0, Position(1, 0))
    assert [e.payload for e in whole] == [b"%d" % i for i in range(30)]
    pieces, _, _ = read_all(sw, queue, "g", 0, Position(1, 0), piece=3)
    assert pieces == whole
    middle = sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=14)
    assert middle.next == Position(chunk_lsns(sw, queue)[1], 4)  # 4 entries into the second chunk
    head, _, _ = read_all(sw, queue, "g", 0, Position(1, 0), middle.next, piece=5)
    tail, _, _ = read_all(sw, queue, "g", 0, middle.next, end)
    assert head == middle.entries and head + tail == whole


def test_hash_partitions_hold_each_consumers_share(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw, 2)
    for user in range(6):
        enqueue(sw, queue, [b"%d-%d" % (user, i) for i in range(3)], user)
    for partition in range(2):
        got = [e.payload for e in read_all(sw, queue, "g", partition, Position(1, 0))[0]]
        assert got == [b"%d-%d" % (u, i) for u in range(6) if hash_key(u) % 2 == partition for i in range(3)]


def test_acknowledge_commits_positions_evicts_and_never_goes_back(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw)
    for _ in range(5):
        enqueue(sw, queue, [b"x" * 100] * 4)
    got = sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=10)
    lsns = chunk_lsns(sw, queue)
    assert got.next == Position(lsns[2], 2)
    sw.queues.acknowledge(queue, "g", 1, {0: got.next})
    part = sw.queues.describe_group(queue, "g").partitions[0]
    assert part.position == Position(lsns[2], 2)
    assert sw.logs.get(part.log_id).trim_point() == lsns[2] - 1  # below the chunk the position is inside
    sw.queues.acknowledge(queue, "g", 1, {0: Position(lsns[1], 0)})  # behind: left as it is
    assert sw.queues.describe_group(queue, "g").partitions[0].position == Position(lsns[2], 2)
    with pytest.raises(LsnOutOfRangeError, match="acknowledged and evicted"):
        sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0))
    with pytest.raises(InvalidArgumentError, match="past its log's tail"):
        sw.queues.acknowledge(queue, "g", 1, {0: Position(lsns[-1] + 2, 0)})
    with sw.queues.consumer(queue, "g", 0) as consumer, sw.transaction() as tx:
        assert len(consumer.dequeue(tx, 100)) == 10  # a consumer goes on from the acknowledged position


def test_acknowledge_conflicts_with_a_consumer_holding_the_same_entries(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw)
    enqueue(sw, queue, [b"a", b"b"])
    consumer = sw.queues.consumer(queue, "g", 0)
    tx = sw.transaction()
    assert len(consumer.dequeue(tx, 10)) == 2
    sw.queues.acknowledge(queue, "g", 1, {0: Position(chunk_lsns(sw, queue)[0] + 1, 0)})
    with pytest.raises(TransactionConflictError):
        tx.commit()


def test_bad_input_fifo_and_unknown_generations_are_refused(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw, 2)
    sw.queues.create_group(queue, "f", 2, "FIFO")
    with pytest.raises(InvalidArgumentError, match="FIFO"):
        sw.queues.read_committed(queue, "f", 1, 0, Position(1, 0))
    with pytest.raises(InvalidArgumentError, match="FIFO"):
        sw.queues.acknowledge(queue, "f", 1, {0: Position(1, 0)})
    with pytest.raises(InvalidArgumentError, match="no generation 2"):
        sw.queues.read_committed(queue, "g", 2, 0, Position(1, 0))
    with pytest.raises(InvalidArgumentError, match="partitions 0-1, got 2"):
        sw.queues.read_committed(queue, "g", 1, 2, Position(1, 0))
    with pytest.raises(InvalidArgumentError, match="Position"):
        sw.queues.read_committed(queue, "g", 1, 0, Position(0, 0))
    with pytest.raises(InvalidArgumentError, match="entries_max"):
        sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=0)
    with pytest.raises(UnknownConsumerGroupError):
        sw.queues.read_committed(queue, "nope", 1, 0, Position(1, 0))


def test_acknowledging_the_drained_generation_passes_the_barrier(sw: seaway.Seaway) -> None:
    queue = hash_queue(sw, 2)
    for user in range(4):
        enqueue(sw, queue, [b"old-%d" % user], user)
    sw.queues.resize_group(queue, "g", 3, wait_s=None)
    enqueue(sw, queue, [b"new"], 1)
    ends = {}
    for partition in range(2):
        got = sw.queues.read_committed(queue, "g", 1, partition, Position(1, 0), entries_max=100)
        assert not got.blocked
        ends[partition] = got.next
    final = [p.final_lsn for p in sw.queues.describe_group(queue, "g").partitions if p.generation == 1]
    assert [ends[p].lsn for p in range(2)] == [f + 1 for f in final if f is not None]  # read to the sealed end
    sw.queues.acknowledge(queue, "g", 1, {0: ends[0]})
    assert sw.queues.describe_group(queue, "g").resizing  # one old partition still holds entries
    sw.queues.acknowledge(queue, "g", 1, {1: ends[1]})
    assert not sw.queues.describe_group(queue, "g").resizing
    sw.queues.acknowledge(queue, "g", 1, {1: ends[1]})  # dropped: nothing left to acknowledge
    with pytest.raises(InvalidArgumentError, match="drained and dropped"):
        sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0))
    new = [e.payload for p in range(3) for e in sw.queues.read_committed(queue, "g", 2, p, Position(1, 0)).entries]
    assert new == [b"new"]


def test_acknowledge_at_an_open_chunk_is_allowed_past_it_refused(sw: seaway.Seaway) -> None:
    """Findings 6 and 49: an acknowledgement past a chunk still in progress committed the position
    over it and trimmed the log under it: the transaction's entries were gone when it committed."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "HASH", key="user")
    enqueue(sw, "q", [b"a", b"b"])
    producer = sw.queues.producer("q")
    open_tx = sw.transaction()
    producer.enqueue(open_tx, b"open", {"user": 0})
    producer.flush(open_tx)
    enqueue(sw, "q", [b"after"])
    _, open_lsn, after = chunk_lsns(sw, "q")
    with pytest.raises(InvalidArgumentError, match="in progress"):
        sw.queues.acknowledge("q", "g", 1, {0: Position(after + 1, 0)})
    with pytest.raises(InvalidArgumentError, match="in progress"):
        sw.queues.acknowledge("q", "g", 1, {0: Position(open_lsn, 1)})  # inside it
    sw.queues.acknowledge("q", "g", 1, {0: Position(open_lsn, 0)})  # up to it: fine
    assert sw.queues.describe_group("q", "g").partitions[0].position == Position(open_lsn, 0)
    open_tx.commit()
    entries, _, _ = read_all(sw, "q", "g", 0, Position(open_lsn, 0))
    assert [e.payload for e in entries] == [b"open", b"after"]
    sw.queues.acknowledge("q", "g", 1, {0: Position(after + 1, 0)})  # decided now
    assert sw.queues.describe_group("q", "g").partitions[0].position == Position(after + 1, 0)


def test_a_consumer_and_read_committed_read_the_same_entries_over_every_kind_of_gap(tmp_path: Path) -> None:
    """Both readers step the same way through the same log (one set of rules, :mod:`_chunks`): a
    BRIDGE at a restart's new epoch, an aborted chunk, a sealed end at a resize; and
    ``PartitionInfo.drained_at`` (what Spark asks) agrees with the consumer passing the barrier."""
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as sw:
        queue = hash_queue(sw)
        enqueue(sw, queue, [b"a1", b"a2"])
        enqueue(sw, queue, [b"aborted"], commit=False)
    with seaway.Seaway(tmp_path / "data", config) as sw:  # a new epoch: a BRIDGE before the next chunk
        enqueue(sw, queue, [b"b1"])
        enqueue(sw, queue, [b"aborted-too"], commit=False)
        enqueue(sw, queue, [b"b2", b"b3"])
        sw.queues.resize_group(queue, "g", 2, wait_s=None)  # seals the partition: a SEALED gap ends it
        got = sw.queues.read_committed(queue, "g", 1, 0, Position(1, 0), entries_max=100)
        assert [e.payload for e in got.entries] == [b"a1", b"a2", b"b1", b"b2", b"b3"]
        assert not got.blocked
        (old,) = [p for p in sw.queues.describe_group(queue, "g").partitions if p.generation == 1]
        assert old.final_lsn is not None and got.next == Position(old.final_lsn + 1, 0)
        assert old.drained_at(got.next) and not old.drained_at(Position(old.final_lsn, 0)) and not old.drained
        consumer = sw.queues.consumer(queue, "g", 0)
        with sw.transaction() as tx:
            dequeued = consumer.dequeue(tx, 100)
        assert dequeued == got.entries
        with sw.transaction() as tx:  # drained: the consumer passes the barrier
            assert consumer.dequeue(tx, 100) == []
        consumer.close()
        assert not sw.queues.describe_group(queue, "g").resizing


def test_a_group_record_nested_too_deep_is_corruption_not_a_crash() -> None:
    # Group records live in the metadata store, which any client may write to.
    with pytest.raises(CorruptionError, match="does not decode"):
        GroupRecord.decode(b"[" * 100_000 + b"]" * 100_000)
