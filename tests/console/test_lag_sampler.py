"""The lag sampler, over fake totals and a fake clock: bounded series, deleted groups dropped,
failures kept for the page and retried at the next sample."""

from __future__ import annotations

import itertools

import pytest

from seaway.console._lag import LagSampler
from seaway.errors import UnavailableError


def test_series_keep_the_latest_samples_drop_deleted_groups_and_survive_a_failed_sample() -> None:
    totals: dict[str, int | None] = {"reader group a": 5, "consumer group q/g": None}
    failing = [False]

    def read() -> dict[str, int | None]:
        if failing[0]:
            raise UnavailableError("the server is away")
        return dict(totals)

    ticks = itertools.count(1_795_000_000_000, 1000)
    sampler = LagSampler(read, interval_s=60.0, samples_max=3, clock_ms=lambda: next(ticks))
    for lag in (5, 4, 3, 2):
        totals["reader group a"] = lag
        sampler.sample()
    series = {s["name"]: s for s in sampler.series()}
    assert series["reader group a"]["lag"] == [4, 3, 2]  # the oldest dropped: 3 at most
    assert series["reader group a"]["time"][0] == "2026-11-18T11:06:41.000Z"
    assert series["consumer group q/g"]["lag"] == [None, None, None]  # not counted: no value, still a point
    failing[0] = True
    sampler.sample()
    assert sampler.last_error == "the server is away"
    assert {s["name"]: s["lag"] for s in sampler.series()}["reader group a"] == [4, 3, 2]
    failing[0] = False
    del totals["consumer group q/g"]
    sampler.sample()
    assert sampler.last_error is None
    assert [s["name"] for s in sampler.series()] == ["reader group a"]


def test_start_takes_a_sample_at_once_and_stop_ends_the_thread() -> None:
    sampler = LagSampler(lambda: {"notify p": 7}, interval_s=3600.0, samples_max=10)
    sampler.start()
    try:
        assert [s["lag"] for s in sampler.series()] == [[7]]
    finally:
        sampler.stop()
    assert sampler._thread is not None and not sampler._thread.is_alive()


def test_a_defect_in_a_sample_is_kept_and_logged_and_sampling_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    answers: list[object] = [KeyError("boom"), {"notify p": 1}]

    def read() -> dict[str, int | None]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, dict)
        return answer

    sampler = LagSampler(read, interval_s=60.0, samples_max=3)
    sampler.sample()
    assert sampler.last_error == "KeyError: 'boom'" and "lag sample failed" in caplog.text
    sampler.sample()
    assert sampler.last_error is None and [s["lag"] for s in sampler.series()] == [[1]]
