"""Crash safety, tested by crashing: SIGKILL a child that appends, many times, and check every
acknowledged record afterwards."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

import seaway
from seaway import Gap, GapType, Record, epoch_of
from seaway.testing._crash import LOG_NAME, payload
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_CRASH_KILLS", "25"))


def _acks(path: Path) -> list[tuple[int, int, int, int]]:
    if not path.exists():
        return []
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]  # type: ignore[misc]


@pytest.mark.slow
def test_acknowledged_appends_survive_sigkill(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    data, acks = tmp_path / "data", tmp_path / "acks"
    epochs_seen: list[int] = []
    for run in range(KILLS):
        run_until_killed("seaway.testing._crash", data, acks, run, rng, seed, 0.3)

        with seaway.open(data) as sw:
            log = sw.logs.get(LOG_NAME)
            items = list(log.read())
        records = {r.lsn: r.payload for r in items if isinstance(r, Record)}
        lsns = [r.lsn for r in items if isinstance(r, Record)]
        assert lsns == sorted(set(lsns)), f"seed {seed}: LSNs not unique and increasing"
        acked = _acks(acks)
        for ack_run, batch, first, count in acked:
            for i in range(count):
                assert records.get(first + i) == payload(ack_run, batch, i), (
                    f"seed {seed}: run {ack_run} batch {batch} record {i} at {first + i:#x} lost or changed")
        run_epochs = {epoch_of(first) for r, _, first, _ in acked if r == run}
        assert len(run_epochs) == 1, f"seed {seed}: run {run} used epochs {run_epochs}"
        epoch = run_epochs.pop()
        assert not epochs_seen or epoch > epochs_seen[-1], f"seed {seed}: the epoch did not go up"
        epochs_seen.append(epoch)
        if run > 0:
            first_of_run = min(f for r, _, f, _ in acked if r == run)
            before_run = [i for i in items if isinstance(i, Gap) and i.lsn_hi == first_of_run - 1]
            assert before_run and before_run[0].type is GapType.BRIDGE, (
                f"seed {seed}: no BRIDGE gap before epoch {epoch}")
            assert epoch_of(before_run[0].lsn_lo) < epoch
    assert len(_acks(acks)) > KILLS, f"seed {seed}: too few acknowledged appends to mean anything"
