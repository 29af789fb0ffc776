"""The epoch store: one durable counter per log that never goes backwards.

A sequencer takes a new epoch by compare-and-set, so two sequencers can never get the same one.
Embedded mode keeps the counters in their own RocksDB; a cluster will keep them in ZooKeeper behind
the same interface (its ``multi`` operation sets several at once, as :meth:`compare_and_set_many` asks).
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Protocol

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from seaway._dirs import make_dir_durable
from seaway.errors import ClosedError, StorageError, TimedOutError

_KEY = struct.Struct(">Q")
_VALUE = struct.Struct(">Q")


class EpochStore(Protocol):
    def get(self, log_id: int) -> int:
        """The log's current epoch; 0 if it never had one."""
        ...

    def compare_and_set(self, log_id: int, expected: int, new: int) -> bool:
        """Set the log's epoch to ``new`` if it is ``expected``; say whether it did."""
        ...

    def compare_and_set_many(self, changes: Mapping[int, tuple[int, int]]) -> bool:
        """For each ``log id: (expected, new)``, set the epoch to ``new``, if every one is
        ``expected``; all or none, in one durable write. Say whether it did."""
        ...

    def close(self) -> None: ...


def bump_epoch(store: EpochStore, log_id: int, attempts_max: int = 16) -> int:
    """Take the next epoch of the log by compare-and-set; return it."""
    for _ in range(attempts_max):
        current = store.get(log_id)
        if store.compare_and_set(log_id, current, current + 1):
            return current + 1
    raise TimedOutError(f"log {log_id}: epoch store contended {attempts_max} times")


def bump_epochs(store: EpochStore, log_ids: Collection[int], attempts_max: int = 16) -> dict[int, int]:
    """Take the next epoch of each log, all in one compare-and-set (one durable write); return them."""
    for _ in range(attempts_max):
        current = {log_id: store.get(log_id) for log_id in log_ids}
        if store.compare_and_set_many({log_id: (epoch, epoch + 1) for log_id, epoch in current.items()}):
            return {log_id: epoch + 1 for log_id, epoch in current.items()}
    raise TimedOutError(f"{len(log_ids)} logs: epoch store contended {attempts_max} times")


class RocksDBEpochStore:
    """The embedded epoch store: fsynced counters in a RocksDB of their own."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        # The directory is made here, not by RocksDB: RocksDB fsyncs what it creates inside it, but
        # never the directory's own name in its parent, which a power cut would then take away.
        try:
            make_dir_durable(Path(path))
        except OSError as exc:
            raise StorageError(f"cannot create the epoch store's directory {path}: {exc}") from exc
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        try:
            self._db = Rdict(str(path), opts)
        except Exception as exc:
            raise StorageError(f"cannot open the epoch store at {path}: {exc}") from exc
        self._sync = WriteOptions()
        self._sync.sync = True
        self._lock = threading.Lock()
        self._closed = False

    def get(self, log_id: int) -> int:
        if self._closed:
            raise ClosedError("the epoch store is closed")
        raw = self._db.get(_KEY.pack(log_id))
        return 0 if raw is None else int(_VALUE.unpack(raw)[0])

    def compare_and_set(self, log_id: int, expected: int, new: int) -> bool:
        with self._lock:
            if self.get(log_id) != expected:
                return False
            try:
                self._db.put(_KEY.pack(log_id), _VALUE.pack(new), self._sync)
            except Exception as exc:
                raise StorageError(f"epoch store write failed: {exc}") from exc
            return True

    def compare_and_set_many(self, changes: Mapping[int, tuple[int, int]]) -> bool:
        with self._lock:
            if any(self.get(log_id) != expected for log_id, (expected, _) in changes.items()):
                return False
            batch = WriteBatch(raw_mode=True)
            for log_id, (_, new) in changes.items():
                batch.put(_KEY.pack(log_id), _VALUE.pack(new))
            try:
                self._db.write(batch, self._sync)
            except Exception as exc:
                raise StorageError(f"epoch store write failed: {exc}") from exc
            return True

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()
