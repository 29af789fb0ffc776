"""Reading the change ledger of an embedded store in tests, through ``sw.ledger``."""

from __future__ import annotations

import seaway
from seaway._errors import StorageError
from seaway.ledger import Change, LedgerEntry
from seaway.log import MetaApi, MetaBatch, Versioned

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


class CrashingMeta(MetaApi):
    """A metadata store that "crashes" at its ``crash_at``-th commit (from 1): that commit and every
    later one fail with :class:`StorageError`, either before the batch is applied (``applied=False``)
    or just after (``applied=True``: the write is made but its caller never hears of it). ``None``:
    no crash, only counting commits."""

    def __init__(self, meta: MetaApi, crash_at: int | None = None, *, applied: bool = False) -> None:
        self._meta = meta
        self.crash_at = crash_at
        self.applied = applied
        self.commits = 0

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        return self._meta.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        return self._meta.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)

    @property
    def revision(self) -> int:
        return self._meta.revision

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        self.commits += 1
        crashed = self.crash_at is not None and self.commits >= self.crash_at
        if crashed and not (self.applied and self.commits == self.crash_at):
            raise StorageError(f"injected: crashed at metadata commit {self.crash_at}")
        revision = self._meta.commit(batch, sync=sync)
        if crashed:
            raise StorageError(f"injected: crashed just after metadata commit {self.crash_at}")
        return revision
