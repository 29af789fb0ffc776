"""LogsDB: partitions, directory, retention, find_time, trim, locking, corruption."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

import seaway
from seaway import (
    CorruptionError,
    DataDirLockedError,
    GapType,
    PayloadTooLargeError,
    Record,
    SeawayError,
    StorageError,
)
from seaway.logsdb import (
    CorruptEntry,
    HolePlugEntry,
    LogsDB,
    LogsDBConfig,
    PutHolePlug,
    PutRecords,
    PutSeal,
    RecordsEntry,
)
from seaway.logsdb import _format as fmt
from seaway.testing import FakeClock, failing_rocksdb, failing_wal_syncs

E1 = 1 << 32


def put(db: LogsDB, log: int, first: int, payloads: list[bytes], ts: int) -> None:
    db.write([PutRecords(log, first, ts, tuple(payloads))])


def all_entries(db: LogsDB, log: int) -> list[object]:
    entries, _ = db.read(log, 1, 2**64 - 1, 1 << 30)
    return entries


def test_entries_round_trip_and_reopen(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, clock=clock) as db:
        put(db, 7, E1 + 1, [b"a", b"bb"], 100)
        db.write([PutHolePlug(7, E1 + 3, 2, 101), PutRecords(8, E1 + 1, 102, (b"other",))])
        put(db, 7, E1 + 5, [b""], 103)
    with LogsDB(tmp_path, clock=clock) as db:
        assert all_entries(db, 7) == [
            RecordsEntry(7, E1 + 1, 100, [b"a", b"bb"]),
            HolePlugEntry(7, E1 + 3, E1 + 4, 101),
            RecordsEntry(7, E1 + 5, 103, [b""]),
        ]
        assert db.last_lsn(7) == E1 + 5 and db.last_lsn(8) == E1 + 1 and db.last_lsn(9) == 0
        # A read that starts inside an entry returns the whole entry.
        assert db.read(7, E1 + 2, E1 + 2, 1 << 20) == ([RecordsEntry(7, E1 + 1, 100, [b"a", b"bb"])], E1 + 2)


def test_read_stops_at_byte_budget_and_reports_coverage(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, clock=clock) as db:
        for i in range(10):
            put(db, 1, E1 + 1 + i, [b"x" * 100], 1)
        entry_bytes = len(db.raw_value(1, E1 + 1) or b"")
        entries, covered = db.read(1, 1, 2**64 - 1, 2 * entry_bytes + 1)
        assert [e.first_lsn for e in entries] == [E1 + 1, E1 + 2, E1 + 3]
        assert covered == E1 + 3


def test_new_partition_after_time_span_and_size(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60, partition_bytes_max=10_000)
    with LogsDB(tmp_path, config, clock) as db:
        put(db, 1, E1 + 1, [b"a"], 1)
        clock.advance(59)
        put(db, 1, E1 + 2, [b"b"], 2)
        assert len(db.partitions()) == 1
        clock.advance(2)
        put(db, 1, E1 + 3, [b"c"], 3)
        assert len(db.partitions()) == 2
        put(db, 1, E1 + 4, [b"d" * 20_000], 4)
        put(db, 1, E1 + 5, [b"e"], 5)
        assert len(db.partitions()) == 3
        assert [len(e.payloads) for e in all_entries(db, 1) if isinstance(e, RecordsEntry)] == [1] * 5


def test_retention_drops_whole_partitions_by_backlog(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=60)
    backlogs = {1: 3_600_000, 2: None}
    with LogsDB(tmp_path, config, clock) as db:
        put(db, 1, E1 + 1, [b"old"], clock.now_ms())
        clock.advance(61)
        put(db, 1, E1 + 2, [b"newer"], clock.now_ms())
        put(db, 2, E1 + 1, [b"kept forever"], clock.now_ms())
        clock.advance(61)
        put(db, 1, E1 + 3, [b"newest"], clock.now_ms())
        assert [p.partition_id for p in db.partitions()] == [1, 2, 3]
        assert db.drop_expired(backlogs.get) == []  # nothing is an hour old yet
        clock.advance(3600 - 100)
        # Partition 1 is past log 1's backlog; partition 2 holds log 2, which has no backlog.
        assert db.drop_expired(backlogs.get) == [1]
        assert db.trim_point(1) == E1 + 1
        clock.advance(10_000)
        assert db.drop_expired(backlogs.get) == []
        db.trim(2, E1 + 1)
        # The newest partition is never dropped.
        assert db.drop_expired(backlogs.get) == [2]
        assert [p.partition_id for p in db.partitions()] == [3]
        assert db.last_lsn(1) == E1 + 3 and db.trim_point(1) == E1 + 2
    with LogsDB(tmp_path, config, clock) as db:
        assert [p.partition_id for p in db.partitions()] == [3]
        assert [e.first_lsn for e in all_entries(db, 1)] == [E1 + 3]
        assert db.trim_point(2) == E1 + 1


def test_find_time_matches_brute_force_across_partitions(tmp_path: Path, clock: FakeClock) -> None:
    rng = random.Random(5)
    stamped: list[tuple[int, int, int]] = []  # (first lsn, last lsn, timestamp)
    with LogsDB(tmp_path, LogsDBConfig(partition_duration_s=30), clock) as db:
        lsn, ts = E1 + 1, 1000
        for _ in range(120):
            n = rng.randint(1, 4)
            ts += rng.choice([0, 0, 1, 7, 500])
            put(db, 3, lsn, [b"p"] * n, ts)
            put(db, 4, lsn, [b"q"], ts)  # a neighbouring log, to catch seeks that stray
            stamped.append((lsn, lsn + n - 1, ts))
            lsn += n + rng.choice([0, 0, 3])
            clock.advance(rng.choice([0, 1, 20]))
        assert len(db.partitions()) > 3

        def brute(t: int, trim: int) -> int:
            for first, last, stamp in stamped:
                if last > trim and stamp >= t:
                    return max(first, trim + 1)
            return max(stamped[-1][1], trim) + 1

        for trim in (0, stamped[40][0], stamped[40][1] - 1 if stamped[40][1] > stamped[40][0] else 0):
            if trim:
                db.trim(3, trim)
            for _, _, stamp in stamped:
                for t in (stamp - 1, stamp, stamp + 1):
                    assert db.find_time(3, t) == brute(t, db.trim_point(3)), (t, trim)
        assert db.find_time(3, 0) == db.trim_point(3) + 1
        assert db.find_time(3, 10**15) == stamped[-1][1] + 1
        assert db.find_time(99, 0) == 1


def test_second_open_of_a_directory_is_refused(tmp_path: Path) -> None:
    with LogsDB(tmp_path), pytest.raises(DataDirLockedError):
        LogsDB(tmp_path)
    with LogsDB(tmp_path):  # released on close
        pass


def test_oversized_entry_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with LogsDB(tmp_path, LogsDBConfig(entry_bytes_max=1000)) as db:
        with pytest.raises(PayloadTooLargeError):
            db.write([PutRecords(1, E1 + 1, 1, (b"ok",)), PutRecords(2, E1 + 1, 1, (b"x" * 2000,))])
        assert db.last_lsn(1) == 0 and all_entries(db, 1) == []


def test_seal_records_where_the_epoch_ended(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"a", b"b"], 1)
        db.write([PutSeal(1, 1, 1, E1 + 2)])
        assert db.sealed_epoch(1) == 1
        assert db.epoch_ends(1, 0, 10) == {1: E1 + 2}


def test_epoch_ends_read_before_follow_later_seals_and_deletion(tmp_path: Path) -> None:
    # Epoch ends are kept in memory once read: a seal or a deletion after that must show.
    with LogsDB(tmp_path) as db:
        assert db.epoch_ends(1, 0, 10) == {}
        db.write([PutSeal(1, 1, 1, E1 + 2)])
        assert db.epoch_ends(1, 0, 10) == {1: E1 + 2}
        assert db.epoch_ends(2, 0, 10) == {}
        db.write([PutSeal(1, 2, 2, 2 * E1 + 7), PutSeal(2, 3, 3, 3 * E1 + 1)])
        assert db.epoch_ends(1, 0, 10) == {1: E1 + 2, 2: 2 * E1 + 7}
        assert db.epoch_ends(1, 2, 10) == {2: 2 * E1 + 7}
        assert db.epoch_ends(1, 0, 1) == {1: E1 + 2}
        assert db.epoch_ends(2, 0, 10) == {3: 3 * E1 + 1}
        db.delete_log_data(1)
        assert db.epoch_ends(1, 0, 10) == {}
        assert db.epoch_ends(2, 0, 10) == {3: 3 * E1 + 1}


def test_a_log_with_many_epoch_ends_gets_every_one_asked_for(tmp_path: Path) -> None:
    # More epoch ends than are kept in memory for a log: each read asks RocksDB for its range.
    with LogsDB(tmp_path) as db:
        db.write([PutSeal(1, epoch, epoch, epoch * E1 + epoch) for epoch in range(1, 41)])
        assert db.epoch_ends(1, 0, 100) == {epoch: epoch * E1 + epoch for epoch in range(1, 41)}
        assert db.epoch_ends(1, 30, 32) == {epoch: epoch * E1 + epoch for epoch in range(30, 33)}
    with LogsDB(tmp_path) as db:  # and they come back from disk the same
        assert db.epoch_ends(1, 38, 100) == {epoch: epoch * E1 + epoch for epoch in range(38, 41)}


def test_damaged_payload_is_reported_never_returned(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"first", b"second", b"third"], 1)
        raw = bytearray(db.raw_value(1, E1 + 1) or b"")
        raw[raw.index(b"second") + 2] ^= 0x01
        db.overwrite_raw(1, E1 + 1, bytes(raw))
        assert all_entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, [b"first", None, b"third"])]


def test_damaged_header_makes_the_whole_entry_corrupt(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"a", b"b"], 1)
        put(db, 1, E1 + 3, [b"c"], 2)
        raw = bytearray(db.raw_value(1, E1 + 1) or b"")
        raw[5] ^= 0xFF  # inside the timestamp
        db.overwrite_raw(1, E1 + 1, bytes(raw))
        assert all_entries(db, 1) == [CorruptEntry(1, E1 + 1, E1 + 2), RecordsEntry(1, E1 + 3, 2, [b"c"])]
        with pytest.raises(CorruptionError):
            db.find_time(1, 0)


def test_decode_rejects_entry_under_another_key() -> None:
    key = fmt.encode_key(1, E1 + 1)
    value = fmt.encode_records(key, 5, [b"x"])
    fmt.decode_header(key, value)
    with pytest.raises(fmt.HeaderCorrupt):
        fmt.decode_header(fmt.encode_key(1, E1 + 2), value)


def test_damaged_length_fails_that_record_and_every_later_one(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"one", b"two", b"three"], 1)
        raw = bytearray(db.raw_value(1, E1 + 1) or b"")
        raw[fmt.HEADER_BYTES + 4 + 3] ^= 0x01  # the second record's length
        db.overwrite_raw(1, E1 + 1, bytes(raw))
        assert all_entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, [b"one", None, None])]


@pytest.mark.parametrize("seed", range(8))
def test_a_byte_flipped_in_a_file_on_disk_is_never_returned_as_data(tmp_path: Path, seed: int) -> None:
    """Flip one byte of a data file (SST) at a random place; what a reader gets back is either the
    original bytes, a DATALOSS gap, or a typed error, never different bytes."""
    rng = random.Random(seed)
    written: dict[int, bytes] = {}
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("l")
        for _ in range(20):
            batch = [rng.randbytes(rng.randint(50, 400)) for _ in range(25)]
            written.update(zip(log.append_batch(batch), batch, strict=True))
    with LogsDB(tmp_path / "logsdb") as db:
        db.flush()
    ssts = sorted((tmp_path / "logsdb" / "rocksdb").glob("*.sst"), key=lambda p: p.stat().st_size)
    target = ssts[-1]  # the partition's data file, not the small metadata one
    data = bytearray(target.read_bytes())
    at = rng.randrange(len(data) // 10, len(data) * 8 // 10)  # inside the data blocks
    data[at] ^= 1 << rng.randrange(8)
    target.write_bytes(bytes(data))
    try:
        with seaway.open(tmp_path) as sw:
            items = list(sw.logs.get("l").read())
    except SeawayError:
        return  # refused with a typed error: nothing wrong was returned
    records = [i for i in items if isinstance(i, Record)]
    for record in records:
        assert record.payload == written[record.lsn], f"seed {seed}: damaged bytes returned at {record.lsn:#x}"
    # RocksDB's block checksums catch a flip in a data block: the damage must show, as DATALOSS.
    assert len(records) < len(written), f"seed {seed}: a flipped byte went unnoticed"
    assert any(getattr(i, "type", None) is GapType.DATALOSS for i in items), f"seed {seed}: loss not reported"


def test_readers_do_not_wait_for_a_write_in_progress(tmp_path: Path, clock: FakeClock,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A write holds the writers' lock through RocksDB and its sync; reads and metadata lookups go on."""
    with LogsDB(tmp_path, clock=clock) as db:
        put(db, 7, E1 + 1, [b"a"], 100)
        entered, release = threading.Event(), threading.Event()
        apply = db._apply

        def slow_apply(batch: object, sync: bool) -> None:
            entered.set()
            assert release.wait(30)
            apply(batch, sync)  # type: ignore[arg-type]

        monkeypatch.setattr(db, "_apply", slow_apply)
        writer = threading.Thread(target=put, args=(db, 7, E1 + 2, [b"b"], 101))
        writer.start()
        try:
            assert entered.wait(30)
            started = time.monotonic()
            assert [e.first_lsn for e in all_entries(db, 7)] == [E1 + 1]  # the new entry is not visible yet
            assert db.last_lsn(7) == E1 + 1 and db.log_ids() == [7] and db.data_size(7) > 0
            assert time.monotonic() - started < 5
        finally:
            release.set()
            writer.join(30)
        assert [e.first_lsn for e in all_entries(db, 7)] == [E1 + 1, E1 + 2]
        assert db.last_lsn(7) == E1 + 2


def test_a_failed_wal_sync_stops_writes_until_reopened(tmp_path: Path) -> None:
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"kept"], 1)
        with failing_wal_syncs(db), pytest.raises(StorageError, match="IO error: injected"):
            db.trim(1, E1 + 1)
        assert db.trim_point(1) == 0
        for write in (lambda: put(db, 1, E1 + 2, [b"x"], 2), lambda: db.trim(1, E1 + 1), db.sync_wal,
                      lambda: db.put_meta(b"k", b"v"), lambda: db.delete_meta(b"k"),
                      lambda: db.drop_expired(lambda log_id: None)):
            with pytest.raises(StorageError, match="reopen"):
                write()
        assert all_entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, [b"kept"])]  # reads go on
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 2, [b"after"], 2)
        assert [e.first_lsn for e in all_entries(db, 1)] == [E1 + 1, E1 + 2]


@pytest.mark.parametrize("call", ["write", "flush_wal"])
def test_a_failed_write_stops_writes_and_its_error_does_not_hold_the_store_open(tmp_path: Path, call: str) -> None:
    # After a failed RocksDB write (its WAL append, say) RocksDB's state is as unknown as after a
    # failed sync: writes stop until the store is reopened and reloads what the disk holds.
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 1, [b"kept"], 1)
        with failing_rocksdb(db, call), pytest.raises(StorageError, match="injected") as failed:
            put(db, 1, E1 + 2, [b"unknown"], 2)
        with pytest.raises(StorageError, match="reopen"):
            put(db, 1, E1 + 3, [b"refused"], 3)
        assert call in (db.write_failure or "")
    # Whoever keeps the error (a future does) must not keep RocksDB open: a column family handle
    # in a frame of its traceback would, and the next open in this process would fail.
    assert failed.value.__traceback__ is not None
    with LogsDB(tmp_path) as db:
        put(db, 1, E1 + 3, [b"after"], 3)
        lsns = [e.first_lsn for e in all_entries(db, 1)]  # the unknown entry may or may not be there
        assert lsns in ([E1 + 1, E1 + 3], [E1 + 1, E1 + 2, E1 + 3])


@pytest.mark.parametrize("call", ["create_column_family", "meta.put", "flush_wal"])
def test_a_failed_new_partition_stops_writes_until_reopened(tmp_path: Path, clock: FakeClock, call: str) -> None:
    config = LogsDBConfig(partition_duration_s=10)
    with LogsDB(tmp_path, config, clock) as db:
        put(db, 1, E1 + 1, [b"kept"], 1)
        clock.advance(11)
        with failing_rocksdb(db, call), pytest.raises(StorageError, match="injected"):
            put(db, 1, E1 + 2, [b"unknown"], 2)
        with pytest.raises(StorageError, match="reopen"):
            put(db, 1, E1 + 3, [b"refused"], 3)
    with LogsDB(tmp_path, config, clock) as db:  # an unregistered family is dropped on open
        put(db, 1, E1 + 3, [b"after"], 3)
        assert [e.first_lsn for e in all_entries(db, 1)] == [E1 + 1, E1 + 3]


@pytest.mark.parametrize("call", ["meta.put", "meta.delete"])
def test_a_failed_metadata_write_stops_writes_until_reopened(tmp_path: Path, call: str) -> None:
    with LogsDB(tmp_path) as db:
        db.put_meta(b"k", b"v")
        with failing_rocksdb(db, call), pytest.raises(StorageError, match="injected"):
            db.trim(1, E1 + 1) if call == "meta.put" else db.delete_meta(b"k")
        with pytest.raises(StorageError, match="reopen"):
            db.put_meta(b"k", b"w")
    with LogsDB(tmp_path) as db:
        assert db.get_meta(b"k") == b"v"


def test_a_failed_partition_drop_stops_writes_and_the_next_open_finishes_it(tmp_path: Path, clock: FakeClock) -> None:
    config = LogsDBConfig(partition_duration_s=10)
    with LogsDB(tmp_path, config, clock) as db:
        put(db, 1, E1 + 1, [b"trimmed"], clock.now_ms())
        clock.advance(11)
        put(db, 1, E1 + 2, [b"kept"], clock.now_ms())
        db.trim(1, E1 + 1)
        with failing_rocksdb(db, "drop_column_family"), pytest.raises(StorageError, match="injected"):
            db.drop_expired(lambda log_id: None)
        with pytest.raises(StorageError, match="reopen"):
            put(db, 1, E1 + 3, [b"refused"], clock.now_ms())
        assert [e.first_lsn for e in all_entries(db, 1)] == [E1 + 2]
    with LogsDB(tmp_path, config, clock) as db:  # unregistered already: the open drops the family
        assert [p.partition_id for p in db.partitions()] == [2]
        put(db, 1, E1 + 3, [b"after"], clock.now_ms())
        assert [e.first_lsn for e in all_entries(db, 1)] == [E1 + 2, E1 + 3]
