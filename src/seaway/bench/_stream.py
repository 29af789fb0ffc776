"""``seaway bench stream``: a stream's writes and reads against the log path, in the same run.

The stream path writes 1 KB events with :meth:`Stream.writer` (``write_batch`` calls of
``batch_events`` events, each with its own routing key, so that the batches spread over every
segment) to a stream of 1, 8 or 64 segments, then reads every segment's log back with one reader.
The log path writes the same batches to one log with ``append_batch_async``, keeping as many in
flight as the writer may (its ``batches_in_flight_max``), then reads the log back the same way.
Each runs embedded and through a server started for the run; each side runs ``rounds`` times,
alternating which goes first, and the best time counts (the one least disturbed by others on a
shared machine). The ratios (stream path over log path) are the figures that matter.

The transaction path (where the store offers transactions) writes the same batches to a
transactional stream, ``txn_batches`` batches per transaction (each commit waits for its writes),
and reads the logs back; its ratio is over the stream path (plain writes to a plain stream).

``--segments`` measures the control plane instead: ``scales`` scalings of one stream, splits and
merges alternating (each makes new segment logs and seals old ones), then deleting the stream
(every segment log). The reference is making and deleting as many logs directly.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._progress import Progress
from seaway.bench._log import machine
from seaway.bench._metadata import BETWEEN_GENERATIONS, FAR_GENERATIONS, MetadataBenchConfig, run_metadata_bench
from seaway.errors import InvalidArgumentError
from seaway.log import LSN_OLDEST, Record
from seaway.server import ServerProcess
from seaway.streams import Stream, WriterConfig

RESULT_WAIT_S = 120.0


@dataclass(frozen=True)
class StreamBenchConfig:
    events: int = 50_000
    """Events each run writes and reads (a multiple of ``batch_events``)."""
    event_bytes: int = 1024
    batch_events: int = 100
    segment_counts: tuple[int, ...] = (1, 8, 64)
    routing_keys: int = 1_000
    """Distinct routing keys, one per ``write_batch`` in turn."""
    rounds: int = 2
    remote: bool = True
    """Also through a server started for the run."""
    txn_batches: int = 10
    """Batches written per transaction on the transaction path."""


@dataclass(frozen=True)
class SegmentsBenchConfig:
    scales: int = 10_000
    remote_scales: int = 1_000
    """Scalings through the server (each is several round trips; 0: embedded only)."""


@contextmanager
def _stores(remote: bool) -> Iterator[list[tuple[str, Callable[[], Any]]]]:
    """(mode, open a client) for embedded and, if asked, remote; the stores live for the block."""
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp:
        sw = seaway.open(Path(tmp) / "embedded")
        try:
            modes: list[tuple[str, Callable[[], Any]]] = [("embedded", lambda: _Borrowed(sw))]
            if not remote:
                yield modes
                return
            with ServerProcess(Path(tmp) / "server") as server:
                yield [*modes, ("remote", lambda: seaway.connect(server.url))]
        finally:
            sw.close()


class _Borrowed:
    """The embedded store, lent to a ``with`` block that must not close it."""

    def __init__(self, sw: seaway.Seaway) -> None:
        self.sw = sw

    def __enter__(self) -> seaway.Seaway:
        return self.sw

    def __exit__(self, *exc: object) -> None:
        return None


def _batches(config: StreamBenchConfig) -> list[tuple[bytes, ...]]:
    """Distinct payloads, made before any clock starts."""
    seed = os.urandom(config.event_bytes)
    return [tuple(b.to_bytes(4, "big") + i.to_bytes(4, "big") + seed[8:] for i in range(config.batch_events))
            for b in range(config.events // config.batch_events)]


def _read_logs(sw: Any, logs: list[Any]) -> int:
    """Read every log from its start to its tail with one reader; the records read."""
    count = 0
    with sw.logs.reader() as reader:
        for log in logs:
            tail = log.tail_lsn()
            if tail >= LSN_OLDEST:
                reader.start_reading(log, LSN_OLDEST, tail)
        while items := reader.read():
            count += sum(1 for item in items if type(item) is Record)
    return count


def _log_path(sw: Any, name: str, batches: list[tuple[bytes, ...]]) -> tuple[float, float, int]:
    """Append the batches to one log, as many in flight as a writer keeps, then read it back."""
    in_flight = WriterConfig().batches_in_flight_max
    log = sw.logs.create(name)
    pending: deque[Future[range]] = deque()
    start = time.perf_counter()
    for batch in batches:
        pending.append(log.append_batch_async(batch))
        if len(pending) >= in_flight:
            pending.popleft().result(RESULT_WAIT_S)
    for future in pending:
        future.result(RESULT_WAIT_S)
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    count = _read_logs(sw, [log])
    read_s = time.perf_counter() - start
    sw.logs.delete(log)
    return write_s, read_s, count


def _stream_path(sw: Any, name: str, segments: int, batches: list[tuple[bytes, ...]],
                 keys: list[str]) -> tuple[float, float, int, int]:
    """Write the batches with a stream's writer, each with the next routing key, then read every
    segment's log back; the times, the events read and the segments written to."""
    stream: Stream = sw.streams.create(name, segments=segments)
    futures = []
    with stream.writer() as writer:
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            futures.append(writer.write_batch(batch, keys[i % len(keys)]))
        writer.flush()
        write_s = time.perf_counter() - start
    written = {f.result(0).segment for f in futures}  # every write stored (a failure raises here)
    read_s, count = _read_back_and_delete(sw, stream)
    return write_s, read_s, count, len(written)


def _read_back_and_delete(sw: Any, stream: Stream) -> tuple[float, int]:
    """The time to read every segment's log back, the records read; then the stream is gone."""
    start = time.perf_counter()
    logs = [sw.logs.get(s.log_id) for s in stream.segments_between(stream.head(), stream.tail())]
    count = _read_logs(sw, logs)
    read_s = time.perf_counter() - start
    stream.seal()
    stream.delete()
    return read_s, count


def _txn_path(sw: Any, name: str, segments: int, batches: list[tuple[bytes, ...]], keys: list[str],
              txn_batches: int) -> tuple[float, float, int]:
    """Write the batches to a transactional stream, ``txn_batches`` per transaction, committing
    each; the time, the time to read the segments' logs back, and the records read."""
    stream: Stream = sw.streams.create(name, segments=segments, transactional=True)
    futures = []
    with stream.writer() as writer:
        start = time.perf_counter()
        for first in range(0, len(batches), txn_batches):
            with sw.transaction() as tx:
                for i in range(first, min(first + txn_batches, len(batches))):
                    futures.append(writer.write_batch(batches[i], keys[i % len(keys)], txn=tx))
        write_s = time.perf_counter() - start
    for future in futures:  # every write stored (a failure raises here)
        future.result(0)
    read_s, count = _read_back_and_delete(sw, stream)
    return write_s, read_s, count


def _best(runs: Sequence[tuple[float, float, int] | tuple[float, float, int, int]],
          events: int) -> tuple[float, float]:
    for _, _, count, *_ in runs:
        if count != events:
            raise RuntimeError(f"benchmark read back {count} events, expected {events}")
    return min(r[0] for r in runs), min(r[1] for r in runs)


def run_stream_bench(config: StreamBenchConfig) -> dict[str, Any]:
    if config.events < config.batch_events or config.events % config.batch_events:
        raise ValueError("events must be a positive multiple of batch_events")
    batches = _batches(config)
    keys = [f"key-{k}" for k in range(config.routing_keys)]
    figures: dict[str, Any] = {
        "benchmark": "stream",
        "events": config.events,
        "event_bytes": config.event_bytes,
        "batch_events": config.batch_events,
        "routing_keys": config.routing_keys,
        "rounds": config.rounds,
        "txn_batches": config.txn_batches,
        "durability": "sync (default: an fsync per append, shared by concurrent ones)",
    }
    ratios: dict[str, float] = {}
    runs_total = len(config.segment_counts) * config.rounds * (3 + (2 if config.remote else 0))
    with _stores(config.remote) as modes, Progress(runs_total, "bench stream") as progress:
        for mode, connect in modes:
            with connect() as sw:
                scope = f"bench{time.time_ns()}"
                sw.streams.create_scope(scope)
                for segments in config.segment_counts:
                    log_runs: list[tuple[float, float, int]] = []
                    stream_runs: list[tuple[float, float, int, int]] = []
                    txn_runs: list[tuple[float, float, int]] = []
                    sides = ("log", "stream", "txn") if hasattr(sw, "transaction") else ("log", "stream")
                    for round_ in range(config.rounds):
                        for side in sides if round_ % 2 == 0 else sides[::-1]:
                            if side == "log":
                                log_runs.append(_log_path(sw, f"{scope}-{segments}-{round_}", batches))
                            elif side == "txn":
                                txn_runs.append(_txn_path(sw, f"{scope}/t{segments}-{round_}", segments, batches,
                                                          keys, config.txn_batches))
                            else:
                                stream_runs.append(_stream_path(sw, f"{scope}/s{segments}-{round_}", segments,
                                                                batches, keys))
                            progress.advance(label=f"{mode}, {segments} segments, round {round_ + 1}")
                    log_write_s, log_read_s = _best(log_runs, config.events)
                    figures[f"{mode}_segments_written_{segments}"] = min(r[3] for r in stream_runs)
                    stream_write_s, stream_read_s = _best(stream_runs, config.events)
                    figures[f"{mode}_log_write_per_s_{segments}"] = round(config.events / log_write_s)
                    figures[f"{mode}_stream_write_per_s_{segments}"] = round(config.events / stream_write_s)
                    figures[f"{mode}_log_read_per_s_{segments}"] = round(config.events / log_read_s)
                    figures[f"{mode}_stream_read_per_s_{segments}"] = round(config.events / stream_read_s)
                    ratios[f"{mode}_ratio_{segments}"] = round(log_write_s / stream_write_s, 3)
                    ratios[f"{mode}_read_ratio_{segments}"] = round(log_read_s / stream_read_s, 3)
                    if txn_runs:
                        txn_write_s, _ = _best(txn_runs, config.events)
                        figures[f"{mode}_txn_write_per_s_{segments}"] = round(config.events / txn_write_s)
                        ratios[f"{mode}_txn_ratio_{segments}"] = round(stream_write_s / txn_write_s, 3)
    return {**figures, **ratios,
            "targets": {"ratio_1": 0.8, "ratio_64": 0.7},
            "machine": machine()}


def _scale_alternately(stream: Stream, scales: int, progress: Progress) -> int:
    """Split the stream's one segment in two, merge them back, and so on; the segments made."""
    made = 0
    for i in range(scales):
        current = stream.current_segments()
        generation = stream.split(current[0].id) if len(current) == 1 else stream.merge([s.id for s in current])
        made += sum(1 for s in generation.segments if s.generation == generation.generation)
        if i % 100 == 99:
            progress.advance(100)
    return made


def _segments_round(sw: Any, scope: str, scales: int, progress: Progress) -> dict[str, float]:
    stream = sw.streams.create(f"{scope}/scaled", segments=1)
    start = time.perf_counter()
    made = _scale_alternately(stream, scales, progress)
    scale_s = time.perf_counter() - start
    start = time.perf_counter()
    stream.seal()
    stream.delete()
    delete_s = time.perf_counter() - start
    # The reference: as many logs made and deleted directly, one at a time.
    start = time.perf_counter()
    logs = [sw.logs.create(f"{scope}-ref-{n}") for n in range(made + 1)]
    create_s = time.perf_counter() - start
    start = time.perf_counter()
    for log in logs:
        sw.logs.delete(log)
    log_delete_s = time.perf_counter() - start
    return {"scales": scales, "segments_made": made, "scale_ms": round(1000 * scale_s / scales, 3),
            "scales_s": round(scale_s, 3), "delete_stream_s": round(delete_s, 4),
            "log_create_ms": round(1000 * create_s / len(logs), 3), "log_delete_s": round(log_delete_s, 4),
            "scale_over_log_creates": round(scale_s / (create_s * made / len(logs)), 2)}


def run_segments_bench(config: SegmentsBenchConfig) -> dict[str, Any]:
    """Scalings of one stream, then its deletion, embedded (and remote), against as many logs
    made and deleted directly."""
    figures: dict[str, Any] = {"benchmark": "stream --segments"}
    plan = [("embedded", config.scales)] + ([("remote", config.remote_scales)] if config.remote_scales else [])
    with _stores(config.remote_scales > 0) as modes, \
            Progress(sum(n for _, n in plan) // 100, "bench stream --segments") as progress:
        for (mode, connect), (_, scales) in zip(modes, plan, strict=True):
            with connect() as sw:
                scope = f"bench{time.time_ns()}"
                sw.streams.create_scope(scope)
                figures.update({f"{mode}_{k}": v for k, v in _segments_round(sw, scope, scales, progress).items()})
    figures["machine"] = machine()
    return figures


def add_stream_bench_parsers(kinds: Any) -> None:
    """``seaway bench metadata`` and ``seaway bench stream``."""
    meta = kinds.add_parser("metadata", help="stream metadata query latencies at 10, 1,000 and 100,000 generations")
    meta.add_argument("--generations", default="10,1000,100000",
                      help="history lengths, comma-separated; the ratio is the last's over the first's")
    meta.add_argument("--samples", type=int, default=1_000, help="calls of each query on each history")
    meta.add_argument("--far", type=int, default=FAR_GENERATIONS,
                      help="generations between the cuts of the far comparison (default 10,000; at most a "
                           "history's length)")
    meta.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    stream = kinds.add_parser("stream", help="stream writes and reads against the log path, embedded and remote")
    stream.add_argument("--events", type=int, default=50_000, help="1 KB events per run (default 50,000)")
    stream.add_argument("--batch-events", type=int, default=100, help="events per write (default 100)")
    stream.add_argument("--segments-counts", default="1,8,64", help="segment counts, comma-separated")
    stream.add_argument("--rounds", type=int, default=2, help="runs of each side; the best counts (default 2)")
    stream.add_argument("--embedded-only", action="store_true", help="without a server")
    stream.add_argument("--segments", action="store_true",
                        help="instead: time to scale one stream --scales times (splits and merges) and delete it")
    stream.add_argument("--scales", type=int, default=10_000, help="with --segments: embedded scalings")
    stream.add_argument("--remote-scales", type=int, default=1_000,
                        help="with --segments: scalings through a server (0: none)")
    stream.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def _counts(text: str, what: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = ()
    if not counts or any(c < 1 for c in counts):
        raise InvalidArgumentError(f"{what} is a comma-separated list of positive integers, got {text!r}")
    return counts


def run_stream_bench_command(args: argparse.Namespace) -> dict[str, Any]:
    """The figures of ``seaway bench metadata`` or ``seaway bench stream``, its options checked."""
    if args.bench == "metadata":
        generations = _counts(args.generations, "--generations")
        if len(generations) < 2 or min(generations) <= BETWEEN_GENERATIONS or args.samples < 1 or args.far < 1:
            raise InvalidArgumentError(f"--generations takes two or more lengths above {BETWEEN_GENERATIONS}, "
                                       "--samples and --far at least 1")
        return run_metadata_bench(MetadataBenchConfig(generations, args.samples, far_generations=args.far))
    if args.segments:
        if args.scales < 1 or args.remote_scales < 0:
            raise InvalidArgumentError("--scales must be at least 1 and --remote-scales at least 0")
        return run_segments_bench(SegmentsBenchConfig(args.scales, args.remote_scales))
    if args.events < 1 or args.batch_events < 1 or args.rounds < 1 or args.events % args.batch_events:
        raise InvalidArgumentError("--events must be a positive multiple of --batch-events; --rounds at least 1")
    return run_stream_bench(StreamBenchConfig(events=args.events, batch_events=args.batch_events,
                                              segment_counts=_counts(args.segments_counts, "--segments-counts"),
                                              rounds=args.rounds, remote=not args.embedded_only))
