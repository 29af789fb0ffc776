"""The cut queries cost the same number of store reads however many generations a cut spans.

A stream of two segments, ``A`` over ``[0, 0.5)`` and the other half, whose other half is split
and merged back generation after generation while ``A`` lives on; near the end ``A`` is split
too. The same history is built short (200 generations) and long (2,000): every cut below is made
the same way relative to the end, so that in both the cuts are alike except for how many
generations lie between their segments. A metadata store wrapped to count what it reads (each
get one, each scan the rows it returns, at least one) is the seam: a query must read as much
over the long history as over the short one. Only the size shards differ, each holding 1,000
segment numbers: a long history's segments have larger numbers, in more shards; a query reads
at most one per segment of its cuts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import InvalidStreamCutError
from seaway.bench._metadata import HistoryBuilder, Step, placeholder_logs, placeholder_seal
from seaway.log import LSN_OLDEST, MetaApi, MetaBatch, Versioned
from seaway.streams import Generation, Stream, StreamCut, _metadata
from seaway.streams._controller import StreamController
from seaway.testing import FakeClock


class CountingMeta(MetaApi):
    """A metadata store that counts the records it reads."""

    def __init__(self, under: MetaApi) -> None:
        self._under = under
        self.reads: Counter[str] = Counter()
        """Records read, by kind: the first part of a stream record's key."""

    @staticmethod
    def _kind(key: bytes | None) -> str:
        return "?" if key is None else key.decode().split("/")[3]

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        self.reads[self._kind(key)] += 1
        return self._under.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        rows = self._under.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)
        self.reads[self._kind(start or prefix)] += max(1, len(rows))
        return rows

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        return self._under.commit(batch, sync=sync)

    @property
    def revision(self) -> int:
        return self._under.revision


def _steps(stream: Stream, generations: int) -> list[Step]:
    """Split and merge back the upper half; split ``A`` three generations before the end."""
    meta = stream.metadata
    current, next_number, _ = meta.current()
    a, upper = current.segments
    live = [upper.id]
    steps: list[Step] = []
    for g in range(1, generations + 1):
        time_ms = current.created_ms + g
        if g == generations - 2:
            steps.append(Step((a.id,), ((0.0, 0.25), (0.25, 0.5)), time_ms))
            next_number += 2
            continue
        if len(live) == 1:
            steps.append(Step(tuple(live), ((0.5, 0.75), (0.75, 1.0)), time_ms))
            live = [(g << 32) | next_number, (g << 32) | (next_number + 1)]
            next_number += 2
        else:
            steps.append(Step(tuple(live), ((0.5, 1.0),), time_ms))
            live = [(g << 32) | next_number]
            next_number += 1
    return steps


def _cut(stream: Stream, *segments: Any) -> StreamCut:
    return StreamCut(stream.name, {s.id: LSN_OLDEST + 1 for s in segments})


def _reads(tmp_path: Path, generations: int) -> dict[str, Counter[str]]:
    """The reads of each query over a history of ``generations`` generations."""
    clock = FakeClock()
    with seaway.Seaway(tmp_path / str(generations), clock=clock) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        first = stream.metadata.generation(0)
        builder = HistoryBuilder(stream, placeholder_logs(), placeholder_seal)
        for step in _steps(stream, generations):
            builder.scale(step)
        builder.flush()
        meta = stream.metadata
        last = meta.generation(generations)

        def upper(generation: Generation) -> list[Any]:
            return [s for s in generation.segments if s.key_lo >= 0.5]

        a = first.segments[0]
        head = _cut(stream, *first.segments)  # a stream never truncated: its first generation
        tail = _cut(stream, *last.segments)
        # A checkpoint lagging on A (split 3 generations ago), the upper half at the end.
        lagging = _cut(stream, a, *upper(last))
        # The same before A was split: a cut of one whole generation.
        whole = _cut(stream, a, *upper(meta.generation(generations - 3)))
        counting = CountingMeta(sw.meta)
        counted = Stream(StreamController(sw.logs, counting, clock), "s", "x")
        queries: dict[str, Callable[[], object]] = {
            "compare head": lambda: counted.compare(whole, head),
            "compare lagging": lambda: counted.compare(lagging, tail),
            "segments_between lagging": lambda: counted.segments_between(lagging, tail),
            "segments_between whole": lambda: counted.segments_between(whole, tail),
            "size_until lagging": lambda: counted.size_until(lagging),
            "size_until whole": lambda: counted.size_until(whole),
        }
        reads: dict[str, Counter[str]] = {}
        for name, query in queries.items():
            counting.reads = Counter()
            query()
            reads[name] = counting.reads
        return reads


@pytest.mark.parametrize("long", [2_000])
def test_the_cut_queries_read_as_much_however_many_generations_a_cut_spans(tmp_path: Path, long: int) -> None:
    short, far = _reads(tmp_path, 200), _reads(tmp_path, long)
    for query in short:
        shards = far[query].pop("sizes", 0)
        assert shards <= 4  # the segments of the query's cuts
        short[query].pop("sizes", 0)
    assert far == short
    assert max(sum(reads.values()) for reads in short.values()) < 20


def test_near_and_far_cuts_are_answered_alike_by_a_span_by_records_and_past_the_sealed_lookups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with seaway.Seaway(tmp_path, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        first = stream.metadata.generation(0)
        builder = HistoryBuilder(stream, placeholder_logs(), placeholder_seal)
        for step in _steps(stream, 30):
            builder.scale(step)
        builder.flush()
        meta = stream.metadata
        cuts = [_cut(stream, *meta.generation(g).segments) for g in (0, 5, 12, 27, 28, 30)]
        cuts.append(_cut(stream, first.segments[0], *[s for s in meta.generation(30).segments if s.key_lo >= 0.5]))

        def answers() -> list[object]:
            found: list[object] = []
            for low in cuts:
                found.append(stream.size_until(low))
                for high in cuts:
                    try:
                        found.append([s.id for s in stream.segments_between(low, high)])
                    except InvalidStreamCutError:  # not ordered, or the lower after the upper
                        found.append(None)
            return found

        spans = answers()  # 30 generations: every cut is near (read as a span)
        monkeypatch.setattr(_metadata, "NEAR_GENERATIONS", 0)
        assert answers() == spans  # the records of the cuts' segments, and where they were sealed
        monkeypatch.setattr(_metadata, "SEALED_LOOKUPS_MAX", 0)
        assert answers() == spans  # the records, and the deltas from the oldest creation
        assert len([a for a in spans if a]) > 20
