"""``begin(logs=...)`` under SIGKILL: a child begins transactions that register their log in the
begin, writes a record of each, and commits, aborts or leaves them, and is killed at a random
moment, many times over the same data directory. A begin that returned is durable with its log:
after each restart its transaction is known (never UNKNOWN, whose records would be visible), a
record of it is visible only if it committed, and once the clock passes the timeouts whatever did
not commit is invalid and skipped."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import seaway
from seaway import TxnStatus
from seaway.errors import UnknownLogError
from seaway.log import Record
from seaway.testing import FakeClock
from seaway.testing._txn_begin_crash import CONFIG, THREADS, TIMEOUT_S
from seaway.txn import AbortedJudges, TransactionManager, Visibility
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_TXN_CRASH_KILLS", "8"))
_ENDED = {TxnStatus.ABORTED, TxnStatus.TIMED_OUT}


@dataclass
class Acks:
    began: set[int] = field(default_factory=set)
    committed: set[int] = field(default_factory=set)
    aborted: set[int] = field(default_factory=set)

    @classmethod
    def read(cls, path: Path, seed: int) -> Acks:
        acks = cls()
        for line in path.read_text().splitlines():
            what, txn = line.split()
            wp = int(txn)
            if what == "began":
                assert wp not in acks.began, f"seed {seed}: transaction id {wp} issued twice"
                acks.began.add(wp)
            elif what == "committed":
                acks.committed.add(wp)
            else:
                assert what == "aborted", line
                acks.aborted.add(wp)
        return acks


def check(sw: seaway.Seaway, acks: Acks, seed: int, run: int) -> dict[int, TxnStatus]:
    manager = sw.txn.api
    assert isinstance(manager, TransactionManager)
    where = f"seed {seed}, run {run}"
    manager.run_timeouts()
    manager.run_pruning()
    statuses = {wp: sw.txn.status(wp) for wp in acks.began}
    live = {info.id: info for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}
    for wp, status in statuses.items():
        assert status is not TxnStatus.UNKNOWN, f"{where}: begun with its log, {wp} is unknown after a restart"
        if wp in acks.committed:
            assert status is TxnStatus.COMMITTED, f"{where}: {wp} committed, now {status.value}"
        if wp in acks.aborted:
            assert status is TxnStatus.ABORTED, f"{where}: {wp} aborted, now {status.value}"
        if status is TxnStatus.IN_PROGRESS and wp in live:
            assert len(live[wp].logs) == 1, f"{where}: {wp} in progress without the log of its begin"
    snapshot = sw.txn.snapshot()
    judges = AbortedJudges(sw.meta)
    records = 0
    for thread in range(THREADS):
        try:
            log = sw.logs.get(f"begin-crash-{thread}")
        except UnknownLogError:
            continue
        for item in log.read():
            if not isinstance(item, Record):
                continue
            records += 1
            wp = int(item.payload)
            assert wp in statuses, f"{where}: a record of {wp}, whose begin was never acknowledged"
            seen = judges.judge(log.id, snapshot, wp)
            status = sw.txn.status(wp)  # after the snapshot: one in progress then may have ended since
            if wp in snapshot.in_progress:
                assert seen is Visibility.WAIT, f"{where}: a record of {wp}, in progress, is {seen}"
            elif status is TxnStatus.COMMITTED:
                assert seen is Visibility.VISIBLE, f"{where}: a record of committed {wp} is {seen}"
            elif status in _ENDED:
                assert seen is Visibility.SKIP, f"{where}: a record of {status.value} {wp} is {seen}"
            else:
                raise AssertionError(f"{where}: {wp} is {status.value}, though not in progress in a snapshot before")
    assert records > 0 or not acks.began, f"{where}: no record written"
    return statuses


@pytest.mark.slow
def test_a_begin_with_logs_survives_sigkill(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    data, ack_path = tmp_path / "data", tmp_path / "acks"
    for run in range(KILLS):
        run_until_killed("seaway.testing._txn_begin_crash", data, ack_path, run, rng, seed, 0.4)
        acks = Acks.read(ack_path, seed)
        with seaway.open(data, CONFIG) as sw:
            check(sw, acks, seed, run)
    clock = FakeClock(int(time.time() * 1000) + int((TIMEOUT_S + CONFIG.txn.settle_s) * 1000) + 1)
    with seaway.open(data, CONFIG, clock=clock) as sw:
        statuses = check(sw, acks, seed, KILLS)
        assert TxnStatus.IN_PROGRESS not in statuses.values(), f"seed {seed}: not timed out"
    left = acks.began - acks.committed - acks.aborted
    assert len(acks.committed) > KILLS and left, f"seed {seed}: too little to mean anything"
    assert {statuses[wp] for wp in left} & _ENDED, f"seed {seed}: no begun transaction timed out or was cut off"
