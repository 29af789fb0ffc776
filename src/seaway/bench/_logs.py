"""``seaway bench logs``: what the layers above need of the log layer, each against a reference run
in the same process.

- Many logs: one-record append latency (p50) and throughput on one log of a store where 1, 1,000 or
  10,000 logs exist and have been appended to, against the same with 1 log.
- Metadata batches per second: single-key puts and 10-key conditional batches, from several threads.
- Reads of many logs: one remote reader over 1,000 logs against one over one log with the same bytes,
  catching up and tailing (see ``_mux``).
- Disk use after retention with one log kept forever and many short-lived ones, against the
  permanent log alone (see ``_disk``).
- One event per call (``append_async`` and the batching writer) against batches of 500: see
  ``_single.py``.

The figures that matter are the ratios: this machine is shared and noisy.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._progress import Progress
from seaway.bench._disk import run_disk_bench
from seaway.bench._log import machine
from seaway.bench._mux import MuxBenchConfig, run_mux_bench
from seaway.bench._single import SingleBenchConfig, run_single_bench
from seaway.server import ServerProcess


@dataclass(frozen=True)
class LogsBenchConfig:
    log_counts: tuple[int, ...] = (1, 1_000, 10_000)
    appends: int = 400
    """Sequential one-record appends timed for the latency figure."""
    throughput_appends: int = 4_000
    """One-record appends, many in flight, timed for the throughput figure."""
    in_flight: int = 256
    meta_batches: int = 2_000
    meta_threads: int = 4
    record_bytes: int = 100
    rounds: int = 2
    only: str | None = None
    """``"mux"``: only the reads of many logs (a run of a minute rather than several)."""


def _populate(sw: seaway.Seaway, count: int) -> list[seaway.Log]:
    """``count`` logs, each appended to once (so each has a sequencer and a directory entry)."""
    logs = [sw.own_logs.create(f"log-{i}") for i in range(count)]
    futures = [log.append_async(b"first") for log in logs]
    for f in futures:
        f.result()
    return logs


def _latency_and_throughput(log: seaway.Log, config: LogsBenchConfig) -> tuple[float, float]:
    payload = b"x" * config.record_bytes
    for _ in range(config.appends // 4):  # warm-up: the populating writes' flushes settle first
        log.append(payload)
    times: list[float] = []
    for _ in range(config.appends):
        start = time.perf_counter()
        log.append(payload)
        times.append(time.perf_counter() - start)
    in_flight: list[Future[int]] = []
    start = time.perf_counter()
    for _ in range(config.throughput_appends):
        in_flight.append(log.append_async(payload))
        if len(in_flight) >= config.in_flight:
            in_flight.pop(0).result()
    for f in in_flight:
        f.result()
    throughput = config.throughput_appends / (time.perf_counter() - start)
    return statistics.median(times), throughput


def _many_logs(tmp: Path, config: LogsBenchConfig, progress: Progress) -> dict[str, Any]:
    """Each count measured ``rounds`` times, alternating with the 1-log reference; best of each."""
    out: dict[str, Any] = {}
    best: dict[int, tuple[float, float]] = {}
    for round_ in range(config.rounds):
        for count in config.log_counts:
            with seaway.open(tmp / f"logs-{count}-{round_}") as sw:
                logs = _populate(sw, count)
                p50, rate = _latency_and_throughput(logs[len(logs) // 2], config)
            old = best.get(count)
            best[count] = (min(p50, old[0]) if old else p50, max(rate, old[1]) if old else rate)
            progress.advance(label=f"round {round_ + 1}: {count} logs")
    p50_1, rate_1 = best[1]
    for count, (p50, rate) in best.items():
        out[f"append_p50_ms_{count}"] = round(p50 * 1000, 3)
        out[f"append_per_s_{count}"] = round(rate)
        if count != 1:
            out[f"append_latency_ratio_{count}"] = round(p50 / p50_1, 3)
            out[f"append_throughput_ratio_{count}"] = round(rate / rate_1, 3)
    return out


def _threads(count: int, work: Callable[[int], None]) -> float:
    """Run ``work(i)`` in ``count`` threads; the seconds they took. A thread's error is raised here:
    a figure from a run that failed would be a lie."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def meta_rates(metas: list[Any], config: LogsBenchConfig, namespace: str) -> tuple[float, float]:
    """Batches per second: single-key puts, then 10-key batches each conditional on its own last
    version (a compare-and-set per batch), from ``meta_threads`` threads (thread ``i`` uses
    ``metas[i % len(metas)]``: one store, or a connection each as separate processes would)."""
    per_thread = config.meta_batches // config.meta_threads

    def single(thread: int) -> None:
        meta = metas[thread % len(metas)]
        for i in range(per_thread):
            meta.put(namespace, b"single/%d/%d" % (thread, i), b"v" * 64)

    def conditional(thread: int) -> None:
        meta = metas[thread % len(metas)]
        version = 0
        for i in range(per_thread):
            batch = meta.batch().expect_version(namespace, b"cas/%d" % thread, version)
            batch.put(namespace, b"cas/%d" % thread, b"%d" % i)
            for k in range(9):
                batch.put(namespace, b"multi/%d/%d" % (thread, k), b"v" * 64)
            version = batch.commit()

    done = per_thread * config.meta_threads
    return done / _threads(config.meta_threads, single), done / _threads(config.meta_threads, conditional)


def _meta(tmp: Path, config: LogsBenchConfig) -> dict[str, Any]:
    """Embedded, then through a server started for it (one connection a thread)."""
    with seaway.open(tmp / "meta") as sw:
        single, multi = meta_rates([sw.meta], config, "bench")
    server = ServerProcess(tmp / "meta-server")
    try:
        clients = [seaway.connect(server.url) for _ in range(config.meta_threads)]
        try:
            remote_single, remote_multi = meta_rates([c.meta for c in clients], config, "bench")
        finally:
            for client in clients:
                client.close()
    finally:
        server.stop()
    return {"meta_batches_per_s": round(single), "meta_cas10_batches_per_s": round(multi),
            "meta_batches_per_s_remote": round(remote_single), "meta_cas10_batches_per_s_remote": round(remote_multi)}


def run_logs_bench(config: LogsBenchConfig) -> dict[str, Any]:
    if config.only == "mux":
        return {"benchmark": "logs", **run_mux_bench(MuxBenchConfig(rounds=config.rounds)),
                "targets": {"multiplexed_read_ratio": ">= 0.8"}, "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, \
            Progress(config.rounds * len(config.log_counts) + 3, "bench logs") as progress:
        figures: dict[str, Any] = {"benchmark": "logs", "record_bytes": config.record_bytes}
        figures.update(_many_logs(Path(tmp), config, progress))
        figures.update(_meta(Path(tmp), config))
        progress.advance(label="metadata batches")
        figures.update(run_mux_bench(MuxBenchConfig(rounds=config.rounds)))
        progress.advance(label="one remote reader over 1,000 logs")
        figures.update(run_single_bench(SingleBenchConfig(), Path(tmp)))
        progress.advance(label="one event per call")
        figures.update(run_disk_bench())
    figures["targets"] = {"append_latency_ratio_10000": "<= 1.2", "append_throughput_ratio_10000": ">= 0.83",
                          "multiplexed_read_ratio": ">= 0.8", "single_event_ratio_embedded": ">= 0.5",
                          "single_event_ratio_remote": ">= 0.5"}
    figures["machine"] = machine()
    return figures
