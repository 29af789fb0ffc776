"""LogsDB: a time-ordered collection of RocksDB column families holding log entries.

All new entries go to the newest partition. A partition is a column family and a segment file for
its large entries' bytes (see ``_segment``); it is dropped whole once none of its records is
retained. A metadata family holds the partition directory, per-log trim points, seals, epoch ends
and the upper layers' own keys; every write that changes data also updates the directory in the same
atomic RocksDB write batch.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, WriteOptions

from seaway._clock import Clock, SystemClock
from seaway._dirs import make_dir_durable
from seaway._errors import DataDirLockedError, InvalidArgumentError, StorageError
from seaway.logsdb import _format as fmt
from seaway.logsdb._config import LogsDBConfig
from seaway.logsdb._core import LedgerState
from seaway.logsdb._keys import (
    LOCK_FILE,
    META_CF,
    P_DIRECTORY,
    P_FINAL,
    P_FORGOT,
    P_KV_REVISION,
    P_LEDGER,
    P_LEDGER_HEAD,
    P_LEDGER_WRITTEN,
    P_PARTITION,
    P_PRODUCER,
    P_SEAL,
    P_TRIM,
    SEGMENT_NAME,
    SEGMENTS_DIR,
    segment_name,
)
from seaway.logsdb._retention import Retention
from seaway.logsdb._segment import Segment


class LogsDB(Retention):
    """The local log store. Thread-safe: one writer at a time, any number of concurrent readers.

    Writes are atomic: a :meth:`write` call stores all of its operations or none. With ``sync=True``
    it returns only once they are on stable storage.
    """

    def __init__(self, path: str | os.PathLike[str], config: LogsDBConfig | None = None,
                 clock: Clock | None = None) -> None:
        self._path = Path(path)
        self._config = config or LogsDBConfig()
        self._clock = clock or SystemClock()
        # Writers hold _write_lock for a whole write, RocksDB's included, so they go one at a time.
        # _lock guards the in-memory maps and is held only briefly: readers never wait for a disk
        # write. A map changes only under both locks, so a writer may read them under its own.
        self._write_lock = threading.Lock()
        self._lock = threading.RLock()
        # Group commit of metadata batches: each is applied under the writers' lock, then made
        # durable by one WAL sync that covers every batch applied before it started.
        self._sync_lock = threading.Lock()
        self._retention_lock = threading.Lock()  # one retention pass at a time (see drop_expired)
        self._dropping: dict[int, tuple[Any, Segment]] = {}  # partitions unregistered, their files not yet dropped
        self._kv_applied = 0  # metadata batches applied
        self._kv_synced = 0  # of which durable
        self._closed = False
        self._failed: str | None = None  # why writes stopped (not the exception: its frames hold RocksDB)
        self._ledger_listeners: tuple[Callable[[], None], ...] = ()
        self._make_dir(self._path)
        self._lock_fd = self._acquire_dir_lock()
        self._segments: dict[int, Segment] = {}
        # partition id -> (created_ms, Rdict, handle)
        self._partitions: dict[int, tuple[int, Any, Any]] = {}
        try:
            self._open_segments_dir()
            self._open_rocksdb()
            self._load_metadata()
        except BaseException:
            self._close_files()  # explicitly: the error's frames hold this object
            raise

    # --- opening and closing --------------------------------------------------------------------

    def _acquire_dir_lock(self) -> int:
        fd = os.open(self._path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLockedError(f"{self._path} is already open in another process or store") from None
        return fd

    @staticmethod
    def _make_dir(path: Path) -> None:
        """Create ``path`` (or find it) durable in its parent, on every open: a crash may have come
        between the ``mkdir`` and the fsync of an earlier one."""
        try:
            make_dir_durable(path)
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc}") from exc

    def _open_segments_dir(self) -> None:
        self._segments_dir = self._path / SEGMENTS_DIR
        self._make_dir(self._segments_dir)


    def _open_rocksdb(self) -> None:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        opts.set_max_background_jobs(2)
        # Reuse old write-ahead log files rather than growing new ones: an fdatasync of a file whose
        # size does not change needs no journal commit, and the pages are already cached.
        opts.set_recycle_log_file_num(4)
        db_path = str(self._path / "rocksdb")
        # Made here rather than by RocksDB, which fsyncs what it creates inside its directory but
        # never the directory's own name in ours.
        self._make_dir(self._path / "rocksdb")
        names = [META_CF]
        if (self._path / "rocksdb" / "CURRENT").exists():
            names = sorted(set(Rdict.list_cf(db_path, Options(raw_mode=True))) | {META_CF})
        families = {name: self._cf_options() for name in names if name != "default"}
        try:
            self._db = Rdict(db_path, opts, column_families=families)
        except Exception as exc:  # rocksdict raises bare Exception for I/O errors
            raise StorageError(f"cannot open RocksDB at {db_path}: {exc}") from exc
        self._meta = self._db.get_column_family(META_CF)
        self._meta_handle = self._db.get_column_family_handle(META_CF)
        self._write_sync = WriteOptions()
        self._write_sync.sync = True
        self._write_async = WriteOptions()
        self._cf_names_on_open = [n for n in names if n.startswith("p")]

    def _load_metadata(self) -> None:
        # directory: partition id -> log id -> DirEntry
        self._directory: dict[int, dict[int, fmt.DirEntry]] = {}
        created: dict[int, int] = {}
        for key, value in self._meta_scan(P_PARTITION):
            created[fmt.decode_u64(key[1:9])] = fmt.decode_u64(value)
        for name in self._cf_names_on_open:
            pid = int(name[1:], 16)
            if pid not in created:
                # Created but never registered (crash in between), or dropped from the directory but
                # not yet from RocksDB (crash in between): it holds nothing that is retained.
                self._db.drop_column_family(name)
                continue
            self._partitions[pid] = (created[pid], self._db.get_column_family(name),
                                     self._db.get_column_family_handle(name))
            self._directory[pid] = {}
            self._segments[pid] = Segment(self._segments_dir / segment_name(pid))
        kept = {segment_name(pid) for pid in self._partitions}
        for path in self._segments_dir.iterdir():
            # A segment whose partition was dropped, or never registered (a crash in between).
            # Nothing else is Seaway's to remove: the folder may be a mount point, say.
            if SEGMENT_NAME.fullmatch(path.name) and path.name not in kept:
                try:
                    path.unlink()
                except OSError as exc:
                    raise StorageError(f"cannot remove the orphaned segment file {path}: {exc}") from exc
        for key, value in self._meta_scan(P_DIRECTORY):
            pid, log_id = fmt.decode_u64(key[1:9]), fmt.decode_u64(key[9:17])
            if pid in self._directory:
                self._directory[pid][log_id] = fmt.DirEntry.decode(value)
        self._trim: dict[int, int] = self._load_u64_map(P_TRIM)
        raw_revision = self._meta.get(P_KV_REVISION)
        self._kv_revision = fmt.decode_u64(raw_revision) if raw_revision is not None else 0
        raw_head = self._meta.get(P_LEDGER_HEAD)
        head = fmt.decode_u64(raw_head) if raw_head is not None else 0
        first = next(self._meta_scan(P_LEDGER), None)
        tail = fmt.decode_u64(first[0][1:]) if first is not None else head + 1
        raw_written = self._meta.get(P_LEDGER_WRITTEN)
        written = fmt.decode_u64(raw_written) if raw_written is not None else 0
        state = LedgerState(tail, head, written, 0)
        self._ledger = state._replace(tail_start=self._ledger_start(tail, {}, state))
        self._ledger_shown = (tail, head)
        self._seal: dict[int, int] = self._load_u64_map(P_SEAL)
        self._epoch_ends: OrderedDict[int, dict[int, int]] = OrderedDict()  # recently read logs' (LRU)
        self._epoch_ends_generation = 0  # changed by every write of epoch ends
        self._final: dict[int, int] = self._load_u64_map(P_FINAL)
        self._produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]] = {}
        # Per log, its producers from least to most recently appending, with the time of their last
        # append (for the bound on them; after a restart, the time it opened: none is idle yet).
        self._producers: dict[int, OrderedDict[bytes, int]] = {}
        opened_ms = self._clock.now_ms()
        for key, value in self._meta_scan(P_PRODUCER):
            log_id, producer_id = fmt.decode_u64(key[1:9]), key[9:]
            self._produced[(log_id, producer_id)] = fmt.decode_produced(value)
            self._producers.setdefault(log_id, OrderedDict())[producer_id] = opened_ms
        self._forgot = {fmt.decode_u64(key[1:9]) for key, _ in self._meta_scan(P_FORGOT)}
        self._last_lsn: dict[int, int] = {}
        # Bytes of entries per partition, kept as they are written: a write must not sum a directory.
        self._sizes = {pid: sum(d.size_bytes for d in entries.values()) for pid, entries in self._directory.items()}
        for entries in self._directory.values():
            for log_id, d in entries.items():
                self._last_lsn[log_id] = max(self._last_lsn.get(log_id, 0), d.lsn_max)

    def close(self) -> None:
        """Close the store; idempotent. Later calls raise :class:`ClosedError`."""
        with self._retention_lock, self._write_lock, self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_files()

    def _close_files(self) -> None:
        """Close whatever is open of RocksDB, the segments and the directory lock."""
        for _, cf, _ in self._partitions.values():
            cf.close()
        self._partitions.clear()
        for segment in self._segments.values():
            segment.close()
        self._segments.clear()
        for cf, segment in self._dropping.values():  # a failed drop left them (see _drop_family)
            cf.close()
            segment.close()
        self._dropping.clear()
        if hasattr(self, "_meta"):
            self._meta.close()
            del self._meta, self._meta_handle
        if hasattr(self, "_db"):
            self._db.close()
            del self._db
        os.close(self._lock_fd)

    def __enter__(self) -> LogsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- test and repair hooks -----------------------------------------------------------------

    def flush(self) -> None:
        """Flush memtables to SST files (for tests and before backups)."""
        with self._write_lock:
            self._check_open()
            for _, cf, _ in self._partitions.values():
                cf.flush(True)
            self._meta.flush(True)

    def overwrite_raw(self, log_id: int, lsn: int, value: bytes) -> None:
        """Replace the stored bytes of an entry. Only for tests that simulate corruption."""
        with self._write_lock:
            for pid in sorted(self._directory, reverse=True):
                d = self._directory[pid].get(log_id)
                if d is not None and d.lsn_min <= lsn <= d.lsn_max:
                    self._partitions[pid][1].put(fmt.encode_key(log_id, lsn), value, self._write_sync)
                    return
        raise InvalidArgumentError(f"log {log_id} holds no entry at {fmt.lsn_text(lsn)}")

    def raw_value(self, log_id: int, lsn: int) -> bytes | None:
        """The stored bytes of an entry (for tests)."""
        for _, cf, _, _ in self._log_partitions(log_id, lsn, lsn):
            value: bytes | None = cf.get(fmt.encode_key(log_id, lsn))
            if value is not None:
                return value
        return None
