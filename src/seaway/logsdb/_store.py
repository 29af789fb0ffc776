"""LogsDB: a time-ordered collection of RocksDB column families holding log entries.

All new entries go to the newest partition. A partition is a column family and a segment file for
its large entries' bytes (see ``_segment``); it is dropped whole once none of its records is
retained. A metadata family holds the partition directory, per-log trim points, seals, epoch ends
and the upper layers' own keys; every write that changes data also updates the directory in the same
atomic RocksDB write batch.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from rocksdict import (
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from seaway._clock import Clock, SystemClock
from seaway._dirs import make_dir_durable
from seaway._errors import (
    ClosedError,
    ConditionFailedError,
    CorruptionError,
    DataDirLockedError,
    InvalidArgumentError,
    PayloadTooLargeError,
    StorageError,
    StoreFailedError,
)
from seaway._invariant import invariant
from seaway.logsdb import _format as fmt
from seaway.logsdb._read import Unreadable, check, first_key_from, read_partition
from seaway.logsdb._segment import Segment
from seaway.logsdb._types import (
    Entry,
    KvCheck,
    KvDelete,
    KvOp,
    KvPut,
    LogsDBConfig,
    PartitionInfo,
    ProducerMark,
    PutRecords,
    PutSeal,
    WriteOp,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")

_META_CF = "meta"
_LOCK_FILE = "SEAWAY.lock"
_SEGMENTS_DIR = "segments"

# Metadata key prefixes.
_P_PARTITION = b"P"  # + partition id -> created_ms
_P_DIRECTORY = b"D"  # + partition id + log id -> DirEntry
_P_TRIM = b"T"  # + log id -> trim point
_P_SEAL = b"S"  # + log id -> sealed epoch
_P_EPOCH_END = b"E"  # + log id + epoch -> last LSN of that epoch
_P_USER = b"U"  # + upper layer's key -> its value
_P_PRODUCER = b"I"  # + log id + producer id -> its recent batches (idempotent appends)
_P_FINAL = b"F"  # + log id -> the last LSN of a log sealed for good (no more appends)
_P_KV = b"K"  # + metadata store key -> version + sum + value (see kv_commit)
_P_KV_REVISION = b"R"  # -> the metadata store's last revision
_P_FORGOT = b"G"  # + log id -> empty: the log has forgotten a producer (see LogsDBConfig.producers_per_log_max)
_P_LEDGER = b"L"  # + index -> a change ledger entry (time + change; see seaway.ledger), written with its change
_P_LEDGER_HEAD = b"H"  # -> the last ledger index written (kept when its entry is pruned)

_EPOCH_ENDS_LOGS_MAX = 16_384
"""Logs whose epoch ends are kept in memory (the most recently read)."""
_EPOCH_ENDS_CACHED_MAX = 16
"""A log with more epoch ends than this has them read from RocksDB each time."""

_COMPRESSION = {
    "none": DBCompressionType.none(),
    "snappy": DBCompressionType.snappy(),
    "lz4": DBCompressionType.lz4(),
    "zstd": DBCompressionType.zstd(),
}


def _u64(value: int) -> bytes:
    return fmt.encode_u64(value)


def _holding_no_handles(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """An error leaves ``method`` with the locals of the frames it and its causes passed through
    cleared: a column family handle among them keeps RocksDB open after :meth:`LogsDB.close` for as
    long as anyone (a future, say) holds the error, and the next open in this process would fail."""

    @functools.wraps(method)
    def clearing(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except BaseException as exc:
            error: BaseException | None = exc
            while error is not None:  # not __context__: that may be a caller's own error
                traceback.clear_frames(error.__traceback__)
                error = error.__cause__
            raise

    return clearing


def _cf_name(partition_id: int) -> str:
    return f"p{partition_id:016x}"


def _segment_name(partition_id: int) -> str:
    return f"{_cf_name(partition_id)}.seg"


_SEGMENT_NAME = re.compile(r"p[0-9a-f]{16}\.seg")


class LogsDB:
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
        fd = os.open(self._path / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
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
        self._segments_dir = self._path / _SEGMENTS_DIR
        self._make_dir(self._segments_dir)

    def _cf_options(self) -> Options:
        opts = Options(raw_mode=True)
        opts.set_compression_type(_COMPRESSION[self._config.compression])
        return opts

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
        names = [_META_CF]
        if (self._path / "rocksdb" / "CURRENT").exists():
            names = sorted(set(Rdict.list_cf(db_path, Options(raw_mode=True))) | {_META_CF})
        families = {name: self._cf_options() for name in names if name != "default"}
        try:
            self._db = Rdict(db_path, opts, column_families=families)
        except Exception as exc:  # rocksdict raises bare Exception for I/O errors
            raise StorageError(f"cannot open RocksDB at {db_path}: {exc}") from exc
        self._meta = self._db.get_column_family(_META_CF)
        self._meta_handle = self._db.get_column_family_handle(_META_CF)
        self._write_sync = WriteOptions()
        self._write_sync.sync = True
        self._write_async = WriteOptions()
        self._cf_names_on_open = [n for n in names if n.startswith("p")]

    def _meta_scan(self, prefix: bytes, from_key: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Metadata keys starting with ``prefix`` (from ``from_key`` on), in key order."""
        for raw_key, value in self._meta.items(from_key=from_key or prefix):
            key = cast(bytes, raw_key)
            if not key.startswith(prefix):
                return
            yield key, cast(bytes, value)

    def _load_metadata(self) -> None:
        # directory: partition id -> log id -> DirEntry
        self._directory: dict[int, dict[int, fmt.DirEntry]] = {}
        created: dict[int, int] = {}
        for key, value in self._meta_scan(_P_PARTITION):
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
            self._segments[pid] = Segment(self._segments_dir / _segment_name(pid))
        kept = {_segment_name(pid) for pid in self._partitions}
        for path in self._segments_dir.iterdir():
            # A segment whose partition was dropped, or never registered (a crash in between).
            # Nothing else is Seaway's to remove: the folder may be a mount point, say.
            if _SEGMENT_NAME.fullmatch(path.name) and path.name not in kept:
                try:
                    path.unlink()
                except OSError as exc:
                    raise StorageError(f"cannot remove the orphaned segment file {path}: {exc}") from exc
        for key, value in self._meta_scan(_P_DIRECTORY):
            pid, log_id = fmt.decode_u64(key[1:9]), fmt.decode_u64(key[9:17])
            if pid in self._directory:
                self._directory[pid][log_id] = fmt.DirEntry.decode(value)
        self._trim: dict[int, int] = self._load_u64_map(_P_TRIM)
        raw_revision = self._meta.get(_P_KV_REVISION)
        self._kv_revision = fmt.decode_u64(raw_revision) if raw_revision is not None else 0
        raw_head = self._meta.get(_P_LEDGER_HEAD)
        self._ledger_head = fmt.decode_u64(raw_head) if raw_head is not None else 0
        first = next(self._meta_scan(_P_LEDGER), None)
        self._ledger_tail = fmt.decode_u64(first[0][1:]) if first is not None else self._ledger_head + 1
        self._ledger_synced = self._ledger_head  # entries up to here are durable (see ledger_read)
        self._seal: dict[int, int] = self._load_u64_map(_P_SEAL)
        self._epoch_ends: OrderedDict[int, dict[int, int]] = OrderedDict()  # recently read logs' (LRU)
        self._epoch_ends_generation = 0  # changed by every write of epoch ends
        self._final: dict[int, int] = self._load_u64_map(_P_FINAL)
        self._produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]] = {}
        # Per log, its producers from least to most recently appending, with the time of their last
        # append (for the bound on them; after a restart, the time it opened: none is idle yet).
        self._producers: dict[int, OrderedDict[bytes, int]] = {}
        opened_ms = self._clock.now_ms()
        for key, value in self._meta_scan(_P_PRODUCER):
            log_id, producer_id = fmt.decode_u64(key[1:9]), key[9:]
            self._produced[(log_id, producer_id)] = fmt.decode_produced(value)
            self._producers.setdefault(log_id, OrderedDict())[producer_id] = opened_ms
        self._forgot = {fmt.decode_u64(key[1:9]) for key, _ in self._meta_scan(_P_FORGOT)}
        self._last_lsn: dict[int, int] = {}
        # Bytes of entries per partition, kept as they are written: a write must not sum a directory.
        self._sizes = {pid: sum(d.size_bytes for d in entries.values()) for pid, entries in self._directory.items()}
        for entries in self._directory.values():
            for log_id, d in entries.items():
                self._last_lsn[log_id] = max(self._last_lsn.get(log_id, 0), d.lsn_max)

    def _load_u64_map(self, prefix: bytes) -> dict[int, int]:
        out: dict[int, int] = {}
        for key, value in self._meta_scan(prefix):
            out[fmt.decode_u64(key[1:])] = fmt.decode_u64(value)
        return out

    def close(self) -> None:
        """Close the store; idempotent. Later calls raise :class:`ClosedError`."""
        with self._write_lock, self._lock:
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

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the log store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self._failed is not None:
            raise StoreFailedError(f"the log store takes no writes since a write failed ({self._failed}); reopen it")

    def _fail_stop(self, error: StorageError) -> StoreFailedError:
        """After a failed sync, what reached the disk is unknown (Linux may even drop the unwritten
        pages and report the next sync as a success), so the store takes no more writes until it is
        reopened and reloads its state from what the disk holds. The same goes for a failed RocksDB
        write: RocksDB stops taking writes itself after most of them."""
        self._failed = str(error)
        return StoreFailedError(f"{error}; the store takes no more writes until it is reopened")

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the writers' lock for a write while the store takes writes."""
        with self._write_lock:
            self._check_writable()
            yield

    @property
    def path(self) -> Path:
        return self._path

    @property
    def write_failure(self) -> str | None:
        """Why the store takes no more writes (a write or a sync failed), or None while it does."""
        return self._failed

    @property
    def config(self) -> LogsDBConfig:
        return self._config

    # --- writing --------------------------------------------------------------------------------

    @_holding_no_handles
    def write(self, ops: Sequence[WriteOp], *, sync: bool = True) -> None:
        """Store ``ops`` atomically. Raises :class:`StorageError` if nothing was stored."""
        with self._writing():
            self._write(ops, sync)

    def _write(self, ops: Sequence[WriteOp], sync: bool) -> None:
        pid = self._partition_for_write()
        _, _, handle = self._partitions[pid]
        batch = WriteBatch(raw_mode=True)
        directory = self._directory[pid]
        changed: dict[int, fmt.DirEntry] = {}
        seals: dict[int, int] = {}
        produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]] = {}
        entries: list[tuple[bytes, bytes]] = []
        to_segment: list[tuple[bytes, int, int, bytes]] = []  # key, timestamp, count, entry
        total = 0
        for op in ops:
            if isinstance(op, PutSeal):
                self._batch_seal(batch, op)
                seals[op.log_id] = op.epoch
                continue
            key = fmt.encode_key(op.log_id, op.first_lsn)
            if isinstance(op, PutRecords):
                value = fmt.encode_records(key, op.timestamp_ms, list(op.payloads))
                last = op.first_lsn + len(op.payloads) - 1
                if op.producer is not None:
                    self._remember(produced, op, op.producer)
            else:
                value = fmt.encode_hole_plug(key, op.timestamp_ms, op.count)
                last = op.first_lsn + op.count - 1
            if len(value) > self._config.entry_bytes_max:
                raise PayloadTooLargeError(
                    f"entry of {len(value)} bytes exceeds entry_bytes_max={self._config.entry_bytes_max}")
            invariant(op.first_lsn > self._trim.get(op.log_id, 0),
                      f"log {op.log_id}: LSN {fmt.lsn_text(op.first_lsn)} is at or below the trim point")
            total += len(value)
            if isinstance(op, PutRecords) and len(value) >= self._config.segment_min_bytes:
                to_segment.append((key, op.timestamp_ms, len(op.payloads), value))
            else:
                entries.append((key, value))
            d = changed.get(op.log_id) or directory.get(op.log_id)
            changed[op.log_id] = self._dir_after(d, op.first_lsn, last, op.timestamp_ms, len(value))
        if total > self._config.write_bytes_max:
            raise PayloadTooLargeError(
                f"write of {total} bytes exceeds write_bytes_max={self._config.write_bytes_max}")
        for log_id, d in changed.items():
            batch.put(_P_DIRECTORY + _u64(pid) + _u64(log_id), d.encode(), self._meta_handle)
        for (log_id, producer_id), window in produced.items():
            batch.put(_P_PRODUCER + _u64(log_id) + producer_id, fmt.encode_produced(window), self._meta_handle)
        now_ms = self._clock.now_ms()
        forgotten = self._producers_to_forget(produced, now_ms)
        for gone_log, gone_producer in forgotten:
            batch.delete(_P_PRODUCER + _u64(gone_log) + gone_producer, self._meta_handle)
        for gone_log in {log_id for log_id, _ in forgotten} - self._forgot:
            batch.put(_P_FORGOT + _u64(gone_log), b"", self._meta_handle)
        if to_segment:
            offset = self._to_segment(pid, [value for *_, value in to_segment])
            for key, timestamp_ms, count, value in to_segment:
                entries.append((key, fmt.encode_segment_ref(key, timestamp_ms, count, offset, len(value))))
                offset += len(value)
        # The entries go in last: a batch grows by reallocation, so a small put after a large
        # one would copy the large one again (the order of puts to distinct keys does not matter).
        for key, value in entries:
            batch.put(key, value, handle)
        self._apply(batch, sync)
        with self._lock:
            self._produced.update(produced)
            for log_id, producer_id in produced:
                self._producers.setdefault(log_id, OrderedDict())[producer_id] = now_ms
                self._producers[log_id].move_to_end(producer_id)
            for log_id, producer_id in forgotten:
                del self._produced[(log_id, producer_id)]
                del self._producers[log_id][producer_id]
                self._forgot.add(log_id)
            self._sizes[pid] = self._sizes.get(pid, 0) + total
            for log_id, d in changed.items():
                directory[log_id] = d
                self._last_lsn[log_id] = max(self._last_lsn.get(log_id, 0), d.lsn_max)
            self._seal.update(seals)
            if seals:
                self._forget_epoch_ends(seals)

    def _to_segment(self, pid: int, values: list[bytes]) -> int:
        """Append ``values`` to the partition's segment and sync them (before RocksDB holds a
        reference to them: see _segment); the offset of the first."""
        segment = self._segments[pid]
        offset = segment.append(values)  # a failed write leaves nothing referenced: writes go on
        try:
            segment.sync()
        except StorageError as exc:
            raise self._fail_stop(exc)  # noqa: B904 (its cause is the OSError already)
        return offset

    def _remember(self, produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]], op: PutRecords,
                  mark: ProducerMark) -> None:
        key = (op.log_id, mark.producer_id)
        window = produced.get(key)
        if window is None:
            window = dict(self._produced.get(key, {}))
            produced[key] = window
        window[mark.sequence] = (op.first_lsn, len(op.payloads))
        while len(window) > self._config.producer_window:
            del window[next(iter(window))]

    def _producers_to_forget(self, produced: dict[tuple[int, bytes], Any], now_ms: int) -> list[tuple[int, bytes]]:
        """The least recently appending producers past each log's bound, once this write is in, of
        those idle long enough to be forgotten (the bound is exceeded rather than an active one
        forgotten; see :meth:`producer_admitted`)."""
        idle_ms = int(self._config.producer_idle_s_min * 1000)
        out: list[tuple[int, bytes]] = []
        for log_id in {log_id for log_id, _ in produced}:
            known = self._producers.get(log_id, OrderedDict())
            new = sum(1 for (log, pid) in produced if log == log_id and pid not in known)
            excess = len(known) + new - self._config.producers_per_log_max
            for producer_id, last_ms in known.items():
                if excess <= 0 or now_ms - last_ms < idle_ms:
                    break  # the rest appended later still
                if (log_id, producer_id) not in produced:
                    out.append((log_id, producer_id))
                    excess -= 1
        return out

    def producer_admitted(self, log_id: int, producer_id: bytes) -> bool:
        """Whether a batch of this producer may be appended to the log now: a producer the log
        knows always may; a new one only while the log remembers fewer than ``producers_per_log_max``
        producers or one of them has been idle long enough to be forgotten."""
        with self._lock:
            known = self._producers.get(log_id)
            if known is None or producer_id in known or len(known) < self._config.producers_per_log_max:
                return True
            oldest_ms = next(iter(known.values()))
        return self._clock.now_ms() - oldest_ms >= int(self._config.producer_idle_s_min * 1000)

    def produced(self, log_id: int, producer_id: bytes, sequence: int) -> range | bool | None:
        """What became of a producer's batch: its LSNs if it is stored; ``None`` if it is not;
        ``False`` if nobody can tell: the sequence is older than every remembered one, or the log
        does not know the producer, has forgotten some, and the sequence is not a first one (0)."""
        with self._lock:
            window = self._produced.get((log_id, producer_id))
            if not window:
                return False if sequence > 0 and log_id in self._forgot else None
            found = window.get(sequence)
            if found is not None:
                return range(found[0], found[0] + found[1])
            if len(window) >= self._config.producer_window and sequence < min(window):
                return False
            return None

    @staticmethod
    def _dir_after(d: fmt.DirEntry | None, first: int, last: int, ts: int, size: int) -> fmt.DirEntry:
        if d is None:
            return fmt.DirEntry(first, last, ts, ts, size, 1)
        # A slot retransmitted after a later one was stored arrives out of LSN order.
        return fmt.DirEntry(min(d.lsn_min, first), max(d.lsn_max, last), min(d.timestamp_ms_min, ts),
                            max(d.timestamp_ms_max, ts), d.size_bytes + size, d.entries + 1)

    def _batch_seal(self, batch: WriteBatch, op: PutSeal) -> None:
        batch.put(_P_SEAL + _u64(op.log_id), _u64(op.epoch), self._meta_handle)
        if op.ended_epoch:
            key = _P_EPOCH_END + _u64(op.log_id) + _u64(op.ended_epoch)
            batch.put(key, _u64(op.ended_lsn), self._meta_handle)

    def _apply(self, batch: WriteBatch, sync: bool) -> None:
        # rocksdict holds the GIL through a write, so a synced write would stall every other
        # thread for its fsync. The write goes to the write-ahead log unsynced, then the log is
        # synced by a call that lets the GIL go. Nothing reads the entries before this returns:
        # readers find them through the directory, which changes only afterwards.
        try:
            self._db.write(batch, self._write_async)
        except Exception as exc:
            raise self._fail_stop(StorageError(f"RocksDB write failed: {exc}")) from exc
        if sync:
            self.sync_wal()

    def sync_wal(self) -> None:
        """Make every write stored so far durable (for writers that store with ``sync=False`` and
        sync later, while the next write goes on). Lets other threads run meanwhile."""
        self._check_writable()
        ledger_head = self._ledger_head  # every entry up to it was written before this sync
        try:
            self._db.flush_wal(True)
        except Exception as exc:
            raise self._fail_stop(StorageError(f"RocksDB write-ahead log sync failed: {exc}")) from exc
        if ledger_head > self._ledger_synced:  # only after new ledger entries: appends take no lock here
            with self._lock:
                self._ledger_synced = max(self._ledger_synced, ledger_head)

    def _partition_for_write(self) -> int:
        now_ms = self._clock.now_ms()
        if self._partitions:
            newest = max(self._partitions)
            created_ms = self._partitions[newest][0]
            size = self._sizes.get(newest, 0)
            age_s = (now_ms - created_ms) / 1000
            if age_s < self._config.partition_duration_s and size < self._config.partition_bytes_max:
                return newest
            pid = newest + 1
        else:
            pid = 1
        return self._create_partition(pid, now_ms)

    def _create_partition(self, pid: int, now_ms: int) -> int:
        name = _cf_name(pid)
        segment = Segment(self._segments_dir / _segment_name(pid))
        try:
            cf = self._db.create_column_family(name, self._cf_options())
            # Registered after it exists: a crash in between leaves an unregistered, empty family
            # that the next open drops.
            self._meta.put(_P_PARTITION + _u64(pid), _u64(now_ms), self._write_async)
        except Exception as exc:
            # Its family may exist now, unregistered: the next open drops it.
            segment.close()
            raise self._fail_stop(StorageError(f"cannot create partition {pid}: {exc}")) from exc
        self.sync_wal()
        with self._lock:
            previous = self._segments.get(max(self._segments, default=0))
            self._partitions[pid] = (now_ms, cf, self._db.get_column_family_handle(name))
            self._directory[pid] = {}
            self._segments[pid] = segment
        if previous is not None:
            previous.stop_appending()  # new entries go to the new partition
        return pid

    # --- metadata -------------------------------------------------------------------------------

    @_holding_no_handles
    def trim(self, log_id: int, lsn: int, *, ledger: bytes | None = None) -> None:
        """Raise the log's trim point to ``lsn`` (durably). Lowering it is a no-op (and writes no
        ``ledger`` entry: see :meth:`ledger_read`)."""
        with self._writing():
            if lsn <= self._trim.get(log_id, 0):
                return
            self._meta_put_sync(_P_TRIM + _u64(log_id), _u64(lsn), ledger)
            with self._lock:
                self._trim[log_id] = lsn

    def _meta_put_sync(self, key: bytes, value: bytes | None, ledger: bytes | None = None) -> None:
        # Written unsynced, then synced by a call that lets the GIL go (see _apply): a synced
        # rocksdict write would stall every thread of the process for the fsync. Nothing reads
        # these keys back while the store is open but the store itself, after this returns.
        # A value of None deletes the key. With a ledger entry, both go in one write batch.
        if ledger is not None:
            batch = WriteBatch(raw_mode=True)
            if value is None:
                batch.delete(key, self._meta_handle)
            else:
                batch.put(key, value, self._meta_handle)
            kept = self._ledger_add(batch, ledger)
            self._apply(batch, sync=False)
            self._ledger_kept(kept)
            self.sync_wal()
            self._wake_ledger_readers()
            return
        try:
            if value is None:
                self._meta.delete(key, self._write_async)
            else:
                self._meta.put(key, value, self._write_async)
        except Exception as exc:
            raise self._fail_stop(StorageError(f"RocksDB metadata write failed: {exc}")) from exc
        self.sync_wal()

    # --- the change ledger ------------------------------------------------------------------------

    def _ledger_add(self, batch: WriteBatch, body: bytes) -> tuple[int, int]:
        """Put the next ledger entry into ``batch`` (under the writers' lock), and, if it would
        pass the hard bound, a range delete of the oldest tenth; return ``(tail, head)`` as they
        are once the batch is applied (see :meth:`_ledger_kept`)."""
        index = self._ledger_head + 1
        batch.put(_P_LEDGER + _u64(index), _u64(self._clock.now_ms()) + body, self._meta_handle)
        batch.put(_P_LEDGER_HEAD, _u64(index), self._meta_handle)
        tail, hard = self._ledger_tail, self._config.ledger_hard_entries_max
        if index - tail + 1 > hard:
            # A range, not the one oldest entry: the next hard prune is a tenth of the bound away.
            kept = hard - hard // 10
            batch.delete_range(_P_LEDGER + _u64(tail), _P_LEDGER + _u64(index - kept + 1), self._meta_handle)
            tail = index - kept + 1
        return tail, index

    def _ledger_kept(self, bounds: tuple[int, int]) -> None:
        with self._lock:
            self._ledger_tail, self._ledger_head = bounds

    def _wake_ledger_readers(self) -> None:
        for listener in self._ledger_listeners:
            listener()

    def add_ledger_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after each write that adds ledger entries, once it is durable (from
        the writer's thread: it must only wake a reader, never read or block)."""
        with self._lock:
            self._ledger_listeners = (*self._ledger_listeners, listener)

    def remove_ledger_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._ledger_listeners = tuple(x for x in self._ledger_listeners if x is not listener)

    @_holding_no_handles
    def ledger_append(self, body: bytes) -> int:
        """Write a ledger entry on its own (durably); return its index."""
        with self._writing():
            batch = WriteBatch(raw_mode=True)
            kept = self._ledger_add(batch, body)
            self._apply(batch, sync=False)
            self._ledger_kept(kept)
        self.sync_wal()
        self._wake_ledger_readers()
        return kept[1]

    def ledger_bounds(self) -> tuple[int, int]:
        """``(tail, head)``: the first index still kept and the last written; ``tail == head + 1``
        when nothing is kept. Indexes go up by one an entry, across restarts and prunings."""
        with self._lock:
            return self._ledger_tail, self._ledger_head

    @_holding_no_handles
    def ledger_read(self, index_from: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` entries from ``index_from`` on, as ``(index, stored bytes)`` (the time,
        8 bytes big-endian, then the change), in index order; entries below the tail are gone.
        Only durable entries: a reader acts on what it reads, and an entry a power cut then took
        would see its index given to another change (finding 18)."""
        self._check_open()
        self._kv_settled()
        head = self._ledger_head  # published after the write of every entry up to it
        if self._ledger_synced < head:
            self.sync_wal()  # entries are applied, published, then synced: one sync covers them
        out: list[tuple[int, bytes]] = []
        for key, value in self._meta_scan(_P_LEDGER, _P_LEDGER + _u64(max(index_from, 0))):
            index = fmt.decode_u64(key[1:])
            if len(out) >= limit or index > head:  # past the head: written, maybe not yet synced
                break
            out.append((index, value))
        return out

    @_holding_no_handles
    def ledger_prune(self, through: int) -> int:
        """Drop every entry up to index ``through`` (one range delete, durably); return the new tail."""
        with self._writing():
            through = min(through, self._ledger_head)
            if through < self._ledger_tail:
                return self._ledger_tail
            batch = WriteBatch(raw_mode=True)
            batch.delete_range(_P_LEDGER + _u64(self._ledger_tail), _P_LEDGER + _u64(through + 1), self._meta_handle)
            self._apply(batch, sync=False)
            with self._lock:
                self._ledger_tail = through + 1
        self.sync_wal()
        return through + 1

    def trim_point(self, log_id: int) -> int:
        """The highest trimmed LSN of the log; 0 if none."""
        return self._trim.get(log_id, 0)

    def last_lsn(self, log_id: int) -> int:
        """The highest LSN ever stored for the log (records or hole plug), or its trim point; 0 if none."""
        return max(self._last_lsn.get(log_id, 0), self._trim.get(log_id, 0))

    def sealed_epoch(self, log_id: int) -> int:
        """The highest epoch sealed for the log; 0 if never sealed."""
        return self._seal.get(log_id, 0)

    def epoch_ends(self, log_id: int, epoch_min: int, epoch_max: int) -> dict[int, int]:
        """Last LSN of each sealed epoch of the log in ``[epoch_min, epoch_max]`` that held data."""
        self._check_open()
        # Every first read of a log asks (a RocksDB iterator each time, as much as reading a small
        # log's records): a log's few epoch ends are kept, for a bounded number of logs.
        with self._lock:
            known = self._epoch_ends.get(log_id)
            if known is not None:
                self._epoch_ends.move_to_end(log_id)
            generation = self._epoch_ends_generation
        if known is None:
            known = self._scan_epoch_ends(log_id, 0, _EPOCH_ENDS_CACHED_MAX + 1)
            if len(known) > _EPOCH_ENDS_CACHED_MAX:  # too many to keep: scan just the range asked
                return self._scan_epoch_ends(log_id, epoch_min, None, epoch_max)
            with self._lock:
                if generation == self._epoch_ends_generation:  # no epoch end written meanwhile
                    self._epoch_ends[log_id] = known
                    if len(self._epoch_ends) > _EPOCH_ENDS_LOGS_MAX:
                        self._epoch_ends.popitem(last=False)
        return {epoch: lsn for epoch, lsn in known.items() if epoch_min <= epoch <= epoch_max}

    def _scan_epoch_ends(self, log_id: int, epoch_min: int, count_max: int | None,
                         epoch_max: int = 2**64 - 1) -> dict[int, int]:
        prefix = _P_EPOCH_END + _u64(log_id)
        out: dict[int, int] = {}
        for key, value in self._meta_scan(prefix, prefix + _u64(epoch_min)):
            epoch = fmt.decode_u64(key[9:])
            if epoch > epoch_max or len(out) == count_max:
                break
            out[epoch] = fmt.decode_u64(value)
        return out

    def _forget_epoch_ends(self, log_ids: Iterable[int]) -> None:
        """After a write that changed these logs' epoch ends (under ``_lock``)."""
        self._epoch_ends_generation += 1
        for log_id in log_ids:
            self._epoch_ends.pop(log_id, None)

    @_holding_no_handles
    def seal_log(self, log_id: int, last_lsn: int, *, ledger: bytes | None = None) -> None:
        """Record, durably, that the log takes no more appends and ends at ``last_lsn`` (with a
        ``ledger`` entry, atomically; a log sealed already writes neither). The caller (the log's
        only sequencer) seals only once every append below is decided."""
        with self._writing():
            if log_id in self._final:
                return
            self._meta_put_sync(_P_FINAL + _u64(log_id), _u64(last_lsn), ledger)
            with self._lock:
                self._final[log_id] = last_lsn

    def final_lsn(self, log_id: int) -> int | None:
        """The last LSN of a log sealed for good, or None while it takes appends."""
        return self._final.get(log_id)

    def sealed_logs(self) -> dict[int, int]:
        """Every log sealed for good, with its last LSN."""
        with self._lock:
            return dict(self._final)

    @_holding_no_handles
    def delete_log_data(self, log_id: int) -> None:
        """Remove every entry of the log and what LogsDB knows of it besides its trim point (raised
        to its last LSN, so the log reads as trimmed) and its seal; idempotent. The entries go by
        range deletes, one per partition, and RocksDB compacts their space away; bytes in segment
        files go with their partition."""
        with self._writing():
            batch = WriteBatch(raw_mode=True)
            start, end = fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0)
            held = [pid for pid, entries in self._directory.items() if log_id in entries]
            in_segments = {pid: self._segment_ranges(pid, log_id) for pid in held}
            for pid in held:
                batch.delete_range(start, end, self._partitions[pid][2])
                batch.delete(_P_DIRECTORY + _u64(pid) + _u64(log_id), self._meta_handle)
            for prefix in (_P_PRODUCER, _P_EPOCH_END):
                batch.delete_range(prefix + _u64(log_id), prefix + _u64(log_id + 1), self._meta_handle)
            last = self.last_lsn(log_id)
            if last > self._trim.get(log_id, 0):
                batch.put(_P_TRIM + _u64(log_id), _u64(last), self._meta_handle)
            self._apply(batch, sync=True)
            with self._lock:
                for pid in held:
                    d = self._directory[pid].pop(log_id)
                    self._sizes[pid] -= d.size_bytes
                if last:
                    self._trim[log_id] = last
                for key in [k for k in self._producers.get(log_id, ())]:
                    self._produced.pop((log_id, key), None)
                self._producers.pop(log_id, None)
                self._forget_epoch_ends([log_id])
        for pid in held:
            try:
                self._segments[pid].punch(in_segments[pid])
                self._partitions[pid][1].compact_range(start, end)
            except Exception:  # dropped meanwhile, or a failed compaction: only space is at stake
                continue

    def log_ids(self) -> list[int]:
        """Every log that has stored data or a trim point."""
        with self._lock:
            return sorted(set(self._last_lsn) | set(self._trim))

    def data_size(self, log_id: int) -> int:
        """Bytes of entries the log holds in partitions not yet dropped."""
        with self._lock:
            return sum(d[log_id].size_bytes for d in self._directory.values() if log_id in d)

    def partitions(self) -> list[PartitionInfo]:
        with self._lock:
            return [
                PartitionInfo(pid, created, sum(d.size_bytes for d in self._directory[pid].values()),
                              tuple(sorted(self._directory[pid])))
                for pid, (created, _, _) in sorted(self._partitions.items())
            ]

    @_holding_no_handles
    def put_meta(self, key: bytes, value: bytes, *, ledger: bytes | None = None) -> None:
        """Durably store an upper layer's metadata key (with a ``ledger`` entry, atomically)."""
        with self._writing():
            self._meta_put_sync(_P_USER + key, value, ledger)

    @_holding_no_handles
    def delete_meta(self, key: bytes, *, ledger: bytes | None = None) -> None:
        with self._writing():
            self._meta_put_sync(_P_USER + key, None, ledger)

    def get_meta(self, key: bytes) -> bytes | None:
        self._check_open()
        value: bytes | None = self._meta.get(_P_USER + key)
        return value

    def scan_meta(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Upper-layer metadata keys starting with ``prefix``, in key order (prefix kept)."""
        self._check_open()
        for key, value in self._meta_scan(_P_USER + prefix):
            yield key[len(_P_USER):], value

    # --- the metadata store ---------------------------------------------------------------------

    @_holding_no_handles
    def kv_commit(self, checks: Sequence[KvCheck], ops: Sequence[KvOp], *, sync: bool = True,
                  ledger: bytes | None = None) -> int:
        """Apply ``ops`` atomically if every check holds; return the batch's revision (the version
        of every key it puts). Durable when it returns (``sync=False``: applied, and durable with
        the next synced write; a process crash keeps it, a power loss may not). Raises
        :class:`ConditionFailedError` for the first check that fails (nothing is applied),
        :class:`StorageError` if the write failed.

        Revisions go up by one a batch that changes something, across restarts. Concurrent
        callers share WAL syncs (group commit). A ``ledger`` entry is written in the same batch."""
        with self._writing():
            for check in checks:
                self._kv_check(check)
            revision = self._kv_revision + 1
            batch = WriteBatch(raw_mode=True)
            for op in ops:
                if isinstance(op, KvPut):
                    key = _P_KV + op.key
                    batch.put(key, fmt.encode_kv(key, revision, op.value), self._meta_handle)
                elif isinstance(op, KvDelete):
                    batch.delete(_P_KV + op.key, self._meta_handle)
                else:
                    batch.delete_range(_P_KV + op.start, _P_KV + op.end, self._meta_handle)
            batch.put(_P_KV_REVISION, _u64(revision), self._meta_handle)
            kept = self._ledger_add(batch, ledger) if ledger is not None else None
            self._apply(batch, sync=False)
            self._kv_revision = revision
            if kept is not None:
                self._ledger_kept(kept)
            self._kv_applied += 1
            applied = self._kv_applied
        if sync:
            self._kv_sync(applied)
        if ledger is not None:  # unsynced (sync=False): a woken reader's read syncs it
            self._wake_ledger_readers()
        return revision

    def _kv_check(self, check: KvCheck) -> None:
        found = self._kv_read(check.key)
        version = found[0] if found is not None else 0
        if check.version is not None and version != check.version:
            raise ConditionFailedError(f"expected version {check.version}, found {version}", key=check.key,
                                       version=version)
        if check.value is not None and (found is None or found[1] != check.value):
            raise ConditionFailedError("the value differs from the expected one" if found is not None
                                       else "expected a value, the key is absent", key=check.key, version=version)

    def _kv_sync(self, applied: int) -> None:
        """Return once metadata batch number ``applied`` is durable (one sync covers many)."""
        with self._sync_lock:
            if self._kv_synced >= applied:
                return
            through = self._kv_applied  # every batch applied so far goes out with this sync
            self.sync_wal()
            self._kv_synced = through

    def _kv_read(self, key: bytes) -> tuple[int, bytes] | None:
        full = _P_KV + key
        raw: bytes | None = self._meta.get(full)
        if raw is None:
            return None
        try:
            return fmt.decode_kv(full, raw)
        except fmt.HeaderCorrupt as exc:
            raise CorruptionError(f"metadata key {key!r}: {exc}") from exc

    def _kv_settled(self) -> None:
        """A read sees only durable batches: one applied but not yet synced could still be lost to a
        crash, and whoever read it would have acted on something that never happened."""
        applied = self._kv_applied
        if self._kv_synced < applied:
            self._kv_sync(applied)

    @_holding_no_handles
    def kv_get(self, key: bytes) -> tuple[int, bytes] | None:
        """``(version, value)`` of a metadata key, or None. Raises :class:`CorruptionError`."""
        self._check_open()
        self._kv_settled()
        return self._kv_read(key)

    @_holding_no_handles
    def kv_scan(self, start: bytes, end: bytes, limit: int) -> list[tuple[bytes, int, bytes]]:
        """Up to ``limit`` metadata keys in ``[start, end)``, in key order, as ``(key, version, value)``."""
        self._check_open()
        self._kv_settled()
        opts = ReadOptions()
        opts.set_iterate_upper_bound(_P_KV + end)
        it = self._meta.iter(opts)
        it.seek(_P_KV + start)
        out: list[tuple[bytes, int, bytes]] = []
        while it.valid() and len(out) < limit:
            full = cast(bytes, it.key())
            try:
                version, value = fmt.decode_kv(full, cast(bytes, it.value()))
            except fmt.HeaderCorrupt as exc:
                raise CorruptionError(f"metadata key {full[1:]!r}: {exc}") from exc
            out.append((full[1:], version, value))
            it.next()
        return out

    @property
    def kv_revision(self) -> int:
        """The revision of the last metadata batch applied."""
        return self._kv_revision

    # --- reading --------------------------------------------------------------------------------

    def _log_partitions(self, log_id: int, lsn_min: int,
                        lsn_max: int) -> list[tuple[int, Any, Segment, fmt.DirEntry]]:
        with self._lock:
            self._check_open()
            out = []
            for pid in sorted(self._directory):
                d = self._directory[pid].get(log_id)
                if d is not None and d.lsn_max >= lsn_min and d.lsn_min <= lsn_max:
                    out.append((pid, self._partitions[pid][1], self._segments[pid], d.copy()))
            return out

    @_holding_no_handles
    def read(self, log_id: int, lsn_from: int, lsn_to: int, bytes_max: int) -> tuple[list[Entry], int]:
        """Entries of the log that overlap ``[lsn_from, lsn_to]``, in LSN order, and how far they cover.

        Stops after the entry that brings the total past ``bytes_max`` (at least one entry is
        returned when any exists); the second value is the highest LSN up to which every entry was
        returned. Damaged entries come back as :class:`CorruptEntry`, never as data.
        """
        if lsn_from > lsn_to:
            raise InvalidArgumentError(f"lsn_from {fmt.lsn_text(lsn_from)} is above lsn_to {fmt.lsn_text(lsn_to)}")
        out: list[Entry] = []
        budget = [bytes_max]
        covered_to = lsn_to
        for _, cf, segment, d in self._log_partitions(log_id, lsn_from, lsn_to):
            if covered_to < d.lsn_min:
                continue
            # Past the budget, later partitions are read only up to what is covered so far: a slot
            # stored late (a retransmission) may sit in a newer partition than the LSNs after it.
            with segment.held_open() as read_segment:
                spent = read_partition(cf, read_segment, d, log_id, lsn_from, covered_to, budget, out)
            if spent and covered_to == lsn_to:
                covered_to = min(out[-1].last_lsn, lsn_to)
                budget[0] = 2**63
        out.sort(key=lambda e: e.first_lsn)
        while out and out[-1].first_lsn > covered_to:
            out.pop()
        return out, covered_to

    @_holding_no_handles
    def next_entry_lsn(self, log_id: int, after_lsn: int) -> int | None:
        """The first LSN of the first entry of the log that starts above ``after_lsn``, if any.

        Where RocksDB cannot read the keys above ``after_lsn`` (a damaged block), the LSN from which
        :meth:`read` reports them damaged.
        """
        if after_lsn >= 2**64 - 1:
            return None
        for _, cf, _, d in self._log_partitions(log_id, after_lsn + 1, 2**64 - 1):
            try:
                lsn = first_key_from(cf, log_id, after_lsn + 1)
            except Unreadable:
                return max(after_lsn + 1, d.lsn_min)
            if lsn is not None:
                return lsn
        return None

    @_holding_no_handles
    def find_time(self, log_id: int, timestamp_ms: int) -> int:
        """The first LSN above the trim point whose entry is stamped at or after ``timestamp_ms``.

        Returns the LSN after the last stored one if every entry is older. Uses the partition
        directory and a binary search by seeks, never a scan.
        """
        trim = self.trim_point(log_id)
        last = self.last_lsn(log_id)
        for _, cf, _, d in self._log_partitions(log_id, trim + 1, 2**64 - 1):
            if d.timestamp_ms_max < timestamp_ms:
                continue
            found = self._bisect_time(cf, log_id, max(trim + 1, d.lsn_min), d.lsn_max, timestamp_ms)
            if found is not None:
                return found
        return last + 1

    def _bisect_time(self, cf: Any, log_id: int, lo: int, hi: int, timestamp_ms: int) -> int | None:
        it = cf.iter(ReadOptions())

        def check_readable(lsn: int) -> None:
            # A time search cannot step over damaged blocks as a read does: it would answer with
            # an LSN it cannot vouch for.
            try:
                check(it)
            except Unreadable as exc:
                raise CorruptionError(f"log {log_id}: the entries near LSN {fmt.lsn_text(lsn)} "
                                      f"cannot be read: {exc}") from None

        def entry_at_or_after(lsn: int) -> tuple[int, int, int] | None:
            it.seek(fmt.encode_key(log_id, lsn))
            if not it.valid():
                check_readable(lsn)
                return None
            key = it.key()
            entry_log, first = fmt.decode_key(key)
            if entry_log != log_id:
                return None
            try:
                header = fmt.decode_header(key, it.value())
            except fmt.HeaderCorrupt as exc:
                raise CorruptionError(f"log {log_id}: entry at LSN {fmt.lsn_text(first)} is damaged") from exc
            return first, first + header.count - 1, header.timestamp_ms

        # The entry holding `lo` may start below it.
        it.seek_for_prev(fmt.encode_key(log_id, lo))
        if not it.valid():
            check_readable(lo)
        if it.valid() and fmt.decode_key(it.key())[0] == log_id:
            first = fmt.decode_key(it.key())[1]
            covering = entry_at_or_after(first)
            if covering is not None and covering[1] >= lo and covering[2] >= timestamp_ms:
                return lo
        # The first entry starting in [lo, hi] stamped at or after the timestamp. Timestamps do not
        # decrease along a log, so bisect: every entry starting below `low` is older; the answer,
        # if any, starts below `high` or is `best`. Each step moves `low` up or `high` down.
        low, high, best = lo, hi + 1, None
        while low < high:
            mid = (low + high) // 2
            found = entry_at_or_after(mid)
            if found is None or found[0] >= high:
                high = mid
            elif found[2] >= timestamp_ms:
                best = high = found[0]
            else:
                low = found[0] + 1
        return best

    # --- retention ------------------------------------------------------------------------------

    @_holding_no_handles
    def drop_expired(self, backlog_ms_of: Callable[[int], int | None]) -> list[int]:
        """Drop the oldest partitions none of whose records is retained; return their ids.

        A log's records in a partition are retained unless all are at or below the log's trim point
        or, for a log with a backlog, all are older than ``now - backlog``. The newest partition is
        never dropped. Each log's trim point is raised over what was dropped, so readers see TRIM.
        """
        dropped: list[int] = []
        reclaimed: list[tuple[int, int]] = []
        with self._writing():
            now_ms = self._clock.now_ms()
            newest = max(self._partitions, default=0)
            for pid in sorted(self._partitions):
                if pid == newest or not self._expired(pid, now_ms, backlog_ms_of):
                    break
                self._drop_partition(pid)
                dropped.append(pid)
            for pid in sorted(self._partitions):
                if pid != newest:
                    reclaimed += self._reclaim_expired_logs(pid, now_ms, backlog_ms_of)
        for pid, log_id in reclaimed:
            try:
                self._partitions[pid][1].compact_range(fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0))
            except Exception:  # dropped meanwhile, or a failed compaction: only space is at stake
                continue
        return dropped

    def _reclaim_expired_logs(self, pid: int, now_ms: int,
                              backlog_ms_of: Callable[[int], int | None]) -> list[tuple[int, int]]:
        """In a partition another log still needs, delete the entries of each log none of whose
        records there is retained (a log kept forever must not pin everyone's expired data). The
        log's trim point rises over them, so readers see TRIM as after a drop. Returns the
        ``(partition, log)`` pairs whose entries were deleted."""
        gone = [(log_id, d) for log_id, d in self._directory[pid].items()
                if self._log_expired(log_id, d, now_ms, backlog_ms_of)]
        if not gone:
            return []
        batch = WriteBatch(raw_mode=True)
        handle = self._partitions[pid][2]
        raised: dict[int, int] = {}
        in_segment = [r for log_id, _ in gone for r in self._segment_ranges(pid, log_id)]
        for log_id, d in gone:
            batch.delete_range(fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0), handle)
            batch.delete(_P_DIRECTORY + _u64(pid) + _u64(log_id), self._meta_handle)
            if d.lsn_max > self._trim.get(log_id, 0):
                raised[log_id] = d.lsn_max
                batch.put(_P_TRIM + _u64(log_id), _u64(d.lsn_max), self._meta_handle)
        self._apply(batch, sync=True)
        with self._lock:
            self._trim.update(raised)
            for log_id, d in gone:
                del self._directory[pid][log_id]
                self._sizes[pid] -= d.size_bytes
        self._segments[pid].punch(in_segment)  # now that nothing refers to those bytes, durably
        return [(pid, log_id) for log_id, _ in gone]

    def _segment_ranges(self, pid: int, log_id: int) -> list[tuple[int, int]]:
        """Where the log's entries in a partition keep their bytes in its segment file."""
        opts = ReadOptions()
        opts.set_iterate_upper_bound(fmt.encode_key(log_id + 1, 0))
        out: list[tuple[int, int]] = []
        it = self._partitions[pid][1].iter(opts)
        it.seek(fmt.encode_key(log_id, 0))
        while it.valid():
            key, value = it.key(), it.value()
            try:
                if fmt.decode_header(key, value).kind is fmt.EntryKind.SEGMENT_REF:
                    out.append(fmt.decode_segment_ref(value))
            except fmt.HeaderCorrupt:
                pass  # a damaged reference: its bytes go with the partition
            it.next()
        return out

    def _log_expired(self, log_id: int, d: fmt.DirEntry, now_ms: int,
                     backlog_ms_of: Callable[[int], int | None]) -> bool:
        """Whether none of the log's records in a partition (``d``) is retained."""
        if d.lsn_max <= self._trim.get(log_id, 0):
            return True
        backlog_ms = backlog_ms_of(log_id)
        return backlog_ms is not None and d.timestamp_ms_max < now_ms - backlog_ms

    def _expired(self, pid: int, now_ms: int, backlog_ms_of: Callable[[int], int | None]) -> bool:
        return all(self._log_expired(log_id, d, now_ms, backlog_ms_of) for log_id, d in self._directory[pid].items())

    def _drop_partition(self, pid: int) -> None:
        batch = WriteBatch(raw_mode=True)
        raised: dict[int, int] = {}
        for log_id, d in self._directory[pid].items():
            if d.lsn_max > self._trim.get(log_id, 0):
                raised[log_id] = d.lsn_max
                batch.put(_P_TRIM + _u64(log_id), _u64(d.lsn_max), self._meta_handle)
            batch.delete(_P_DIRECTORY + _u64(pid) + _u64(log_id), self._meta_handle)
        batch.delete(_P_PARTITION + _u64(pid), self._meta_handle)
        self._apply(batch, sync=True)
        with self._lock:
            self._trim.update(raised)
            _, cf, _ = self._partitions.pop(pid)
            del self._directory[pid]
            self._sizes.pop(pid, None)
            segment = self._segments.pop(pid)
        cf.close()
        try:
            self._db.drop_column_family(_cf_name(pid))
        except Exception as exc:  # unregistered now: the next open drops it, and its segment
            raise self._fail_stop(StorageError(f"cannot drop partition {pid}: {exc}")) from exc
        segment.remove()  # its descriptor closes with the last reader holding it

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
