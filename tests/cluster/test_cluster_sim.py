"""The seeded simulation of the replicated log (seaway.testing.cluster_sim): a fixed list of seeds in
`make test`; `make sim SEEDS=N` runs more and prints the first failing one."""

from __future__ import annotations

import pytest

from seaway.log import replication
from seaway.testing.cluster_sim import ClusterSim, Faults, run_seed

SEEDS = range(1, 41)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seed_keeps_every_acknowledged_record_and_readers_agree(seed: int) -> None:
    report = run_seed(seed)
    assert report.ok, f"seed {seed} ({report.faults}): {report.failures}"
    assert report.acked == 240 and report.read >= 1


def test_a_seed_replays_exactly() -> None:
    first, second = run_seed(13), run_seed(13)
    assert (first.acked, first.read, first.gaps, first.epochs, first.time_ms) == \
        (second.acked, second.read, second.gaps, second.epochs, second.time_ms)


def test_the_seeds_run_the_faults_they_name() -> None:
    faults = [ClusterSim(seed).faults for seed in SEEDS]
    assert any(f.crashes for f in faults) and any(f.pauses for f in faults) and any(f.partitions for f in faults)
    assert any(f.lost_nodes for f in faults) and any(f.node_set_changes for f in faults)
    assert any(f.trims for f in faults) and any(f.store_crashes for f in faults)
    assert any(f.loss for f in faults) and any(f.duplicate for f in faults)


def test_the_checkers_catch_a_replica_that_ignores_its_seal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulation can fail: with seals ignored, an old sequencer acknowledges over the new epoch."""
    original = replication.Replica.written

    def unsealed(self: replication.Replica) -> list[object]:
        for state in self.disk.logs.values():
            state.seal = 0
        return original(self)

    monkeypatch.setattr(replication.Replica, "written", unsealed)
    assert any(not run_seed(seed).ok for seed in SEEDS)


def test_all_faults_at_once() -> None:
    everything = Faults(loss=0.05, duplicate=0.03, delay_mean_ms=2.0, crashes=6, pauses=2, partitions=2,
                        lost_nodes=2, node_set_changes=2, trims=1, disk_ms=1.0, store_crashes=0.3)
    for seed in (101, 202, 303):
        report = ClusterSim(seed, faults=everything).run()
        assert report.ok, f"seed {seed}: {report.failures}"
