"""The auto-scaler against simulated streams: a fake clock, segments' counters fed by a steady (or
changing) load spread over the key space, and its decisions carried out on the generation."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seaway._errors import BufferFullError, InvalidArgumentError
from seaway.streams import ByDataRate, ByEventRate, FixedSegments, Generation, ScalingPolicy, Segment
from seaway.streams._autoscale import AutoScaleConfig, AutoScaler, ScaleDecision
from seaway.streams._records import check_cover, even_ranges
from seaway.testing import FakeClock

STREAM = "scope/stream"
MIN = 60.0
HOUR = 3600.0


@dataclass
class Change:
    at_s: float
    decision: ScaleDecision
    created: tuple[int, ...]
    count_after: int


class Sim:
    """A stream under a load of ``total`` events per second (``bytes_per_event`` bytes each), spread
    over the key space by ``density`` (weights of equal-width bins; even by default)."""

    def __init__(self, policy: ScalingPolicy, segments: int = 1, *, density: tuple[float, ...] = (1.0,),
                 step_s: float = 30.0, bytes_per_event: int = 100, config: AutoScaleConfig | None = None,
                 created_ago_s: float = HOUR) -> None:
        self.clock = FakeClock()
        self.scaler = AutoScaler(self.clock, config)
        self.policy = policy
        self.step_s = step_s
        self.bytes_per_event = bytes_per_event
        weight = sum(density)
        self.density = [w / weight for w in density]
        created_ms = self.clock.now_ms() - round(created_ago_s * 1000)
        self.gen = Generation(0, created_ms, tuple(Segment(i, 0, created_ms, lo, hi)
                                                   for i, (lo, hi) in enumerate(even_ranges(segments))))
        self.numbers = itertools.count(segments)
        self.events: dict[int, float] = {}
        self.offset: dict[int, int] = {}  # subtracted from a segment's counters (a restart)
        self.changes: list[Change] = []
        self.elapsed_s = 0.0

    def share(self, segment: Segment) -> float:
        """The part of the load that falls in the segment's range."""
        bins = len(self.density)
        total = 0.0
        for i, w in enumerate(self.density):
            lo, hi = max(segment.key_lo, i / bins), min(segment.key_hi, (i + 1) / bins)
            if hi > lo:
                total += w * (hi - lo) * bins
        return total

    def rate(self, segment: Segment, total: float) -> float:
        return total * self.share(segment)

    def run(self, seconds: float, total: float) -> list[Change]:
        """Run ``seconds`` of load, sampling and deciding every step; the changes made meanwhile."""
        before = len(self.changes)
        for _ in range(round(seconds / self.step_s)):
            self.clock.advance(self.step_s)
            self.elapsed_s += self.step_s
            for seg in self.gen.segments:
                self.events[seg.id] = self.events.get(seg.id, 0.0) + self.rate(seg, total) * self.step_s
                events = int(self.events[seg.id]) - self.offset.get(seg.id, 0)
                self.scaler.observe(STREAM, seg.id, events, events * self.bytes_per_event)
            for decision in self.scaler.decide(STREAM, self.policy, self.gen):
                self.apply(decision)
        return self.changes[before:]

    def restart(self) -> None:
        """The counters of every segment start again from zero (the store reopened)."""
        for seg in self.gen.segments:
            self.offset[seg.id] = int(self.events.get(seg.id, 0.0))

    def apply(self, decision: ScaleDecision) -> None:
        sealed = [self.gen.find(i) for i in decision.sealed]
        assert all(s is not None for s in sealed), f"{decision} seals a segment not in the generation"
        lo = min(s.key_lo for s in sealed if s is not None)
        hi = max(s.key_hi for s in sealed if s is not None)
        assert sum(s.key_hi - s.key_lo for s in sealed if s is not None) == pytest.approx(hi - lo), \
            "a merge takes adjacent segments"
        check_cover(decision.ranges, lo, hi)  # exactly the sealed segments' ranges
        assert (len(decision.sealed) == 1) == (len(decision.ranges) >= 2), "a split or a merge"
        now_ms = self.clock.now_ms()
        generation = self.gen.generation + 1
        created = [Segment(next(self.numbers), generation, now_ms, a, b) for a, b in decision.ranges]
        kept = [s for s in self.gen.segments if s.id not in decision.sealed]
        segments = tuple(sorted(kept + created, key=lambda s: s.key_lo))
        check_cover((s.key_lo, s.key_hi) for s in segments)
        self.gen = Generation(generation, now_ms, segments)
        self.scaler.forget(STREAM, decision.sealed)
        self.changes.append(Change(self.elapsed_s, decision, tuple(s.id for s in created), len(segments)))

    @property
    def count(self) -> int:
        return len(self.gen.segments)


# --- splitting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("load", "earliest_s", "latest_s"), [
    (6000.0, 2 * MIN, 2.5 * MIN),   # the 2-minute rate above 5x the target
    (2500.0, 5 * MIN, 5.5 * MIN),   # the 5-minute rate above 2x
    (1200.0, 10 * MIN, 10.5 * MIN),  # the 10-minute rate above the target
])
def test_sustained_load_splits_the_sooner_the_higher(load: float, earliest_s: float, latest_s: float) -> None:
    sim = Sim(ByEventRate(1000))
    changes = sim.run(HOUR, load)
    assert changes, "a sustained load above the target splits"
    first = changes[0]
    assert earliest_s <= first.at_s <= latest_s
    assert first.decision.is_split and first.decision.ranges == ((0.0, 0.5), (0.5, 1.0))
    assert "1,000 events/s" in first.decision.reason and "split 0.0 in 2" in first.decision.reason


def test_load_just_below_the_target_does_not_split() -> None:
    sim = Sim(ByEventRate(1000))
    assert sim.run(6 * HOUR, 990.0) == []


def test_a_short_burst_does_not_split() -> None:
    sim = Sim(ByEventRate(1000))
    sim.run(30 * MIN, 300.0)
    sim.run(1 * MIN, 4000.0)  # four minutes' worth of the target in one
    assert sim.run(2 * HOUR, 300.0) == []
    # The same load, sustained, does split.
    assert Sim(ByEventRate(1000)).run(10 * MIN, 4000.0)


def test_a_split_makes_factor_pieces_unless_they_would_merge_back() -> None:
    many = Sim(ByEventRate(1000, factor=8))
    (change,) = many.run(3 * MIN, 10_000.0)  # the pieces take 1250/s each
    assert change.decision.ranges == tuple(even_ranges(8))
    # At 1.6x the target, 8 pieces would take 200/s each, cold enough to merge again: 3 at 533/s.
    few = Sim(ByEventRate(1000, factor=8))
    change = few.run(15 * MIN, 1600.0)[0]
    assert change.decision.ranges == tuple(even_ranges(3))
    assert "not 8" in change.decision.reason


def test_cooldown_after_creation() -> None:
    # A stream made just now does not scale for ten minutes, whatever its load.
    sim = Sim(ByEventRate(1000), created_ago_s=0)
    changes = sim.run(HOUR, 100_000.0)
    assert changes[0].at_s >= 10 * MIN
    # Nor do the segments a split made: under a load that keeps splitting them, each waits.
    sim = Sim(ByEventRate(1000))
    created_s = {seg.id: -HOUR for seg in sim.gen.segments}
    for change in sim.run(2 * HOUR, 100_000.0):
        for sealed in change.decision.sealed:
            assert change.at_s - created_s[sealed] >= 10 * MIN
        created_s.update(dict.fromkeys(change.created, change.at_s))
    assert sim.count > 64  # it did keep splitting


def test_fixed_segments_never_scale() -> None:
    sim = Sim(FixedSegments(2), segments=2)
    assert sim.run(HOUR, 1e9) == []
    assert sim.run(2 * HOUR, 0.0) == []


# --- merging ------------------------------------------------------------------------------------


def test_sustained_low_load_merges_slowly() -> None:
    sim = Sim(ByEventRate(1000), segments=4)
    changes = sim.run(2 * HOUR, 400.0)  # 100/s a segment, 400/s all together
    assert changes, "segments cold for long merge"
    assert changes[0].at_s >= 20 * MIN, "only once the 20-minute rate is known"
    assert not changes[0].decision.is_split
    assert sim.count == 1 and sim.gen.segments[0].key_lo == 0.0 and sim.gen.segments[0].key_hi == 1.0
    assert "1,000 events/s" in changes[0].decision.reason


def test_merges_only_below_half_the_target_together() -> None:
    sim = Sim(ByEventRate(1000), segments=4)
    changes = sim.run(3 * HOUR, 1600.0)  # 400/s each: any two together are above 500/s
    assert changes == []
    sim = Sim(ByEventRate(1000), segments=4)
    sim.run(3 * HOUR, 900.0)  # 225/s each: pairs merge (450/s), not three (675/s)
    assert sim.count == 2


def test_never_below_min_segments() -> None:
    sim = Sim(ByEventRate(1000, min_segments=3), segments=6)
    sim.run(4 * HOUR, 0.0)
    assert sim.count == 3
    assert all(not c.decision.is_split for c in sim.changes)


def test_a_short_lull_does_not_merge() -> None:
    sim = Sim(ByEventRate(1000), segments=2)
    sim.run(HOUR, 1800.0)
    sim.run(5 * MIN, 0.0)
    assert sim.run(HOUR, 1800.0) == []


# --- steady load never oscillates ---------------------------------------------------------------


def settles(sim: Sim, total: float, settle_s: float, watch_s: float) -> None:
    """Run ``settle_s`` then ``watch_s`` more: nothing changes in the second part, and what the
    stream settled on is stable (no segment above the target, no adjacent pair cold enough)."""
    sim.run(settle_s, total)
    assert sim.run(watch_s, total) == [], f"still scaling after {settle_s / HOUR:g} h: {sim.changes[-3:]}"
    policy = sim.policy
    assert isinstance(policy, ByEventRate | ByDataRate)
    target = policy.events_per_s if isinstance(policy, ByEventRate) else policy.bytes_per_s
    per_event = 1 if isinstance(policy, ByEventRate) else sim.bytes_per_event
    rates = [sim.rate(seg, total) * per_event for seg in sim.gen.segments]
    assert max(rates) <= target * 1.001
    if sim.count > policy.min_segments:
        assert min(a + b for a, b in itertools.pairwise(rates)) >= target / 2 * 0.999


@pytest.mark.parametrize("policy", [ByEventRate(1000), ByEventRate(1000, factor=3), ByEventRate(1000, factor=7),
                                    ByDataRate(100_000), ByEventRate(1000, factor=2, min_segments=4)])
@pytest.mark.parametrize("total", [0.0, 999.0, 1001.0, 1999.0, 2001.0, 3500.0, 9000.0, 40_000.0])
def test_steady_even_load_settles(policy: ScalingPolicy, total: float) -> None:
    segments = policy.min_segments
    sim = Sim(policy, segments=segments, step_s=60.0)
    settles(sim, total, 6 * HOUR, 6 * HOUR)
    # Under an even load the count moves one way only: no split is ever undone by a merge.
    assert len({c.decision.is_split for c in sim.changes}) <= 1


@settings(max_examples=25, deadline=None)
@given(density=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=8).filter(lambda d: sum(d) > 0.01),
       total=st.floats(0.0, 30_000.0),
       factor=st.integers(2, 10),
       start=st.integers(1, 8),
       min_segments=st.integers(1, 4),
       by_data=st.booleans())
def test_steady_load_never_oscillates(density: list[float], total: float, factor: int, start: int,
                                      min_segments: int, by_data: bool) -> None:
    policy: ScalingPolicy = (ByDataRate(100_000, factor, min_segments) if by_data
                             else ByEventRate(1000, factor, min_segments))
    sim = Sim(policy, segments=max(start, min_segments), density=tuple(density), step_s=60.0)
    settles(sim, total, 8 * HOUR, 6 * HOUR)


def test_load_that_rises_and_falls_scales_up_then_down() -> None:
    sim = Sim(ByEventRate(1000), step_s=60.0)
    sim.run(2 * HOUR, 7000.0)
    assert sim.count == 8  # 875/s each
    sim.run(3 * HOUR, 400.0)
    assert sim.count == 1


# --- rates by data, counters ---------------------------------------------------------------------


def test_by_data_rate_counts_bytes_not_events() -> None:
    # 500 events/s of 1 KiB: far under an event target, over a data target.
    assert Sim(ByEventRate(1000), bytes_per_event=1024).run(HOUR, 500.0) == []
    changes = Sim(ByDataRate(100_000), bytes_per_event=1024).run(HOUR, 500.0)
    assert changes and changes[0].decision.is_split
    assert "100,000 bytes/s" in changes[0].decision.reason


def test_counter_restart_is_a_new_baseline() -> None:
    sim = Sim(ByEventRate(1000), segments=2)
    sim.run(HOUR, 1200.0)  # 600/s each: together above half the target
    sim.restart()
    assert sim.run(3 * HOUR, 1200.0) == [], "a restart is not read as a negative rate (which would merge)"
    rates = sim.scaler.rates(STREAM, sim.gen.segments[0].id, sim.policy)
    assert rates is not None and rates[1200.0] == pytest.approx(600.0, rel=0.01)


def test_counter_restart_to_a_lower_nonzero_value() -> None:
    clock = FakeClock()
    scaler = AutoScaler(clock)
    policy = ByEventRate(1000)
    for i in range(1, 31):
        clock.advance(60)
        scaler.observe(STREAM, 7, 600 * 60 * i, 0)
    clock.advance(60)
    scaler.observe(STREAM, 7, 5000, 0)  # restarted, then 5000 events: a baseline, not a rate
    clock.advance(60)
    scaler.observe(STREAM, 7, 5000 + 600 * 60, 0)
    rates = scaler.rates(STREAM, 7, policy)
    assert rates is not None and all(r == pytest.approx(600.0) for r in rates.values())


def test_rates_need_history_and_a_second_sample() -> None:
    clock = FakeClock()
    scaler = AutoScaler(clock)
    policy = ByEventRate(1000)
    scaler.observe(STREAM, 1, 100, 100)
    assert scaler.rates(STREAM, 1, policy) is None
    clock.advance(150)
    scaler.observe(STREAM, 1, 100 + 150 * 40, 0 + 150 * 400)
    assert scaler.rates(STREAM, 1, policy) == pytest.approx({120.0: 40.0})  # only the window it covers
    assert scaler.rates(STREAM, 1, ByDataRate(1000)) == pytest.approx({120.0: 400.0 - 100 / 150})


def test_stale_segments_are_not_scaled() -> None:
    def hot(clock: FakeClock) -> AutoScaler:
        scaler = AutoScaler(clock)
        for i in range(12):  # 12 minutes at 1200/s: the 10-minute rate is above the target
            scaler.observe(STREAM, 0, 1200 * 60 * i, 0)
            clock.advance(60)
        return scaler

    gen = Sim(ByEventRate(1000)).gen
    fresh = FakeClock(gen.created_ms + 3_600_000)
    assert hot(fresh).decide(STREAM, ByEventRate(1000), gen)
    stale = FakeClock(gen.created_ms + 3_600_000)
    scaler = hot(stale)
    stale.advance(301)  # sample_stale_s and a bit: no sample since
    assert scaler.decide(STREAM, ByEventRate(1000), gen) == []


def test_decisions_never_share_a_segment() -> None:
    sim = Sim(ByEventRate(1000), segments=10, density=(10.0, 0.0, 0.0, 0.0, 10.0), step_s=60.0)
    for _ in range(200):
        clock_changes = sim.run(60.0, 20_000.0)
        sealed = [i for c in clock_changes for i in c.decision.sealed]
        assert len(sealed) == len(set(sealed))
    assert any(c.decision.is_split for c in sim.changes) and any(not c.decision.is_split for c in sim.changes)


def test_forget_and_tracked() -> None:
    clock = FakeClock()
    scaler = AutoScaler(clock, AutoScaleConfig(tracked_segments_max=3))
    for segment_id in range(3):
        scaler.observe(STREAM, segment_id, 0, 0)
    with pytest.raises(BufferFullError):
        scaler.observe("other/stream", 0, 0, 0)
    scaler.forget(STREAM, [0, 1, 99])
    assert scaler.tracked(STREAM) == [2]
    scaler.observe("other/stream", 0, 0, 0)
    assert scaler.tracked("other/stream") == [0]


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, True, "7"])
def test_observe_checks_counters(bad: object) -> None:
    scaler = AutoScaler(FakeClock())
    with pytest.raises(InvalidArgumentError):
        scaler.observe(STREAM, 1, bad, 0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        scaler.observe(STREAM, 1, 0, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [
    {"merge_fraction": 0.6}, {"merge_fraction": 0.0}, {"split_triggers": ()},
    {"split_triggers": ((120.0, 0.9),)}, {"split_triggers": ((0.0, 2.0),)}, {"merge_windows_s": ()},
    {"merge_windows_s": (-1.0,)}, {"cooldown_s": -1.0}, {"sample_stale_s": float("inf")},
    {"merge_segments_max": 1}, {"tracked_segments_max": 0},
])
def test_config_is_checked(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        AutoScaleConfig(**kwargs)  # type: ignore[arg-type]


def test_config_windows() -> None:
    assert AutoScaleConfig().windows_s == (120.0, 300.0, 600.0, 1200.0)
