"""The seeded simulator: lost messages, failing disks and crashes never break the log's guarantees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seaway.testing import SimConfig, simulate

SEEDS = int(os.environ.get("SEAWAY_SIM_SEEDS", "60"))


@pytest.mark.parametrize("seed", range(SEEDS))
def test_simulation_keeps_guarantees(seed: int, tmp_path: Path) -> None:
    report = simulate(seed, tmp_path)
    assert report.violations == [], f"replay with simulate({seed}, path): {report.violations[:5]}"
    assert report.acked > 0 and report.records_read > 0


@pytest.mark.parametrize("seed", range(SEEDS))
def test_simulation_keeps_guarantees_with_two_writes_in_flight(seed: int, tmp_path: Path) -> None:
    """The embedded store's two-stage group commit: the next write is applied while one syncs."""
    config = SimConfig(writes_in_flight_max=2)
    report = simulate(seed, tmp_path, config)
    assert report.violations == [], f"replay with simulate({seed}, path, {config}): {report.violations[:5]}"
    assert report.acked > 0 and report.records_read > 0


def test_simulation_exercises_every_gap_and_failure(tmp_path: Path) -> None:
    totals: dict[str, int] = {}
    crashes = failed = 0
    for seed in range(10):
        report = simulate(1000 + seed, tmp_path / str(seed))
        assert report.violations == []
        for kind, n in report.gaps.items():
            totals[kind] = totals.get(kind, 0) + n
        crashes += report.crashes
        failed += report.failed
    assert totals.get("BRIDGE") and totals.get("HOLE") and totals.get("DATALOSS")
    assert crashes > 0 and failed > 0


def test_same_seed_same_run(tmp_path: Path) -> None:
    config = SimConfig(appends=150)
    a = simulate(77, tmp_path / "a", config)
    b = simulate(77, tmp_path / "b", config)
    assert (a.acked, a.failed, a.unknown, a.records_read, a.gaps) == (b.acked, b.failed, b.unknown,
                                                                       b.records_read, b.gaps)
