"""Power loss under control-plane changes: a child appends, trims, seals, runs retention (which
drops old partitions) and writes ledger entries of its own while a reader follows the ledger
(:mod:`seaway.testing._powerloss_control_child`); the power is cut at a moment or at the Nth call
that changes the disk, keeping nothing, a torn write or reordered writes of what was not synced.

After every cut: each acknowledged change is there (a trim point at least as high, a seal with
its final LSN, a dropped partition gone, a ledger entry at its index); the ledger has exactly one
entry per durable change (a trim point that rose has its entry, a log sealed has one, in the same
atomic write); every record above a trim point that was acknowledged reads back whole; and every
ledger entry the reader saw is still there, the same. Without the write-ahead log's sync, the same
checks find acknowledged changes lost.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rocksdict import Options, Rdict

import seaway
from seaway import Record
from seaway.ledger import LedgerEntry, LogSealed, LogTrimmed, ScopeCreated
from seaway.testing._powerloss_child import payload, payload_is_whole
from seaway.testing._powerloss_control_child import (
    META_NS,
    SEALED_LOGS,
    TRIMMED_LOGS,
    config,
    create_store,
    entry_digest,
    sealed_log,
    trimmed_log,
)
from tests.powerloss.rig import Rig, cut_runs, report, rig_fixture, unsynced_run

CUTS = int(os.environ.get("SEAWAY_POWERLOSS_CONTROL_CUTS", "16"))
_MODULE = "seaway.testing._powerloss_control_child"


@dataclass
class _Acks:
    """Everything acknowledged so far, over all runs, and every ledger entry a reader saw."""

    batches: list[tuple[int, str, int, int, int, int]] = field(default_factory=list)  # run log batch first count size
    trims: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    seals: dict[str, int] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)
    scopes: dict[str, int] = field(default_factory=dict)  # scope -> ledger index
    meta_scopes: set[str] = field(default_factory=set)  # committed in a metadata batch with their entry
    seen: dict[int, int] = field(default_factory=dict)  # ledger index -> digest
    seen_operations: dict[int, str] = field(default_factory=dict)

    def add(self, run: int, line: str) -> None:
        kind, *words = line.split()
        if kind == "A":
            log, batch, first, count, size = words[0], *map(int, words[1:])
            self.batches.append((run, log, batch, first, count, size))
        elif kind == "T":
            self.trims[words[0]].append(int(words[1]))
        elif kind == "S":
            self.seals[words[0]] = int(words[1])
        elif kind == "R":
            self.dropped.add(int(words[0]))
        elif kind == "L":
            self.scopes[words[1]] = int(words[0])
        elif kind == "M":
            self.meta_scopes.add(words[1])
        elif kind == "E":
            self.seen_operations[int(words[0])] = words[2]
            self.seen.setdefault(int(words[0]), int(words[1]))
            if self.seen[int(words[0])] != int(words[1]):
                self.seen[int(words[0])] = -1  # seen twice, different: reported by problems()

    def problems(self, data_dir: Path) -> list[str]:
        """What of the acknowledged is missing or changed in the store at ``data_dir``, and where
        the ledger and the state it records disagree."""
        with seaway.open(data_dir, config()) as sw:
            entries = _ledger(sw)
            out = self._ledger_problems(sw, entries)
            names = [trimmed_log(i) for i in range(TRIMMED_LOGS)] + [sealed_log(i) for i in range(SEALED_LOGS)]
            for name in names:
                out += self._log_problems(sw.logs.get(name), entries)
            partitions = {p.partition_id for p in sw.logs.partitions()}
            out += [f"partition {pid}: dropped by retention (acknowledged), yet there"
                    for pid in sorted(self.dropped & partitions)]
        # A partition's column family and segment file go with it (a drop cut short leaves them to
        # the next open).
        segments = {int(path.name[1:17], 16) for path in (data_dir / "logsdb" / "segments").glob("p*.seg")}
        out += [f"segment file of partition {pid}: left after the partition was dropped"
                for pid in sorted(segments - partitions)]
        names = Rdict.list_cf(str(data_dir / "logsdb" / "rocksdb"), Options(raw_mode=True))
        families = {int(name[1:], 16) for name in names if re.fullmatch(r"p[0-9a-f]{16}", name)}
        out += [f"column family of partition {pid}: left after the partition was dropped"
                for pid in sorted(families - partitions)]
        return out

    def _ledger_problems(self, sw: seaway.Seaway, entries: list[LedgerEntry]) -> list[str]:
        out: list[str] = []
        tail, head = sw.ledger.bounds()
        if [e.index for e in entries] != list(range(tail, head + 1)):
            out.append(f"the ledger's indexes are not {tail}..{head} one by one")
        by_index = {e.index: e for e in entries}
        for index, digest in sorted(self.seen.items()):
            entry = by_index.get(index)
            if entry is None or entry_digest(entry) != digest:
                out.append(f"ledger entry {index} ({self.seen_operations.get(index)}): a reader saw it, and it is "
                           f"{'gone' if entry is None else f'changed (now {entry.operation} {entry.resource})'}")
        scopes = Counter(e.change.scope for e in entries if isinstance(e.change, ScopeCreated))
        out += [f"ledger entry of scope {scope}: {n} of them" for scope, n in scopes.items() if n > 1]
        # A metadata batch and its entry: both or neither.
        keys = {key.decode() for key, _ in sw.meta.scan_all(META_NS)}
        in_batches = {scope for scope in scopes if scope.startswith("pm-")}
        for scope in sorted(keys ^ in_batches):
            half = "without its ledger entry" if scope in keys else "its entry there, its key not"
            out.append(f"metadata batch of {scope}: {half}")
        out += [f"metadata batch of {scope}: committed (acknowledged), lost" for scope in sorted(self.meta_scopes)
                if scope not in keys and scope not in in_batches]
        for scope, index in self.scopes.items():
            entry = by_index.get(index)
            if entry is None or entry.change != ScopeCreated(scope):
                out.append(f"ledger entry {index} ({scope}), acknowledged: "
                           f"{'lost' if entry is None else f'is {entry.operation} {entry.resource}'}")
        return out

    def _log_problems(self, log: seaway.Log, entries: list[LedgerEntry]) -> list[str]:
        out: list[str] = []
        name, trim_point, final = log.name, log.trim_point(), log.final_lsn()
        # Trims: one entry per rise of the trim point, in the write that raised it.
        trimmed = [e.change.trim_point for e in entries if isinstance(e.change, LogTrimmed) and e.change.name == name]
        if any(b <= a for a, b in itertools.pairwise(trimmed)):
            out.append(f"{name}: trim entries not rising one by one: {trimmed}")
        if trim_point != max(trimmed, default=0):
            out.append(f"{name}: trim point {trim_point}, but the ledger's last trim says {max(trimmed, default=0)}")
        out += [f"{name}: trim to {lsn} acknowledged, no ledger entry of it" for lsn in self.trims.get(name, [])
                if lsn not in trimmed]
        if self.trims.get(name) and trim_point < max(self.trims[name]):
            out.append(f"{name}: trim point {trim_point} below the acknowledged {max(self.trims[name])}")
        # Seals: one entry, with the final LSN, iff sealed.
        sealed = [e.change.final_lsn for e in entries if isinstance(e.change, LogSealed) and e.change.name == name]
        if sealed != ([] if final is None else [final]):
            out.append(f"{name}: final LSN {final}, ledger seal entries {sealed}")
        if name in self.seals and final != self.seals[name]:
            out.append(f"{name}: sealed at {self.seals[name]} (acknowledged), final LSN now {final}")
        # Records: every acknowledged one above the trim point, whole; none at or below it.
        records = {item.lsn: item.payload for item in log.read() if isinstance(item, Record)}
        out += [f"{name}: record at {lsn} is at or below the trim point {trim_point}" for lsn in records
                if lsn <= trim_point]
        out += [f"{name}: record at {lsn} is not one the child wrote" for lsn, data in records.items()
                if not payload_is_whole(data)]
        for run, log_name, batch, first, count, size in self.batches:
            if log_name != name:
                continue
            for i in range(count):
                lsn = first + i
                if final is not None and lsn > final:
                    out.append(f"{name}: record at {lsn} acknowledged, above the final LSN {final}")
                elif lsn > trim_point and records.get(lsn) != payload(run, batch, i, size):
                    out.append(f"{name}: run {run} batch {batch} record {i} at {lsn}: "
                               f"{'changed' if lsn in records else 'lost'} (trim point {trim_point})")
        return out


def _ledger(sw: seaway.Seaway) -> list[LedgerEntry]:
    tail, head = sw.ledger.bounds()
    entries: list[LedgerEntry] = []
    while tail <= head:
        got = sw.ledger.read(tail, 1000)
        if not got:
            break
        entries += got
        tail = got[-1].index + 1
    return entries


rig = rig_fixture(_MODULE)


@pytest.mark.slow
def test_acknowledged_trims_seals_drops_and_ledger_entries_survive_power_loss(rig: Rig) -> None:
    create_store(rig.disk / "data")
    acks = _Acks()
    cuts = cut_runs(rig, acks, CUTS)
    print("\n".join(cuts))
    trims = sum(map(len, acks.trims.values()))
    print(f"acknowledged over {CUTS} cuts: {len(acks.batches)} batches, {trims} trims, {len(acks.seals)} seals, "
          f"{len(acks.dropped)} partitions dropped, {len(acks.scopes)} ledger entries on their own and "
          f"{len(acks.meta_scopes)} in metadata batches; {len(acks.seen)} entries seen")
    assert trims > CUTS and len(acks.seals) > CUTS // 2 and len(acks.scopes) > CUTS and len(acks.meta_scopes) > CUTS, (
        f"seed {rig.seed}: too few acknowledgements to mean anything")
    assert acks.dropped, f"seed {rig.seed}: retention dropped no partition: the check of drops is idle"
    assert len(acks.seen) > CUTS, f"seed {rig.seed}: the reader saw {len(acks.seen)} ledger entries"


@pytest.mark.slow
def test_without_the_wal_sync_acknowledged_control_changes_are_lost(rig: Rig) -> None:
    """The checks above are not vacuous: with RocksDB's write-ahead log never synced, they find
    acknowledged trims, seals or ledger entries lost."""
    create_store(rig.disk / "data")
    kinds_lost: set[str] = set()
    for run in range(2):
        problems = unsynced_run(rig, _Acks(), run, appends=20, T=4, S=2, L=5)  # each run checked alone
        lost = {kind for kind, what in _CONTROL_LOSSES.items() if any(what in p for p in problems)}
        assert lost, f"seed {rig.seed}: run {run}: no acknowledged control change lost without the sync; " + (
            report(problems))
        kinds_lost |= lost
    assert len(kinds_lost) >= 2, f"seed {rig.seed}: only {kinds_lost} lost over two runs"


# How each kind of acknowledged change shows as lost in the problems.
_CONTROL_LOSSES = {"trim": "acknowledged, no ledger entry", "seal": "(acknowledged), final LSN now",
                   "ledger entry": "acknowledged: lost", "metadata batch": "committed (acknowledged)"}
