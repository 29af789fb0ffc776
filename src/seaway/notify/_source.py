"""Where plugins read the ledger from: anything with ``bounds()`` and ``read()`` (``sw.ledger``,
embedded or remote, or the LogsDB primitive under an embedded store)."""

from __future__ import annotations

from typing import Any, Protocol

from seaway.ledger import LedgerEntry


class LedgerSource(Protocol):
    def bounds(self) -> tuple[int, int]:
        """``(tail, head)``: the first index kept and the last written (``tail == head + 1``: none kept)."""

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        """Up to ``limit`` entries from ``max(index_from, tail)`` on, in index order."""


class LogsDBLedger:
    """The ledger of an embedded store, read from its LogsDB directly."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def bounds(self) -> tuple[int, int]:
        tail, head = self._db.ledger_bounds()
        return int(tail), int(head)

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        return [LedgerEntry.decode(index, stored) for index, stored in self._db.ledger_read(index_from, limit)]


def ledger_of(sw: Any) -> LedgerSource | None:
    """The ledger of a store (embedded or remote), or None if it offers none."""
    ledger = getattr(sw, "ledger", None)
    if ledger is not None:
        return ledger  # type: ignore[no-any-return]
    store = getattr(sw, "_store", None)
    db = getattr(store, "logsdb", None)
    return LogsDBLedger(db) if db is not None else None
