"""Killed for real between the two durable steps of pruning: aborted transactions listed as aborted
in their log, their removal from the invalid list not yet logged. After the restart they are still
on the list (the removal was lost, not the listing), their data stays invisible, and the next pass
removes them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import seaway
from seaway.log import AbortedWrites, Record
from seaway.testing import FakeClock
from seaway.testing._prune_crash import CONFIG, PRUNE_LOG, TIMEOUT_S
from seaway.txn import AbortedJudges, TransactionManager, Visibility

ABORTED = 5


def test_a_kill_between_listing_and_pruning_keeps_the_ids_listed_and_invisible(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with seaway.open(data, CONFIG) as sw:
        log = sw.logs.create(PRUNE_LOG)
        aborted = []
        for _ in range(ABORTED):
            tx = sw.txn.begin(timeout_s=TIMEOUT_S)
            tx.register_logs([log.id])
            log.append(b"%d" % tx.id)
            tx.abort()
            aborted.append(tx.id)
        with sw.transaction() as tx:
            tx.register_logs([log.id])
            log.append(b"%d" % tx.id)
        committed = tx.id
    child = subprocess.run([sys.executable, "-m", "seaway.testing._prune_crash", str(data)],
                           capture_output=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]

    clock = FakeClock(int(time.time() * 1000) + int(TIMEOUT_S * 1000) + 1000)
    with seaway.open(data, CONFIG, clock=clock) as sw:
        log = sw.logs.get(PRUNE_LOG)
        assert sorted(wp for _, wp, _ in AbortedWrites(sw.meta).entries(log.id)) == aborted  # listed, durably
        snapshot = sw.txn.snapshot()
        assert sorted(snapshot.invalid) == aborted  # the removal was never logged
        judges = AbortedJudges(sw.meta)

        def seen() -> dict[int, Visibility]:
            snap = sw.txn.snapshot()
            return {int(item.payload): judges.judge(log.id, snap, int(item.payload))
                    for item in log.read() if isinstance(item, Record)}

        expected = {**dict.fromkeys(aborted, Visibility.SKIP), committed: Visibility.VISIBLE}
        assert seen() == expected
        manager = sw.txn.api
        assert isinstance(manager, TransactionManager)
        assert manager.run_pruning() == ABORTED  # listed again (nothing new), then pruned
        assert sw.txn.snapshot().invalid == ()
        assert len(AbortedWrites(sw.meta).entries(log.id)) == ABORTED
        assert seen() == expected
    with seaway.open(data, CONFIG, clock=clock) as sw:  # and after another restart
        assert sw.txn.snapshot().invalid == ()
        log = sw.logs.get(PRUNE_LOG)
        judges = AbortedJudges(sw.meta)
        snap = sw.txn.snapshot()
        assert {int(i.payload): judges.judge(log.id, snap, int(i.payload))
                for i in log.read() if isinstance(i, Record)} == expected
