"""The change ledger of an embedded store: its bounds (soft, waiting for readers' floors; hard,
whatever they say), and a change of a log and its entry never one without the other when a write
fails between any two steps of the change."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import seaway
from seaway import InvalidArgumentError, LedgerConfig, LogsDBConfig, LogStoreConfig, SeawayConfig, SeawayError
from seaway.ledger import LogTrimmed, ScopeCreated
from seaway.testing import FakeClock, failing_rocksdb_after


def _config(soft: int = 100_000, hard: int = 1_000_000) -> SeawayConfig:
    return SeawayConfig(logs=LogStoreConfig(logsdb=LogsDBConfig(ledger_hard_entries_max=hard)),
                        ledger=LedgerConfig(soft_entries_max=soft, prune_interval_s=None))


def test_the_soft_bound_waits_for_the_slowest_floor(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.Seaway(tmp_path, _config(soft=5), clock) as sw:
        for i in range(20):
            sw.ledger.append(ScopeCreated(f"s{i}"))
        sw.ledger.set_floor("slow", 3)
        sw.ledger.set_floor("fast", 18)
        assert sw.ledger.enforce_bounds() == 4  # entries 4.. are above the slow reader's floor
        assert sw.ledger.bounds() == (4, 20)
        sw.ledger.set_floor("slow", 12)
        assert sw.ledger.enforce_bounds() == 13
        sw.ledger.remove_floor("slow")
        assert sw.ledger.enforce_bounds() == 16  # the newest five kept: the fast reader has read them
        assert sw.ledger.enforce_bounds() == 16  # nothing more to do
        sw.ledger.remove_floor("fast")
        for i in range(3):
            sw.ledger.append(ScopeCreated(f"t{i}"))
        assert sw.ledger.enforce_bounds() == 19  # no reader: the newest five
        assert [e.index for e in sw.ledger.read(0)] == [19, 20, 21, 22, 23]


def test_the_soft_bound_is_applied_by_a_periodic_pass(tmp_path: Path) -> None:
    config = SeawayConfig(ledger=LedgerConfig(soft_entries_max=2, prune_interval_s=0.01))
    with seaway.open(tmp_path, config) as sw:
        for i in range(10):
            sw.ledger.append(ScopeCreated(f"s{i}"))
        # The pass runs on a thread of its own every 10 ms of real time: poll for it, within a bound.
        deadline = time.monotonic() + 30
        while sw.ledger.bounds()[0] != 9 and time.monotonic() < deadline:
            threading.Event().wait(0.005)
        assert sw.ledger.bounds() == (9, 10)


def test_the_hard_bound_prunes_a_range_in_the_write_that_passes_it(tmp_path: Path, clock: FakeClock) -> None:
    with seaway.Seaway(tmp_path, _config(soft=5, hard=20), clock) as sw:
        sw.ledger.set_floor("stuck", 0)  # a reader that never reads: the hard bound does not wait
        for i in range(20):
            sw.ledger.append(ScopeCreated(f"s{i}"))
        assert sw.ledger.bounds() == (1, 20)
        log = sw.logs.create("hard")
        assert sw.ledger.bounds() == (4, 21)  # the oldest tenth (two) and one more went with it: 18 kept
        log.trim(log.append(b"x"))
        assert sw.ledger.bounds() == (4, 22)
        assert sw.ledger.missed(0) == range(1, 4)
    with seaway.Seaway(tmp_path, _config(soft=5, hard=20), clock) as sw:
        assert sw.ledger.bounds() == (4, 22)
        assert sw.ledger.read(22, 1)[0].change == LogTrimmed(log.id, "hard", log.trim_point())


def test_bounds_are_checked(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="soft bound"):
        _config(soft=10, hard=5)
    with pytest.raises(InvalidArgumentError):
        LedgerConfig(soft_entries_max=0)
    with pytest.raises(InvalidArgumentError):
        LedgerConfig(prune_interval_s=0)
    with pytest.raises(InvalidArgumentError):
        LogsDBConfig(ledger_hard_entries_max=0)


# --- a write failure between any two steps of a change of a log --------------------------------------

_Op = Callable[[seaway.Seaway], object]


def _prepare(sw: seaway.Seaway) -> None:
    sw.logs.create_group("grp", 1000, 1999)
    log = sw.logs.create("victim")
    log.append_batch([b"a", b"b", b"c"])


def _state(sw: seaway.Seaway, op: str) -> bool:
    """Whether ``op``'s change is there."""
    if op == "create_group":
        return any(g.name == "grp2" for g in sw.logs.groups())
    if op == "create_log":
        return any(log.name == "fresh" for log in sw.logs.list())
    if op == "delete":
        return all(log.name != "victim" for log in sw.logs.list())
    log = sw.logs.get("victim")
    if op == "trim":
        return log.trim_point() >= 2
    return log.final_lsn() is not None


_OPS: dict[str, tuple[str, _Op]] = {
    "create_group": ("log_group.created", lambda sw: sw.logs.create_group("grp2", 2000, 2999)),
    "create_log": ("log.created", lambda sw: sw.logs.create("fresh", group="grp")),
    "trim": ("log.trimmed", lambda sw: sw.logs.get("victim").trim(sw.logs.get("victim").tail_lsn() - 1)),
    "seal": ("log.sealed", lambda sw: sw.logs.get("victim").seal()),
    "delete": ("log.removed", lambda sw: sw.logs.delete("victim")),
}


@pytest.mark.parametrize("op", list(_OPS))
def test_a_change_of_a_log_and_its_entry_are_both_there_or_both_absent(tmp_path: Path, op: str) -> None:
    """Fail RocksDB's writes and syncs from the n-th one on, for every n up to the number the
    change makes, then reopen: the change and its entry are both there or both absent, and the
    store finishing an interrupted change on opening adds no entry of its own."""
    operation, run = _OPS[op]
    ok_calls = 0
    while True:
        data = tmp_path / f"n{ok_calls}"
        with seaway.open(data, _config()) as sw:
            _prepare(sw)
            _, head = sw.ledger.bounds()
            with failing_rocksdb_after(sw._store.logsdb, ok_calls) as budget:
                try:
                    run(sw)
                    finished = True
                except SeawayError:
                    finished = False
        with seaway.open(data, _config()) as sw:
            entries = [e for e in sw.ledger.read(head + 1) if e.operation == operation]
            changed = _state(sw, op)
            assert len(entries) == (1 if changed else 0), (op, ok_calls, changed, entries)
            if finished:
                assert changed, (op, ok_calls)
            assert sw.ledger.bounds()[1] == head + len(entries)  # nothing else written meanwhile
        if finished and budget.made <= ok_calls:  # no call of the change failed: every step covered
            break
        ok_calls += 1
    assert ok_calls >= 1, f"{op} made no write"


def test_watch_wakes_a_reader_after_each_write_of_entries_and_stops_when_asked(tmp_path: Path) -> None:
    with seaway.open(tmp_path, SeawayConfig(notify=None)) as sw:
        seen: list[int] = []
        unwatch = sw.ledger.watch(lambda: seen.append(sw.ledger.bounds()[1]))  # the head is written when woken
        head = sw.ledger.bounds()[1]
        sw.logs.create("watched.a")  # an entry in a log-layer write
        sw.ledger.append(ScopeCreated("watched"))  # an entry on its own
        sw.meta.batch().put("app", b"k", b"v").commit()  # no entry: no wake-up
        assert seen == [head + 1, head + 2]
        unwatch()
        sw.logs.create("watched.b")
        assert seen == [head + 1, head + 2] and sw.ledger.bounds()[1] == head + 3


def test_retention_records_the_trim_points_it_raises(tmp_path: Path, clock: FakeClock) -> None:
    config = SeawayConfig(logs=LogStoreConfig(logsdb=LogsDBConfig(partition_duration_s=60)),
                          ledger=LedgerConfig(prune_interval_s=None))
    with seaway.Seaway(tmp_path, config, clock) as sw:
        short = sw.logs.create("short", backlog_s=600)
        last = short.append(b"old")
        clock.advance(61)
        sw.logs.create("forever").append(b"newest")  # a new partition: the old one may go
        clock.advance(600)
        head = sw.ledger.bounds()[1]
        assert sw.logs.run_retention() == [1]
        assert short.trim_point() == last
        assert [e.change for e in sw.ledger.read(head + 1)] == [LogTrimmed(short.id, "short", last)]
