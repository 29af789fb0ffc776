"""Disk faults that cannot be injected from outside the process: failing RocksDB calls."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from seaway.logsdb import LogsDB


class _Failing:
    """Stands in for one of a LogsDB's rocksdict objects (rocksdict's own types cannot be patched):
    the named calls fail as rocksdict reports I/O errors, with a bare ``Exception``."""

    def __init__(self, real: Any, calls: frozenset[str]) -> None:
        self._real = real
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        if name in self._calls:
            def fail(*args: Any, **kwargs: Any) -> Any:
                raise Exception(f"IO error: injected {name} failure")
            return fail
        return getattr(self._real, name)


@contextmanager
def failing_rocksdb(db: LogsDB, *calls: str) -> Iterator[None]:
    """While inside, the named calls of ``db``'s RocksDB fail: ``write``, ``flush_wal``,
    ``create_column_family`` and the like on the database, ``meta.put`` and ``meta.delete`` on its
    metadata family."""
    on_meta = frozenset(c.removeprefix("meta.") for c in calls if c.startswith("meta."))
    on_db = frozenset(c for c in calls if not c.startswith("meta."))
    real_db, real_meta = db._db, db._meta
    db._db = cast(Any, _Failing(real_db, on_db))
    db._meta = cast(Any, _Failing(real_meta, on_meta))
    try:
        yield
    finally:
        if not db._closed:  # a store closed inside has let go of both
            db._db, db._meta = real_db, real_meta


@contextmanager
def failing_wal_syncs(db: LogsDB) -> Iterator[None]:
    """While inside, every write-ahead log sync of ``db`` fails."""
    with failing_rocksdb(db, "flush_wal"):
        yield
