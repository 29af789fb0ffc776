"""A queue producer killed (SIGKILL) between the steps of its commit's one step: after the restart,
its transaction times out and none of its entries is ever delivered, the entries committed before
are delivered once per group, and the queue goes on (a new transaction's entries are delivered)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import seaway
from seaway.testing._step_crash import CONFIG, POINTS, TIMEOUT_S, entries

WAIT_S = 60.0


def _drain(sw: seaway.Seaway, group: str, size: int, until: Counter[bytes]) -> Counter[bytes]:
    """What the group's consumers deliver until they delivered ``until`` (or WAIT_S passed), and
    then once more, which must find nothing."""
    got: Counter[bytes] = Counter()
    consumers = [sw.queues.consumer("q", group, c) for c in range(size)]
    deadline = time.monotonic() + WAIT_S
    while got != until and sum(got.values()) <= sum(until.values()) and time.monotonic() < deadline:
        for consumer in consumers:
            with sw.transaction() as tx:
                got.update(e.payload for e in consumer.dequeue(tx, 100, 0.2))
    for consumer in consumers:
        with sw.transaction() as tx:
            got.update(e.payload for e in consumer.dequeue(tx, 100, 0.2))
        consumer.close()
    return got


@pytest.mark.parametrize("point", POINTS)
def test_a_producer_killed_inside_its_commit_step_leaves_nothing_visible(tmp_path: Path, point: str) -> None:
    child = subprocess.run([sys.executable, "-m", "seaway.testing._step_crash", str(tmp_path / "d"), point],
                           capture_output=True, timeout=WAIT_S, check=False)
    lines = child.stdout.decode().split()
    assert child.returncode == -9, (child.returncode, child.stdout, child.stderr[-2000:])
    assert lines[0] == "committed" and lines[2] == "crashing", lines
    crashed = int(lines[3])
    with seaway.open(tmp_path / "d", CONFIG) as sw:
        deadline = time.monotonic() + WAIT_S
        while sw.txn.status(crashed) is seaway.TxnStatus.IN_PROGRESS and time.monotonic() < deadline:
            time.sleep(TIMEOUT_S / 20)  # polled: the manager times it out on its own clock
        assert sw.txn.status(crashed) is seaway.TxnStatus.TIMED_OUT
        with sw.transaction() as tx:
            sw.queues.producer("q").enqueue_batch(tx, *entries("c"))
        expected = Counter(entries("a")[0] + entries("c")[0])
        for group, size in (("h", 2), ("r", 1)):
            assert _drain(sw, group, size, expected) == expected, (point, group)
