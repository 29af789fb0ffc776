"""``seaway bench log --remote``: producers and consumers in separate processes against one server.

Three producer processes each append 1 KB records in batches of 500 to a log of their own (default
durability: an fsync per batch), while three consumer processes each tail one of those logs. Every
payload starts with its send time, so consumers measure end-to-end latency. The same workload then
runs embedded (threads in one process, no network) as the reference from the same run, and once more
remotely with the producers paced to a fixed total rate, for the latency at a moderate load.

Worker processes run ``python -m seaway.bench._worker ROLE ...``; each prints one JSON line with
what it measured. The clock starts once every worker is running (consumers tailing, producers
connected), so the start of Python processes is not measured. Consumers read record runs, as bulk
consumers do. Paced producers send at evenly spread phases: together, one evenly paced stream.
"""

from __future__ import annotations

import base64
import os
import struct
import sys
import tempfile
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._alloc import keep_large_buffers_in_heap
from seaway._progress import Progress
from seaway.bench import _workers as workers
from seaway.bench._log import cpu_jiffies, machine, steal_pct
from seaway.log import LSN_MAX, RecordRun
from seaway.server import ServerProcess

_STAMP = struct.Struct(">Q")


@dataclass(frozen=True)
class RemoteBenchConfig:
    producers: int = 3
    batches: int = 100
    """Batches of ``batch_records`` each producer sends in the full-speed run."""
    batch_records: int = 500
    record_bytes: int = 1024
    in_flight_batches: int = 4
    paced_events_per_s: int = 20_000
    """Total rate of all producers in the paced run."""
    paced_s: float = 5.0
    address: str | None = None
    """Use this server instead of starting one."""


def _batch(record_bytes: int, count: int) -> list[bytes]:
    stamp = _STAMP.pack(time.time_ns())
    pad = b"\0" * (record_bytes - len(stamp))
    return [stamp + pad] * count


def produce(log: Any, batches: int, batch_records: int, record_bytes: int, in_flight: int,
            events_per_s: float | None, ready: Callable[[], None] = lambda: None,
            phase: float = 0.0) -> dict[str, float]:
    """Append ``batches`` batches, keeping up to ``in_flight`` in flight, once ``ready`` returns.

    Paced, if a rate is given: batch ``n`` is sent ``(n + phase)`` batch intervals after the start, so
    producers given phases ``k / producers`` together send one evenly spaced stream."""
    ready()
    started = time.time()
    pending: list[Future[range]] = []
    for n in range(batches):
        if events_per_s:
            due = started + (n + phase) * batch_records / events_per_s
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
        pending.append(log.append_batch_async(_batch(record_bytes, batch_records)))
        if len(pending) >= in_flight:
            pending.pop(0).result(60)
    for future in pending:
        future.result(60)
    return {"started": started, "ended": time.time(), "records": batches * batch_records}


def consume(reader_of: Callable[..., Any], log: Any, records: int,
            ready: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Tail ``log`` until ``records`` records arrived; latencies in ms from the stamps. ``ready`` is
    called once the reader is tailing.

    A bulk consumer: its reader hands out record runs (a stored batch each), not a ``Record`` each;
    every record's latency is still measured from its own stamp."""
    latencies: list[float] = []
    first = last = 0.0
    unpack = _STAMP.unpack_from
    with reader_of(runs=True) as reader:
        reader.start_reading(log, 1, LSN_MAX)
        ready()
        while len(latencies) < records:
            items = reader.read(2000, timeout_s=60)
            if not items:
                raise RuntimeError(f"consumer starved after {len(latencies)} of {records} records")
            now_ns = time.time_ns()
            if not first:
                first = now_ns / 1e9
            for item in items:
                if type(item) is RecordRun:
                    # Every record's own stamp, read in C; a batch's records share one, so count them.
                    for (stamp,), count in Counter(map(unpack, item.payloads)).items():
                        latencies.extend([(now_ns - stamp) / 1e6] * count)
            last = now_ns / 1e9
    return {"first": first, "last": last, "records": len(latencies), "latencies_ms": latencies}


def pack_latencies(latencies_ms: list[float]) -> str:
    """A consumer's latencies for its JSON line: 8 bytes a record as base64, not JSON text, so cheap
    to write while other workers still run."""
    return base64.b64encode(array("d", latencies_ms).tobytes()).decode()


def unpack_latencies(packed: str) -> list[float]:
    return array("d", base64.b64decode(packed)).tolist()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _summary(produced: list[dict[str, Any]], consumed: list[dict[str, Any]]) -> dict[str, float]:
    start = min(p["started"] for p in produced)
    records = sum(p["records"] for p in produced)
    latencies = [x for c in consumed for x in c["latencies_ms"]]
    return {
        "produced_per_s": round(records / (max(p["ended"] for p in produced) - start)),
        "consumed_per_s": round(sum(c["records"] for c in consumed) / (max(c["last"] for c in consumed) - start)),
        "latency_p50_ms": round(_percentile(latencies, 0.5), 2),
        "latency_p99_ms": round(_percentile(latencies, 0.99), 2),
    }


def _remote_round(url: str, config: RemoteBenchConfig, tag: str, batches: int,
                  rate_per_producer: float) -> tuple[dict[str, float], float | None]:
    """The round's figures, and the share of CPU time other guests stole meanwhile (%)."""
    names = [f"bench-{tag}-{os.getpid()}-{time.time_ns()}-{p}" for p in range(config.producers)]
    with seaway.connect(url) as sw:
        for name in names:
            sw.logs.create(name)
    records = batches * config.batch_records
    python = [sys.executable, "-m", "seaway.bench._worker"]
    consumers = [workers.start([*python, "consume", url, name, str(records)], waits_for_go=False) for name in names]
    producers = [workers.start([*python, "produce", url, name, str(batches), str(config.batch_records),
                                str(config.record_bytes), str(config.in_flight_batches), str(rate_per_producer),
                                str(k / len(names))]) for k, name in enumerate(names)]
    with workers.killed_at_exit(consumers + producers):
        # Every consumer is tailing and every producer connected before any producer sends.
        workers.await_ready(consumers + producers)
        started = cpu_jiffies()
        workers.go(producers)
        results = [workers.result(proc) for proc in producers + consumers]
        for result in results:
            if "latencies_ms" in result:
                result["latencies_ms"] = unpack_latencies(result["latencies_ms"])
        stolen = steal_pct(started, cpu_jiffies())
    return _summary(results[: len(producers)], results[len(producers):]), stolen


def _embedded_round(config: RemoteBenchConfig) -> tuple[dict[str, float], float | None]:
    """The same producers and consumers as threads over the embedded store: no network, no processes."""
    records = config.batches * config.batch_records
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, seaway.open(Path(tmp)) as sw:
        logs = [sw.logs.create(f"bench-{p}") for p in range(config.producers)]
        produced: list[dict[str, Any]] = []
        consumed: list[dict[str, Any]] = []
        threads = [threading.Thread(target=lambda log=log: consumed.append(consume(sw.logs.reader, log, records)))
                   for log in logs]
        threads += [threading.Thread(target=lambda log=log: produced.append(produce(
            log, config.batches, config.batch_records, config.record_bytes, config.in_flight_batches, None)))
            for log in logs]
        started = cpu_jiffies()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stolen = steal_pct(started, cpu_jiffies())
    if len(produced) != len(logs) or len(consumed) != len(logs):
        raise RuntimeError("an embedded benchmark thread failed")
    return _summary(produced, consumed), stolen


def run_remote_bench(config: RemoteBenchConfig) -> dict[str, Any]:
    keep_large_buffers_in_heap()  # for the embedded reference, as in the server and the workers
    paced_batches = max(1, round(config.paced_events_per_s * config.paced_s / config.batch_records / config.producers))
    rate = config.paced_events_per_s / config.producers
    with Progress(3, "remote, full speed") as progress:
        if config.address:
            full, full_steal = _remote_round(config.address, config, "full", config.batches, 0)
            progress.advance(label=f"remote, paced at {config.paced_events_per_s} events/s")
            paced, paced_steal = _remote_round(config.address, config, "paced", paced_batches, rate)
            where = config.address
        else:
            with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, \
                    ServerProcess(Path(tmp) / "data") as server:
                full, full_steal = _remote_round(server.url, config, "full", config.batches, 0)
                progress.advance(label=f"remote, paced at {config.paced_events_per_s} events/s")
                paced, paced_steal = _remote_round(server.url, config, "paced", paced_batches, rate)
                where = f"{server.url} (started for this run)"
        progress.advance(label="embedded reference")
        embedded, embedded_steal = _embedded_round(config)
        progress.advance(label="done")
    return {
        "benchmark": "log --remote",
        "server": where,
        "producers": config.producers,
        "consumers": config.producers,
        "records_per_producer": config.batches * config.batch_records,
        "record_bytes": config.record_bytes,
        "batch_records": config.batch_records,
        "durability": "sync (fsync per batch)",
        **full,
        "steal_pct": full_steal,
        "paced_events_per_s": config.paced_events_per_s,
        "paced_latency_p50_ms": paced["latency_p50_ms"],
        "paced_latency_p99_ms": paced["latency_p99_ms"],
        "paced_steal_pct": paced_steal,
        "paced_consumed_per_s": paced["consumed_per_s"],
        "embedded_produced_per_s": embedded["produced_per_s"],
        "embedded_consumed_per_s": embedded["consumed_per_s"],
        "embedded_latency_p50_ms": embedded["latency_p50_ms"],
        "embedded_latency_p99_ms": embedded["latency_p99_ms"],
        "embedded_steal_pct": embedded_steal,
        "produced_ratio_to_embedded": round(full["produced_per_s"] / embedded["produced_per_s"], 3),
        "consumed_ratio_to_embedded": round(full["consumed_per_s"] / embedded["consumed_per_s"], 3),
        "targets": {"produced_per_s": 100_000, "consumed_per_s": 100_000, "paced_latency_p50_ms": 10},
        "machine": machine(),
    }

