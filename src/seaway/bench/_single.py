"""Part of ``seaway bench logs``: one event per call against the same events in batches.

Most producers hand over one event per call and expect the client to batch. This measures 100-byte
events appended one per call, two ways: ``append_async`` (futures collected, then awaited), and the
batching writer (``writer(flush_records_max=500)``); and, as the reference from the same run, the
same events in batches of 500 through the synchronous ``append_batch``. Embedded, then through a
``seaway serve`` started for the run. Each way runs ``rounds`` times, alternating, on a fresh log;
each way's best counts.

The figure is ``single_event_ratio_*``: the lower of the two one-per-call rates over the batch rate
(target: at least 0.5). Each way's own ratio is reported too.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway.server import ServerProcess


@dataclass(frozen=True)
class SingleBenchConfig:
    events: int = 100_000
    """Events per measured run (about half a second embedded on 2 cores)."""
    event_bytes: int = 100
    batch_events: int = 500
    """The reference's batch size, and the writer's ``flush_records_max``."""
    rounds: int = 2


def _batches(log: Any, config: SingleBenchConfig) -> float:
    payload = b"x" * config.event_bytes
    batch = [payload] * config.batch_events
    start = time.perf_counter()
    for _ in range(config.events // config.batch_events):
        log.append_batch(batch)
    return config.events / (time.perf_counter() - start)


def _one_per_call(log: Any, config: SingleBenchConfig) -> float:
    payload = b"x" * config.event_bytes
    start = time.perf_counter()
    futures: list[Future[int]] = [log.append_async(payload) for _ in range(config.events)]
    lsns = [f.result() for f in futures]
    elapsed = time.perf_counter() - start
    if lsns != sorted(lsns) or len(set(lsns)) != len(lsns):
        raise RuntimeError("one-per-call appends got LSNs out of the order they were made")
    return config.events / elapsed


def _writer(log: Any, config: SingleBenchConfig) -> float:
    payload = b"x" * config.event_bytes
    start = time.perf_counter()
    with log.writer(flush_records_max=config.batch_events) as writer:
        futures: list[Future[int]] = [writer.write(payload) for _ in range(config.events)]
    lsns = [f.result() for f in futures]
    elapsed = time.perf_counter() - start
    if lsns != sorted(lsns):
        raise RuntimeError("the writer's events got LSNs out of the order they were written")
    return config.events / elapsed


_WAYS: dict[str, Callable[[Any, SingleBenchConfig], float]] = {
    "batch": _batches, "append_async": _one_per_call, "writer": _writer}


def _measure(sw: Any, config: SingleBenchConfig, side: str) -> dict[str, Any]:
    best = dict.fromkeys(_WAYS, 0.0)
    for round_ in range(config.rounds):
        for way, run in _WAYS.items():
            log = sw.logs.create(f"single-{way}-{round_}-{time.time_ns()}")
            best[way] = max(best[way], run(log, config))
    async_ratio = best["append_async"] / best["batch"]
    writer_ratio = best["writer"] / best["batch"]
    return {f"batch{config.batch_events}_events_per_s_{side}": round(best["batch"]),
            f"single_event_async_per_s_{side}": round(best["append_async"]),
            f"single_event_writer_per_s_{side}": round(best["writer"]),
            f"single_event_async_ratio_{side}": round(async_ratio, 3),
            f"single_event_writer_ratio_{side}": round(writer_ratio, 3),
            f"single_event_ratio_{side}": round(min(async_ratio, writer_ratio), 3)}


def run_single_bench(config: SingleBenchConfig, tmp: Path | None = None) -> dict[str, Any]:
    """One event per call against batches, embedded and through a server started here."""
    with tempfile.TemporaryDirectory(prefix="seaway-bench-single-", dir=tmp) as work:
        with seaway.open(Path(work) / "embedded") as sw:
            figures = _measure(sw, config, "embedded")
        server = ServerProcess(Path(work) / "server")
        try:
            with seaway.connect(server.url) as client:
                figures.update(_measure(client, config, "remote"))
        finally:
            server.stop()
    return figures
