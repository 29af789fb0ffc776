"""Automatic scaling of a store's streams, driven pass by pass with a fake clock."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import seaway
from seaway import ByEventRate, FixedSegments, SeawayConfig
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.testing import FakeClock
from seaway.testing._split import USER_CONFIG

PASS_S = 10


def _load(sw: seaway.Seaway, stream: seaway.Stream, events_per_s: float) -> None:
    """``events_per_s`` spread over the stream's key space for one pass, each segment its share."""
    for segment in stream.current_segments():
        count = round(events_per_s * PASS_S * (segment.key_hi - segment.key_lo))
        if count:
            sw.logs.get(segment.log_id).append_batch([b"e"] * count)


@pytest.mark.parametrize("split", [False, True], ids=["one", "split"])
def test_sustained_load_splits_and_a_long_lull_merges_back_with_reasons_in_the_history(
        tmp_path: Path, split: bool) -> None:
    """``split``: the segments' logs (whose append counts the scaler samples) in a second store's."""
    clock = FakeClock()
    config = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None))  # passes run by the test
    with contextlib.ExitStack() as stack:
        user_logs = None
        if split:
            user_logs = stack.enter_context(seaway.Seaway(tmp_path / "user", USER_CONFIG, clock=clock)).logs
        sw = stack.enter_context(seaway.Seaway(tmp_path / "data", config, clock=clock, user_logs=user_logs))
        assert sw.autoscaling is not None
        sw.streams.create_scope("s")
        hot = sw.streams.create("s/hot", scaling=ByEventRate(10, factor=2, min_segments=1))
        fixed = sw.streams.create("s/fixed", scaling=FixedSegments(1))
        split_at = None
        for n in range(1, 150):  # 100 events/s on a target of 10 per segment
            _load(sw, hot, 100)
            _load(sw, fixed, 100)
            clock.advance(PASS_S)
            done = sw.autoscaling.run_once()
            if done and split_at is None:
                split_at = n * PASS_S
        assert split_at is not None and split_at <= 11 * 60  # the cooldown (10 min), then at once
        assert len(hot.current_segments()) >= 4
        assert len(fixed.current_segments()) == 1  # a fixed stream never scales by itself
        history = hot.history()
        assert history and all("target" in d.reason for d in history), [d.reason for d in history]
        peak = len(hot.current_segments())
        for _ in range(6 * 60 * 60 // PASS_S):  # six quiet hours: back down to the minimum
            clock.advance(PASS_S)
            sw.autoscaling.run_once()
        assert len(hot.current_segments()) == 1 < peak
        assert any("merge" in d.reason for d in hot.history())
