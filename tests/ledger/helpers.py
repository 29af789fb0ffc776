"""Reading the change ledger of an embedded store in tests, through ``sw.ledger``."""

from __future__ import annotations

import seaway
from seaway.ledger import Change, LedgerEntry

_LOG_LAYER = ("log.", "log_group.")
"""Operations of the log layer (a stream's segments are logs): left out of :func:`changes`."""


def entries(sw: seaway.Seaway, index_from: int = 0) -> list[LedgerEntry]:
    """Every entry the store's ledger holds from ``index_from`` on, in index order."""
    found: list[LedgerEntry] = []
    while True:
        page = sw.ledger.read(index_from, 1000)
        found.extend(page)
        if not page or page[-1].index >= sw.ledger.bounds()[1]:
            return found
        index_from = page[-1].index + 1


def head(sw: seaway.Seaway) -> int:
    """The index of the last entry written (0 before the first)."""
    return sw.ledger.bounds()[1]


def changes(sw: seaway.Seaway, after: int = 0) -> list[Change]:
    """The changes recorded after entry ``after``, but those of the log layer."""
    return [e.change for e in entries(sw, after + 1) if not e.operation.startswith(_LOG_LAYER)]
