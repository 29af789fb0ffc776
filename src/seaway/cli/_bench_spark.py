"""``seaway bench spark``: the seaway Spark source against Spark's own Parquet source, in the same run.

Writes ``events`` events of ``event_bytes`` to a stream of ``segments`` segments through a server
(started for the run, or ``--address``), and the same payloads to a Parquet file. Then, in one local
Spark session (``local[2]``):

- **throughput**: a batch read of the whole stream into Spark's ``noop`` sink, ``rounds`` times after
  one warm-up read; the best round counts. The reference is the same with ``spark.read.parquet``.
- **micro-batch latency**: a streaming query from the stream's tail into the ``noop`` sink while a
  writer adds ``paced_events_per_s`` events a second; the figures are the quantiles of Spark's own
  ``triggerExecution`` duration over the batches that read something (``query.recentProgress``).

The ratio (source over Parquet) is the figure that matters on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._errors import InvalidArgumentError
from seaway.cli._bench_log import machine
from seaway.server import ServerProcess

WRITE_BATCH_EVENTS = 500
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


def _microbatch_ms(spark: Any, sw: Any, address: str, name: str, config: SparkBenchConfig,
                   checkpoint: Path) -> list[float]:
    """``triggerExecution`` durations of the batches that read events while a writer adds
    ``paced_events_per_s`` events a second for ``paced_s``."""
    stream = sw.streams.get(name)
    query = (spark.readStream.format("seaway").option("address", address).option("stream", name)
             .option("startingOffsets", "latest").option("sourceId", f"bench-{uuid.uuid4().hex}").load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start())
    stop = threading.Event()

    def write() -> None:
        interval_s = 1.0 / config.paced_events_per_s
        with stream.writer() as writer:
            due = time.monotonic()
            while not stop.is_set():
                writer.write(b"p" * config.event_bytes, routing_key=f"k{int(due * 1000) % 97}")
                due += interval_s
                time.sleep(max(0.0, due - time.monotonic()))

    try:
        deadline = time.monotonic() + QUERY_WAIT_S
        while not query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)  # the first (empty) batch starts the Python workers: not a sample
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        time.sleep(config.paced_s)
        stop.set()
        writer.join(QUERY_WAIT_S)
        query.processAllAvailable()
        progress = list(query.recentProgress)
    finally:
        query.stop()
    return [float(p["durationMs"]["triggerExecution"]) for p in progress if p["numInputRows"] > 0]


def measure_source_to_sink(spark: Any, address: str, stream: str, config: SparkBenchConfig) -> float | None:
    """Hook: events/s of a streaming query from this stream into a seaway stream sink. Returns
    None until the sink is built (the figure ``source_to_sink_per_s`` is then added here)."""
    return None


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
            _write_parquet(tmp / "events.parquet", payload, config)
            spark = session("seaway-bench-spark")
            source_s = _best_read_s(lambda: spark.read.format("seaway").option("address", address)
                                    .option("stream", name).load(), config.rounds)
            parquet_s = _best_read_s(lambda: spark.read.parquet(str(tmp / "events.parquet")), config.rounds)
            latencies = _microbatch_ms(spark, sw, address, name, config, tmp / "checkpoint")
            to_sink = measure_source_to_sink(spark, address, name, config)
            sw.streams.get(name).seal()
            sw.streams.get(name).delete()
    if not latencies:
        raise InvalidArgumentError("no micro-batch read events in the latency run: give a longer --paced-s")
    source_per_s = config.events / source_s
    parquet_per_s = config.events / parquet_s
    return {
        "events": config.events, "event_bytes": config.event_bytes, "segments": config.segments,
        "write_per_s": round(config.events / write_s),
        "source_per_s": round(source_per_s),
        "parquet_source_per_s": round(parquet_per_s),
        "source_ratio_to_parquet": round(source_per_s / parquet_per_s, 3),
        "microbatches": len(latencies),
        "microbatch_p50_ms": round(statistics.median(latencies), 1),
        "microbatch_p99_ms": round(_quantile(latencies, 0.99), 1),
        "source_to_sink_per_s": None if to_sink is None else round(to_sink),
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
