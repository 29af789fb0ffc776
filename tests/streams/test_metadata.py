"""The stream metadata queries against a brute-force reference over the same history.

The reference keeps every generation's segment set and answers each query by walking the whole
history point by point of the key space; the store answers from PDP-32's records with a constant
number of reads. A long history crosses the chunk boundary (1,000 generations) of the time index
and the delta chunks.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from pathlib import Path

import pytest

import seaway
from seaway import InvalidStreamCutError, ScaleConflictError, StreamCut
from seaway.log import LSN_OLDEST
from seaway.streams import Delta, Segment, Stream
from seaway.streams._metadata import CHUNK_GENERATIONS
from seaway.testing import FakeClock


class Reference:
    """Every generation's segments, and the time it began."""

    def __init__(self, stream: Stream) -> None:
        first = stream.metadata.generation(0)
        self.generations: list[tuple[int, list[Segment]]] = [(first.created_ms, list(first.segments))]

    def add(self, time_ms: int, segments: list[Segment]) -> None:
        self.generations.append((time_ms, sorted(segments, key=lambda s: s.key_lo)))

    def at(self, time_ms: int) -> list[Segment]:
        chosen = self.generations[0][1]
        for start, segments in self.generations:
            if start <= time_ms:
                chosen = segments
        return chosen

    def sealed_at(self, segment: int) -> int | None:
        """The first generation without the segment, after one with it."""
        return self.sealed.get(segment)

    def finish(self) -> None:
        """Once the history is complete: the chain of segments that held each point of the key
        space (between any two range bounds), oldest first, as segment -> place in the chain."""
        self.every = {s.id: s for _, segments in self.generations for s in segments}
        self.sealed: dict[int, int] = {}
        for g in range(1, len(self.generations)):
            now = {s.id for s in self.generations[g][1]}
            self.sealed.update((s.id, g) for s in self.generations[g - 1][1] if s.id not in now)
        bounds = sorted({b for s in self.every.values() for b in (s.key_lo, s.key_hi)})
        self.chains: list[tuple[float, dict[int, int]]] = []
        for point in [(a + b) / 2 for a, b in itertools.pairwise(bounds)]:
            chain: dict[int, int] = {}
            for _, segments in self.generations:
                holder = next(s.id for s in segments if s.key_lo <= point < s.key_hi)
                chain.setdefault(holder, len(chain))
            self.chains.append((point, chain))
        self.points = [point for point, _ in self.chains]

    def _places(self, segment: Segment, cut: dict[int, int]) -> list[tuple[int, int]]:
        """At each point of the segment's range: its place in the chain, and the cut's."""
        lo = bisect.bisect_left(self.points, segment.key_lo)
        hi = bisect.bisect_left(self.points, segment.key_hi)
        return [(chain[segment.id], next(chain[s] for s in cut if s in chain and self.every[s].holds(point)))
                for point, chain in self.chains[lo:hi]]

    def before(self, segment: Segment, cut: dict[int, int]) -> bool:
        """Wholly before the cut: at every point of its range, the cut's segment came after it."""
        return all(mine < theirs for mine, theirs in self._places(segment, cut))

    def after(self, segment: Segment, cut: dict[int, int]) -> bool:
        return all(mine > theirs for mine, theirs in self._places(segment, cut))

    def random_cut(self, rng: random.Random, stream: str) -> dict[int, int]:
        """A consistent cut: at each point, one segment of its chain, chosen so that the cut's
        segments do not overlap (a cut of one random generation, with random positions)."""
        _, segments = self.generations[rng.randrange(len(self.generations))]
        return {s.id: rng.choice([LSN_OLDEST, 2, 3]) for s in segments}

    def mixed_cut(self, rng: random.Random) -> dict[int, int] | None:
        """A consistent cut of two generations: an older one's segments below a key where both
        have a boundary, a newer one's above it (None if the two chosen share no boundary)."""
        a = rng.randrange(len(self.generations) - 1)
        b = min(len(self.generations) - 1, a + rng.randrange(1, 30))
        older, newer = self.generations[a][1], self.generations[b][1]
        shared = sorted({s.key_hi for s in older} & {s.key_lo for s in newer} - {0.0, 1.0})
        if not shared:
            return None
        at = rng.choice(shared)
        segments = [s for s in older if s.key_hi <= at] + [s for s in newer if s.key_lo >= at]
        return None if len({s.generation for s in segments}) < 2 else {s.id: LSN_OLDEST for s in segments}


def _scale_randomly(stream: Stream, reference: Reference, clock: FakeClock, rng: random.Random) -> None:
    current = stream.current_segments()
    if len(current) > 1 and (len(current) > 6 or rng.random() < 0.4):
        i = rng.randrange(len(current) - 1)
        stream.merge([current[i].id, current[i + 1].id])
    else:
        stream.split(rng.choice(current).id, rng.choice([2, 3]))
    reference.add(clock.now_ms(), stream.current_segments())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _events(sw: seaway.Seaway, stream: Stream, rng: random.Random) -> None:
    """A few events in some current segments, so that sealed segments have sizes."""
    for segment in stream.current_segments():
        if rng.random() < 0.5:
            sw.logs.get(segment.log_id).append_batch([b"e" * rng.randrange(1, 200)] * rng.randrange(1, 4))


def test_every_query_matches_the_reference_over_a_long_history_with_truncations(tmp_path: Path,
                                                                                 clock: FakeClock) -> None:
    rng = random.Random(7)
    with seaway.Seaway(tmp_path, clock=clock) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/long", segments=3)
        reference = Reference(stream)
        for _ in range(CHUNK_GENERATIONS + 10):
            clock.advance(rng.choice([0.001, 1, 5]))
            if rng.random() < 0.05:
                _events(sw, stream, rng)
            _scale_randomly(stream, reference, clock, rng)
        reference.finish()
        generations = len(reference.generations)
        assert stream.describe().generation == generations - 1 > CHUNK_GENERATIONS
        first_ms = reference.generations[0][0]
        last_ms = reference.generations[-1][0]
        every = reference.every
        sizes = {i: sw.logs.get(s.log_id).data_size() for i, s in every.items() if reference.sealed_at(i)}
        finals = {i: sw.logs.get(s.log_id).final_lsn() for i, s in every.items() if reference.sealed_at(i)}
        for _ in range(150):  # segments at a time, at random times (and exactly at generation starts)
            t = rng.choice([rng.randrange(first_ms - 1000, last_ms + 1000), rng.choice(reference.generations)[0]])
            assert {s.id for s in stream.segments_at(t)} == {s.id for s in reference.at(t)}, t
        for segment in rng.sample(sorted(every), 150):
            sealed = reference.sealed_at(segment)
            successors = stream.successors(segment)
            if sealed is None:
                assert successors == {}
            else:
                after = reference.generations[sealed][1]
                expected = {s.id for s in after if s.overlaps(every[segment]) and s.generation == sealed}
                assert {s.id for s in successors} == expected
            created = every[segment].generation
            expected_pred = set() if created == 0 else {
                s.id for s in reference.generations[created - 1][1]
                if s.overlaps(every[segment]) and all(t.id != s.id for t in reference.generations[created][1])}
            assert {s.id for s in stream.predecessors(segment)} == expected_pred
        for _ in range(60):  # segments between two cuts, and the size up to a cut
            a, b = reference.random_cut(rng, stream.name), reference.random_cut(rng, stream.name)
            ca, cb = StreamCut(stream.name, a), StreamCut(stream.name, b)
            try:
                order = stream.compare(ca, cb)
            except InvalidStreamCutError:
                continue
            low, high = (a, b) if order <= 0 else (b, a)
            got = {s.id for s in stream.segments_between(StreamCut(stream.name, low), StreamCut(stream.name, high))}
            expected = {i for i, s in every.items() if not reference.before(s, low) and not reference.after(s, high)}
            assert got == expected
            want = sum(sizes[i] for i, s in every.items() if i not in low and i in sizes and reference.before(s, low))
            want += sum(sizes[i] for i, lsn in low.items() if i in sizes and lsn > (finals[i] or 0))
            assert stream.size_until(StreamCut(stream.name, low)) == want
        mixed_cuts = 0
        for _ in range(200):  # cuts not of one whole generation: the size walks the deltas
            mixed = reference.mixed_cut(rng)
            if mixed is not None:
                mixed_cuts += 1
                want = sum(sizes[i] for i, s in every.items() if i not in mixed and i in sizes
                           and reference.before(s, mixed))
                assert stream.size_until(StreamCut(stream.name, mixed)) == want
        assert mixed_cuts > 20

        # Random truncations, moving the head forwards; the queries overlay it.
        for generation in sorted(rng.sample(range(generations // 2, generations), 5)):
            cut = {s.id: LSN_OLDEST for s in reference.generations[generation][1]}
            stream.truncate(StreamCut(stream.name, cut))
            assert stream.head().positions == cut
            for _ in range(20):
                t = rng.randrange(first_ms, last_ms + 1)
                expected_ids = {s.id for s in reference.at(t) if not reference.before(s, cut)}
                assert {s.id for s in stream.segments_at(t)} == expected_ids
            gone = [s for i, s in every.items() if reference.before(s, cut)]
            assert all(_deleted(sw, s.log_id) for s in gone)
        with pytest.raises(InvalidStreamCutError):  # backwards
            stream.truncate(StreamCut(stream.name, {s.id: LSN_OLDEST for s in reference.generations[1][1]}))


def _deleted(sw: seaway.Seaway, log_id: int) -> bool:
    try:
        sw.logs.get(log_id)
    except seaway.LogDeletedError:
        return True
    return False


def test_conflicting_scales_cannot_both_succeed(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        first = stream.current_segments()[0]
        stream.split(first.id)
        with pytest.raises(ScaleConflictError):
            stream.split(first.id)  # planned against the set before: the segment is gone
        assert len(stream.current_segments()) == 3


def test_a_delta_record_reads_back_from_its_binary_form_and_from_the_json_form_before_it() -> None:
    created = (Segment(3, 1, 1_700_000_000_000, 0.0, 1 / 6, 2**61 - 1),
               Segment(4, 1, 1_700_000_000_000, 1 / 6, 1 / 3, 7))
    delta = Delta(1, 1_700_000_000_000, (0, 2**32 + 5), created, "split 0.0 ✓")
    assert Delta.decode(delta.encode()) == delta
    old = ('{"g":1,"t":1700000000000,"sealed":[0,4294967301],"created":[[3,1,1700000000000,0.0,0.16666666666666666,'
           '2305843009213693951],[4,1,1700000000000,0.16666666666666666,0.3333333333333333,7]],"why":"split 0.0 ✓"}')
    assert Delta.decode(old.encode()) == delta
    with pytest.raises(ValueError):
        Delta.decode(delta.encode()[:-20])


def test_a_thinned_retention_set_keeps_gaps_in_proportion_to_age() -> None:
    from seaway.streams._metadata import thinned_cut  # noqa: PLC0415

    kept_max, minute_ms = 100, 60_000
    times: list[int] = []
    for n in range(5_000):  # a cut a minute for 3.5 days, 50 times what the set holds
        times.append(n * minute_ms)
        if len(times) > kept_max:
            del times[thinned_cut(times, times[-1])]
    now = times[-1]
    assert len(times) == kept_max and times[0] == 0 and now == 4_999 * minute_ms  # both ends stay
    # ln(age span) / N of each cut's age, with room for the greedy choice's unevenness.
    bound = 3 * math.log(now / minute_ms) / kept_max
    for before, at, after in zip(times, times[1:], times[2:], strict=False):
        # (The newest are a minute apart, as recorded: no gap is below that.)
        assert after - before <= max(2 * minute_ms, bound * (now - at)), \
            f"a gap of {(after - before) / minute_ms} min at {(now - at) / minute_ms} min old"
