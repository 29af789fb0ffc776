"""The automatic scaling policy: when a stream's segments split and merge, from their measured rates.

Pure: no I/O, no threads; time comes from an injected clock. The controller samples each active
segment's cumulative counters (:meth:`AutoScaler.observe`), asks for decisions
(:meth:`AutoScaler.decide`), carries them out, and drops the state of the segments it sealed
(:meth:`AutoScaler.forget`).

Each segment keeps exponentially weighted moving averages of its event and byte rates, one per
window (time constant), as Pravega does over 2, 5, 10 and 20 minutes. A window's rate counts once
the segment has been observed for at least that long, so a new segment (a split's, with no history
of its own) is judged only on what it was measured doing.

Why it cannot oscillate under steady load (``T`` is the target, ``d`` the merge fraction, at most
1/2, and every split multiple is at least 1):

- a merge makes a segment whose rate, over every window, is below ``d·T < T``: no split rule fires;
- a split of a segment measured at ``r > T`` makes ``k`` pieces with ``k <= r / (d·T)`` (and
  ``k >= 2``, which ``r > T >= 2·d·T`` allows), so each piece takes at least ``d·T`` of an even
  load, and no group of adjacent segments holding one sums below ``d·T``: no merge takes it.

So under steady load only hot segments split, their pieces never merge, merged segments never
split; ranges only shrink by splits where the load is above the target, and the count settles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from seaway._clock import Clock
from seaway.errors import BufferFullError, InvalidArgumentError
from seaway.streams._config import SEGMENTS_MAX, ByDataRate, ByEventRate, ScalingPolicy
from seaway.streams._names import segment_str
from seaway.streams._records import Generation, Segment, even_ranges

COUNTER_MAX = 2**63 - 1


def _window_name(window_s: float) -> str:
    return f"{window_s / 60:g}-min" if window_s >= 60 else f"{window_s:g}-s"


def _check_window(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise InvalidArgumentError(f"a rate window is a positive number of seconds, got {value!r}")


@dataclass(frozen=True)
class AutoScaleConfig:
    """When segments split and merge. The defaults are Pravega's."""

    split_triggers: tuple[tuple[float, float], ...] = ((120.0, 5.0), (300.0, 2.0), (600.0, 1.0))
    """``(window_s, multiple)`` pairs: a segment splits when its rate over any one window is above
    ``multiple`` times the target (quickly under a strong load, later under a weaker one). Every
    multiple is at least 1."""
    merge_windows_s: tuple[float, ...] = (120.0, 300.0, 600.0, 1200.0)
    """Adjacent segments merge only when, over every one of these windows, their rates together
    are below ``merge_fraction`` times the target."""
    merge_fraction: float = 0.5
    """In ``(0, 0.5]``: at most half, so that a split never makes pieces cold enough to merge."""
    cooldown_s: float = 600.0
    """A segment neither splits nor merges until this long after it was created."""
    sample_stale_s: float = 300.0
    """A segment not observed for this long is not scaled (its rates would be out of date)."""
    merge_segments_max: int = 8
    """The most segments one merge seals."""
    tracked_segments_max: int = 1_000_000
    """Segments whose rates are kept at once (over all streams); observing more is refused."""

    def __post_init__(self) -> None:
        if not self.split_triggers:
            raise InvalidArgumentError("split_triggers must hold at least one (window_s, multiple)")
        for trigger in self.split_triggers:
            if not isinstance(trigger, tuple) or len(trigger) != 2:
                raise InvalidArgumentError(f"a split trigger is a (window_s, multiple) pair, got {trigger!r:.80}")
            window_s, multiple = trigger
            _check_window(window_s)
            if isinstance(multiple, bool) or not isinstance(multiple, int | float) or not 1 <= multiple < math.inf:
                raise InvalidArgumentError(f"a split multiple must be a number >= 1 (a split happens only above "
                                           f"the target), got {multiple!r}")
        if not self.merge_windows_s:
            raise InvalidArgumentError("merge_windows_s must hold at least one window")
        for window_s in self.merge_windows_s:
            _check_window(window_s)
        fraction = self.merge_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 0.5:
            raise InvalidArgumentError(f"merge_fraction must be in (0, 0.5], got {fraction!r}")
        for name in ("cooldown_s", "sample_stale_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")
        for name, most in (("merge_segments_max", SEGMENTS_MAX), ("tracked_segments_max", 2**31)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 2 <= value <= most:
                raise InvalidArgumentError(f"{name} must be an integer in [2, {most}], got {value!r}")

    @property
    def windows_s(self) -> tuple[float, ...]:
        """Every window a rate is kept over, shortest first."""
        return tuple(sorted({w for w, _ in self.split_triggers} | set(self.merge_windows_s)))


@dataclass(frozen=True, slots=True)
class ScaleDecision:
    """Seal ``sealed`` (one segment for a split; two or more adjacent ones for a merge) and create
    segments over ``ranges``, which cover exactly the sealed segments' key ranges together."""

    sealed: tuple[int, ...]
    ranges: tuple[tuple[float, float], ...]
    reason: str
    """A sentence with the measured rates and the target, for the stream's history."""

    @property
    def is_split(self) -> bool:
        return len(self.sealed) == 1


@dataclass(slots=True)
class _Rates:
    """One segment's sampled counters and moving averages (events and bytes, one per window)."""

    first_s: float
    """When the segment was first observed: its history is ``last_s - first_s`` long."""
    last_s: float
    events_total: int
    bytes_total: int
    events_per_s: list[float] = field(default_factory=list)
    bytes_per_s: list[float] = field(default_factory=list)
    """Empty until a second sample gives a first rate."""

    def add(self, now_s: float, events_total: int, bytes_total: int, windows_s: Sequence[float]) -> None:
        if events_total < self.events_total or bytes_total < self.bytes_total:
            # The counters restarted (the store reopened): this sample is a new baseline. The
            # averages so far stand; the interval since the last sample is simply not measured.
            self.last_s, self.events_total, self.bytes_total = now_s, events_total, bytes_total
            return
        elapsed_s = now_s - self.last_s
        if elapsed_s <= 0:
            return  # counted in the next interval, which starts at the same baseline
        event_rate = (events_total - self.events_total) / elapsed_s
        byte_rate = (bytes_total - self.bytes_total) / elapsed_s
        if not self.events_per_s:  # the first interval seeds every window rather than a zero
            self.events_per_s = [event_rate] * len(windows_s)
            self.bytes_per_s = [byte_rate] * len(windows_s)
        else:
            for i, window_s in enumerate(windows_s):
                # The exact average over a continuous time for a rate constant over the interval:
                # samples need not be evenly spaced.
                weight = -math.expm1(-elapsed_s / window_s)
                self.events_per_s[i] += weight * (event_rate - self.events_per_s[i])
                self.bytes_per_s[i] += weight * (byte_rate - self.bytes_per_s[i])
        self.last_s, self.events_total, self.bytes_total = now_s, events_total, bytes_total


def _target(policy: ByEventRate | ByDataRate) -> tuple[float, str]:
    """The target rate per segment and its unit."""
    if isinstance(policy, ByEventRate):
        return policy.events_per_s, "events/s"
    return policy.bytes_per_s, "bytes/s"


def _fmt(rate: float) -> str:
    return f"{rate:,.0f}" if abs(rate) >= 100 else f"{rate:.3g}"


class AutoScaler:
    """Decides the splits and merges of streams' segments from their sampled counters.

    Not thread-safe: one controller thread drives it. Memory: one small record per tracked segment,
    at most ``tracked_segments_max``; the caller forgets sealed segments.
    """

    def __init__(self, clock: Clock, config: AutoScaleConfig | None = None) -> None:
        self._clock = clock
        self._config = config or AutoScaleConfig()
        self._windows_s = self._config.windows_s
        self._index = {w: i for i, w in enumerate(self._windows_s)}
        self._rates: dict[tuple[str, int], _Rates] = {}

    @property
    def config(self) -> AutoScaleConfig:
        return self._config

    def observe(self, stream: str, segment_id: int, events_total: int, bytes_total: int) -> None:
        """A segment's cumulative counts of events and payload bytes, sampled now.

        The first sample of a segment is its baseline; counters lower than the last sample mean they
        restarted (the log store reopened), and the sample is a new baseline. Raises
        :class:`InvalidArgumentError` for counters that are not integers in ``[0, 2**63)``, and
        :class:`BufferFullError` when ``tracked_segments_max`` segments are tracked already (forget
        the sealed ones).
        """
        for name, value in (("segment_id", segment_id), ("events_total", events_total),
                            ("bytes_total", bytes_total)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= COUNTER_MAX:
                raise InvalidArgumentError(f"{name} must be an integer in [0, 2**63), got {value!r:.80}")
        now_s = self._clock.monotonic_s()
        rates = self._rates.get((stream, segment_id))
        if rates is None:
            if len(self._rates) >= self._config.tracked_segments_max:
                raise BufferFullError(f"the auto-scaler tracks {len(self._rates)} segments already, its most: "
                                      "forget the sealed ones")
            self._rates[(stream, segment_id)] = _Rates(now_s, now_s, events_total, bytes_total)
            return
        rates.add(now_s, events_total, bytes_total, self._windows_s)

    def forget(self, stream: str, segment_ids: Iterable[int]) -> None:
        """Drop what is kept of these segments (sealed ones); unknown ids are ignored."""
        for segment_id in segment_ids:
            self._rates.pop((stream, segment_id), None)

    def tracked(self, stream: str) -> list[int]:
        """The ids of the stream's segments whose rates are kept, in no particular order."""
        return [segment_id for name, segment_id in self._rates if name == stream]

    def rates(self, stream: str, segment_id: int, policy: ScalingPolicy) -> dict[float, float] | None:
        """A segment's measured rates in the policy's unit (events or bytes per second), by window;
        windows not yet covered by its history are left out. None before its first rate."""
        rates = self._rates.get((stream, segment_id))
        if rates is None or not rates.events_per_s:
            return None
        values = rates.bytes_per_s if isinstance(policy, ByDataRate) else rates.events_per_s
        history_s = rates.last_s - rates.first_s
        return {w: values[i] for i, w in enumerate(self._windows_s) if history_s >= w}

    def decide(self, stream: str, policy: ScalingPolicy, generation: Generation) -> list[ScaleDecision]:
        """The splits and merges the stream's current ``generation`` needs now, in key order.

        No segment appears in two decisions. Only segments past their cooldown, observed lately and
        for long enough are considered. Never leaves fewer than ``policy.min_segments`` segments nor
        more than ``SEGMENTS_MAX``. :class:`FixedSegments` never scales: the list is empty.
        """
        if not isinstance(policy, ByEventRate | ByDataRate):
            return []
        target_rate, unit = _target(policy)
        now_ms = self._clock.now_ms()
        now_s = self._clock.monotonic_s()
        ready = {s.id: self._ready_rates(stream, s, policy, now_ms, now_s) for s in generation.segments}
        decisions: list[tuple[float, ScaleDecision]] = []
        count = len(generation.segments)
        for segment in generation.segments:
            rates = ready[segment.id]
            split = None if rates is None else self._split(segment, rates, policy.factor, target_rate, unit)
            if split is not None and count + len(split.ranges) - 1 <= SEGMENTS_MAX:
                decisions.append((segment.key_lo, split))
                count += len(split.ranges) - 1
        split_ids = {d.sealed[0] for _, d in decisions}
        for run in self._merge_groups(generation.segments, ready, split_ids, target_rate):
            fewer_max = count - policy.min_segments  # segments merges may still take away
            if fewer_max < 1:
                break
            group = run[:fewer_max + 1]
            decisions.append((group[0].key_lo, self._merge(group, ready, target_rate, unit)))
            count -= len(group) - 1
        decisions.sort(key=lambda item: item[0])
        return [d for _, d in decisions]

    def _ready_rates(self, stream: str, segment: Segment, policy: ScalingPolicy, now_ms: int,
                     now_s: float) -> dict[float, float] | None:
        """The segment's rates by window, or None if it may not scale now (cooling down, stale, new)."""
        if now_ms - segment.created_ms < self._config.cooldown_s * 1000:
            return None
        kept = self._rates.get((stream, segment.id))
        if kept is None or now_s - kept.last_s > self._config.sample_stale_s:
            return None
        return self.rates(stream, segment.id, policy)

    def _split(self, segment: Segment, rates: dict[float, float], factor: int, target_rate: float,
               unit: str) -> ScaleDecision | None:
        fired = [(window_s, multiple, rates[window_s]) for window_s, multiple in self._config.split_triggers
                 if window_s in rates and rates[window_s] > multiple * target_rate]
        if not fired:
            return None
        # The least of the rates that fired: the pieces must each keep at least the merge threshold
        # of it, or they would merge back (see the module docstring).
        rate = min(r for _, _, r in fired)
        ways = max(2, min(factor, math.floor(rate / (self._config.merge_fraction * target_rate))))
        ranges = even_ranges(ways, segment.key_lo, segment.key_hi)
        if any(lo >= hi for lo, hi in ranges):
            return None  # too narrow to cut in floats: it stays as it is
        measured = ", ".join(f"{_window_name(w)} {_fmt(r)} {unit} (> {m:g}x)" for w, m, r in fired)
        fewer = "" if ways == factor else f" (not {factor}: each piece keeps enough load not to merge back)"
        reason = (f"split {segment_str(segment.id)} in {ways}{fewer}: its rate is above the target of "
                  f"{_fmt(target_rate)} {unit} per segment: {measured}")
        return ScaleDecision((segment.id,), tuple(ranges), reason)

    def _merge_groups(self, segments: Sequence[Segment], ready: dict[int, dict[float, float] | None],
                      splitting: set[int], target_rate: float) -> list[list[Segment]]:
        """Runs of adjacent segments whose rates together stay below the merge threshold over every
        merge window, greedily from the lowest key, each of two or more segments."""
        threshold = self._config.merge_fraction * target_rate
        groups: list[list[Segment]] = []
        run: list[Segment] = []
        sums: dict[float, float] = {}

        def close_run() -> None:
            if len(run) >= 2:
                groups.append(list(run))
            run.clear()
            sums.clear()

        for segment in segments:
            rates = ready[segment.id]
            cold = (rates is not None and segment.id not in splitting
                    and all(w in rates and rates[w] < threshold for w in self._config.merge_windows_s))
            if not cold or rates is None:
                close_run()
                continue
            if run and run[-1].key_hi != segment.key_lo:
                close_run()  # not adjacent (never in a generation, which covers the key space)
            fits = len(run) < self._config.merge_segments_max and all(
                sums.get(w, 0.0) + rates[w] < threshold for w in self._config.merge_windows_s)
            if not fits:
                close_run()
            run.append(segment)
            for w in self._config.merge_windows_s:
                sums[w] = sums.get(w, 0.0) + rates[w]
        close_run()
        return groups

    def _merge(self, group: list[Segment], ready: dict[int, dict[float, float] | None], target_rate: float,
               unit: str) -> ScaleDecision:
        measured = []
        for w in self._config.merge_windows_s:
            total = sum((ready[s.id] or {}).get(w, 0.0) for s in group)
            measured.append(f"{_window_name(w)} {_fmt(total)}")
        names = ", ".join(segment_str(s.id) for s in group)
        reason = (f"merge {names}: together below {self._config.merge_fraction:g}x the target of "
                  f"{_fmt(target_rate)} {unit} per segment over every window: {'; '.join(measured)} {unit}")
        return ScaleDecision(tuple(s.id for s in group), ((group[0].key_lo, group[-1].key_hi),), reason)
