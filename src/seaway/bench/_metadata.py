"""``seaway bench metadata``: the stream metadata queries at 10, 1,000 and 100,000 generations.

Each query should cost a constant number of store reads however long the stream's history (see
:mod:`seaway.streams._metadata`); this measures it. The figure that matters is each query's p50
at the longest history over its p50 at the shortest, measured in the same run: the three stores
are open together and each sample calls every query on every store in turn, so that whatever
else runs on the machine disturbs all of them alike.

A real scaling costs tens of milliseconds (synced metadata batches, new logs), so 100,000 of them
would take an hour. :class:`HistoryBuilder` writes the same records faster: it calls the same
batch builders the controller calls (``new_generation_batch``, ``sizes_batch``), for many
generations per metadata batch, over :class:`StagedMeta` (which lets the builders read what the
batch being built already holds). The segments' logs are placeholders (ids no log has) except for
the segments current at the end, which get real logs: the queries measured read metadata only,
and recording a stream cut reads the current segments' logs. tests/streams/test_bench_metadata.py
checks that the builder writes exactly the records real scalings write.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._progress import Progress
from seaway.bench._log import machine
from seaway.log import LSN_OLDEST, MetaApi, MetaBatch, MetaPut, Versioned
from seaway.streams import SEGMENT_LOG_IDS, Delta, Generation, Segment, Stream, StreamCut, StreamMetadata, segment_id

STAGED_OPS_MAX = 4_000
"""Puts a staged batch holds before it is committed (the store takes 10,000 at most)."""
QUERIES = ("current_segments", "segments_at", "successors", "predecessors", "segments_between", "size_until",
           "cut_at_time", "cut_at_size", "generation_at")
CUTS_RECORDED = 5
BETWEEN_GENERATIONS = 4
"""How many generations apart the two cuts of ``segments_between`` are."""
FAR_QUERIES = ("compare_near", "compare_far")
"""The comparison of two cuts ``BETWEEN_GENERATIONS`` apart, and of two cuts far apart: the check
of the cuts every cut query begins with reads only their segments' records, however many
generations lie between them (``far_ratio``: the far one's p50 over the near one's, in the same
history)."""
FAR_GENERATIONS = 10_000


@dataclass(frozen=True)
class MetadataBenchConfig:
    generations: tuple[int, ...] = (10, 1_000, 100_000)
    """The histories measured; the ratio is the last one's over the first one's."""
    samples: int = 1_000
    """Calls of each query on each history (each with its own random arguments)."""
    seed: int = 1
    far_generations: int = FAR_GENERATIONS
    """How many generations apart the cuts of ``compare_far`` are (at most the history's length)."""


class HistoryClock:
    """Wall time set by the builder (a history's generations began in the past); monotonic time is
    the real one, so that waits in the log layer are real waits."""

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def set_ms(self, now_ms: int) -> None:
        self._now_ms = max(self._now_ms, now_ms)

    def monotonic_s(self) -> float:
        return time.monotonic()


class StagedMeta(MetaApi):
    """A metadata store whose committed batches are only staged: its :meth:`get` sees them, and
    :meth:`flush` commits all of them to the store beneath as one batch (later puts of a key
    replace earlier ones). For a builder that is the only writer of its keys: conditions are not
    checked (the records are what counts), and batches hold puts only."""

    def __init__(self, under: MetaApi) -> None:
        self._under = under
        self._staged: dict[tuple[str, bytes], bytes] = {}

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        staged = self._staged.get((namespace, key))
        if staged is not None:
            return Versioned(staged, 0)
        return self._under.get(namespace, key)

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        for op in batch.ops:
            if not isinstance(op, MetaPut):
                raise TypeError(f"a staged batch holds puts only, got {op!r:.80}")
            self._staged[(op.namespace, op.key)] = op.value
        return 0

    @property
    def revision(self) -> int:
        return self._under.revision

    @property
    def staged(self) -> int:
        return len(self._staged)

    def flush(self) -> None:
        if not self._staged:
            return
        batch = self._under.batch()
        for (namespace, key), value in self._staged.items():
            batch.put(namespace, key, value)
        batch.commit()
        self._staged.clear()


@dataclass(frozen=True)
class Step:
    """One scaling of a planned history: adjacent current segments replaced by ``ranges``."""

    sealed: tuple[int, ...]
    ranges: tuple[tuple[float, float], ...]
    time_ms: int


def plan_history(first: Generation, next_number: int, count: int, rng: random.Random,
                 step_ms: tuple[int, int] = (1, 20_000)) -> tuple[list[Step], set[int]]:
    """``count`` scalings after ``first``: a random segment splits in two, or (always above 6
    segments, sometimes from 2) the adjacent pair with the narrowest union merges, so the count
    stays small and no range gets too narrow to halve. Also the ids of the segments current at
    the end."""
    current = [(s.key_lo, s.key_hi, s.id) for s in first.segments]
    time_ms = first.created_ms
    steps: list[Step] = []
    for g in range(first.generation + 1, first.generation + 1 + count):
        time_ms += rng.randrange(*step_ms)
        if len(current) > 1 and (len(current) > 6 or rng.random() < 0.4):
            i = min(range(len(current) - 1), key=lambda j: (current[j + 1][1] - current[j][0], rng.random()))
            ranges: tuple[tuple[float, float], ...] = ((current[i][0], current[i + 1][1]),)
            sealed: tuple[int, ...] = (current[i][2], current[i + 1][2])
            end = i + 2
        else:
            i = rng.randrange(len(current))
            lo, hi, _ = current[i]
            ranges = ((lo, lo + (hi - lo) * 1 / 2), (lo + (hi - lo) * 1 / 2, hi))  # as even_ranges(2) cuts
            sealed = (current[i][2],)
            end = i + 1
        made = [(lo, hi, segment_id(g, next_number + n)) for n, (lo, hi) in enumerate(ranges)]
        current[i:end] = made
        next_number += len(made)
        steps.append(Step(sealed, ranges, time_ms))
    return steps, {s for _, _, s in current}


MakeLog = Callable[[Segment], int]
SealLog = Callable[[Segment], tuple[int, int]]


class HistoryBuilder:
    """Writes a stream's scalings as the controller's steps 3 and 5 would (the new generation's
    records, then the sealed segments' sizes), staged and committed many generations per batch.
    The stream must have no scaling under way and no other writer while this runs; call
    :meth:`flush` at the end."""

    def __init__(self, stream: Stream, make_log: MakeLog, seal_log: SealLog, reason: str = "manual",
                 staged_ops_max: int = STAGED_OPS_MAX) -> None:
        real = stream.metadata
        self._staged = StagedMeta(real.meta)
        self._meta = StreamMetadata(self._staged, real.scope, real.stream)
        self._current, self._next_number, _ = real.current()
        self._make_log = make_log
        self._seal_log = seal_log
        self._reason = reason
        self._staged_ops_max = staged_ops_max

    @property
    def current(self) -> Generation:
        return self._current

    def scale(self, step: Step) -> Generation:
        """Stage one scaling, as :meth:`StreamController.scale` plans it and its steps write it."""
        current = self._current
        g = current.generation + 1
        now = max(step.time_ms, current.created_ms)
        olds = sorted((s for s in current.segments if s.id in step.sealed), key=lambda s: s.key_lo)
        if len(olds) != len(step.sealed):
            raise ValueError(f"the step seals segments that are not current: {step!r:.200}")
        planned = [Segment(self._next_number + i, g, now, lo, hi) for i, (lo, hi) in enumerate(sorted(step.ranges))]
        created = tuple(Segment(s.number, g, now, s.key_lo, s.key_hi, self._make_log(s)) for s in planned)
        delta = Delta(g, now, tuple(s.id for s in olds), created, self._reason)
        next_number = self._next_number + len(created)
        batch, new = self._meta.new_generation_batch(self._staged.batch(), current, 0, next_number, delta, 0)
        batch.commit()
        ends = {s.id: self._seal_log(s) for s in olds}
        self._meta.sizes_batch(self._staged.batch(), g, ends).commit()
        self._current, self._next_number = new, next_number
        if self._staged.staged >= self._staged_ops_max:
            self._staged.flush()
        return new

    def flush(self) -> None:
        self._staged.flush()


def placeholder_logs() -> MakeLog:
    """Log ids no log has (from the top of the segments' group down; logs are made from its
    bottom up), for segments whose logs are never read."""
    taken = iter(range(SEGMENT_LOG_IDS[1], SEGMENT_LOG_IDS[0], -1))
    return lambda _segment: next(taken)


def placeholder_seal(segment: Segment) -> tuple[int, int]:
    """A placeholder segment's size and final LSN, as if it held 64-1,024 events of 1 KB."""
    events = 64 * (1 + segment.number % 16)
    return events * 1024, (1 << 32) | events


def real_log(sw: Any, stream: Stream) -> MakeLog:
    """The segment's log as the controller makes it (same name, same group)."""
    uid = stream.metadata.state()[0].uid
    return lambda segment: sw.streams.controller._make_log(stream.metadata, uid, segment)


def real_seal(sw: Any) -> SealLog:
    """Seal the segment's log, as the controller does; its size and final LSN."""
    return lambda segment: sw.streams.controller._seal_log(segment.log_id)


@dataclass
class _History:
    """One store with one stream of ``generations`` generations, and the arguments of each sample."""

    generations: int
    sw: seaway.Seaway
    stream: Stream
    build_s: float
    args: dict[str, list[Any]]


def _build(path: Path, generations: int, rng: random.Random) -> tuple[seaway.Seaway, Stream, float]:
    now = time.time_ns() // 1_000_000
    clock = HistoryClock(now - generations * 10_000 - 60_000)  # the history ends about now
    sw = seaway.Seaway(path, clock=clock)
    try:
        sw.streams.create_scope("bench")
        stream = sw.streams.create("bench/history", segments=3)
        current, next_number, _ = stream.metadata.current()
        steps, last = plan_history(current, next_number, generations, rng)
        placeholders, make_real = placeholder_logs(), real_log(sw, stream)
        started = time.perf_counter()
        builder = HistoryBuilder(stream, lambda s: make_real(s) if s.id in last else placeholders(s),
                                 placeholder_seal)  # the segments with real logs are never sealed
        for step in steps:
            builder.scale(step)
        builder.flush()
        build_s = time.perf_counter() - started
        clock.set_ms(builder.current.created_ms + 1_000)
        for n in range(CUTS_RECORDED):  # a retention set of a few cuts, each further on
            for segment in stream.current_segments():
                sw.logs.get(segment.log_id).append_batch([bytes(1024)] * (n + 1))
            clock.set_ms(clock.now_ms() + 60_000)
            stream.record_cut()
    except BaseException:
        sw.close()
        raise
    return sw, stream, build_s


def _cut(stream: Stream, generation: Generation) -> StreamCut:
    return StreamCut(stream.name, {s.id: LSN_OLDEST for s in generation.segments})


def _arguments(stream: Stream, generations: int, samples: int, rng: random.Random,
               far_generations: int = FAR_GENERATIONS) -> dict[str, list[Any]]:
    """Each query's arguments for each sample, chosen before any clock starts."""
    meta = stream.metadata
    first_ms, last_ms = meta.generation(0).created_ms, meta.generation(generations).created_ms
    deltas = meta.deltas(0, generations)
    sealed = [segment for delta in deltas for segment in delta.sealed]
    created = [segment.id for delta in deltas for segment in delta.created]
    retention = meta.retention_set()
    args: dict[str, list[Any]] = {q: [] for q in (*QUERIES, *FAR_QUERIES)}
    span = min(BETWEEN_GENERATIONS, generations)
    far = min(far_generations, generations)
    for _ in range(samples):
        low = rng.randrange(generations - span + 1)
        args["current_segments"].append(())
        args["segments_at"].append((rng.randrange(first_ms, last_ms + 1),))
        args["successors"].append((rng.choice(sealed),))
        args["predecessors"].append((rng.choice(created),))
        args["segments_between"].append((_cut(stream, meta.generation(low)),
                                          _cut(stream, meta.generation(low + span))))
        args["size_until"].append((_cut(stream, meta.generation(rng.randrange(generations + 1))),))
        args["cut_at_time"].append((rng.randrange(retention[0][0], retention[-1][0] + 1),))
        args["cut_at_size"].append((rng.randrange(retention[0][1], retention[-1][1] + 1),))
        args["generation_at"].append((rng.randrange(first_ms, last_ms + 1),))
        args["compare_near"].append(args["segments_between"][-1])
        low = rng.randrange(generations - far + 1)
        args["compare_far"].append((_cut(stream, meta.generation(low)), _cut(stream, meta.generation(low + far))))
    return args


def _query(stream: Stream, name: str) -> Callable[..., Any]:
    if name in FAR_QUERIES:
        return stream.compare
    return stream.metadata.generation_at if name == "generation_at" else getattr(stream, name)


def _measure(histories: Sequence[_History], samples: int, progress: Progress) -> dict[int, dict[str, list[int]]]:
    """Nanoseconds of each call, by history and query; every sample calls every query on every
    history in turn."""
    queries = (*QUERIES, *FAR_QUERIES)
    calls = {h.generations: {q: _query(h.stream, q) for q in queries} for h in histories}
    times: dict[int, dict[str, list[int]]] = {h.generations: {q: [] for q in queries} for h in histories}
    clock = time.perf_counter_ns
    for i in range(samples):
        # Each sample starts with another history and another query: none is always first (cold).
        for k in range(len(histories)):
            history = histories[(i + k) % len(histories)]
            mine, out = calls[history.generations], times[history.generations]
            for j in range(len(queries)):
                query = queries[(i + j) % len(queries)]
                call, args = mine[query], history.args[query][i]
                start = clock()
                call(*args)
                out[query].append(clock() - start)
        if i % 100 == 99:
            progress.advance(100, f"sample {i + 1} of {samples}")
    return times


def run_metadata_bench(config: MetadataBenchConfig) -> dict[str, Any]:
    if len(config.generations) < 2 or any(g < BETWEEN_GENERATIONS + 1 for g in config.generations):
        raise ValueError(f"give two or more history lengths of at least {BETWEEN_GENERATIONS + 1} generations")
    rng = random.Random(config.seed)
    histories: list[_History] = []
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, \
            Progress(len(config.generations) + config.samples, "building histories") as progress:
        try:
            for generations in config.generations:
                sw, stream, build_s = _build(Path(tmp) / f"g{generations}", generations, rng)
                histories.append(_History(generations, sw, stream, build_s, {}))
                history = histories[-1]
                history.args = _arguments(stream, generations, config.samples, rng, config.far_generations)
                progress.advance(label=f"built {generations} generations in {build_s:.1f} s")
            times = _measure(histories, config.samples, progress)
        finally:
            for history in histories:
                history.sw.close()
    first, last = config.generations[0], config.generations[-1]
    queries: dict[str, Any] = {}
    for query in QUERIES:
        p50_us = {str(g): round(statistics.median(times[g][query]) / 1000, 1) for g in config.generations}
        queries[query] = {"p50_us": p50_us, "ratio": round(p50_us[str(last)] / p50_us[str(first)], 3)}
    worst = max(QUERIES, key=lambda q: queries[q]["ratio"])
    far: dict[str, Any] = {"generations_apart": {str(g): min(config.far_generations, g) for g in config.generations}}
    for query in FAR_QUERIES:
        far[f"{query}_p50_us"] = {str(g): round(statistics.median(times[g][query]) / 1000, 1)
                                  for g in config.generations}
    far["ratio"] = {str(g): round(far["compare_far_p50_us"][str(g)] / far["compare_near_p50_us"][str(g)], 3)
                    for g in config.generations}
    return {
        "benchmark": "metadata",
        "generations": list(config.generations),
        "samples": config.samples,
        "queries": queries,
        "worst_query": worst,
        "worst_query_ratio": queries[worst]["ratio"],
        "far": far,
        "far_ratio": far["ratio"][str(last)],
        "build_s": {str(h.generations): round(h.build_s, 2) for h in histories},
        "targets": {"worst_query_ratio": 2.0, "far_ratio": 2.0},
        "machine": machine(),
    }
