"""Disk faults that cannot be injected from outside the process: failing RocksDB calls."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from seaway.logsdb import LogsDB


class CallBudget:
    """How many of the watched calls may still succeed (None: none fails), and how many were made."""

    def __init__(self, ok_calls: int | None) -> None:
        self.ok_calls = ok_calls
        self.made = 0

    def take(self) -> bool:
        """Count a call; True if it is to succeed."""
        self.made += 1
        return self.ok_calls is None or self.made <= self.ok_calls


class _Failing:
    """Stands in for one of a LogsDB's rocksdict objects (rocksdict's own types cannot be patched):
    the named calls fail as rocksdict reports I/O errors, with a bare ``Exception`` (each of them,
    or those past the budget's first ``ok_calls``)."""

    def __init__(self, real: Any, calls: frozenset[str], budget: CallBudget | None = None) -> None:
        self._real = real
        self._calls = calls
        self._budget = budget or CallBudget(0)

    def __getattr__(self, name: str) -> Any:
        if name in self._calls:
            real, budget = getattr(self._real, name), self._budget

            def fail(*args: Any, **kwargs: Any) -> Any:
                if budget.take():
                    return real(*args, **kwargs)
                raise Exception(f"IO error: injected {name} failure")
            return fail
        return getattr(self._real, name)


@contextmanager
def failing_rocksdb(db: LogsDB, *calls: str) -> Iterator[None]:
    """While inside, the named calls of ``db``'s RocksDB fail: ``write``, ``flush_wal``,
    ``create_column_family`` and the like on the database, ``meta.put`` and ``meta.delete`` on its
    metadata family."""
    with failing_rocksdb_after(db, 0, *calls):
        yield


WRITE_CALLS = ("write", "flush_wal", "create_column_family", "meta.put", "meta.delete")
"""Every RocksDB call through which LogsDB changes what is stored or makes it durable."""


@contextmanager
def failing_rocksdb_after(db: LogsDB, ok_calls: int | None, *calls: str) -> Iterator[CallBudget]:
    """While inside, the first ``ok_calls`` of the named calls of ``db``'s RocksDB (see
    :func:`failing_rocksdb`; all of ``WRITE_CALLS`` if none is named) succeed and every later one
    fails: a failure injected between any two steps of an operation. ``ok_calls=None`` counts the
    calls without failing any (the budget's ``made`` tells how many an operation makes)."""
    calls = calls or WRITE_CALLS
    budget = CallBudget(ok_calls)
    on_meta = frozenset(c.removeprefix("meta.") for c in calls if c.startswith("meta."))
    on_db = frozenset(c for c in calls if not c.startswith("meta."))
    real_db, real_meta = db._db, db._meta
    db._db = cast(Any, _Failing(real_db, on_db, budget))
    db._meta = cast(Any, _Failing(real_meta, on_meta, budget))
    try:
        yield budget
    finally:
        if not db._closed:  # a store closed inside has let go of both
            db._db, db._meta = real_db, real_meta


@contextmanager
def failing_wal_syncs(db: LogsDB) -> Iterator[None]:
    """While inside, every write-ahead log sync of ``db`` fails."""
    with failing_rocksdb(db, "flush_wal"):
        yield
