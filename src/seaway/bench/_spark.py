"""``seaway bench spark``: the seaway Spark source and sink against Spark's own Parquet source and
sink, and their micro-batch latency against Spark's own, in the same run.

Writes ``events`` events of ``event_bytes`` to a stream of ``segments`` segments through a server
(started for the run, or ``--address``), and the same payloads to a Parquet file. Then, in one local
Spark session (``local[2]``):

- **read throughput**: a batch read of the whole stream into Spark's ``noop`` sink, ``rounds`` times
  after one warm-up read; the best round counts. The reference is the same with ``spark.read.parquet``.
- **source to sink**: one ``availableNow`` query reads the whole stream through the seaway source and
  writes it through the seaway sink into a new transactional stream (exactly once: the events that
  arrived are counted); events/s from the query's start to its end. The reference is the same
  events through Spark's Parquet stream source into its Parquet sink. Each side runs a small
  warm-up query first (its time is reported: it includes starting the Python processes Spark keeps
  for a session's streaming writes), then ``rounds`` timed queries, alternating with the other
  side; the best counts, as for reads.
- **micro-batch latency**: a streaming query from the stream's tail into the ``noop`` sink while a
  writer adds ``paced_events_per_s`` events a second; the figures are the quantiles of Spark's own
  ``triggerExecution`` duration over the batches that read something (``query.recentProgress``),
  with the median of each of its parts (``durationMs``). The references are the same query from a
  Python source with no store behind it (what Spark itself costs a Python source's micro-batch)
  and from Spark's built-in ``rate`` source.

The ratios (seaway over reference) are the figures that matter on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._invariant import invariant
from seaway.bench._log import machine
from seaway.errors import InvalidArgumentError
from seaway.server import ServerProcess

WRITE_BATCH_EVENTS = 500
WARM_UP_EVENTS = 5_000
"""Events of the source-to-sink warm-up query of each side."""
TARGETS = {"source_per_s": 100_000, "source_to_sink_ratio": 0.5, "microbatch_p50_ms": 500}
"""Issue 23: the source-to-sink query at half of Parquet -> Parquet's rate in the same run, at least."""
QUERY_WAIT_S = 120.0


@dataclass(frozen=True)
class SparkBenchConfig:
    events: int = 200_000
    event_bytes: int = 1024
    segments: int = 2
    rounds: int = 2
    """Timed reads of each side after one warm-up read; the best counts."""
    paced_events_per_s: int = 200
    paced_s: float = 10.0
    """How long the latency run writes (its batches are the samples)."""
    address: str | None = None
    """A running server (``seaway://host:port``) instead of one started for the run."""

    def __post_init__(self) -> None:
        if min(self.events, self.event_bytes, self.segments, self.rounds, self.paced_events_per_s) < 1 \
                or not self.paced_s > 0:
            raise InvalidArgumentError("the spark bench's sizes, rounds, rate and length must be positive")


@contextmanager
def _server(address: str | None, tmp: Path) -> Iterator[str]:
    if address is not None:
        yield address
        return
    with ServerProcess(tmp / "server") as server:
        yield server.url


def _write_stream(sw: Any, name: str, config: SparkBenchConfig) -> bytes:
    """Write the events (WRITE_BATCH_EVENTS per write, keys in turn so that they spread over the
    segments); return their payload (all alike) for the Parquet side."""
    stream = sw.streams.create(name, segments=config.segments)
    payload = bytes(range(256)) * (config.event_bytes // 256) + b"x" * (config.event_bytes % 256)
    with stream.writer() as writer:
        pending = []
        for i, start in enumerate(range(0, config.events, WRITE_BATCH_EVENTS)):
            count = min(WRITE_BATCH_EVENTS, config.events - start)
            pending.append(writer.write_batch([payload] * count, routing_key=f"k{i}"))
            if len(pending) >= 16:
                pending.pop(0).result(timeout=QUERY_WAIT_S)
        for future in pending:
            future.result(timeout=QUERY_WAIT_S)
    return payload


def _write_parquet(path: Path, payload: bytes, config: SparkBenchConfig) -> None:
    """The same events as the source's default columns, in one Parquet file."""
    import pyarrow as pa  # type: ignore[import-untyped]  # noqa: PLC0415 - the spark extra's, on use
    import pyarrow.parquet as pq  # type: ignore[import-untyped]  # noqa: PLC0415

    n = config.events
    table = pa.table({"routing_key": pa.nulls(n, pa.string()),
                      "payload": pa.array([payload] * n, pa.binary()),
                      "event_time": pa.array([int(time.time() * 1e6)] * n, pa.timestamp("us", tz="UTC")),
                      "segment": pa.array(["0.0"] * n, pa.string()),
                      "position": pa.array(range(1, n + 1), pa.int64())})
    pq.write_table(table, path, row_group_size=64_000)


def _best_read_s(load: Any, rounds: int) -> float:
    """The best time of ``rounds`` full reads into the noop sink, after one warm-up read."""
    times = []
    for i in range(rounds + 1):
        started = time.perf_counter()
        load().write.format("noop").mode("overwrite").save()
        if i:  # the first read warms up the Python workers and the JVM
            times.append(time.perf_counter() - started)
    return min(times)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _latency_samples(query: Any, config: SparkBenchConfig,
                     write: Callable[[threading.Event], None] | None = None) -> list[dict[str, Any]]:
    """The progress of the batches that read rows while the query ran ``paced_s`` (with ``write``
    adding events in a thread meanwhile), but the first such batch (it starts the Python workers)
    when there are others."""
    stop = threading.Event()
    try:
        deadline = time.monotonic() + QUERY_WAIT_S
        while not query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)  # the query's first trigger: not a sample
        writer = None if write is None else threading.Thread(target=write, args=(stop,), daemon=True)
        if writer is not None:
            writer.start()
        time.sleep(config.paced_s)
        stop.set()
        if writer is not None:
            writer.join(QUERY_WAIT_S)
            query.processAllAvailable()
        progress = list(query.recentProgress)
    finally:
        query.stop()
    samples = [p for p in progress if p["numInputRows"] > 0]
    return samples[1:] if len(samples) > 1 else samples


def _seaway_latency(spark: Any, sw: Any, address: str, name: str, config: SparkBenchConfig,
                    checkpoint: Path) -> list[dict[str, Any]]:
    """Micro-batches from the stream's tail into the ``noop`` sink while a writer adds
    ``paced_events_per_s`` events a second."""
    stream = sw.streams.get(name)
    query = (spark.readStream.format("seaway").option("address", address).option("stream", name)
             .option("startingOffsets", "latest").option("sourceId", f"bench-{uuid.uuid4().hex}").load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start())

    def write(stop: threading.Event) -> None:
        interval_s = 1.0 / config.paced_events_per_s
        with stream.writer() as writer:
            due = time.monotonic()
            while not stop.is_set():
                writer.write(b"p" * config.event_bytes, routing_key=f"k{int(due * 1000) % 97}")
                due += interval_s
                time.sleep(max(0.0, due - time.monotonic()))

    return _latency_samples(query, config, write)


def _reference_latency(spark: Any, config: SparkBenchConfig, checkpoint: Path) -> list[dict[str, Any]]:
    """The same micro-batches (rows a second, bytes, partitions) from a Python source with no store
    behind it (:mod:`seaway.bench._spark_source`): Spark's own cost of a micro-batch."""
    from seaway.bench._spark_source import PacedSource  # noqa: PLC0415 - pyspark is an extra

    spark.dataSource.register(PacedSource)
    query = (spark.readStream.format(PacedSource.name()).option("rate", str(config.paced_events_per_s))
             .option("eventBytes", str(config.event_bytes)).option("partitions", str(config.segments)).load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start())
    return _latency_samples(query, config)


def _rate_latency(spark: Any, config: SparkBenchConfig, checkpoint: Path) -> list[dict[str, Any]]:
    """The same with Spark's built-in ``rate`` source (the JVM only, no Python source process)."""
    query = (spark.readStream.format("rate").option("rowsPerSecond", str(config.paced_events_per_s))
             .option("numPartitions", str(config.segments)).load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start())
    return _latency_samples(query, config)


def _latency_figures(prefix: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """p50 and p99 of ``triggerExecution``, and the median of each of its parts (``durationMs``)."""
    if not samples:
        raise InvalidArgumentError("no micro-batch read events in a latency run: give a longer --paced-s")
    total = [float(p["durationMs"]["triggerExecution"]) for p in samples]
    parts = sorted({k for p in samples for k in p["durationMs"]} - {"triggerExecution"})
    return {f"{prefix}_p50_ms": round(statistics.median(total), 1),
            f"{prefix}_p99_ms": round(_quantile(total, 0.99), 1),
            f"{prefix}_parts_p50_ms": {k: round(statistics.median(float(p["durationMs"].get(k, 0)) for p in samples))
                                       for k in parts}}


def measure_source_to_sink(spark: Any, sw: Any, address: str, stream: str, config: SparkBenchConfig,
                           tmp: Path) -> float:
    """Events/s of one ``availableNow`` query that reads the whole stream through the seaway source
    and writes it through the seaway sink into a new transactional stream, start to end. The events
    that arrived are counted: exactly ``events``, or :class:`InvariantViolation`."""
    target = f"bench/spark-sink-{uuid.uuid4().hex[:8]}"
    sw.streams.create(target, segments=config.segments, transactional=True)
    started = time.perf_counter()
    # Only the payload goes on: the source has no routing key to give (streams do not keep them),
    # so the sink spreads the events over the key space.
    query = (spark.readStream.format("seaway").option("address", address).option("stream", stream).load()
             .select("payload").writeStream.format("seaway").option("address", address).option("stream", target)
             .option("sinkId", f"bench-{uuid.uuid4().hex}").option("checkpointLocation", str(tmp / "to-sink"))
             .trigger(availableNow=True).start())
    _await(query)
    elapsed_s = time.perf_counter() - started
    arrived = spark.read.format("seaway").option("address", address).option("stream", target).load().count()
    invariant(arrived == config.events, f"source to sink: {arrived} events arrived of {config.events} written")
    sw.streams.get(target).seal()
    sw.streams.get(target).delete()
    return config.events / elapsed_s


def measure_parquet_to_parquet(spark: Any, parquet_dir: Path, config: SparkBenchConfig, tmp: Path) -> float:
    """The reference: the same events through Spark's Parquet stream source into its Parquet sink
    (one ``availableNow`` query, start to end; the rows written are counted)."""
    out = tmp / "parquet-out"
    schema = spark.read.parquet(str(parquet_dir)).schema
    started = time.perf_counter()
    query = (spark.readStream.schema(schema).parquet(str(parquet_dir))
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp / "parquet-ckpt")).trigger(availableNow=True).start())
    _await(query)
    elapsed_s = time.perf_counter() - started
    arrived = spark.read.parquet(str(out)).count()
    invariant(arrived == config.events, f"parquet to parquet: {arrived} rows arrived of {config.events} written")
    return config.events / elapsed_s


def _await(query: Any) -> None:
    try:
        if not query.awaitTermination(QUERY_WAIT_S):
            raise InvalidArgumentError(f"the bench's query did not end within {QUERY_WAIT_S:.0f} s: fewer --events")
    finally:
        query.stop()


def run_spark_bench(config: SparkBenchConfig) -> dict[str, Any]:
    from seaway.spark import session  # noqa: PLC0415 - pyspark is an extra: loaded only for this bench

    name = f"bench/spark-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="seaway-bench-spark-") as tmp_dir:
        tmp = Path(tmp_dir)
        with _server(config.address, tmp) as address, seaway.connect(address) as sw:
            sw.streams.create_scope("bench", exist_ok=True)
            started = time.perf_counter()
            payload = _write_stream(sw, name, config)
            write_s = time.perf_counter() - started
            parquet_dir = tmp / "parquet"
            parquet_dir.mkdir()
            _write_parquet(parquet_dir / "events.parquet", payload, config)
            spark = session("seaway-bench-spark")
            source_s = _best_read_s(lambda: spark.read.format("seaway").option("address", address)
                                    .option("stream", name).load(), config.rounds)
            parquet_s = _best_read_s(lambda: spark.read.parquet(str(parquet_dir)), config.rounds)
            warm = SparkBenchConfig(events=min(config.events, WARM_UP_EVENTS), event_bytes=config.event_bytes,
                                    segments=config.segments)
            warm_name = f"bench/spark-warm-{uuid.uuid4().hex[:8]}"
            _write_stream(sw, warm_name, warm)
            warm_parquet = tmp / "parquet-warm"
            warm_parquet.mkdir()
            _write_parquet(warm_parquet / "events.parquet", payload, warm)
            (tmp / "warm").mkdir()
            warm_up_s = warm.events / measure_source_to_sink(spark, sw, address, warm_name, warm, tmp / "warm")
            parquet_warm_up_s = warm.events / measure_parquet_to_parquet(spark, warm_parquet, warm, tmp / "warm")
            sw.streams.get(warm_name).seal()
            sw.streams.get(warm_name).delete()
            to_sink_per_s = parquet_to_sink_per_s = 0.0
            for i in range(config.rounds):
                (tmp / f"round-{i}").mkdir()
                to_sink_per_s = max(to_sink_per_s, measure_source_to_sink(spark, sw, address, name, config,
                                                                          tmp / f"round-{i}"))
                parquet_to_sink_per_s = max(parquet_to_sink_per_s, measure_parquet_to_parquet(
                    spark, parquet_dir, config, tmp / f"round-{i}"))
            samples = _seaway_latency(spark, sw, address, name, config, tmp / "checkpoint")
            latency = _latency_figures("microbatch", samples)
            reference = _latency_figures("microbatch_reference", _reference_latency(spark, config,
                                                                                    tmp / "reference"))
            rate = _latency_figures("microbatch_rate_source", _rate_latency(spark, config, tmp / "rate"))
            sw.streams.get(name).seal()
            sw.streams.get(name).delete()
    source_per_s = config.events / source_s
    parquet_per_s = config.events / parquet_s
    return {
        "events": config.events, "event_bytes": config.event_bytes, "segments": config.segments,
        "write_per_s": round(config.events / write_s),
        "source_per_s": round(source_per_s),
        "parquet_source_per_s": round(parquet_per_s),
        "source_ratio_to_parquet": round(source_per_s / parquet_per_s, 3),
        "source_to_sink_per_s": round(to_sink_per_s),
        "parquet_source_to_sink_per_s": round(parquet_to_sink_per_s),
        "source_to_sink_ratio": round(to_sink_per_s / parquet_to_sink_per_s, 3),
        "source_to_sink_warm_up_s": round(warm_up_s, 2),
        "parquet_source_to_sink_warm_up_s": round(parquet_warm_up_s, 2),
        "microbatches": len(samples),
        **latency,
        **reference,
        "microbatch_ratio_to_reference": round(latency["microbatch_p50_ms"]
                                               / max(reference["microbatch_reference_p50_ms"], 1.0), 2),
        **rate,
        "targets": TARGETS,
        **machine(),
    }


def add_spark_bench_parser(kinds: Any) -> None:
    bench = kinds.add_parser("spark", help="the Spark source's read throughput and micro-batch latency against "
                                           "Spark's Parquet source (needs seaway[spark])")
    bench.add_argument("--events", type=int, default=200_000, help="1 KB events to write and read (default 200,000)")
    bench.add_argument("--event-bytes", type=int, default=1024)
    bench.add_argument("--segments", type=int, default=2, help="the stream's segments (default 2)")
    bench.add_argument("--rounds", type=int, default=2, help="timed reads of each side; the best counts (default 2)")
    bench.add_argument("--paced-events-per-s", type=int, default=200, help="the latency run's write rate")
    bench.add_argument("--paced-s", type=float, default=10.0, help="the latency run's length (default 10 s)")
    bench.add_argument("--address", help="use this server (seaway://host:port) instead of starting one")
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def run_spark_bench_command(args: argparse.Namespace) -> dict[str, Any]:
    return run_spark_bench(SparkBenchConfig(events=args.events, event_bytes=args.event_bytes, segments=args.segments,
                                            rounds=args.rounds, paced_events_per_s=args.paced_events_per_s,
                                            paced_s=args.paced_s, address=args.address))
