"""The transaction manager under SIGKILL: a child runs transactions in three threads and is killed
at a random moment, many times over the same data directory. After each kill the store reopens and
every acknowledged commit is committed with its metadata write in place, every acknowledged abort
is aborted, nothing whose commit was never called is committed, and what was in progress stays
invisible until its timeout, then times out."""

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
from seaway.testing._txn_crash import CONFIG, NAMESPACE, THREADS, TIMEOUT_S
from seaway.txn import AbortedJudges, TransactionManager, Visibility
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_TXN_CRASH_KILLS", "20"))
_ENDED = {TxnStatus.ABORTED, TxnStatus.TIMED_OUT}


@dataclass
class Acks:
    began: set[int] = field(default_factory=set)
    registered: set[int] = field(default_factory=set)
    commit_called: dict[int, bytes] = field(default_factory=dict)
    committed: set[int] = field(default_factory=set)
    abort_called: set[int] = field(default_factory=set)
    aborted: set[int] = field(default_factory=set)

    @classmethod
    def read(cls, path: Path, seed: int) -> Acks:
        acks = cls()
        for line in path.read_text().splitlines():
            what, txn, *rest = line.split()
            wp = int(txn)
            if what == "began":
                assert wp not in acks.began, f"seed {seed}: transaction id {wp} issued twice"
                acks.began.add(wp)
            elif what == "registered":
                acks.registered.add(wp)
            elif what == "commit-called":
                acks.commit_called[wp] = rest[0].encode()
            elif what == "committed":
                assert acks.commit_called.get(wp) == rest[0].encode(), line
                acks.committed.add(wp)
            elif what == "abort-called":
                acks.abort_called.add(wp)
            else:
                assert what == "aborted", line
                acks.aborted.add(wp)
        return acks

    def possible(self, wp: int) -> set[TxnStatus]:
        """What the status of a transaction begun may be after a kill, the clock past its timeout
        or not."""
        if wp in self.committed:
            return {TxnStatus.COMMITTED}
        if wp in self.aborted:
            return {TxnStatus.ABORTED}
        if wp in self.commit_called:  # cut off: it committed, or it times out
            return {TxnStatus.COMMITTED, TxnStatus.IN_PROGRESS, TxnStatus.TIMED_OUT}
        if wp in self.abort_called:
            return {TxnStatus.ABORTED, TxnStatus.IN_PROGRESS, TxnStatus.TIMED_OUT}
        if wp in self.registered:
            return {TxnStatus.IN_PROGRESS, TxnStatus.TIMED_OUT}
        # A begin is durable with the transaction's next durable edit (its register): cut off
        # before, it may be gone, and it wrote nothing.
        return {TxnStatus.IN_PROGRESS, TxnStatus.TIMED_OUT, TxnStatus.UNKNOWN}


def check(sw: seaway.Seaway, acks: Acks, seed: int, run: int, kills_s: list[float]) -> dict[int, TxnStatus]:
    manager = sw.txn.api
    assert isinstance(manager, TransactionManager)
    where = f"seed {seed}, run {run}"
    started_ms = int(time.time() * 1000)
    manager.run_timeouts()
    manager.run_pruning()  # those settled: listed as aborted in their logs, off the invalid list
    statuses = {wp: sw.txn.status(wp) for wp in acks.began}
    for wp, status in statuses.items():
        assert status in acks.possible(wp), f"{where}: transaction {wp} is {status.value}"
    values = {key: versioned.value for key, versioned in sw.meta.scan_all(NAMESPACE, page=5000)}
    by_key = {key: wp for wp, key in acks.commit_called.items()}
    for key, value in values.items():
        writer = by_key.get(key)
        assert writer is not None and value == b"%d" % writer, f"{where}: {key!r} written by no commit called"
        assert statuses[writer] is TxnStatus.COMMITTED, f"{where}: {key!r} is there, its transaction is " \
            f"{statuses[writer].value}"
    for wp, key in acks.commit_called.items():
        if statuses[wp] is TxnStatus.COMMITTED:
            assert values.get(key) == b"%d" % wp, f"{where}: committed {wp} lost its write of {key!r}"
    snapshot = sw.txn.snapshot()
    live = {info.id: info for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}
    # Besides those acknowledged: one per thread of a run, begun when the kill came before its
    # "began" line, so before its register (the line comes first): it wrote nothing. It stays in
    # progress until its timeout (2 s, on the real clock), so those of every run killed within
    # that time may be there, and no more. One in progress above may have timed out since.
    for wp in {wp for wp, s in statuses.items() if s is TxnStatus.IN_PROGRESS} - set(live):
        assert sw.txn.status(wp) is TxnStatus.TIMED_OUT, f"{where}: {wp} in progress, then not listed"
    unacknowledged = set(live) - acks.began
    recent_runs = sum(1 for killed_s in kills_s if killed_s >= started_ms / 1000 - TIMEOUT_S - 1)
    assert len(unacknowledged) <= THREADS * recent_runs, \
        f"{where}: {len(unacknowledged)} transactions in progress nobody began, {recent_runs} runs within the timeout"
    for wp in unacknowledged:
        assert live[wp].logs == (), f"{where}: {wp} registered logs, though its begin was never acknowledged"
    for wp, info in live.items():
        assert info.expiry_ms is not None and info.expiry_ms > started_ms, f"{where}: {wp} outlived its timeout"
        assert snapshot.visibility(wp) is Visibility.WAIT, f"{where}: {wp} in progress but not waited for"
    for wp in snapshot.invalid:  # ended by now (one in progress above may have timed out since)
        assert wp in statuses and sw.txn.status(wp) in _ENDED, f"{where}: {wp} on the invalid list"
    # Nothing aborted is visible, pruned from the invalid list or not (a kill may have come between
    # listing it as aborted in its log and pruning it), nothing committed is skipped.
    judges = AbortedJudges(sw.meta)
    for thread in range(THREADS):
        try:
            log = sw.logs.get(f"crash-{thread}")
        except UnknownLogError:
            continue
        for item in log.read():
            if isinstance(item, Record) and (status := statuses.get(int(item.payload))) is not None:
                seen = judges.judge(log.id, snapshot, int(item.payload))
                if status in _ENDED:
                    assert seen is Visibility.SKIP, f"{where}: a record of {status.value} {item.payload!r} is {seen}"
                elif status is TxnStatus.COMMITTED:
                    assert seen is Visibility.VISIBLE, f"{where}: a record of committed {item.payload!r} is {seen}"
    return statuses


@pytest.mark.slow
def test_transactions_survive_sigkill(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    data, ack_path = tmp_path / "data", tmp_path / "acks"
    seen: set[TxnStatus] = set()
    kills_s: list[float] = []
    for run in range(KILLS):
        run_until_killed("seaway.testing._txn_crash", data, ack_path, run, rng, seed, 0.4)
        kills_s.append(time.time())
        acks = Acks.read(ack_path, seed)
        with seaway.open(data, CONFIG) as sw:
            seen |= set(check(sw, acks, seed, run, kills_s).values())
    # Then the clock passes every timeout, and settling: what was in progress at a kill times out,
    # and every aborted transaction is listed in its log and pruned.
    clock = FakeClock(int(time.time() * 1000) + int((TIMEOUT_S + CONFIG.txn.settle_s) * 1000) + 1)
    with seaway.open(data, CONFIG, clock=clock) as sw:
        statuses = check(sw, acks, seed, KILLS, [])
        assert TxnStatus.IN_PROGRESS not in statuses.values(), f"seed {seed}: not timed out"
    cut_off = acks.began - acks.committed - acks.aborted
    assert len(acks.committed) > 2 * KILLS and len(acks.aborted) > 0, f"seed {seed}: too little to mean anything"
    assert cut_off and {statuses[wp] for wp in cut_off} & _ENDED, f"seed {seed}: no kill cut a transaction off"
    assert TxnStatus.IN_PROGRESS in seen, f"seed {seed}: no transaction was seen in progress after a kill"
