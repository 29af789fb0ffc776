"""Power loss, tested by cutting the power: a child appends records and commits metadata batches
through :class:`PowerLossFS`, which loses every write not yet synced when the power is cut;
afterwards every acknowledged record and batch must be there, intact, and no batch in part.

A SIGKILL keeps the page cache, so the crash tests in tests/log would pass with every fsync
removed; these would not, and the no-sync tests show it: with one sync taken away (appends
acknowledged before their sync, Python's fsyncs made no-ops, RocksDB's write-ahead log or the
metadata store's group commit never synced), the same checks find acknowledged writes lost. The
child is :mod:`seaway.testing._powerloss_child`.
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import seaway
from seaway import Record
from seaway.testing import CutMode
from seaway.testing._powerloss_child import (
    COUNTER,
    LARGE_BYTES,
    LOG_ASYNC,
    LOG_SYNC,
    META_KEY,
    META_LARGE_BYTES,
    META_NS,
    SMALL_BYTES,
    config,
    meta_value_is_whole,
    payload,
    payload_is_whole,
)
from tests.powerloss.rig import Rig, rig_fixture

CUTS = int(os.environ.get("SEAWAY_POWERLOSS_CUTS", "30"))


# --- The parent -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    kind: str  # "record" or "meta"
    run: int
    size: int  # of the record or of each key's value; 0 if it does not apply
    text: str


@dataclass
class _Acks:
    """Everything acknowledged so far, over all runs."""

    batches: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # run batch first count size
    meta: dict[tuple[int, int, int], tuple[int, int, int]] = field(default_factory=dict)  # -> count size revision
    refused: set[tuple[int, int, int]] = field(default_factory=set)  # run thread batch

    def add(self, line: str) -> None:
        kind, *numbers = line.split()
        if kind == "A":
            run, batch, first, count, size = map(int, numbers)
            self.batches.append((run, batch, first, count, size))
        elif kind == "K":
            run, thread, batch, count, size, revision = map(int, numbers)
            self.meta[(run, thread, batch)] = (count, size, revision)
        elif kind == "F":
            run, thread, batch = map(int, numbers)
            self.refused.add((run, thread, batch))

    def lost(self, data_dir: Path, log_name: str) -> list[_Problem]:
        """What of the acknowledged is missing or changed in the store at ``data_dir``, and what is
        there that should not be (a record or batch the child never wrote, a batch in part)."""
        with seaway.open(data_dir, config()) as sw:
            try:
                items = list(sw.logs.get(log_name).read())
            except seaway.UnknownLogError:
                items = []
            problems = self._lost_records({item.lsn: item.payload for item in items if isinstance(item, Record)})
            problems += self._lost_meta(list(sw.meta.scan_all(META_NS, page=5000)), sw.meta.revision)
        return problems

    def _lost_records(self, records: dict[int, bytes]) -> list[_Problem]:
        problems: list[_Problem] = []
        for run, batch, first, count, size in self.batches:
            for i in range(count):
                if records.get(first + i) != payload(run, batch, i, size):
                    state = "changed" if first + i in records else "lost"
                    problems.append(_Problem("record", run, size, f"run {run} batch {batch} record {i} "
                                             f"({size} bytes) at {first + i:#x}: {state}"))
        problems += [_Problem("record", -1, 0, f"record at {lsn:#x} is not one the child wrote")
                     for lsn, data in records.items() if not payload_is_whole(data)]
        return problems

    def _lost_meta(self, rows: list[tuple[bytes, seaway.Versioned]], revision: int) -> list[_Problem]:
        problems: list[_Problem] = []

        def problem(run: int, size: int, text: str) -> None:
            problems.append(_Problem("meta", run, size, text))

        found: dict[tuple[int, int, int], dict[int, seaway.Versioned]] = defaultdict(dict)
        counts: dict[tuple[int, int, int], int] = {}
        counter = 0
        for key, versioned in rows:
            m = META_KEY.fullmatch(key)
            if key == COUNTER:
                counter = int(versioned.value)
            elif key.startswith(b"scratch/"):
                problem(-1, 0, f"scratch key {key!r}: its batch's range delete was lost")
            elif m is None or not meta_value_is_whole(key, versioned.value):
                problem(-1, 0, f"metadata key {key!r}: not one the child wrote, or changed")
            else:
                run, thread, batch, count, index = map(int, m.groups())
                found[(run, thread, batch)][index] = versioned
                counts[(run, thread, batch)] = count
        for (run, thread, batch), keys in found.items():
            if sorted(keys) != list(range(counts[(run, thread, batch)])):
                problem(run, 0, f"metadata batch t{thread}/b{batch} of run {run}: in part "
                                f"({len(keys)} of {counts[(run, thread, batch)]} keys)")
            if len({v.version for v in keys.values()}) != 1:
                problem(run, 0, f"metadata batch t{thread}/b{batch} of run {run}: keys of several versions")
            if (run, thread, batch) in self.refused:
                problem(run, 0, f"metadata batch t{thread}/b{batch} of run {run}: refused, yet there")
        for (run, thread, batch), (count, size, acked_revision) in self.meta.items():
            keys = found.get((run, thread, batch), {})
            what = f"metadata batch t{thread}/b{batch} of run {run} ({count} keys of {size} bytes)"
            if not keys:
                problem(run, size, f"{what}: lost")
            elif counts[(run, thread, batch)] != count or {v.version for v in keys.values()} != {acked_revision}:
                problem(run, size, f"{what}: changed (acknowledged at revision {acked_revision})")
        if counter != len(found):
            problem(-1, 0, f"the counter says {counter} batches were applied; {len(found)} are there")
        acked_revisions = [rev for *_, rev in self.meta.values()]
        if len(set(acked_revisions)) != len(acked_revisions):
            problem(-1, 0, "two acknowledged metadata batches have the same revision")
        if acked_revisions and revision < max(acked_revisions):
            problem(-1, 0, f"the store's revision {revision} is below one acknowledged ({max(acked_revisions)})")
        return problems


rig = rig_fixture()


def _create_store(disk: Path, log_name: str) -> None:
    """The store as installed: created on the disk itself and closed, so that every run starts
    from the same directories (test_a_new_store_survives_power_loss creates one under the cuts)."""
    with seaway.open(disk / "data", config()) as sw:
        sw.logs.create(log_name)


def _check_epoch(rig: Rig, acks: _Acks, run: int, last_epoch: int) -> int:
    """The epoch the run appended in (``last_epoch`` if it appended nothing), checked to be above
    the last one: an epoch taken, then lost to a cut, would be handed out again and LSNs reused."""
    run_epochs = {seaway.epoch_of(first) for r, _, first, _, _ in acks.batches if r == run}
    assert len(run_epochs) <= 1, f"seed {rig.seed}: run {run} appended in epochs {run_epochs}"
    if not run_epochs:
        return last_epoch
    epoch = run_epochs.pop()
    assert epoch > last_epoch, f"seed {rig.seed}: run {run}: epoch {epoch} after {last_epoch}"
    return epoch


def _report(problems: list[_Problem], limit: int = 20) -> str:
    return f"{len(problems)} problems:\n" + "\n".join(p.text for p in problems[:limit])


# --- The tests ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_acknowledged_appends_and_metadata_batches_survive_power_loss(rig: Rig) -> None:
    rng = random.Random(rig.seed)
    _create_store(rig.disk, LOG_SYNC)
    acks = _Acks()
    last_epoch = 0  # an epoch made durable, then lost, would be handed out again: LSNs reused
    calls_seen = 0  # the most calls a run made before its cut: where a cut at the Nth call may fall
    cuts: list[str] = []  # how each run's power was cut, to say with a failure
    for run in range(CUTS):
        # What the cut keeps of unsynced writes, and where it falls: at a moment, or at a call.
        mode = rng.choice(list(CutMode))
        cut_seed = rng.randrange(2**32)
        if calls_seen and rng.random() < 0.3:
            calls = rng.randint(1, calls_seen)
            lines, report, at_call = rig.cut_at_call("sync", run, calls, mode, cut_seed)
            cuts.append(f"run {run}: {mode.value} at call {calls}{'' if at_call else ' (not reached: at 20 s)'}")
        else:
            rig.fs.mount()
            child = rig.start("sync", run)
            if rng.random() < 0.2:
                time.sleep(rng.uniform(0, 0.6))  # anywhere: while it starts, recovers, or writes
            else:
                assert child.ready.wait(60), f"seed {rig.seed}: run {run}: child not ready"
                assert child.proc.poll() is None, f"seed {rig.seed}: run {run}: child died:\n{rig.child_log(run)}"
                time.sleep(rng.uniform(0.01, 0.5))
            calls_seen = max(calls_seen, rig.fs.calls())
            lines, report = rig.cut(child, mode, cut_seed)
            cuts.append(f"run {run}: {mode.value} at a moment")
        cuts[-1] += (f" ({report.kept_writes} writes kept, {report.torn_writes} torn, "
                     f"{report.reordered_files} files reordered)")
        for line in lines:
            acks.add(line)
        last_epoch = _check_epoch(rig, acks, run, last_epoch)
        # Checked now (on the disk), or only after the next run, whose store recovers through the
        # mount and may be cut while it does: what was acknowledged survives that too.
        if rng.random() < 0.5 or run == CUTS - 1:
            problems = acks.lost(rig.disk / "data", LOG_SYNC)
            assert not problems, (f"seed {rig.seed}: after the cut in run {run}, {_report(problems)}\n"
                                  f"the cuts so far:\n" + "\n".join(cuts))
    print("\n".join(cuts))
    large = sum(1 for *_, s in acks.batches if s == LARGE_BYTES)
    meta_large = sum(1 for _, s, _ in acks.meta.values() if s == META_LARGE_BYTES)
    print(f"{len(acks.batches)} batches ({sum(c for *_, c, _ in acks.batches)} records, {large} large), "
          f"{len(acks.meta)} metadata batches ({meta_large} large, {len(acks.refused)} refused) "
          f"acknowledged over {CUTS} cuts")
    assert len(acks.batches) > 10 * CUTS and len(acks.meta) > 10 * CUTS, (
        f"seed {rig.seed}: too few acknowledgements to mean anything ({len(acks.batches)} batches, "
        f"{len(acks.meta)} metadata batches)")
    assert large and meta_large, f"seed {rig.seed}: no large batch ({large} appends, {meta_large} metadata)"
    assert acks.refused, f"seed {rig.seed}: no metadata batch was refused: the check that none applied is idle"


# What each way of taking a sync away must lose: (kind, size) of the problems that must be found
# (size 0: any), and the log it appends to.
_NO_SYNC = {
    "async": (LOG_ASYNC, [("record", 0)]),
    # Only the segment files' syncs are gone (RocksDB's are made from C++): the records lost are the
    # large ones, and only those.
    "nosegmentsync": (LOG_SYNC, [("record", LARGE_BYTES)]),
    "nowalsync": (LOG_SYNC, [("record", SMALL_BYTES), ("meta", 0)]),
    "nokvsync": (LOG_SYNC, [("meta", 0)]),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(_NO_SYNC))
def test_without_a_sync_acknowledged_writes_are_lost(rig: Rig, mode: str) -> None:
    """The checks above are not vacuous: with a sync gone, they find acknowledged writes lost."""
    log_name, must_lose = _NO_SYNC[mode]
    _create_store(rig.disk, LOG_SYNC)
    acks = _Acks()
    for run in range(2):
        rig.fs.mount()
        child = rig.start(mode, run)
        appends = mode != "nokvsync"
        meta = mode in ("nowalsync", "nokvsync")
        rig.wait_for(child, run, appends=30 if appends else 0, large=3 if appends else 0,
                     meta=20 if meta else 0, meta_large=2 if meta else 0)
        for line in rig.cut(child)[0]:
            acks.add(line)
        lost = [p for p in acks.lost(rig.disk / "data", log_name) if p.run == run]
        print(f"{mode}, run {run}: {sum(p.kind == 'record' for p in lost)} acknowledged records and "
              f"{sum(p.kind == 'meta' for p in lost)} metadata batches lost")
        for kind, size in must_lose:
            assert any(p.kind == kind and size in (0, p.size) for p in lost), (
                f"seed {rig.seed}: {mode}, run {run}: no acknowledged {kind} "
                f"{f'of {size} bytes ' if size else ''}lost without the sync; {_report(lost)}")
        if mode == "nosegmentsync":
            assert all(p.size == LARGE_BYTES for p in lost), f"seed {rig.seed}: {_report(lost)}"


@pytest.mark.slow
def test_a_new_store_survives_power_loss(rig: Rig) -> None:
    """A store created through the power-loss filesystem, cut after its first acknowledgements,
    then reopened through it and cut again.

    ``seaway.open(path)`` makes ``path``, ``path/logsdb``, ``path/logsdb/rocksdb`` and ``path/epochs``
    (the last two for RocksDB, which fsyncs what it creates inside a directory but never the
    directory's name in its parent). Unless each is fsynced into its parent, the cut can take the
    whole store, and everything acknowledged with it, or the epoch store, and the second run would
    reuse the first one's epoch. On ext4 or XFS the journal commit of the first fsync usually
    carries the ``mkdir``s along, but nothing promises it; this filesystem keeps a name only once
    its directory is fsynced."""
    acks = _Acks()
    last_epoch = 0
    for run in range(2):
        rig.fs.mount()
        child = rig.start("sync", run)
        rig.wait_for(child, run, appends=5, meta=5)
        for line in rig.cut(child)[0]:
            acks.add(line)
        problems = acks.lost(rig.disk / "data", LOG_SYNC)
        assert not problems, f"seed {rig.seed}: run {run}: {_report(problems, 10)}"
        last_epoch = _check_epoch(rig, acks, run, last_epoch)
