"""The entries a store wrote last, kept in memory for tailing readers (Pravega's read index).

A reader that keeps up with a log asks, again and again, for the entry just written. Reading it back
from RocksDB costs an iterator, a copy of the whole entry and a checksum pass over every payload;
the cache hands out the payloads the writer stored instead. It holds, per log, a run of entries with
consecutive LSNs, bounded in bytes over all logs (the oldest go first). Anything else (a hole plug,
an entry that does not follow the run, a read that does not start where a cached entry starts) is
left to RocksDB, so the cache changes no answer, only where it comes from.
"""

from __future__ import annotations

import threading
from collections import deque

from seaway._values import Entry, RecordsEntry

ENTRY_OVERHEAD_BYTES = 64
"""Counted for each entry besides its payloads, so many tiny entries cannot escape the bound."""

_Cached = tuple[RecordsEntry, int]  # the entry and the bytes it is counted for


class TailCache:
    """Thread-safe: the writer adds, any number of readers take."""

    def __init__(self, bytes_max: int) -> None:
        self._bytes_max = bytes_max
        self._lock = threading.Lock()
        self._runs: dict[int, dict[int, _Cached]] = {}  # log id -> first LSN -> entry, in LSN order
        self._order: deque[_Cached] = deque()  # cached entries oldest first, and some dropped ones
        self._bytes = 0
        self._entries = 0

    @property
    def size_bytes(self) -> int:
        """The bytes the cached entries are counted for."""
        with self._lock:
            return self._bytes

    def add(self, log_id: int, first_lsn: int, timestamp_ms: int, payloads: tuple[bytes, ...]) -> None:
        """An entry the store has just written (durably, if the write asked for it)."""
        if self._bytes_max <= 0:
            return
        cached = (RecordsEntry(log_id, first_lsn, timestamp_ms, list(payloads)),
                  sum(map(len, payloads)) + ENTRY_OVERHEAD_BYTES)
        with self._lock:
            run = self._runs.get(log_id)
            if run and next(reversed(run.values()))[0].last_lsn + 1 != first_lsn:
                self._drop_run(log_id)
                run = None
            if run is None:
                run = self._runs[log_id] = {}
            run[first_lsn] = cached
            self._order.append(cached)
            self._bytes += cached[1]
            self._entries += 1
            while self._bytes > self._bytes_max:
                self._evict_oldest()

    def forget(self, log_id: int) -> None:
        """Drop the log's run (its next entry will not follow it: a hole plug, say)."""
        with self._lock:
            self._drop_run(log_id)

    def take(self, log_id: int, lsn_from: int, lsn_to: int, bytes_max: int) -> list[Entry] | None:
        """The cached entries from the one starting at ``lsn_from`` on, while they start at or below
        ``lsn_to``, up to the one that brings their size past ``bytes_max``; None unless an entry
        starts at ``lsn_from``."""
        with self._lock:
            run = self._runs.get(log_id)
            cached = run.get(lsn_from) if run else None
            if run is None or cached is None:
                return None
            out: list[Entry] = []
            budget = bytes_max
            while cached is not None and cached[0].first_lsn <= lsn_to and budget > 0:
                out.append(cached[0])
                budget -= cached[1]
                cached = run.get(cached[0].last_lsn + 1)
            return out

    def _drop_run(self, log_id: int) -> None:
        run = self._runs.pop(log_id, None)
        if not run:
            return
        self._bytes -= sum(size for _, size in run.values())
        self._entries -= len(run)
        # Dropped entries keep their places in _order until they come up; past a bound, sweep them.
        if len(self._order) > 2 * self._entries + 1024:
            self._order = deque(c for c in self._order if self._is_cached(c))

    def _is_cached(self, cached: _Cached) -> bool:
        run = self._runs.get(cached[0].log_id)
        return run is not None and run.get(cached[0].first_lsn) is cached

    def _evict_oldest(self) -> None:
        cached = self._order.popleft()
        if self._is_cached(cached):
            run = self._runs[cached[0].log_id]
            del run[cached[0].first_lsn]
            self._bytes -= cached[1]
            self._entries -= 1
            if not run:
                del self._runs[cached[0].log_id]
