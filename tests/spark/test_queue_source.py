"""Reading a queue as a consumer group from Spark: one input partition per consumer, every committed
entry exactly once (across a crash and a restart from the checkpoint), per-key order, aborted
entries absent, a late commit not skipped, the group's positions acknowledged (and evicted)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import StructType

import seaway
from seaway import InvalidArgumentError
from seaway.client._client import RemoteLog
from seaway.log import Record
from seaway.queues import Entry, Position
from seaway.queues._records import hash_key
from seaway.server import ServerProcess
from seaway.spark._queue_read import QueueRange, _row_maker, _share, queue_stream_reader

USERS = 5


@contextmanager
def store(server: ServerProcess) -> Iterator[Any]:
    with seaway.connect(server.url, timeout_s=30) as sw:
        yield sw


def enqueue(sw: Any, queue: str, seqs: range, *, commit: bool = True) -> Any:
    """One transaction: entries ``{"user": seq % USERS, "seq": seq}`` keyed by user; committed, or
    left open (``commit=False``: sent, to be decided by the caller)."""
    producer = sw.queues.producer(queue)
    tx = sw.transaction(timeout_s=300)
    producer.enqueue_batch(tx, [json.dumps({"user": s % USERS, "seq": s}).encode() for s in seqs],
                           [{"user": s % USERS} for s in seqs])
    producer.flush(tx)
    if commit:
        tx.commit()
    return tx


def reader(spark: Any, server: ServerProcess, queue: str, group: str = "g", schema: str | None = None,
           **options: str) -> Any:
    builder = spark.readStream.format("seaway").option("address", server.url).option("queue", queue)
    builder = builder.option("group", group)
    for name, value in options.items():
        builder = builder.option(name, value)
    return (builder if schema is None else builder.schema(schema)).load()


class Batches:
    """A sink that keeps each batch's rows by batch id: idempotent, as an exactly-once sink is (a
    batch Spark runs again replaces its rows); a source that repeated entries would show them in two
    batches. ``fail_at`` makes one batch fail once, after reading it (a crash before its commit)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.rows: dict[int, list[Any]] = {}
        self.failed_rows: list[Any] = []
        self.fail_at = fail_at

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = df.withColumn("spark_partition", F.spark_partition_id()).collect()
        if batch_id == self.fail_at:
            self.fail_at, self.failed_rows = None, rows
            raise RuntimeError(f"a crash inside batch {batch_id}")
        self.rows[batch_id] = rows

    def all(self) -> list[Any]:
        return [row for batch_id in sorted(self.rows) for row in self.rows[batch_id]]


def run(df: Any, sink: Callable[[Any, int], None], checkpoint: Path, timeout_s: float = 60.0) -> None:
    """Run the query with ``availableNow`` to its end (or its failure, raised)."""
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).trigger(
        availableNow=True).start()
    try:
        assert query.awaitTermination(timeout_s), "the query did not end"
    finally:
        query.stop()


def checksum(seqs: list[int]) -> str:
    return hashlib.sha256(b",".join(b"%d" % s for s in sorted(seqs))).hexdigest()


def test_hash_group_every_committed_entry_once_in_key_order(spark: Any, server: ServerProcess,
                                                           tmp_path: Path) -> None:
    with store(server) as sw:
        sw.queues.create("clicks")
        sw.queues.create_group("clicks", "g", 2, "HASH", key="user")
        enqueue(sw, "clicks", range(0, 40))
        late = enqueue(sw, "clicks", range(40, 50), commit=False)  # open: holds back what follows it
        enqueue(sw, "clicks", range(50, 60), commit=False).abort()
        enqueue(sw, "clicks", range(60, 100))
        df = reader(spark, server, "clicks", maxEntriesPerTrigger="30")
        assert df.schema.simpleString() == "struct<payload:binary,write_pointer:bigint,counter:int,consumer:int>"
        sink = Batches()
        run(df, sink, tmp_path / "ckpt")
        first = [json.loads(r.payload)["seq"] for r in sink.all()]
        assert sorted(first) == list(range(40)) and len(sink.rows) >= 2  # 30 a batch at most
        late.commit()  # committed late: read, not skipped
        run(df, sink, tmp_path / "ckpt")
        rows = sink.all()
        seqs = [json.loads(r.payload)["seq"] for r in rows]
        assert sorted(seqs) == [*range(50), *range(60, 100)]  # each once; the aborted 50-59 never
        for user in range(USERS):
            mine = [r for r in rows if json.loads(r.payload)["user"] == user]
            assert [json.loads(r.payload)["seq"] for r in mine] == sorted(s for s in seqs if s % USERS == user)
            assert {r.consumer for r in mine} == {hash_key(user) % 2}
        # One Spark input partition per consumer.
        assert {(r.consumer, r.spark_partition) for r in rows} == {(0, 0), (1, 1)}
        assert len({(r.write_pointer, r.counter) for r in rows}) == len(rows)
        # Acknowledged: the group's positions moved, and the logs were trimmed below them.
        info = sw.queues.describe_group("clicks", "g")
        for part in info.partitions:
            assert part.position > Position(1, 0)
            assert sw.logs.get(part.log_id).trim_point() > 0
        # A query with a new checkpoint starts from the group's acknowledged positions.
        enqueue(sw, "clicks", range(100, 110))
        fresh = Batches()
        run(df, fresh, tmp_path / "new-ckpt")
        assert sorted(json.loads(r.payload)["seq"] for r in fresh.all()) == list(range(100, 110))


def test_a_crashed_query_restarts_exactly_and_follows_a_resize(spark: Any, server: ServerProcess,
                                                                tmp_path: Path) -> None:
    with store(server) as sw:
        sw.queues.create("jobs")
        sw.queues.create_group("jobs", "g", 2, "HASH", key="user")
        for start in range(0, 120, 30):
            enqueue(sw, "jobs", range(start, start + 30))
        df = reader(spark, server, "jobs", schema="user int, seq long, consumer int",
                    maxEntriesPerTrigger="60")
        sink = Batches(fail_at=1)
        with pytest.raises(Exception, match="a crash inside batch 1"):
            run(df, sink, tmp_path / "ckpt")
        assert list(sink.rows) == [0] and len(sink.failed_rows) == 60
        enqueue(sw, "jobs", range(120, 160))
        sw.queues.resize_group("jobs", "g", 3, wait_s=None)  # generation 2, while the query is down
        enqueue(sw, "jobs", range(160, 220))
        run(df, sink, tmp_path / "ckpt")
        # Batch 1 ran again from the checkpoint's offsets: the very same entries, in the same order.
        assert [tuple(r) for r in sink.rows[1]] == [tuple(r) for r in sink.failed_rows]
        rows = sink.all()
        seqs = [r.seq for r in rows]
        assert len(seqs) == 220 and checksum(seqs) == checksum(list(range(220)))  # none lost, none repeated
        for user in range(USERS):
            mine = [r.seq for r in rows if r.user == user]
            assert mine == sorted(mine)  # in key order, across the crash and the resize
        for r in rows:  # before the resize 2 consumers, after it 3
            assert r.consumer == hash_key(r.user) % (2 if r.seq < 160 else 3)
        old_batches = {b for b, batch in sink.rows.items() for r in batch if r.seq < 160}
        new_batches = {b for b, batch in sink.rows.items() for r in batch if r.seq >= 160}
        assert max(old_batches) < min(new_batches)  # no batch mixes the generations
        info = sw.queues.describe_group("jobs", "g")
        assert not info.resizing and info.generation == 2  # the query's acknowledgements passed the barrier


def test_fifo_groups_unknown_groups_and_batch_reads_are_refused(spark: Any, server: ServerProcess) -> None:
    with store(server) as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "fifo", 2, "FIFO")
    with pytest.raises(Exception, match="group 'fifo' of queue 'q' is FIFO"):
        reader(spark, server, "q", "fifo")
    with pytest.raises(Exception, match="queue 'q' has no consumer group 'nope'"):
        reader(spark, server, "q", "nope")
    with pytest.raises(Exception, match="give the option group"):
        spark.readStream.format("seaway").option("address", server.url).option("queue", "q").load()
    with pytest.raises(Exception, match="a queue is read as a stream"):
        spark.read.format("seaway").option("address", server.url).option("queue", "q").option("group", "g").schema(
            "payload binary").load().collect()


def test_planning_a_batch_reads_no_committed_payload(server: ServerProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver counts and places a batch's entries from the counts committed transactions
    recorded: of the log it reads only a chunk still in progress (where the batch stops), never
    the committed entries, which the executors read."""
    with store(server) as sw:
        sw.queues.create("planned")
        sw.queues.create_group("planned", "g", 2, "HASH", key="user")
        for t in range(5):
            enqueue(sw, "planned", range(t * 200, (t + 1) * 200))
        open_tx = enqueue(sw, "planned", range(1000, 1002), commit=False)  # one chunk in each partition
        read: list[int] = []
        original = RemoteLog.read

        def counting(log: RemoteLog, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for item in original(log, *args, **kwargs):
                if isinstance(item, Record):
                    read.append(len(item.payload))
                yield item

        monkeypatch.setattr(RemoteLog, "read", counting)
        source = queue_stream_reader({"address": server.url, "queue": "planned", "group": "g"}, StructType([]))
        try:
            start = source.initialOffset()
            end = source.latestOffset(start, ReadAllAvailable())
            ranges = source.partitions(start, end)
        finally:
            source.stop()
        assert len(read) <= 2 and sum(read) < 200  # the open transaction's chunks only
        monkeypatch.undo()
        planned = 0
        for r in ranges:
            assert isinstance(r, QueueRange)
            got = sw.queues.read_committed("planned", "g", r.generation, r.consumer, Position(*r.start),
                                           Position(*r.end), entries_max=10_000)
            assert not got.blocked and got.next == Position(*r.end)
            planned += len(got.entries)
        assert planned == 1000  # every committed entry, up to the open transaction
        open_tx.abort()


def test_a_batch_budget_is_shared_evenly_and_left_over_parts_go_to_the_others() -> None:
    assert _share([100, 100], 60) == [30, 30]
    assert _share([5, 100, 0], 60) == [5, 55, 0]
    assert _share([10, 20], 100) == [10, 20]
    assert _share([7, 7, 7], 10) == [4, 3, 3]
    assert sum(_share([3, 9, 1, 40], 17)) == 17


def test_a_given_schema_takes_entry_fields_by_name_and_the_rest_from_json() -> None:
    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [("user", "integer"), ("score", "double"), ("tags", "string"), ("at", "timestamp"),
                     ("counter", "integer"), ("consumer", "integer"), ("missing", "string")]]})
    row = _row_maker(schema, consumer=1)
    entry = Entry(77, 3, b'{"user": 7, "score": 2, "tags": ["a"], "at": 1000}')
    assert row(entry) == (7, 2.0, '["a"]', dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC), 3, 1, None)
    with pytest.raises(InvalidArgumentError, match=r"entry \(77, 3\): field 'user'"):
        row(Entry(77, 3, b'{"user": 1.5}'))
    with pytest.raises(InvalidArgumentError, match="not a JSON object"):
        row(Entry(77, 3, b"[1, 2]"))
