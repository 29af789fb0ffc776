"""Disk faults that cannot be injected from outside the process: a failing RocksDB sync."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from seaway.logsdb import LogsDB


class _FailingWALSync:
    """Stands in for a LogsDB's RocksDB handle (rocksdict's own type cannot be patched): every
    write-ahead log sync fails as rocksdict reports I/O errors, with a bare ``Exception``."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def flush_wal(self, sync: bool) -> None:
        raise Exception("IO error: injected write-ahead log sync failure")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@contextmanager
def failing_wal_syncs(db: LogsDB) -> Iterator[None]:
    """While inside, every write-ahead log sync of ``db`` fails."""
    real = db._db
    db._db = cast(Any, _FailingWALSync(real))
    try:
        yield
    finally:
        db._db = real
