"""Retention: dropping whole partitions none of whose records is retained, and punching out the
bytes of the expired logs in the others."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocksdict import WriteBatch

from seaway.errors import StorageError
from seaway.logsdb import _format as fmt
from seaway.logsdb._core import holding_no_handles
from seaway.logsdb._keys import P_DIRECTORY, P_PARTITION, P_TRIM, cf_name, u64
from seaway.logsdb._records import Records
from seaway.logsdb._segment import Segment


@dataclass
class _RetentionPlan:
    """What a retention pass found expired (see :meth:`LogsDB.drop_expired`)."""

    now_ms: int
    backlog_ms_of: Callable[[int], int | None]
    drop: dict[int, dict[int, fmt.DirEntry]] = field(default_factory=dict)
    """The oldest partitions none of whose records is retained: partition -> its logs' entries."""
    reclaim: dict[int, dict[int, fmt.DirEntry]] = field(default_factory=dict)
    """In the other partitions but the newest: partition -> the logs none of whose records is retained."""
    ranges: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    """Where each reclaimed ``(partition, log)`` keeps bytes in the partition's segment file."""
    ledger: dict[tuple[int, int], bytes | None] = field(default_factory=dict)
    """The ledger entry recording each ``(log, trim point)`` the pass may set."""


class Retention(Records):
    """Retention passes (see :meth:`drop_expired`)."""

    _retention_lock: threading.Lock
    _dropping: dict[int, tuple[Any, Segment]]

    @holding_no_handles
    def drop_expired(self, backlog_ms_of: Callable[[int], int | None],
                     trimmed: Callable[[int, int], bytes | None] | None = None) -> list[int]:
        """Drop the oldest partitions none of whose records is retained; return their ids. In a
        partition another log still needs, delete the entries of each log none of whose records
        there is retained (a log kept forever must not pin everyone's expired data).

        A log's records in a partition are retained unless all are at or below the log's trim point
        or, for a log with a backlog, all are older than ``now - backlog``. The newest partition is
        never dropped. Each log's trim point is raised over what went, so readers see TRIM; with
        ``trimmed``, each raise is recorded by the ledger entry ``trimmed(log_id, trim_point)``
        returns (None: none), in the same atomic write.

        What expired is decided without holding the writers' lock (``backlog_ms_of`` and
        ``trimmed`` are called then; reading which entries sit in segment files too): partitions
        other than the newest take no new entries, and what a log deletion changed meanwhile is
        checked again. Then one write batch, with one sync, changes everything under the lock.
        """
        with self._retention_lock:
            plan = self._retention_plan(self._clock.now_ms(), backlog_ms_of, trimmed)
            if not plan.drop and not plan.reclaim:
                return []
            with self._writing():
                dropped, reclaimed, bodies = self._apply_retention(plan)
            if bodies:
                self._wake_ledger_readers()
            for pid in dropped:
                self._drop_family(pid)
        for pid, log_id in reclaimed:
            try:
                self._segments[pid].punch(plan.ranges[(pid, log_id)])  # now that nothing refers to them
                self._partitions[pid][1].compact_range(fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0))
            except Exception:  # dropped meanwhile, or a failed compaction: only space is at stake
                continue
        return dropped

    def _retention_plan(self, now_ms: int, backlog_ms_of: Callable[[int], int | None],
                        trimmed: Callable[[int, int], bytes | None] | None) -> _RetentionPlan:
        """What a retention pass would drop and reclaim now (without the writers' lock)."""
        with self._lock:
            self._check_writable()
            newest = max(self._partitions, default=0)
            old = {pid: dict(self._directory[pid]) for pid in sorted(self._partitions) if pid != newest}
        backlogs: dict[int, int | None] = {}

        def backlog(log_id: int) -> int | None:
            if log_id not in backlogs:
                backlogs[log_id] = backlog_ms_of(log_id)
            return backlogs[log_id]

        plan = _RetentionPlan(now_ms, backlog)
        for pid, entries in old.items():
            if not self._all_expired(entries, plan):
                break
            plan.drop[pid] = entries
        for pid, entries in old.items():
            if pid not in plan.drop:
                gone = {log_id: d for log_id, d in entries.items() if self._log_expired(log_id, d, plan)}
                if gone:
                    plan.reclaim[pid] = gone
                    for log_id in gone:
                        plan.ranges[(pid, log_id)] = self._segment_ranges(pid, log_id)
        if trimmed is not None:  # a change for each trim point the pass may set (see _apply_retention)
            for entries in (*plan.drop.values(), *plan.reclaim.values()):
                for log_id, d in entries.items():
                    if (log_id, d.lsn_max) not in plan.ledger:
                        plan.ledger[(log_id, d.lsn_max)] = trimmed(log_id, d.lsn_max)
        return plan

    def _all_expired(self, entries: dict[int, fmt.DirEntry], plan: _RetentionPlan) -> bool:
        return all(self._log_expired(log_id, d, plan) for log_id, d in entries.items())

    def _log_expired(self, log_id: int, d: fmt.DirEntry, plan: _RetentionPlan) -> bool:
        """Whether none of the log's records in a partition (``d``) is retained."""
        if d.lsn_max <= self._trim.get(log_id, 0):
            return True
        backlog_ms = plan.backlog_ms_of(log_id)
        return backlog_ms is not None and d.timestamp_ms_max < plan.now_ms - backlog_ms

    def _apply_retention(self, plan: _RetentionPlan) -> tuple[list[int], list[tuple[int, int]], list[bytes]]:
        """Carry out ``plan`` as far as it still holds, in one write batch (under the writers'
        lock); return the partitions dropped, the ``(partition, log)`` pairs reclaimed and the
        ledger entries written."""
        batch = WriteBatch(raw_mode=True)
        raised: dict[int, int] = {}

        def gone(log_id: int, d: fmt.DirEntry) -> None:
            if d.lsn_max > max(self._trim.get(log_id, 0), raised.get(log_id, 0)):
                raised[log_id] = d.lsn_max

        dropped: list[int] = []
        for pid in plan.drop:
            entries = self._directory.get(pid)
            if entries is None or not self._all_expired(entries, plan):
                break  # a log deleted meanwhile only takes entries away: not reached
            for log_id, d in entries.items():
                gone(log_id, d)
                batch.delete(P_DIRECTORY + u64(pid) + u64(log_id), self._meta_handle)
            batch.delete(P_PARTITION + u64(pid), self._meta_handle)
            dropped.append(pid)
        reclaimed: list[tuple[int, int]] = []
        for pid, logs in plan.reclaim.items():
            handle = self._partitions[pid][2]
            for log_id, d in logs.items():
                if self._directory[pid].get(log_id) != d:
                    continue  # its data was deleted meanwhile
                gone(log_id, d)
                batch.delete_range(fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0), handle)
                batch.delete(P_DIRECTORY + u64(pid) + u64(log_id), self._meta_handle)
                reclaimed.append((pid, log_id))
        for log_id, lsn in raised.items():
            batch.put(P_TRIM + u64(log_id), u64(lsn), self._meta_handle)
        bodies = [body for log_id, lsn in sorted(raised.items()) if (body := plan.ledger.get((log_id, lsn)))]
        kept = self._ledger_add(batch, bodies) if bodies else None
        self._apply(batch, sync=False)
        if kept is not None:
            self._ledger_kept(kept)
        self.sync_wal()
        with self._lock:
            self._trim.update(raised)
            for pid, log_id in reclaimed:
                self._sizes[pid] -= self._directory[pid].pop(log_id).size_bytes
            for pid in dropped:
                _, cf, _ = self._partitions.pop(pid)
                del self._directory[pid]
                self._sizes.pop(pid, None)
                self._dropping[pid] = (cf, self._segments.pop(pid))
        return dropped, reclaimed, bodies

    def _drop_family(self, pid: int) -> None:
        """Close and drop the column family and segment of a partition retention unregistered (no
        writer holds the writers' lock for it: only the newest partition takes writes, and
        :meth:`close` waits for the pass)."""
        cf, segment = self._dropping.pop(pid)
        cf.close()
        try:
            self._db.drop_column_family(cf_name(pid))
        except Exception as exc:  # unregistered now: the next open drops it, and its segment
            raise self._fail_stop(StorageError(f"cannot drop partition {pid}: {exc}")) from exc
        segment.remove()  # its descriptor closes with the last reader holding it
