"""The core every part of LogsDB is built on: its state on opening, its locks, and how a write
batch reaches the disk (the write-ahead log, its syncs, fail-stop after a failed one).

LogsDB is one object over one RocksDB handle, assembled from one class per concern, each built on
the ones before it (see :class:`seaway.logsdb.LogsDB` for the order and the locks)::

    StoreCore <- LedgerStore <- KvStore <- LogMarks <- ProducerWindows <- Partitions <- Records
              <- Retention <- LogsDB
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, ParamSpec, TypeVar, cast

from rocksdict import Rdict, WriteBatch, WriteOptions

from seaway._clock import Clock
from seaway.errors import ClosedError, StorageError, StoreFailedError
from seaway.logsdb import _format as fmt
from seaway.logsdb._config import LogsDBConfig

_P = ParamSpec("_P")
_R = TypeVar("_R")


def holding_no_handles(method: Callable[_P, _R]) -> Callable[_P, _R]:
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


class LedgerState(NamedTuple):
    """The change ledger as the writes so far left it (see :meth:`LogsDB._ledger_add`)."""

    tail: int
    """The first index kept (``head + 1`` when none is)."""
    head: int
    """The last index written."""
    written: int
    """Bytes of every entry ever written (its time and change)."""
    tail_start: int
    """Bytes of every entry written before the tail: ``written - tail_start`` are kept."""



class StoreCore:
    """The state and write path shared by every part of the store (see the module's docstring)."""

    _path: Path
    _config: LogsDBConfig
    _clock: Clock
    _write_lock: threading.Lock
    _lock: threading.RLock
    _sync_lock: threading.Lock
    _closed: bool
    _failed: str | None
    _db: Rdict
    _meta: Rdict
    _meta_handle: Any
    _write_sync: WriteOptions
    _write_async: WriteOptions
    _kv_applied: int
    _kv_synced: int
    _ledger: LedgerState
    _ledger_shown: tuple[int, int]
    wal_syncs: int

    def _meta_scan(self, prefix: bytes, from_key: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Metadata keys starting with ``prefix`` (from ``from_key`` on), in key order."""
        for raw_key, value in self._meta.items(from_key=from_key or prefix):
            key = cast(bytes, raw_key)
            if not key.startswith(prefix):
                return
            yield key, cast(bytes, value)

    def _load_u64_map(self, prefix: bytes) -> dict[int, int]:
        out: dict[int, int] = {}
        for key, value in self._meta_scan(prefix):
            out[fmt.decode_u64(key[1:])] = fmt.decode_u64(value)
        return out

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
        ledger = self._ledger  # what this sync makes durable: applied before it starts
        try:
            self._db.flush_wal(True)
        except Exception as exc:
            raise self._fail_stop(StorageError(f"RocksDB write-ahead log sync failed: {exc}")) from exc
        self.wal_syncs += 1  # under the GIL; a count for figures, not for decisions
        if (ledger.tail, ledger.head) != self._ledger_shown:  # most syncs (appends') change nothing of it
            self._show_ledger(ledger)

    def _show_ledger(self, durable: LedgerState) -> None:
        """Let readers see the ledger as far as ``durable`` (applied and since synced): an entry
        read before its sync could be lost to a power loss, and its index then reused for another
        change that a reader would skip as already delivered."""
        with self._lock:
            shown_tail, shown_head = self._ledger_shown
            self._ledger_shown = (max(shown_tail, durable.tail), max(shown_head, durable.head))

    def _kv_sync(self, applied: int) -> None:
        """Return once metadata batch number ``applied`` is durable (one sync covers many)."""
        with self._sync_lock:
            if self._kv_synced >= applied:
                return
            through = self._kv_applied  # every batch applied so far goes out with this sync
            self.sync_wal()
            self._kv_synced = through

    def _kv_settled(self) -> None:
        """A read sees only durable batches: one applied but not yet synced could still be lost to a
        crash, and whoever read it would have acted on something that never happened."""
        applied = self._kv_applied
        if self._kv_synced < applied:
            self._kv_sync(applied)
