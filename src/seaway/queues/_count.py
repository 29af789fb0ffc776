"""Counting a queue partition's committed entries by position without reading their payloads: what
:meth:`Queues.read_committed` would return, as a count.

A planner (Spark's driver) needs to know how many committed entries a range holds and where a read
of at most so many ends, not the entries: the executors read them. The chunks of committed
transactions are counted from the entry counts their producers recorded with the commit (see
:mod:`seaway.queues._lag`): a metadata scan, no log read. Only the LSNs the counts do not cover are
read from the log and judged as ``read_committed`` judges them: chunks of aborted transactions
(stepped over), of transactions still in progress (the count stops before them), committed after
the counts were scanned, or written by a version that recorded no counts; and gaps. So a range
whose transactions all committed is counted without one record read, and the position returned is
the one ``read_committed`` returns for the same arguments.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from seaway.errors import InvalidArgumentError
from seaway.log import Gap, Record
from seaway.queues._chunks import after_gap, trimmed_error
from seaway.queues._lag import counts_key, counts_prefix, decode_counts
from seaway.queues._ranges import _partition_log, check_position
from seaway.queues._records import NAMESPACE, Position, chunk_count, chunk_write_pointer
from seaway.txn import Snapshot, Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues

COUNT_ENTRIES_MAX = 10_000_000
"""Entries one :meth:`Queues.count_committed` counts at most."""
_PAGE = 1_000


class CommittedCount(NamedTuple):
    """What :meth:`Queues.count_committed` counted: the committed entries from the start, the
    position after them (where ``read_committed`` of as many entries would end), and whether it
    stopped at a chunk of a transaction still in progress."""

    entries: int
    next: Position
    blocked: bool
    records_read: int
    """Records read from the log because the recorded counts did not cover them (0 when every
    chunk counted was a committed transaction's)."""


class _Walk:
    """A count in progress from ``position``, within ``left`` entries, up to entry ``end`` (excluded)."""

    def __init__(self, start: Position, end: Position | None, entries_max: int) -> None:
        self.position = start
        self.end = end
        self.left = entries_max
        self.count = 0
        self.records_read = 0

    def chunk(self, lsn: int, entries: int) -> bool:
        """Take the committed chunk at ``lsn`` (of ``entries`` entries); False once the count stops."""
        if lsn < self.position.lsn:
            return True
        first = self.position.entry if lsn == self.position.lsn else 0
        limit = entries if self.end is None or lsn < self.end.lsn else min(entries, self.end.entry)
        take = max(0, min(limit - first, self.left))
        self.count += take
        self.left -= take
        if first + take < entries:
            self.position = Position(lsn, first + take)
            return False
        self.position = Position(lsn + 1, 0)
        return not (self.left <= 0 or (self.end is not None and self.position >= self.end))


def count_committed(queues: Queues, queue: str, group: str, generation: int, partition: int, start: Position,
                    end: Position | None, entries_max: int, snapshot: Snapshot | None) -> CommittedCount:
    """See :meth:`Queues.count_committed`."""
    start = check_position(start, "start")
    end = None if end is None else check_position(end, "end")
    if not isinstance(entries_max, int) or isinstance(entries_max, bool) or not 1 <= entries_max <= COUNT_ENTRIES_MAX:
        raise InvalidArgumentError(f"entries_max is in [1, {COUNT_ENTRIES_MAX}], got {entries_max!r}")
    handle = queues.logs.get(_partition_log(queues, queue, group, generation, partition))
    snapshot = snapshot or queues.txn.snapshot()
    # The tail before the counts: a chunk up to it that committed before the scan is in them.
    until = handle.tail_lsn() if end is None else (end.lsn if end.entry > 0 else end.lsn - 1)
    walk = _Walk(start, end, entries_max)
    if (end is not None and end <= start) or start.lsn > until:
        return CommittedCount(0, start, False, 0)
    trim = handle.trim_point()
    if trim >= start.lsn:  # acknowledged and trimmed after a reset moved the position below them?
        start = queues.start_position(handle.id, start)
    if trim >= start.lsn:  # as a read from there meets the trim gap (the counts may outlive a trim by hand)
        raise trimmed_error(handle.id, start, trim)
    judge = functools.partial(queues.aborted.of(handle.id).judge, snapshot)
    prefix = counts_prefix(handle.id)
    scan_from: bytes | None = counts_key(handle.id, start.lsn)
    cursor = start.lsn  # LSNs below it are accounted for
    while scan_from is not None:
        rows = queues.meta.scan(NAMESPACE, prefix=prefix, start=scan_from, limit=_PAGE)
        scan_from = rows[-1][0] + b"\0" if len(rows) == _PAGE else None
        # Each key holds one transaction's chunks in this log and is named by its last one: the
        # chunks of one page up to its last key's LSN, in order. A chunk of a transaction whose
        # last chunk lies further (interleaved with others) is read from the log instead.
        page_until = until if scan_from is None else min(until, int(rows[-1][0][len(prefix):], 16))
        known = sorted((lsn, entries) for _, found in rows for lsn, entries, _ in decode_counts(found.value)
                       if cursor <= lsn <= page_until)
        for lsn, entries in known:
            if lsn < cursor:
                continue
            if lsn > cursor:
                stopped = _read_log(handle, cursor, lsn - 1, walk, judge)
                if stopped is not None:
                    return stopped
            if not walk.chunk(lsn, entries):
                return CommittedCount(walk.count, walk.position, False, walk.records_read)
            cursor = lsn + 1
        if page_until >= until:
            break
    if cursor <= until:
        stopped = _read_log(handle, cursor, until, walk, judge)
        if stopped is not None:
            return stopped
    position = walk.position
    if end is None or end.entry == 0:  # everything up to ``until`` was accounted for
        position = max(position, Position(until + 1, 0))
    return CommittedCount(walk.count, position, False, walk.records_read)


def _read_log(handle: Any, lsn_from: int, lsn_until: int, walk: _Walk,
              judge: Callable[[int], Visibility]) -> CommittedCount | None:
    """Account for LSNs the counts did not cover by reading them: a count that stops among them,
    or None to go on after them."""
    with contextlib.closing(handle.read(lsn_from, lsn_until)) as items:
        for item in items:
            if isinstance(item, Gap):
                walk.position, sealed = after_gap(item, walk.position, handle.id)
                if sealed:
                    return CommittedCount(walk.count, walk.position, False, walk.records_read)
                continue
            if not isinstance(item, Record) or item.lsn < walk.position.lsn:
                continue
            walk.records_read += 1
            seen = judge(chunk_write_pointer(item.payload))
            if seen is Visibility.WAIT:
                return CommittedCount(walk.count, walk.position, True, walk.records_read)
            if seen is Visibility.SKIP:
                walk.position = Position(item.lsn + 1, 0)
                continue
            if not walk.chunk(item.lsn, chunk_count(item.payload)):
                return CommittedCount(walk.count, walk.position, False, walk.records_read)
    return None
