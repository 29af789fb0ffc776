"""Large entries in segment files: references in RocksDB, bytes beside it, synced before them."""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import replace
from pathlib import Path

import pytest

from seaway import ClosedError, InvalidArgumentError, PayloadTooLargeError, StorageError
from seaway.logsdb import (
    CorruptEntry,
    HolePlugEntry,
    LogsDB,
    LogsDBConfig,
    PutHolePlug,
    PutRecords,
    RecordsEntry,
    _segment,
)
from seaway.logsdb import _format as fmt
from seaway.logsdb._segment import Segment
from seaway.testing import FakeClock

E1 = 1 << 32
SMALL = [b"s" * 10]
LARGE = [bytes([i]) * 400 for i in range(4)]  # encodes to well over 1000 bytes
CONFIG = LogsDBConfig(segment_min_bytes=1000, partition_duration_s=30)


def entries(db: LogsDB, log: int) -> list[object]:
    return db.read(log, 1, 2**64 - 1, 1 << 30)[0]


def kind(db: LogsDB, log: int, lsn: int) -> fmt.EntryKind:
    key = fmt.encode_key(log, lsn)
    return fmt.decode_header(key, db.raw_value(log, lsn) or b"").kind


def segment_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "segments").iterdir())


def test_large_entries_go_to_the_segment_and_read_back_after_reopen(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, CONFIG, clock) as db:
        db.write([PutRecords(1, E1 + 1, 10, tuple(LARGE)), PutRecords(1, E1 + 5, 11, tuple(SMALL)),
                  PutHolePlug(1, E1 + 6, 2, 12), PutRecords(2, E1 + 1, 13, tuple(LARGE[:3]))])
        db.write([PutRecords(1, E1 + 8, 14, tuple(LARGE))], sync=False)
        assert kind(db, 1, E1 + 1) is fmt.EntryKind.SEGMENT_REF
        assert kind(db, 1, E1 + 5) is fmt.EntryKind.RECORDS
        assert kind(db, 2, E1 + 1) is fmt.EntryKind.SEGMENT_REF
        assert len(db.raw_value(1, E1 + 1) or b"") < 100
        size = fmt.encoded_records_bytes(LARGE)
        assert db.data_size(1) == 2 * size + len(db.raw_value(1, E1 + 5) or b"") + len(db.raw_value(1, E1 + 6) or b"")
    with LogsDB(tmp_path, CONFIG, clock) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 10, list(LARGE)), RecordsEntry(1, E1 + 5, 11, list(SMALL)),
                                  HolePlugEntry(1, E1 + 6, E1 + 7, 12), RecordsEntry(1, E1 + 8, 14, list(LARGE))]
        assert entries(db, 2) == [RecordsEntry(2, E1 + 1, 13, list(LARGE[:3]))]
        # The byte budget counts an entry's bytes, not its reference's: a budget larger than two
        # references but smaller than one entry ends the read after the first entry.
        assert 2 * len(db.raw_value(1, E1 + 1) or b"") < 200 < fmt.encoded_records_bytes(LARGE)
        assert [e.first_lsn for e in db.read(1, 1, 2**64 - 1, 200)[0]] == [E1 + 1]
        assert db.find_time(1, 14) == E1 + 8 and db.find_time(1, 11) == E1 + 5
        # A write appends after what the segment already holds.
        db.write([PutRecords(1, E1 + 12, 15, tuple(LARGE))])
        assert entries(db, 1)[-1] == RecordsEntry(1, E1 + 12, 15, list(LARGE))


def test_segment_min_bytes_zero_puts_every_batch_there(tmp_path: Path) -> None:
    with LogsDB(tmp_path, LogsDBConfig(segment_min_bytes=0)) as db:
        db.write([PutRecords(1, E1 + 1, 1, (b"",)), PutHolePlug(1, E1 + 2, 1, 1)])
        assert kind(db, 1, E1 + 1) is fmt.EntryKind.SEGMENT_REF
        assert kind(db, 1, E1 + 2) is fmt.EntryKind.HOLE_PLUG  # a hole plug has no bytes to move
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, [b""]), HolePlugEntry(1, E1 + 2, E1 + 2, 1)]
    with pytest.raises(InvalidArgumentError, match="segment_min_bytes"):
        LogsDBConfig(segment_min_bytes=-1)


def test_damaged_segment_bytes_are_reported_never_returned(tmp_path: Path) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
        db.write([PutRecords(1, E1 + 5, 2, tuple(LARGE))])
        db.write([PutRecords(1, E1 + 9, 3, tuple(LARGE))])
        path = tmp_path / "segments" / segment_files(tmp_path)[0]
        size = fmt.encoded_records_bytes(LARGE)
        with open(path, "r+b") as f:
            f.seek(size - 5)  # inside the first entry's last payload
            f.write(b"\xff")
            f.seek(size + 5)  # inside the second entry's header
            f.write(b"\xff")
            f.truncate(3 * size - 1)  # the third entry's tail is gone
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, [*LARGE[:3], None]), CorruptEntry(1, E1 + 5, E1 + 8),
                                  RecordsEntry(1, E1 + 9, 3, [*LARGE[:3], None])]


def test_reference_to_the_wrong_bytes_is_corrupt(tmp_path: Path) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE)), PutRecords(2, E1 + 1, 1, tuple(LARGE))])
        first = db.raw_value(1, E1 + 1) or b""
        second = db.raw_value(2, E1 + 1) or b""
        # Log 1's reference, re-signed for log 2's key: the bytes it points at are bound to log 1.
        offset, length = fmt.decode_segment_ref(first)
        db.overwrite_raw(2, E1 + 1, fmt.encode_segment_ref(fmt.encode_key(2, E1 + 1), 1, 4, offset, length))
        assert entries(db, 2) == [CorruptEntry(2, E1 + 1, E1 + 4)]
        # A count that disagrees with the stored entry's.
        db.overwrite_raw(2, E1 + 1, fmt.encode_segment_ref(fmt.encode_key(2, E1 + 1), 1, 3,
                                                           *fmt.decode_segment_ref(second)))
        assert entries(db, 2) == [CorruptEntry(2, E1 + 1, E1 + 3)]
        # Past the end of the file, past what pread takes, longer than any entry.
        for bad_offset, bad_length in ((1 << 40, length), ((1 << 64) - 1, length), (offset, (1 << 32) - 1)):
            db.overwrite_raw(2, E1 + 1, fmt.encode_segment_ref(fmt.encode_key(2, E1 + 1), 1, 4, bad_offset, bad_length))
            assert entries(db, 2) == [CorruptEntry(2, E1 + 1, E1 + 4)]
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]


def test_a_lower_entry_bytes_max_still_reads_larger_entries_stored_before(tmp_path: Path) -> None:
    # The limit is for new writes; what is stored stays readable, as an inline entry would.
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
    with LogsDB(tmp_path, replace(CONFIG, entry_bytes_max=1200)) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]
        with pytest.raises(PayloadTooLargeError):
            db.write([PutRecords(1, E1 + 5, 2, tuple(LARGE))])


def test_entry_bytes_max_fits_a_segment_reference() -> None:
    LogsDBConfig(entry_bytes_max=1 << 30)
    with pytest.raises(InvalidArgumentError, match="entry_bytes_max"):
        LogsDBConfig(entry_bytes_max=(1 << 30) + 1)


def test_a_failed_segment_write_stores_nothing_and_the_next_write_works(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
        real = os.pwritev

        def full_disk(fd: int, buffers: list[memoryview], offset: int) -> int:
            real(fd, [buffers[0][:7]], offset)  # a torn write, then the error
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(_segment.os, "pwritev", full_disk)
        with pytest.raises(StorageError, match="No space left"):
            db.write([PutRecords(1, E1 + 5, 2, tuple(LARGE))])
        monkeypatch.setattr(_segment.os, "pwritev", real)
        assert db.last_lsn(1) == E1 + 4 and db.raw_value(1, E1 + 5) is None
        db.write([PutRecords(1, E1 + 5, 3, tuple(LARGE))])
    with LogsDB(tmp_path, CONFIG) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE)), RecordsEntry(1, E1 + 5, 3, list(LARGE))]


@pytest.mark.parametrize("sync", ["fdatasync", "fsync_dir"])
def test_a_failed_segment_sync_stores_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync: str) -> None:
    # fsync_dir: the new file's name in its directory is as much a part of its bytes being durable.
    with LogsDB(tmp_path, CONFIG) as db:
        def failing(fd: object) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(_segment.os if sync == "fdatasync" else _segment, sync, failing)
        with pytest.raises(StorageError, match="Input/output error"):
            db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
        assert db.last_lsn(1) == 0 and entries(db, 1) == [] and db.raw_value(1, E1 + 1) is None
        monkeypatch.undo()
        # What reached the disk is unknown now: no more writes until the store is reopened.
        with pytest.raises(StorageError, match="reopen"):
            db.write([PutRecords(1, E1 + 1, 1, tuple(SMALL))])
    with LogsDB(tmp_path, CONFIG) as db:
        assert db.raw_value(1, E1 + 1) is None
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]


def test_dropped_partition_takes_its_segment_and_orphans_go_on_open(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, CONFIG, clock) as db:
        db.write([PutRecords(1, E1 + 1, clock.now_ms(), tuple(LARGE))])
        clock.advance(31)
        db.write([PutRecords(1, E1 + 5, clock.now_ms(), tuple(LARGE))])
        first, second = segment_files(tmp_path)
        # A reader that found the first partition before it was dropped still reads it.
        held = db._log_partitions(1, E1 + 1, E1 + 1)[0][2]
        db.trim(1, E1 + 4)
        assert db.drop_expired(lambda log_id: None) == [1]
        assert segment_files(tmp_path) == [second]
        ref = fmt.decode_segment_ref(db.raw_value(1, E1 + 5) or b"")
        assert len(held.read(0, ref[1])) == ref[1]
        (tmp_path / "segments" / first).write_bytes(b"left by a crash between the drop and the unlink")
    with LogsDB(tmp_path, CONFIG, clock) as db:
        assert segment_files(tmp_path) == [second]
        assert entries(db, 1) == [RecordsEntry(1, E1 + 5, clock.now_ms(), list(LARGE))]


def test_a_failed_read_does_not_hold_the_store_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])

        def closing(segment: Segment, appending: bool = False) -> int:
            raise ClosedError("segment file closed under the read")

        monkeypatch.setattr(Segment, "_acquire", closing)
        with pytest.raises(ClosedError) as failed:
            entries(db, 1)
        monkeypatch.undo()
    # Kept, as a future keeps it: the frames it passed through held a column family handle.
    assert failed.value.__traceback__ is not None
    with LogsDB(tmp_path, CONFIG) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]


def test_open_removes_only_orphaned_segments_and_leaves_other_files_alone(tmp_path: Path) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
    [live] = segment_files(tmp_path)
    (tmp_path / "segments" / "lost+found").mkdir()  # the folder may be a mount point
    (tmp_path / "segments" / "notes.txt").write_bytes(b"an operator's")
    with LogsDB(tmp_path, CONFIG) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]
    assert segment_files(tmp_path) == sorted([live, "lost+found", "notes.txt"])


def test_a_failed_open_closes_rocksdb_so_the_next_open_works(tmp_path: Path) -> None:
    with LogsDB(tmp_path, CONFIG) as db:
        db.write([PutRecords(1, E1 + 1, 1, tuple(LARGE))])
    orphan = tmp_path / "segments" / "p00000000000000ff.seg"
    orphan.mkdir()  # an orphan that cannot be unlinked
    with pytest.raises(StorageError, match=r"p00000000000000ff\.seg") as failed:
        LogsDB(tmp_path, CONFIG)
    orphan.rmdir()
    assert failed.value.__traceback__ is not None  # kept, as a caller may: it must not keep RocksDB open
    with LogsDB(tmp_path, CONFIG) as db:
        assert entries(db, 1) == [RecordsEntry(1, E1 + 1, 1, list(LARGE))]


def test_segment_writes_many_buffers_and_resumes_short_writes_and_reads(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    segment = Segment(tmp_path / "s.seg")
    values = [bytes([i % 251]) * (i % 7) for i in range(3000)]  # more buffers than one call takes
    real = os.pwritev

    def short(fd: int, buffers: list[memoryview], offset: int) -> int:  # a prefix: two buffers and a half
        if len(buffers) < 3:
            return real(fd, buffers, offset)
        return real(fd, [*buffers[:2], buffers[2][: max(1, len(buffers[2]) // 2)]], offset)

    assert segment.append(values[:1500]) == 0
    monkeypatch.setattr(_segment.os, "pwritev", short)
    offset = segment.append(values[1500:])
    monkeypatch.setattr(_segment.os, "pwritev", real)
    segment.sync()
    assert offset == sum(map(len, values[:1500])) and segment.size() == sum(map(len, values))
    assert segment.read(0, sum(map(len, values))) == b"".join(values)
    real_pread = os.pread
    monkeypatch.setattr(_segment.os, "pread", lambda fd, n, at: real_pread(fd, min(n, 1000), at))
    assert segment.read(5, sum(map(len, values))) == b"".join(values)[5:]  # to the end, 1000 bytes a call
    monkeypatch.setattr(_segment.os, "pread", real_pread)
    segment.close()
    segment.close()
    with pytest.raises(ClosedError):
        segment.read(0, 1)
    assert Segment(tmp_path / "s.seg").size() == sum(map(len, values))  # reopened: appends go after


def open_segment_fds() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the descriptor listdir itself used
            count += os.readlink(f"/proc/self/fd/{fd}").endswith(".seg")
    return count


def test_only_the_segment_being_written_keeps_a_descriptor_open(tmp_path: Path, clock: FakeClock) -> None:
    # A catch-up read over a long history must not hold a descriptor per time partition.
    stamps = []
    with LogsDB(tmp_path, CONFIG, clock) as db:
        for i in range(20):
            stamps.append(clock.now_ms())
            db.write([PutRecords(1, E1 + 1 + 4 * i, stamps[-1], tuple(LARGE))])
            clock.advance(31)
        assert len(segment_files(tmp_path)) == 20
        assert len(entries(db, 1)) == 20
        assert open_segment_fds() == 1  # the newest partition's, for the next write
    assert open_segment_fds() == 0
    with LogsDB(tmp_path, CONFIG, clock) as db:
        assert db.read(1, E1 + 5, E1 + 5, 1)[0] == [RecordsEntry(1, E1 + 5, stamps[1], list(LARGE))]
        assert len(entries(db, 1)) == 20
        assert open_segment_fds() == 0  # nothing appended since it opened


def test_a_read_opens_a_segment_once_however_many_of_its_entries_it_reads(tmp_path: Path, clock: FakeClock,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Reads of many logs with small entries each spent as much on open() and close() as on the bytes.
    with LogsDB(tmp_path, CONFIG, clock) as db:
        db.write([PutRecords(1, E1 + 1 + 4 * i, clock.now_ms(), tuple(LARGE)) for i in range(10)])
    opened: list[Path] = []
    open_file = Segment._open

    def counting_open(segment: Segment, create: bool) -> None:
        opened.append(segment.path)
        open_file(segment, create)

    monkeypatch.setattr(Segment, "_open", counting_open)
    with LogsDB(tmp_path, CONFIG, clock) as db:
        assert [e.first_lsn for e in entries(db, 1)] == [E1 + 1 + 4 * i for i in range(10)]
        assert len(opened) == 1
        assert open_segment_fds() == 0  # and closed once the read is done
        assert len(entries(db, 1)) == 10
        assert len(opened) == 2  # each read opens it again: nothing is held between reads


def test_a_reader_racing_a_drop_still_reads_and_recreates_nothing(tmp_path: Path, clock: FakeClock,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with LogsDB(tmp_path, CONFIG, clock) as db:
        db.write([PutRecords(1, E1 + 1, clock.now_ms(), tuple(LARGE))])
        clock.advance(31)
        db.write([PutRecords(1, E1 + 5, clock.now_ms(), tuple(LARGE))])
    with LogsDB(tmp_path, CONFIG, clock) as db:  # reopened: no segment is open yet
        real = Segment._acquire
        dropped: list[int] = []
        dropping: list[bool] = []

        def drop_first(segment: Segment, appending: bool = False) -> int:
            if not dropping:  # the reader holds partition 1 and its iterator, and opens the file: it goes
                dropping.append(True)  # (the drop opens the file too)
                db.trim(1, E1 + 4)
                dropped.extend(db.drop_expired(lambda log_id: None))
            return real(segment, appending)

        monkeypatch.setattr(Segment, "_acquire", drop_first)
        assert db.read(1, E1 + 1, E1 + 4, 1 << 20)[0] == [RecordsEntry(1, E1 + 1, clock.now_ms() - 31_000, list(LARGE))]
        assert dropped == [1]
        assert len(segment_files(tmp_path)) == 1


def test_every_process_syncs_the_directory_before_its_first_append(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real = _segment.fsync_dir

    def record(path: Path) -> None:
        synced.append(path.name)
        real(path)

    monkeypatch.setattr(_segment, "fsync_dir", record)
    for first in (E1 + 1, E1 + 5):  # the second open finds the file: a crash may have beaten its sync
        with LogsDB(tmp_path, CONFIG) as db:
            db.write([PutRecords(1, first, 1, tuple(LARGE))])
            db.write([PutRecords(1, first + 2**20, 1, tuple(LARGE))])
        assert synced.count("segments") == 1
        synced.clear()
