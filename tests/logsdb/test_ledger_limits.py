"""The change ledger's limits in LogsDB: reads bounded by bytes before they are loaded, entries
seen only once durable, the hard bound in bytes as well as entries, and retention's trims recorded."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seaway.ledger import LedgerEntry, LogTrimmed, ScopeCreated, decode_change, encode_change
from seaway.logsdb import LogsDB, LogsDBConfig
from seaway.testing import FakeClock
from tests.logsdb.test_store import E1, put

_WAIT_S = 10.0


def _indexes(db: LogsDB, index_from: int = 0) -> list[int]:
    return [i for i, _ in db.ledger_read(index_from, 10_000, 1 << 30)]


def _scope(size: int, i: int = 0) -> bytes:
    return encode_change(ScopeCreated(f"s{i}-" + "x" * size))


def test_a_read_stops_at_its_byte_bound_before_loading_more(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, clock=clock) as db:
        for i in range(100):
            db.ledger_append(_scope(60_000, i))  # 6 MB in all, near the 64 KiB most a change holds
        got = db.ledger_read(1, 10_000, 1 << 20)
        assert 0 < sum(len(raw) for _, raw in got) <= 1 << 20
        assert [i for i, _ in got] == list(range(1, len(got) + 1)) and len(got) == (1 << 20) // 60_040
        assert [i for i, _ in db.ledger_read(1, 10_000, 10)] == [1]  # one entry always comes, whatever its size
        assert [i for i, _ in db.ledger_read(99, 10_000, 1 << 20)] == [99, 100]


class _HeldSync(LogsDB):
    """A store whose write-ahead log syncs wait, while ``hold`` is set, until ``release`` is: the
    window between a write's apply and its sync, made wide through the store's own sync method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.hold = threading.Event()
        self.syncing = threading.Event()
        self.release = threading.Event()
        super().__init__(*args, **kwargs)

    def sync_wal(self) -> None:
        if self.hold.is_set():
            self.syncing.set()
            assert self.release.wait(_WAIT_S)
        super().sync_wal()


_CHANGE = encode_change(LogTrimmed(7, "l", 10))
_WRITES: dict[str, Callable[[LogsDB], object]] = {
    "trim": lambda db: db.trim(7, 10, ledger=_CHANGE),
    "seal": lambda db: db.seal_log(7, 10, ledger=_CHANGE),
    "append": lambda db: db.ledger_append(_CHANGE),
    "put_meta": lambda db: db.put_meta(b"k", b"v", ledger=_CHANGE),
    "kv_commit": lambda db: db.kv_commit([], [], ledger=_CHANGE),
    "prune": lambda db: db.ledger_prune(1),
}


@pytest.mark.parametrize("write", sorted(_WRITES))
def test_entries_and_bounds_are_seen_only_once_durable(tmp_path: Path, clock: FakeClock, write: str) -> None:
    with _HeldSync(tmp_path, clock=clock) as db:
        db.ledger_append(_scope(10))
        db.ledger_append(_scope(10, 1))
        before = db.ledger_bounds()
        db.hold.set()
        writer = threading.Thread(target=_WRITES[write], args=(db,))
        writer.start()
        try:
            assert db.syncing.wait(_WAIT_S)
            # Applied, not yet synced: a power loss now would lose it, and its index would be reused.
            assert db.ledger_bounds() == before == (1, 2)
            # A read syncs the metadata batches applied before it (group commit) first. A prune's
            # range delete is read as soon as it is applied: a reader may be told it missed an entry
            # that a power loss brings back, never given one that a power loss takes away.
            if write not in ("kv_commit", "prune"):
                assert _indexes(db) == [1, 2]
        finally:
            db.release.set()
            writer.join(_WAIT_S)
        assert not writer.is_alive()
        db.hold.clear()
        after = db.ledger_bounds()
        assert after == ((2, 2) if write == "prune" else (1, 3))
        assert _indexes(db) == list(range(after[0], after[1] + 1))


def test_the_hard_bound_counts_bytes_too_and_keeps_counting_across_a_reopen(tmp_path: Path,
                                                                             clock: FakeClock) -> None:
    config = LogsDBConfig(ledger_hard_bytes_max=1 << 20)
    entry_bytes = len(_scope(16_000)) + 8  # and its time
    with LogsDB(tmp_path, config, clock) as db:
        for i in range(100):
            db.ledger_append(_scope(16_000, i))
            tail, head = db.ledger_bounds()
            assert (head - tail + 1) * entry_bytes <= 1 << 20
        tail, head = db.ledger_bounds()
        assert head == 100 and tail > 30  # ~65 fit: a passing write drops a tenth of the bound's bytes
        assert _indexes(db) == list(range(tail, head + 1))
        db.ledger_prune(tail + 9)  # a prune frees bytes: the count follows it
    with LogsDB(tmp_path, config, clock) as db:
        tail, head = db.ledger_bounds()
        for i in range(9):
            db.ledger_append(_scope(16_000, i))
        assert db.ledger_bounds() == (tail, head + 9)  # what the prune freed is counted after a reopen
        db.ledger_append(_scope(16_000))
        db.ledger_append(_scope(16_000))
        tail, head = db.ledger_bounds()
        assert (head - tail + 1) * entry_bytes <= 1 << 20 and tail > 40


def test_the_byte_bound_is_checked() -> None:
    from seaway import InvalidArgumentError  # noqa: PLC0415

    with pytest.raises(InvalidArgumentError, match="ledger_hard_bytes_max"):
        LogsDBConfig(ledger_hard_bytes_max=1000)


def _trims(db: LogsDB) -> dict[int, int]:
    out = {}
    for index, raw in db.ledger_read(0, 10_000, 1 << 30):
        change = LedgerEntry.decode(index, raw).change
        assert isinstance(change, LogTrimmed)
        out[change.log_id] = change.trim_point
    return out


def test_retention_records_each_trim_it_raises_in_the_same_write(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60)
    kept_forever, short, gone = 1, 2, 3
    backlogs = {kept_forever: None, short: 600_000, gone: 600_000}
    with LogsDB(tmp_path, config, clock) as db:
        put(db, gone, E1 + 1, [b"a", b"b"], clock.now_ms())  # partition 1: only expiring logs
        clock.advance(61)
        put(db, kept_forever, E1 + 1, [b"kept"], clock.now_ms())  # partition 2: pinned by a permanent log
        put(db, short, E1 + 1, [b"x"] * 3, clock.now_ms())
        clock.advance(61)
        put(db, kept_forever, E1 + 2, [b"newest"], clock.now_ms())
        clock.advance(600)

        def trimmed(log_id: int, trim_point: int) -> bytes:
            return encode_change(LogTrimmed(log_id, f"log{log_id}", trim_point))

        assert db.drop_expired(backlogs.get, trimmed) == [1]
        assert db.trim_point(gone) == E1 + 2 and db.trim_point(short) == E1 + 3
        assert _trims(db) == {gone: E1 + 2, short: E1 + 3}
        assert db.drop_expired(backlogs.get, trimmed) == []  # nothing more raised: no more entries
        assert len(_indexes(db)) == 2
    with LogsDB(tmp_path, config, clock) as db:
        assert _trims(db) == {gone: E1 + 2, short: E1 + 3}
        assert decode_change(db.ledger_read(1, 1, 1 << 20)[0][1][8:]).OPERATION == "log.trimmed"


def test_a_retention_pass_lets_writes_through_while_it_walks_the_partitions(tmp_path: Path,
                                                                            clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60)
    with LogsDB(tmp_path, config, clock) as db:
        for minute in range(3):
            put(db, 1, E1 + 1 + minute, [b"forever"], clock.now_ms())
            put(db, 2 + minute, E1 + 1, [b"x"], clock.now_ms())
            clock.advance(61)
        put(db, 1, E1 + 4, [b"newest"], clock.now_ms())
        clock.advance(600)
        written: list[bool] = []

        def backlog(log_id: int) -> int | None:
            # Asked while the pass decides what expired: a write meanwhile must not wait for the pass.
            if not written:
                writer = threading.Thread(target=lambda: put(db, 9, E1 + 1, [b"w"], clock.now_ms()))
                writer.start()
                writer.join(_WAIT_S)
                written.append(not writer.is_alive())
            return None if log_id == 1 else 600_000

        assert db.drop_expired(backlog) == []
        assert written == [True]
        assert db.trim_point(2) == E1 + 1 and db.last_lsn(9) == E1 + 1
