"""Power loss under transactions and queues: a child commits and aborts transactions that stage
metadata and write records, raises a counter by contended read-modify-write transactions, commits
batches of task transactions with a marker as one (the Spark sink's commit), and runs a queue's
producer and consumer (:mod:`seaway.testing._powerloss_txn_child`); the power is cut at a moment or
at the Nth call that changes the disk, keeping nothing, a torn write or reordered writes of what was
not synced.

After every cut (the transactions the dead process left in progress aborted, as their timeout
would): every commit that returned is committed, its writes applied and its records visible;
nothing aborted is visible or applied; the counter's increments form one chain (no lost update:
two commits never raised it from the same value); a batch's marker is there iff all of its
transactions committed; every entry of a committed producer transaction is processed exactly once,
counting what a drain finds left, and nothing of an aborted one ever is. Without the write-ahead
log's sync, the same checks find acknowledged commits lost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import seaway
from seaway import TxnStatus
from seaway.testing._powerloss_txn_child import (
    COUNTER,
    GROUP,
    NS,
    QUEUE,
    config,
    create_store,
    entry_payload,
    marker_key,
    seen_key,
)
from seaway.txn import Visibility
from tests.powerloss.rig import Rig, cut_runs, report, rig_fixture, unsynced_run

CUTS = int(os.environ.get("SEAWAY_POWERLOSS_TXN_CUTS", "30"))
_MODULE = "seaway.testing._powerloss_txn_child"


@dataclass
class _Acks:
    """Everything acknowledged so far, over all runs."""

    commits: set[int] = field(default_factory=set)
    aborts: set[int] = field(default_factory=set)
    increments: dict[int, int] = field(default_factory=dict)  # transaction -> the counter's value before
    intents: dict[int, list[int]] = field(default_factory=dict)  # batch -> its transactions
    batches: set[int] = field(default_factory=set)
    produced: dict[bytes, int] = field(default_factory=dict)  # payload -> producer transaction (committed)
    dropped: dict[bytes, int] = field(default_factory=dict)  # payload -> producer transaction (aborted)
    consumed: int = 0
    duplicates: list[str] = field(default_factory=list)

    def add(self, run: int, line: str) -> None:
        kind, *words = line.split()
        if kind == "C":
            self.commits.add(int(words[0]))
        elif kind == "X":
            self.aborts.add(int(words[0]))
        elif kind == "I":
            self.increments[int(words[0])] = int(words[1])
        elif kind == "b":
            self.intents[int(words[0])] = [int(w) for w in words[1:]]
        elif kind == "B":
            self.batches.add(int(words[0]))
        elif kind in ("Q", "Y"):
            txn_id, count = int(words[0]), int(words[1])
            into = self.produced if kind == "Q" else self.dropped
            for i in range(count):
                into[entry_payload(run, txn_id, i)] = txn_id
        elif kind == "D":
            self.consumed += int(words[1])
        elif kind == "DUP":
            self.duplicates.append(f"run {run}: entry {words[0]} delivered again after it was processed")

    def problems(self, data_dir: Path) -> list[str]:
        """What of the acknowledged is missing or wrong in the store at ``data_dir``. Aborts the
        transactions the dead child left in progress, and drains the queue (committing the drain,
        as the next run's consumer would)."""
        with seaway.open(data_dir, config()) as sw:
            for info in sw.txn.list():
                if info.status is TxnStatus.IN_PROGRESS:
                    sw.txn.abort(info.id)
            out = list(self.duplicates)
            out += self._transaction_problems(sw)
            out += self._counter_problems(sw)
            out += self._batch_problems(sw)
            out += self._queue_problems(sw)
        return out

    def _transaction_problems(self, sw: seaway.Seaway) -> list[str]:
        out: list[str] = []
        snapshot = sw.txn.snapshot()
        for txn_id in sorted(self.commits):
            status = sw.txn.status(txn_id)
            got = sw.meta.get(NS, b"k/%d" % txn_id)
            if status is not TxnStatus.COMMITTED:
                out.append(f"transaction {txn_id}: committed (acknowledged), now {status.name}")
            if got is None or got.value != b"v/%d" % txn_id:
                out.append(f"transaction {txn_id}: committed (acknowledged), its staged write {got}")
            if snapshot.visibility(txn_id) is not Visibility.VISIBLE:
                out.append(f"transaction {txn_id}: committed (acknowledged), its records "
                           f"{snapshot.visibility(txn_id).name}")
        for txn_id in sorted(self.aborts):
            status = sw.txn.status(txn_id)
            if status is TxnStatus.COMMITTED:
                out.append(f"transaction {txn_id}: aborted (acknowledged), now COMMITTED")
            if snapshot.visibility(txn_id) is not Visibility.SKIP:
                out.append(f"transaction {txn_id}: aborted (acknowledged), its records "
                           f"{snapshot.visibility(txn_id).name}")
        for key, _ in sw.meta.scan_all(NS, prefix=b"k/"):
            txn_id = int(key[2:])
            if sw.txn.status(txn_id) is not TxnStatus.COMMITTED:
                out.append(f"transaction {txn_id}: {sw.txn.status(txn_id).name}, yet its staged write is applied")
        return out

    def _counter_problems(self, sw: seaway.Seaway) -> list[str]:
        out: list[str] = []
        chain = {int(key[4:]): int(v.value) for key, v in sw.meta.scan_all(NS, prefix=b"inc/")}
        got = sw.meta.get(NS, COUNTER)
        counter = 0 if got is None else int(got.value)
        out += [f"increment {txn_id}: applied, but the transaction is {sw.txn.status(txn_id).name}"
                for txn_id in sorted(chain) if sw.txn.status(txn_id) is not TxnStatus.COMMITTED]
        if sorted(chain.values()) != list(range(len(chain))):
            seen: dict[int, list[int]] = {}
            for txn_id, prev in chain.items():
                seen.setdefault(prev, []).append(txn_id)
            twice = {prev: ids for prev, ids in seen.items() if len(ids) > 1}
            out.append(f"the counter's {len(chain)} increments are not one chain: lost updates from {twice}, "
                       f"values {sorted(chain.values())[:10]}...")
        if counter != len(chain):
            out.append(f"the counter is {counter}, after {len(chain)} committed increments")
        out += [f"increment {txn_id} from {prev}: committed (acknowledged), "
                f"{'lost' if txn_id not in chain else f'recorded from {chain[txn_id]}'}"
                for txn_id, prev in sorted(self.increments.items()) if chain.get(txn_id) != prev]
        return out

    def _batch_problems(self, sw: seaway.Seaway) -> list[str]:
        out: list[str] = []
        for batch, ids in sorted(self.intents.items()):
            marked = sw.meta.get(NS, marker_key(batch)) is not None
            committed = [sw.txn.status(txn_id) is TxnStatus.COMMITTED for txn_id in ids]
            if marked != all(committed) or marked != any(committed):
                out.append(f"batch {batch}: marker {'there' if marked else 'missing'}, its transactions "
                           f"{[sw.txn.status(t).name for t in ids]}")
            if batch in self.batches and not marked:
                out.append(f"batch {batch}: committed (acknowledged), its marker lost")
        return out

    def _queue_problems(self, sw: seaway.Seaway) -> list[str]:
        out: list[str] = []
        processed = {key[len(seen_key(b"")):] for key, _ in sw.meta.scan_all(NS, prefix=seen_key(b""))}
        drained: list[bytes] = []
        with sw.queues.consumer(QUEUE, GROUP, 0) as consumer:
            empty = 0
            while empty < 2:  # the first dequeue after a resize barrier may come back empty
                with sw.transaction() as tx:
                    entries = consumer.dequeue(tx, entries_max=500, timeout_s=0.2)
                    for entry in entries:
                        tx.stage_put(NS, seen_key(entry.payload), b"1")
                drained += [entry.payload for entry in entries]
                empty = 0 if entries else empty + 1
        out += [f"entry {p.decode()}: processed, and delivered again" for p in drained if p in processed]
        everything = processed | set(drained)
        for payload in sorted(everything):
            _, _, txn_id, _ = payload.split(b"-")
            if payload in self.dropped:
                out.append(f"entry {payload.decode()}: its transaction aborted (acknowledged), yet delivered")
            elif sw.txn.status(int(txn_id)) is not TxnStatus.COMMITTED:
                out.append(f"entry {payload.decode()}: delivered, its transaction {sw.txn.status(int(txn_id)).name}")
        out += [f"entry {p.decode()}: enqueued (commit acknowledged), never delivered"
                for p in sorted(self.produced) if p not in everything]
        return out


rig = rig_fixture(_MODULE)


@pytest.mark.slow
def test_acknowledged_commits_batches_and_queue_entries_survive_power_loss(rig: Rig) -> None:
    create_store(rig.disk / "data")
    acks = _Acks()
    cuts = cut_runs(rig, acks, CUTS, child_log=True)
    print("\n".join(cuts))
    print(f"acknowledged over {CUTS} cuts: {len(acks.commits)} commits, {len(acks.aborts)} aborts, "
          f"{len(acks.increments)} increments, {len(acks.batches)} batches, {len(acks.produced)} entries "
          f"enqueued, {acks.consumed} processed")
    assert (len(acks.commits) > CUTS and len(acks.aborts) > CUTS // 2 and len(acks.increments) > CUTS
            and len(acks.batches) > CUTS and len(acks.produced) > CUTS and acks.consumed > CUTS), (
        f"seed {rig.seed}: too few acknowledgements to mean anything")


@pytest.mark.slow
def test_without_the_wal_sync_acknowledged_commits_are_lost(rig: Rig) -> None:
    """The checks above are not vacuous: with RocksDB's write-ahead log never synced, they find
    acknowledged commits lost."""
    create_store(rig.disk / "data")
    for run in range(2):
        problems = unsynced_run(rig, _Acks(), run, C=20, I=10, B=5, Q=10)  # each run checked alone
        assert any("(acknowledged)" in p for p in problems), (
            f"seed {rig.seed}: run {run}: no acknowledged commit lost without the sync; {report(problems)}")
