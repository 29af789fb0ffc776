"""Writing to Seaway from Spark: ``df.write`` and ``df.writeStream`` into a transactional stream
and a queue, exactly once; the sink's commit protocol driven by hand (a batch committed twice, a
commit that cannot complete, lost tasks); bad rows and bad options, each a clear error."""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

import seaway
from seaway import TxnStatus
from seaway.server import ServerProcess
from seaway.spark import _write
from seaway.spark._write import NAMESPACE, SeawayCommitMessage, batch_writer, stream_writer

SCHEMA = StructType([StructField("routing_key", StringType()), StructField("payload", BinaryType())])


@pytest.fixture
def sw(server: ServerProcess) -> Iterator[Any]:
    with seaway.connect(server.url) as client:
        yield client


def make_stream(sw: Any, segments: int = 2) -> str:
    sw.streams.create_scope("spark", exist_ok=True)
    name = f"spark/s{uuid.uuid4().hex[:8]}"
    sw.streams.create(name, segments=segments, transactional=True)
    return name


def read_events(sw: Any, stream: str, expected: int) -> list[bytes]:
    """Every committed event of the stream (a fresh reader group from the head): ``expected`` of
    them, then a short wait to see that no more come."""
    group = sw.streams.get_or_create_reader_group(f"check-{uuid.uuid4().hex[:8]}", stream)
    events: list[bytes] = []
    with group.reader("r") as reader:
        while len(events) < expected:
            event = reader.read_next(timeout_s=10.0)
            assert event is not None, f"only {len(events)} of {expected} events came"
            events.append(event.payload)
        assert reader.read_next(timeout_s=0.3) is None, "more events than written"
    return events


def arrow(rows: list[tuple[Any, ...]], schema: StructType = SCHEMA, per_batch: int = 2) -> Iterator[pa.RecordBatch]:
    """The rows as Spark hands them to the sink's writers: Arrow record batches of ``per_batch`` rows."""
    arrow_schema = to_arrow_schema(schema)
    for lo in range(0, len(rows), per_batch):
        yield pa.RecordBatch.from_pylist([dict(zip(schema.names, row, strict=True)) for row in rows[lo:lo + per_batch]],
                                         schema=arrow_schema)


def checksum(payloads: list[bytes]) -> str:
    return hashlib.sha256(b"\n".join(sorted(payloads))).hexdigest()


def staged_notes(sw: Any) -> list[bytes]:
    return [key for key, _ in sw.meta.scan_all(NAMESPACE)]


# --- the commit protocol, by hand (the sink's objects, no Spark job) --------------------------------


def test_a_batch_id_published_before_is_not_published_again(server: ServerProcess, sw: Any) -> None:
    stream = make_stream(sw)
    options = {"address": server.url, "stream": stream, "sinkId": "by-hand"}

    def task(rows: list[tuple[str, bytes]]) -> SeawayCommitMessage:
        # Each call is what Spark does: a new writer object (a fresh process on the driver).
        return stream_writer(options, SCHEMA, False).write(arrow(rows))

    first = [task([("a", b"a0"), ("a", b"a1")]), task([("b", b"b0")]), task([])]
    assert first[2].txn_id is None  # a task without rows begins nothing
    stream_writer(options, SCHEMA, False).commit(first, 0)
    replay = [task([("a", b"a0"), ("a", b"a1")]), task([("b", b"b0")])]
    stream_writer(options, SCHEMA, False).commit(replay, 0)  # the driver died before Spark recorded batch 0
    for message in replay:
        assert sw.txn.status(message.txn_id) is TxnStatus.ABORTED
    older = [task([("c", b"stale")])]
    stream_writer(options, SCHEMA, False).commit(older, -1)
    assert sw.txn.status(older[0].txn_id) is TxnStatus.ABORTED
    stream_writer(options, SCHEMA, False).commit([task([("c", b"c0")])], 1)
    assert sorted(read_events(sw, stream, 4)) == [b"a0", b"a1", b"b0", b"c0"]
    assert json.loads(sw.meta.get(NAMESPACE, b"by-hand/published").value) == {"batch": 1, "checkpoint": None}
    assert staged_notes(sw) == [b"by-hand/published"]


def test_a_sink_id_reused_with_another_checkpoint_is_refused_not_dropped(
        server: ServerProcess, sw: Any, tmp_path: Path) -> None:
    # Finding 17: a new checkpoint starts again at batch 0, which the old query's marker says was
    # published: its batches would be dropped. The marker names its checkpoint; another is refused.
    stream = make_stream(sw)
    old = {"address": server.url, "stream": stream, "sinkId": "reused", "checkpointLocation": str(tmp_path / "old")}
    new = {**old, "checkpointLocation": str(tmp_path / "new")}
    early = stream_writer(new, SCHEMA, False)  # made before the old query published anything
    for batch_id in (0, 1):
        writer = stream_writer(old, SCHEMA, False)
        writer.commit([writer.write(arrow([("a", b"old%d" % batch_id)]))], batch_id)
    with pytest.raises(seaway.InvalidArgumentError, match="checkpoint"):
        stream_writer(new, SCHEMA, False)  # the new query's start
    staged = early.write(arrow([("a", b"new0")]))
    with pytest.raises(seaway.InvalidArgumentError, match="new sinkId"):
        early.commit([staged], 0)
    assert sw.txn.status(staged.txn_id) is TxnStatus.ABORTED
    restarted = stream_writer({**old, "checkpointLocation": str(tmp_path / "old") + "/"}, SCHEMA, False)
    restarted.commit([restarted.write(arrow([("a", b"old2")]))], 2)  # the old query, restarted
    assert sorted(read_events(sw, stream, 3)) == [b"old0", b"old1", b"old2"]
    assert staged_notes(sw) == [b"reused/published"]


def test_a_commit_that_cannot_complete_publishes_nothing_and_lost_tasks_are_cleaned_up(
        server: ServerProcess, sw: Any) -> None:
    stream = make_stream(sw)
    options = {"address": server.url, "stream": stream, "sinkId": "partial"}
    writer = stream_writer(options, SCHEMA, False)
    good = writer.write(arrow([("k", b"good")]))
    doomed = writer.write(arrow([("k", b"doomed")]))
    sw.txn.abort(doomed.txn_id)  # ended before the driver's commit (as a timeout would)
    with pytest.raises(seaway.TransactionNotInProgressError):
        stream_writer(options, SCHEMA, False).commit([good, doomed], 0)
    assert sw.txn.status(good.txn_id) is TxnStatus.ABORTED  # none of the batch, not half of it
    assert sw.meta.get(NAMESPACE, b"partial/published") is None
    # A task whose result was lost (its executor died): the next commit of the sink aborts it.
    lost = writer.write(arrow([("k", b"lost")]))
    kept = writer.write(arrow([("k", b"kept")]))
    stream_writer(options, SCHEMA, False).commit([kept], 0)
    assert sw.txn.status(lost.txn_id) is TxnStatus.ABORTED
    assert read_events(sw, stream, 1) == [b"kept"]
    assert not [i for i in sw.txn.list() if i.status is TxnStatus.IN_PROGRESS]
    assert staged_notes(sw) == [b"partial/published"]


def test_a_commit_aborts_the_other_attempts_of_its_batch_and_their_late_writes_stay_unread(
        server: ServerProcess, sw: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A staged transaction that no message names, of the batch being committed or an earlier one,
    # can never be published: the commit aborts it. Left to the next batch's commit (finding 15's
    # first answer), one staged by a driver killed in the last batch held readers back until its
    # timeout, since no next batch came. One still being written to (a speculative or zombie
    # attempt) is aborted too: its late writes are never read (finding 1).
    stream = make_stream(sw)
    options = {"address": server.url, "stream": stream, "sinkId": "zombies"}
    writer = stream_writer(options, SCHEMA, False)
    batch = {"id": "2"}
    monkeypatch.setattr(_write, "_task_batch_id", lambda: batch["id"])
    crashed = writer.write(arrow([("k", b"of batch 2, lost")]))
    batch["id"] = "3"
    killed = writer.write(arrow([("k", b"of batch 3, its driver killed")]))
    zombie = sw.txn.begin(600)  # an attempt of batch 3 still writing, staged as a task stages
    sw.meta.put(NAMESPACE, _write._staged_key("zombies", zombie.id), b"3")
    events = sw.streams.get(stream).writer()
    events.write_batch([b"zombie, early"], "k", txn=zombie).result()
    ahead = sw.txn.begin(600)  # a later batch's note (a late commit of batch 3 must leave it)
    sw.meta.put(NAMESPACE, _write._staged_key("zombies", ahead.id), b"4")
    kept = writer.write(arrow([("k", b"kept")]))
    stream_writer(options, SCHEMA, False).commit([kept], 3)
    for staged in (crashed.txn_id, killed.txn_id, zombie.id):
        assert sw.txn.status(staged) is TxnStatus.ABORTED
    assert sw.txn.status(ahead.id) is TxnStatus.IN_PROGRESS
    ahead.abort()
    with contextlib.suppress(seaway.SeawayError):  # the zombie's late write: refused, or never read
        events.write_batch([b"zombie, late"], "k", txn=zombie).result()
    events.close()
    batch["id"] = "4"
    later = writer.write(arrow([("k", b"of batch 4")]))
    stream_writer(options, SCHEMA, False).commit([later], 4)
    assert sorted(read_events(sw, stream, 2)) == [b"kept", b"of batch 4"]
    assert staged_notes(sw) == [b"zombies/published"]


def test_a_crashed_batch_write_is_cleaned_up(server: ServerProcess, sw: Any) -> None:
    # Finding 18: a batch write's staging notes were under a random sink id, found by nothing later.
    stream = make_stream(sw)
    options = {"address": server.url, "stream": stream}
    crashed = batch_writer(options, SCHEMA, False)
    timed_out = crashed.write(arrow([("k", b"crashed")]))  # its driver died before the commit
    sw.txn.abort(timed_out.txn_id)  # as its timeout does
    named = {**options, "sinkId": "nightly"}
    crashed_named = batch_writer(named, SCHEMA, False).write(arrow([("k", b"crashed too")]))
    # The named write run again: its commit aborts what the crashed run of it staged.
    rerun = batch_writer(named, SCHEMA, False)
    rerun.commit([rerun.write(arrow([("k", b"nightly")]))])
    assert sw.txn.status(crashed_named.txn_id) is TxnStatus.ABORTED
    # Any batch write's commit removes the notes of transactions that ended.
    other = batch_writer(options, SCHEMA, False)
    other.commit([other.write(arrow([("k", b"other")]))])
    assert sorted(read_events(sw, stream, 2)) == [b"nightly", b"other"]
    assert staged_notes(sw) == []


def test_the_writers_take_arrow_batches_whole_columns_at_a_time(server: ServerProcess, sw: Any) -> None:
    """Spark gives an Arrow writer its record batches as they are (no Row made per row in Python):
    the sink reads payload and key columns whole, across batches, in row order per key."""
    stream = make_stream(sw, segments=1)
    options = {"address": server.url, "stream": stream, "sinkId": "arrow"}
    writer = stream_writer(options, SCHEMA, False)
    assert isinstance(writer, DataSourceStreamArrowWriter)
    assert isinstance(batch_writer(options, SCHEMA, False), DataSourceArrowWriter)
    rows = [(f"k{i % 3}", b"e%d" % i) for i in range(7)]
    writer.commit([writer.write(arrow(rows[:4])), writer.write(arrow(rows[4:], per_batch=1))], 0)
    numbers = [int(e[1:]) for e in read_events(sw, stream, 7)]
    assert sorted(numbers) == list(range(7))
    for key in range(3):  # each key's rows in the order of the rows
        assert [n for n in numbers if n % 3 == key] == list(range(key, 7, 3))
    # A bad row is named by its number in the task, counted over the batches before it.
    with pytest.raises(seaway.InvalidArgumentError, match="row 3 of a task: the routing key column"):
        writer.write(arrow([("a", b"0"), ("b", b"1"), ("c", b"2"), (None, b"3")]))
    # No payload column: each row as a JSON object of all its columns, as Spark's rows give them.
    json_schema = StructType([StructField("user", StringType()), StructField("n", LongType()),
                              StructField("blob", BinaryType())])
    queue_options = {"address": server.url, "queue": "arrow-q", "sinkId": "arrow-q"}
    sw.queues.create("arrow-q")
    sw.queues.create_group("arrow-q", "all", size=1, strategy="ROUND_ROBIN")
    queue_writer = stream_writer(queue_options, json_schema, False)
    queue_writer.commit([queue_writer.write(arrow([("u1", 1, b"\x00"), ("u2", None, None), ("u3", 3, b"z")],
                                                  json_schema))], 0)
    with sw.queues.consumer("arrow-q", "all", 0) as consumer, sw.transaction() as tx:
        got = [json.loads(e.payload) for e in consumer.dequeue(tx, entries_max=10, timeout_s=5.0)]
    assert got == [{"user": "u1", "n": 1, "blob": "AA=="}, {"user": "u2", "n": None, "blob": None},
                   {"user": "u3", "n": 3, "blob": "eg=="}]


def test_bad_options_and_schemas_are_refused_before_any_task(server: ServerProcess, sw: Any) -> None:
    stream = make_stream(sw)
    base = {"address": server.url, "stream": stream, "sinkId": "s"}
    plain = "spark/plain" + uuid.uuid4().hex[:6]
    sw.streams.create(plain)
    sw.queues.create("q-bad")
    sw.queues.create_group("q-bad", "per-user", size=2, strategy="HASH", key="user")
    cases: list[tuple[dict[str, str], StructType, str]] = [
        ({**base, "sinkId": ""}, SCHEMA, "sinkId"),
        ({k: v for k, v in base.items() if k != "sinkId"}, SCHEMA, "sinkId"),
        ({**base, "stream": plain}, SCHEMA, "transactional"),
        ({**base, "routingKeyColumn": "nope"}, SCHEMA, "nope"),
        (base, StructType([StructField("routing_key", LongType())]), "routing key column"),
        (base, StructType([StructField("payload", LongType())]), "payload column"),
        ({**base, "txnTimeoutS": "0"}, SCHEMA, "txnTimeoutS"),
        ({**base, "colour": "red"}, SCHEMA, "colour"),
        ({"address": server.url, "queue": "q-bad", "sinkId": "s"}, StructType([StructField("payload", BinaryType())]),
         "user"),
    ]
    for options, schema, word in cases:
        with pytest.raises(seaway.InvalidArgumentError, match=word):
            stream_writer(options, schema, False)
    with pytest.raises(seaway.InvalidArgumentError, match="append"):
        stream_writer(base, SCHEMA, True)


# --- through Spark ---------------------------------------------------------------------------------


def test_a_batch_write_publishes_every_row_once(spark: Any, server: ServerProcess, sw: Any) -> None:
    stream = make_stream(sw)
    rows = [(f"user-{i % 7}", b"event-%d" % i) for i in range(300)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    df.write.format("seaway").mode("append").option("address", server.url).option("stream", stream).save()
    events = read_events(sw, stream, 300)
    assert checksum(events) == checksum([payload for _, payload in rows])
    assert not [i for i in sw.txn.list() if i.status is TxnStatus.IN_PROGRESS]
    assert staged_notes(sw) == []


def test_a_streaming_write_into_a_queue_keys_its_entries(spark: Any, server: ServerProcess, sw: Any,
                                                         tmp_path: Path) -> None:
    sw.queues.create("orders")
    sw.queues.create_group("orders", "per-user", size=2, strategy="HASH", key="user")
    source = tmp_path / "in"
    source.mkdir()
    for f in range(2):  # one file a batch
        lines = [f'{{"user": "u{i % 5}", "n": {f * 100 + i}}}' for i in range(100)]
        (source / f"{f}.json").write_text("\n".join(lines))
    df = (spark.readStream.schema("user string, n long").option("maxFilesPerTrigger", 1).json(str(source)))
    query = (df.writeStream.format("seaway").option("address", server.url).option("queue", "orders")
             .option("sinkId", "orders-sink").option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(60), "the query did not end"
        assert query.exception() is None
    finally:
        query.stop()
    seen: dict[int, set[str]] = {}
    numbers = []
    for consumer_id in range(2):
        with sw.queues.consumer("orders", "per-user", consumer_id) as consumer, sw.transaction() as tx:
            for entry in consumer.dequeue(tx, entries_max=1000, timeout_s=1.0):
                row = json.loads(entry.payload)  # the row as a JSON object
                seen.setdefault(consumer_id, set()).add(row["user"])
                numbers.append(row["n"])
    assert sorted(numbers) == list(range(200))
    assert not seen.get(0, set()) & seen.get(1, set())  # each user's entries went to one consumer
    assert json.loads(sw.meta.get(NAMESPACE, b"orders-sink/published").value) == {
        "batch": 1, "checkpoint": str(tmp_path / "ckpt")}


@pytest.mark.parametrize(("rows", "word"), [
    ([("k", b"ok"), (None, b"no key")], "routing key column 'routing_key' is null"),
    ([("k", b"x" * (2 << 20))], "PayloadTooLargeError"),
    ([("k", None)], "column payload is null"),
])
def test_bad_rows_fail_the_write_with_a_clear_error_and_leave_nothing(spark: Any, server: ServerProcess, sw: Any,
                                                                      rows: list[Any], word: str) -> None:
    stream = make_stream(sw, segments=1)
    df = spark.createDataFrame([("good", b"staged first"), *rows], SCHEMA).coalesce(1)
    with pytest.raises(Exception, match=word):
        df.write.format("seaway").mode("append").option("address", server.url).option("stream", stream).save()
    assert not [i for i in sw.txn.list() if i.status is TxnStatus.IN_PROGRESS]
    assert staged_notes(sw) == []
    group = sw.streams.get_or_create_reader_group("after-bad", stream)
    with group.reader("r") as reader:
        assert reader.read_next(timeout_s=0.3) is None  # the good row staged before the bad one: never visible
