"""The seaway source reading streams and logs, batch and streaming, against a real server.

Kept small (tens of events, availableNow triggers): every Spark test together shares a few minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import InvalidArgumentError
from seaway.server import ServerProcess
from seaway.spark._stream_read import stream_reader

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def sw(server: ServerProcess) -> Iterator[Any]:
    with seaway.connect(server.url) as client:
        client.streams.create_scope("t", exist_ok=True)
        yield client


def _event(key: str, n: int) -> bytes:
    return json.dumps({"k": key, "n": n}).encode()


def _write(stream: Any, keys: list[str], first: int, count: int) -> dict[bytes, tuple[str, int]]:
    """Write ``count`` events (numbered from ``first``, keys in turn); return payload -> (segment, LSN)."""
    where: dict[bytes, tuple[str, int]] = {}
    with stream.writer() as writer:
        for n in range(first, first + count):
            payload = _event(keys[n % len(keys)], n)
            ack = writer.write(payload, routing_key=keys[n % len(keys)]).result(timeout=30)
            where[payload] = (seaway.streams.segment_str(ack.segment), ack.lsn)
    return where


def _stream_query(spark: Any, server: ServerProcess, checkpoint: Path, **options: str) -> list[tuple[int, list[Any]]]:
    """Run a streaming read to its end (availableNow); return (batch id, rows) of each batch."""
    batches: list[tuple[int, list[Any]]] = []

    def collect(df: Any, batch_id: int) -> None:
        batches.append((batch_id, df.collect()))

    reader = spark.readStream.format("seaway").option("address", server.url)
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (reader.load().writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(90), "the query did not end"
    finally:
        query.stop()
    return batches


def test_a_batch_read_gives_each_event_once_with_its_segment_and_position(spark: Any, server: ServerProcess,
                                                                          sw: Any) -> None:
    stream = sw.streams.create("t/s", segments=2)
    where = _write(stream, [f"k{i}" for i in range(5)], 0, 40)
    rows = spark.read.format("seaway").option("address", server.url).option("stream", "t/s").load().collect()
    assert sorted((r.payload, (r.segment, r.position)) for r in rows) == sorted(where.items())
    assert len({r.segment for r in rows}) == 2
    assert all(r.routing_key is None and r.event_time is not None for r in rows)  # a plain stream keeps no key
    # The same range read again gives the same rows; an ending offset bounds it.
    again = spark.read.format("seaway").option("address", server.url).option("stream", "t/s").load().collect()
    assert sorted(r.payload for r in again) == sorted(r.payload for r in rows)


def test_a_stream_storing_keys_shows_them_in_the_routing_key_column(spark: Any, server: ServerProcess,
                                                                    sw: Any) -> None:
    stream = sw.streams.create("t/keyed", segments=2, store_routing_keys=True)
    with stream.writer() as writer:
        writer.write_batch([b"a", b"b"], "user-7").result(timeout=30)  # one entry: read as a run
        writer.write(b"c").result(timeout=30)
        writer.write(b"d", b"user-8").result(timeout=30)  # a bytes key shows as its UTF-8 text
    rows = spark.read.format("seaway").option("address", server.url).option("stream", "t/keyed").load().collect()
    assert sorted((r.payload, r.routing_key) for r in rows) == [
        (b"a", "user-7"), (b"b", "user-7"), (b"c", None), (b"d", "user-8")]


def test_available_now_across_a_scaling_reads_each_event_once_in_key_order(spark: Any, server: ServerProcess,
                                                                            sw: Any, tmp_path: Path) -> None:
    stream = sw.streams.create("t/s", segments=1)
    keys = [f"k{i}" for i in range(6)]
    _write(stream, keys, 0, 30)
    first = stream.current_segments()[0].id
    stream.split(first, 2)
    _write(stream, keys, 30, 30)
    batches = _stream_query(spark, server, tmp_path / "ckpt", stream="t/s", maxEventsPerTrigger="15")
    rows = [(batch_id, r) for batch_id, batch in batches for r in batch]
    assert sorted(json.loads(r.payload)["n"] for _, r in rows) == list(range(60))  # each event once
    assert max(len(batch) for _, batch in batches) <= 15  # the read limit
    for key in keys:  # per-key order: by batch, then position within the batch (one segment each)
        ordered = sorted((b, r.position, json.loads(r.payload)["n"]) for b, r in rows
                         if json.loads(r.payload)["k"] == key)
        assert [n for _, _, n in ordered] == sorted(n for _, _, n in ordered)
    predecessor_batches = {b for b, r in rows if r.segment == "0.0"}
    successor_batches = {b for b, r in rows if r.segment != "0.0"}
    assert max(predecessor_batches) < min(successor_batches)


def test_a_stream_scaled_while_the_query_runs_is_followed(spark: Any, server: ServerProcess, sw: Any,
                                                         tmp_path: Path) -> None:
    stream = sw.streams.create("t/live", segments=1)
    keys = [f"k{i}" for i in range(4)]
    batches: list[tuple[int, list[Any]]] = []
    query = (spark.readStream.format("seaway").option("address", server.url).option("stream", "t/live").load()
             .writeStream.foreachBatch(lambda df, batch_id: batches.append((batch_id, df.collect())))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="100 milliseconds")
             .start())
    try:
        _write(stream, keys, 0, 20)
        query.processAllAvailable()
        stream.split(stream.current_segments()[0].id, 2)  # under the running query
        _write(stream, keys, 20, 20)
        query.processAllAvailable()
        stream.merge([s.id for s in stream.current_segments()])
        _write(stream, keys, 40, 20)
        query.processAllAvailable()
    finally:
        query.stop()
    rows = [(batch_id, r) for batch_id, batch in batches for r in batch]
    assert sorted(json.loads(r.payload)["n"] for _, r in rows) == list(range(60))  # each event once
    for key in keys:  # per-key order across both scalings
        ordered = sorted((b, r.segment.split(".")[0], r.position, json.loads(r.payload)["n"]) for b, r in rows
                         if json.loads(r.payload)["k"] == key)
        assert [n for *_, n in ordered] == sorted(n for *_, n in ordered)
    assert {r.segment.split(".")[0] for _, r in rows} == {"0", "1", "2"}  # three generations read


def test_starting_offsets_latest_is_kept_across_a_restart(spark: Any, server: ServerProcess, sw: Any,
                                                          tmp_path: Path) -> None:
    stream = sw.streams.create("t/s", segments=2)
    _write(stream, ["a", "b"], 0, 5)
    options = {"stream": "t/s", "startingOffsets": "latest", "sourceId": "q1"}
    first = _stream_query(spark, server, tmp_path / "ckpt", **options)
    assert [r for _, b in first for r in b] == []  # nothing after latest yet
    _write(stream, ["a", "b"], 5, 3)
    # Restarted with the same checkpoint: no batch was planned, so the start is resolved again; the
    # position kept under sourceId holds, and the 3 events written since are read.
    batches = _stream_query(spark, server, tmp_path / "ckpt", **options)
    assert sorted(json.loads(r.payload)["n"] for _, b in batches for r in b) == [5, 6, 7]
    with pytest.raises(InvalidArgumentError, match="startingOffsets=latest needs the option sourceId"):
        stream_reader({"address": server.url, "stream": "t/s", "startingOffsets": "latest"}, None)  # type: ignore[arg-type]


def test_starting_at_a_stream_cut_or_a_time(spark: Any, server: ServerProcess, sw: Any) -> None:
    stream = sw.streams.create("t/s", segments=2)
    _write(stream, ["a", "b", "c"], 0, 6)
    cut = stream.tail()
    time.sleep(0.02)  # the server stamps events with its clock: the next ones are stamped later
    _write(stream, ["a", "b", "c"], 6, 4)

    def read(**options: str) -> list[Any]:
        reader = spark.read.format("seaway").option("address", server.url).option("stream", "t/s")
        for name, value in options.items():
            reader = reader.option(name, value)
        rows: list[Any] = reader.load().collect()
        return rows

    assert sorted(json.loads(r.payload)["n"] for r in read(startingOffsets=cut.to_json())) == [6, 7, 8, 9]
    everything = read()
    late = min(r.event_time for r in everything if json.loads(r.payload)["n"] == 6)
    stamp_ms = int(late.timestamp() * 1000)
    expected = sorted(json.loads(r.payload)["n"] for r in everything
                      if int(r.event_time.timestamp() * 1000) >= stamp_ms)
    assert 6 in expected and 0 not in expected
    assert sorted(json.loads(r.payload)["n"] for r in read(startingTimestamp=str(stamp_ms))) == expected
    assert sorted(json.loads(r.payload)["n"] for r in read(endingOffsets=cut.to_json())) == list(range(6))


def test_truncation_under_a_query_fails_it_or_is_skipped_and_counted(spark: Any, server: ServerProcess, sw: Any,
                                                                     tmp_path: Path) -> None:
    stream = sw.streams.create("t/s", segments=1)
    segment = stream.current_segments()[0].id
    where = _write(stream, ["a"], 0, 10)
    assert len(_stream_query(spark, server, tmp_path / "ckpt", stream="t/s")[0][1]) == 10
    where |= _write(stream, ["a"], 10, 10)
    cut_at = where[_event("a", 15)][1]  # events 10-14 go before the query reads them
    stream.truncate(seaway.StreamCut("t/s", {segment: cut_at}))
    with pytest.raises(Exception, match="failOnDataLoss=false") as failed:
        _stream_query(spark, server, tmp_path / "ckpt", stream="t/s")
    assert "segment 0.0 positions" in str(failed.value) and "truncated before the query read them" in str(failed.value)
    batches = _stream_query(spark, server, tmp_path / "ckpt", stream="t/s", failOnDataLoss="false")
    assert sorted(json.loads(r.payload)["n"] for _, b in batches for r in b) == list(range(15, 20))


def test_a_log_is_read_as_one_part(spark: Any, server: ServerProcess, sw: Any, tmp_path: Path) -> None:
    log = sw.logs.create("clicks")
    lsns = log.append_batch([b"c%d" % i for i in range(12)])
    rows = spark.read.format("seaway").option("address", server.url).option("log", "clicks").load().collect()
    assert sorted((r.position, r.payload) for r in rows) == [(lsn, b"c%d" % i) for i, lsn in enumerate(lsns)]
    assert {r.segment for r in rows} == {str(log.id)}
    batches = _stream_query(spark, server, tmp_path / "ckpt", log="clicks", maxEventsPerTrigger="5")
    assert [len(b) for _, b in batches] == [5, 5, 2]


def test_a_user_schema_decodes_json_payloads(spark: Any, server: ServerProcess, sw: Any) -> None:
    stream = sw.streams.create("t/s", segments=1)
    with stream.writer() as writer:
        for payload in (b'{"user": 7, "page": "/a"}', b'{"user": "x"}', b"not json", b'{"page": "/b"}'):
            writer.write(payload).result(timeout=30)
    rows = (spark.read.format("seaway").schema("user long, page string, position long")
            .option("address", server.url).option("stream", "t/s").load().collect())
    assert sorted(((r.user, r.page) for r in rows), key=str) == sorted(
        [(7, "/a"), (None, None), (None, None), (None, "/b")], key=str)
    assert all(r.position >= 1 for r in rows)


def test_a_transactional_stream_shows_committed_events_and_stops_at_one_in_progress(
        spark: Any, server: ServerProcess, sw: Any, tmp_path: Path) -> None:
    stream = sw.streams.create("t/tx", segments=1, transactional=True)
    with stream.writer() as writer:
        writer.write(b"plain-1").result(timeout=30)
        with sw.transaction() as tx:
            writer.write(b"committed", "k", txn=tx)
        aborted = sw.transaction()
        writer.write(b"aborted", txn=aborted).result(timeout=30)
        aborted.abort()
        open_tx = sw.transaction()
        writer.write(b"open", txn=open_tx).result(timeout=30)
        writer.write(b"plain-2").result(timeout=30)

        def payloads(batches: list[tuple[int, list[Any]]]) -> list[bytes]:
            return [r.payload for _, b in batches for r in b]

        rows = spark.read.format("seaway").option("address", server.url).option("stream", "t/tx").load().collect()
        assert sorted((r.payload, r.routing_key) for r in rows) == [  # one snapshot's view; keys kept
            (b"committed", "k"), (b"plain-1", None), (b"plain-2", None)]
        # A stream read stops at the open transaction's first event (its stable position) ...
        assert sorted(payloads(_stream_query(spark, server, tmp_path / "ckpt", stream="t/tx"))) == \
            [b"committed", b"plain-1"]
        open_tx.commit()
        # ... and reads on from there once it commits: nothing of it is skipped.
        assert payloads(_stream_query(spark, server, tmp_path / "ckpt", stream="t/tx")) == [b"open", b"plain-2"]


def test_bad_read_options_are_refused(server: ServerProcess, sw: Any) -> None:
    sw.streams.create("t/s")
    base = {"address": server.url, "stream": "t/s"}
    cases: list[tuple[dict[str, str], str]] = [
        ({"maxEventsPerTrigger": "0"}, "option maxEventsPerTrigger must be in"),
        ({"startingOffsets": "earliest", "startingTimestamp": "5"}, "not both"),
        ({"endingOffsets": "latest"}, "endingOffsets is for batch reads"),
    ]
    for extra, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            stream_reader(base | extra, None)  # type: ignore[arg-type]
    reader: Any = stream_reader(base | {"startingOffsets": '{"stream": "t/other", "positions": {}}'},
                                               None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="not an offset of stream 't/s'"):
        reader.initialOffset()
