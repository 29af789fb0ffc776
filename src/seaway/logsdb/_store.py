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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, WriteOptions

from seaway._clock import Clock, SystemClock
from seaway._dirs import make_dir_durable
from seaway.errors import DataDirLockedError, InvalidArgumentError, StorageError
from seaway.logsdb import _format as fmt
from seaway.logsdb._config import LogsDBConfig
from seaway.logsdb._keys import LOCK_FILE, META_CF, SEGMENTS_DIR
from seaway.logsdb._retention import Retention
from seaway.logsdb._segment import Segment


class LogsDB(Retention):
    """The local log store. Thread-safe: one writer at a time, any number of concurrent readers.

    Writes are atomic: a :meth:`write` call stores all of its operations or none. With ``sync=True``
    it returns only once they are on stable storage.

    One object over one RocksDB handle, assembled from one class per concern, each built on the
    ones before it: ``StoreCore`` (``_core``: the state, these locks, the write path and its
    syncs), ``LedgerStore`` (``_ledger``), ``KvStore`` (``_kv``: both key-value stores),
    ``LogMarks`` (``_marks``: trims, seals, epoch ends), ``ProducerWindows`` (``_producers``),
    ``Partitions`` (``_partitions``), ``Records`` (``_records``: writing and reading entries),
    ``Retention`` (``_retention``), then this class (opening, loading, closing, repair hooks).

    The locks, in the order a thread may take them (none waits for an earlier one while holding a
    later one):

    - ``_retention_lock``: one retention pass at a time. A pass decides without the writers' lock,
      then unregisters partitions under it and drops their files after it (``_dropping`` holds
      them meanwhile); :meth:`close` takes it first, to wait for a pass.
    - ``_write_lock``, the writers' lock: held for a whole write, RocksDB's included, so writers go
      one at a time. It guards what a write decides from: the ledger's state (``_ledger``), the
      metadata store's revision and its count of batches applied (``_kv_applied``), the newest
      partition and its segment's appends.
    - ``_sync_lock``: group commit of metadata batches, never taken under the writers' lock: one
      WAL sync covers every batch applied before it started (``_kv_synced``).
    - ``_lock`` (re-entrant): guards the in-memory maps that readers use (partitions, directory,
      sizes, last LSNs, trim points, seals, epoch ends, final seals, producers, the ledger's bounds
      as shown and its listeners), and is held only briefly, never over disk I/O: readers never
      wait for a disk write. A map changes only under both the writers' lock and this one, so a
      writer may read the maps without it.

    ``_closed`` changes under all of them; ``_failed`` is set by whichever write or sync fails,
    and only ever set.
    """

    def __init__(self, path: str | os.PathLike[str], config: LogsDBConfig | None = None,
                 clock: Clock | None = None) -> None:
        self._path = Path(path)
        self._config = config or LogsDBConfig()
        self._clock = clock or SystemClock()
        self._write_lock = threading.Lock()  # what each lock guards: see the class docstring
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._retention_lock = threading.Lock()
        self._dropping: dict[int, tuple[Any, Segment]] = {}  # partitions unregistered, their files not yet dropped
        self._kv_applied = 0  # metadata batches applied
        self._kv_synced = 0  # of which durable
        self.wal_syncs = 0
        """Syncs of the write-ahead log made so far (what a benchmark divides commits by)."""
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
        # Write-ahead log files are not recycled: a recycled file holds its previous life's records
        # behind the new ones, and after a power cut that tore its unsynced tail RocksDB cannot
        # always tell where the new records end (RocksDB's own crash test turns recycling off for
        # the data loss and the "SST file is ahead of WALs" refusals to open it leads to; the
        # power-loss tests here saw the latter). It saved one journal commit per sync; bench log
        # measured no difference.
        opts.set_recycle_log_file_num(0)
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
        """Each part's state as the metadata family holds it (partitions first: the logs' last LSNs
        come from their directory)."""
        self._load_partitions(self._cf_names_on_open)
        self._load_marks()
        self._load_kv()
        self._load_ledger()
        self._load_producers()

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
