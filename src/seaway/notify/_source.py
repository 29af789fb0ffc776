"""Where plugins read the ledger from: anything with ``bounds()`` and ``read()`` (``sw.ledger``,
embedded or remote, or a test's fake)."""

from __future__ import annotations

from typing import Protocol

from seaway.ledger import LedgerEntry


class LedgerSource(Protocol):
    def bounds(self) -> tuple[int, int]:
        """``(tail, head)``: the first index kept and the last written (``tail == head + 1``: none kept)."""

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        """Up to ``limit`` entries from ``max(index_from, tail)`` on, in index order."""
