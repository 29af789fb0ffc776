"""Counting a queue partition's committed entries by position (``Queues.count_committed``), embedded
and through a server: the same count and positions as ``read_committed``, from the entry counts
committed transactions recorded, reading from the log only the chunks those do not cover."""

from __future__ import annotations

import random

import pytest

from seaway.errors import LsnOutOfRangeError
from seaway.queues import Position
from seaway.queues._lag import counts_prefix
from seaway.queues._records import NAMESPACE
from tests.api.conftest import Api

BIG = 64 << 20  # read_committed's largest byte limit: the count has none


def test_a_count_ends_where_read_committed_ends_and_reads_only_undecided_chunks(api: Api) -> None:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "r", 2, "ROUND_ROBIN")
    producer = api.sw.queues.producer(queue)
    for t in range(6):  # committed transactions of several chunks each (a flush per batch)
        with api.sw.transaction() as tx:
            for b in range(3):
                producer.enqueue_batch(tx, [b"%d-%d-%d" % (t, b, i) for i in range(7)])
                producer.flush(tx)
        if t == 2:  # an aborted transaction among them
            aborted = api.sw.transaction()
            producer.enqueue_batch(aborted, [b"never"] * 4)
            producer.flush(aborted)
            aborted.abort()
    queues = api.sw.queues
    for c in range(2):
        committed = queues.read_committed(queue, "r", 1, c, Position(1, 0), entries_max=10_000, bytes_max=BIG)
        counted = queues.count_committed(queue, "r", 1, c, Position(1, 0))
        assert (counted.entries, counted.next, counted.blocked) == (len(committed.entries), committed.next, False)
        assert counted.records_read == 1  # the aborted chunk: every committed one is counted without a read
    # An open transaction after them, and a committed one after it: the count stops before the open one.
    open_tx = api.sw.transaction()
    producer.enqueue_batch(open_tx, [b"late"] * 4)
    producer.flush(open_tx)
    with api.sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"after"] * 4)
    rng = random.Random(7)
    for c in range(2):
        everything = queues.read_committed(queue, "r", 1, c, Position(1, 0), entries_max=10_000, bytes_max=BIG)
        assert everything.blocked
        counted = queues.count_committed(queue, "r", 1, c, Position(1, 0))
        assert (counted.entries, counted.next, counted.blocked) == (len(everything.entries), everything.next, True)
        # From any position met on the way, with any budget and end: what read_committed gives.
        positions = [Position(1, 0)]
        position = Position(1, 0)
        while position < everything.next:
            position = queues.read_committed(queue, "r", 1, c, position, entries_max=rng.randint(1, 9),
                                             bytes_max=BIG).next
            positions.append(position)
        for _ in range(40):
            start = rng.choice(positions)
            end = rng.choice([None, *[p for p in positions if p > start]])
            budget = rng.randint(1, 60)
            read = queues.read_committed(queue, "r", 1, c, start, end, entries_max=budget, bytes_max=BIG)
            count = queues.count_committed(queue, "r", 1, c, start, end, entries_max=budget)
            assert (count.entries, count.next, count.blocked) == (len(read.entries), read.next, read.blocked), \
                (start, end, budget)
    open_tx.commit()
    for c in range(2):
        everything = queues.read_committed(queue, "r", 1, c, Position(1, 0), entries_max=10_000, bytes_max=BIG)
        counted = queues.count_committed(queue, "r", 1, c, Position(1, 0))
        assert (counted.entries, counted.next, counted.blocked) == (len(everything.entries), everything.next, False)
        assert counted.records_read == 1  # committed now: counted from what its commit recorded
    # Chunks whose counts are not recorded (written by an earlier version; here: removed) are read
    # from the log and counted all the same.
    log_id = queues.describe_group(queue, "r").partitions[0].log_id
    api.sw.meta.batch().delete_prefix(NAMESPACE, counts_prefix(log_id)).commit()
    everything = queues.read_committed(queue, "r", 1, 0, Position(1, 0), entries_max=10_000, bytes_max=BIG)
    counted = queues.count_committed(queue, "r", 1, 0, Position(1, 0), entries_max=25)
    partial = queues.read_committed(queue, "r", 1, 0, Position(1, 0), entries_max=25, bytes_max=BIG)
    assert (counted.entries, counted.next) == (len(partial.entries), partial.next) and counted.records_read > 1
    counted = queues.count_committed(queue, "r", 1, 0, Position(1, 0))
    assert (counted.entries, counted.next, counted.blocked) == (len(everything.entries), everything.next, False)


def test_a_count_from_below_a_trim_fails_as_a_read_does(api: Api) -> None:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "r", 1, "ROUND_ROBIN")
    producer = api.sw.queues.producer(queue)
    for _ in range(3):
        with api.sw.transaction() as tx:
            producer.enqueue_batch(tx, [b"x"] * 5)
    info = api.sw.queues.describe_group(queue, "r").partitions[0]
    api.sw.logs.get(info.log_id).trim(info.tail_lsn - 1)  # by hand: the recorded counts stay
    for start in (Position(1, 0), Position(info.tail_lsn - 2, 0)):  # the log's head, the first chunk
        for call in (api.sw.queues.read_committed, api.sw.queues.count_committed):
            with pytest.raises(LsnOutOfRangeError):
                call(queue, "r", 1, 0, start)
    counted = api.sw.queues.count_committed(queue, "r", 1, 0, Position(info.tail_lsn, 0))
    assert (counted.entries, counted.next) == (5, Position(info.tail_lsn + 1, 0))
