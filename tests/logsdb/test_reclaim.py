"""Space is reclaimed per log: expired logs in partitions another log pins, and deleted logs."""

from __future__ import annotations

from pathlib import Path

from seaway.logsdb import LogsDB, LogsDBConfig, RecordsEntry
from seaway.testing import FakeClock
from tests.logsdb.test_store import E1, all_entries, put

PERMANENT = 1


def test_a_log_kept_forever_does_not_pin_the_expired_data_of_others(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60)
    backlogs = {log: (None if log == PERMANENT else 600_000) for log in range(1, 40)}
    with LogsDB(tmp_path, config, clock) as db:
        for minute in range(6):  # a partition a minute, each pinned by the permanent log
            put(db, PERMANENT, E1 + 1 + minute, [b"forever"], clock.now_ms())
            for short in range(2 + 6 * minute, 8 + 6 * minute):
                put(db, short, E1 + 1, [b"x" * 5000] * 4, clock.now_ms())
            clock.advance(61)
        put(db, PERMANENT, E1 + 7, [b"newest"], clock.now_ms())
        before = sum(p.size_bytes for p in db.partitions())
        assert db.drop_expired(backlogs.get) == []  # nothing is ten minutes old
        clock.advance(600)
        assert db.drop_expired(backlogs.get) == []  # the permanent log pins every partition
        after = db.partitions()
        assert all(p.log_ids == (PERMANENT,) for p in after), after
        assert sum(p.size_bytes for p in after) < before / 100
        for short in range(2, 38):
            assert db.trim_point(short) == E1 + 4 and all_entries(db, short) == []
            assert db.data_size(short) == 0
        kept = [e for e in all_entries(db, PERMANENT) if isinstance(e, RecordsEntry)]
        assert [e.first_lsn for e in kept] == [E1 + 1 + i for i in range(7)]
    with LogsDB(tmp_path, config, clock) as db:  # what was reclaimed stays reclaimed
        assert all(p.log_ids == (PERMANENT,) for p in db.partitions())
        assert db.trim_point(2) == E1 + 4 and all_entries(db, 2) == []


def test_deleting_a_logs_data_leaves_the_others(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60)
    with LogsDB(tmp_path, config, clock) as db:
        put(db, 5, E1 + 1, [b"a", b"b"], clock.now_ms())
        put(db, 6, E1 + 1, [b"other"], clock.now_ms())
        clock.advance(61)
        put(db, 5, E1 + 3, [b"c"], clock.now_ms())
        db.delete_log_data(5)
        db.delete_log_data(5)  # idempotent
        assert all_entries(db, 5) == [] and db.data_size(5) == 0 and db.trim_point(5) == E1 + 3
        assert [p.log_ids for p in db.partitions()] == [(6,), ()]
        assert len(all_entries(db, 6)) == 1
    with LogsDB(tmp_path, config, clock) as db:
        assert all_entries(db, 5) == [] and db.trim_point(5) == E1 + 3 and len(all_entries(db, 6)) == 1


def test_a_log_sealed_for_good_stays_sealed(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        assert db.final_lsn(3) is None
        db.seal_log(3, E1 + 9)
        db.seal_log(3, E1 + 20)  # the first seal stands
        assert db.final_lsn(3) == E1 + 9
    with LogsDB(tmp_path) as db:
        assert db.sealed_logs() == {3: E1 + 9}


def _segment_blocks_bytes(path: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in (path / "segments").glob("*.seg"))


def test_reclaimed_entries_in_segment_files_give_their_disk_space_back(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60, segment_min_bytes=1 << 10)
    backlogs = {log: (None if log == PERMANENT else 60_000) for log in range(1, 20)}
    with LogsDB(tmp_path, config, clock) as db:
        put(db, PERMANENT, E1 + 1, [b"forever"] * 200, clock.now_ms())  # in the segment file too
        for short in range(2, 12):
            put(db, short, E1 + 1, [bytes([short]) * 1000] * 100, clock.now_ms())
        put(db, 12, E1 + 1, [b"d" * 1000] * 100, clock.now_ms())
        before = _segment_blocks_bytes(tmp_path)
        assert before > 10 * 100_000
        clock.advance(120)
        put(db, PERMANENT, E1 + 201, [b"newer"], clock.now_ms())  # retention leaves the newest partition be
        db.drop_expired(backlogs.get)
        db.delete_log_data(12)
        after = _segment_blocks_bytes(tmp_path)
        assert after < before / 5, (before, after)  # the file system gave the blocks back
        kept = [e for e in all_entries(db, PERMANENT) if isinstance(e, RecordsEntry)]
        assert [p for e in kept for p in e.payloads] == [b"forever"] * 200 + [b"newer"]  # intact
    with LogsDB(tmp_path, config, clock) as db:
        kept = [e for e in all_entries(db, PERMANENT) if isinstance(e, RecordsEntry)]
        assert [p for e in kept for p in e.payloads] == [b"forever"] * 200 + [b"newer"]
