"""A process killed at a named step of its appends: an :class:`EventWriter` with several events of
each key in flight, its replies delayed out of order by seed, is killed (SIGKILL) once its Nth
append has landed and before that append's reply comes back
(:class:`seaway.testing.AppendFaults` ``crash_after``). After reopening, each key's events are
stored in the order they were written, and every event acknowledged is stored."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import seaway
from seaway.testing._writer_crash import CONFIG, STREAM, crash_after
from tests.faults.checkers import check_key_order
from tests.streams.writer_check import segment_events


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_writer_killed_after_an_append_landed_keeps_each_key_in_order_and_every_acknowledged_event(
        tmp_path: Path, seed: int) -> None:
    data, acks = tmp_path / "data", tmp_path / "acks"
    child = subprocess.run([sys.executable, "-m", "seaway.testing._writer_crash", str(data), str(acks), str(seed)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, \
        f"seed {seed}: the child ended with {child.returncode}, not killed: {child.stderr[-3000:]!r}"
    acknowledged = set(acks.read_bytes().split()) if acks.exists() else set()
    with seaway.Seaway(data, CONFIG) as sw:
        stored = [payload for _, _, payload in segment_events(sw, sw.streams.get(STREAM))]
    by_key = check_key_order(stored)
    assert sum(map(len, by_key.values())) == len(stored)
    lost = sorted(acknowledged - set(stored))
    assert not lost, f"seed {seed}: {len(lost)} acknowledged events lost, e.g. {lost[:5]}"
    # The kill came after an append landed, before its reply: stored events nobody acknowledged.
    assert set(stored) - acknowledged, f"seed {seed}: the append the kill followed is not stored"
    assert crash_after(seed) <= len(stored)
