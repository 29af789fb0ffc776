"""Reading a queue partition by position, outside any transaction, and acknowledging up to a position.

For a processor that keeps its own record of what it read (Spark's checkpoint): it reads a range
of positions of a consumer's partition, gets the same entries however often it reads that range
again, and later acknowledges up to a position, which commits the group's position there (so the
partition's log can be trimmed) exactly as a consumer's commit would.

A chunk is judged by a snapshot: committed, its entries are read; aborted (or timed out), it is
stepped over; still in progress (or begun after the snapshot), the read stops before it. Once every
chunk before a position is committed or aborted, nothing can change what lies before it: the
transaction manager keeps an aborted transaction on its invalid list for as long as its chunks
are in the log (see docs/transactions.md), and a committed one stays committed. So a range that
ends at a position a read returned (a read stops at the first chunk in progress) reads the same,
entry for entry, every time, until the group acknowledges past it and the log is trimmed.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from seaway.errors import (
    InvalidArgumentError,
    TransactionConflictError,
    UnknownLogError,
)
from seaway.log import Gap, Record
from seaway.queues._chunks import Budget, Chunk, Entry, Outcome, read_item
from seaway.queues._cursor import resolved
from seaway.queues._records import (
    NAMESPACE,
    READ_BYTES_DEFAULT,
    Layout,
    Position,
    Strategy,
    check_bytes_max,
    chunk_write_pointer,
    position_key,
)
from seaway.txn import Snapshot, Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues

RESOLVE_PAGE = 64
"""Records of a range read whose pointer chunks are resolved together."""
READ_ENTRIES_MAX = 10_000
"""Entries one :meth:`Queues.read_committed` returns at most (read a long range in pieces)."""
ACKNOWLEDGE_ATTEMPTS_MAX = 8
"""Attempts of an acknowledgement whose transaction conflicted (a consumer instance committed
its position meanwhile)."""


class CommittedRead(NamedTuple):
    """What :meth:`Queues.read_committed` read: committed entries in order, the position the next
    read starts from, and whether it stopped at a chunk of a transaction still in progress."""

    entries: list[Entry]
    next: Position
    blocked: bool


def check_position(position: object, what: str) -> Position:
    if (not isinstance(position, tuple) or len(position) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in position)
            or position[0] < 1 or position[1] < 0):
        raise InvalidArgumentError(f"{what} is a Position(lsn >= 1, entry >= 0), got {position!r}")
    return Position(*position)


def layout_of(queues: Queues, queue: str, group: str, generation: int) -> Layout | None:
    """The group's layout of ``generation``: the current one or the one a resize drains; None
    when that generation was drained and dropped at a resize's barrier."""
    record, _ = queues.group_record(queue, group)
    for layout in (record.current, record.previous):
        if layout is not None and layout.generation == generation:
            if layout.strategy is Strategy.FIFO:
                raise InvalidArgumentError(f"group {group!r} generation {generation} is FIFO: its consumers share "
                                           "one log by claims, which has no per-consumer positions to read by")
            return layout
    if generation > record.current.generation or generation < 1:
        raise InvalidArgumentError(f"group {group!r} has no generation {generation} (it is at "
                                   f"{record.current.generation})")
    return None


def _partition_log(queues: Queues, queue: str, group: str, generation: int, partition: int) -> int:
    layout = layout_of(queues, queue, group, generation)
    if layout is None:
        raise InvalidArgumentError(f"group {group!r} generation {generation} was drained and dropped at a resize's "
                                   "barrier: its entries were all acknowledged")
    if not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < layout.size:
        raise InvalidArgumentError(f"group {group!r} generation {generation} has partitions 0-{layout.size - 1}, "
                                   f"got {partition!r}")
    return layout.logs[partition]


def read_committed(queues: Queues, queue: str, group: str, generation: int, partition: int, start: Position,
                   end: Position | None, entries_max: int, snapshot: Snapshot | None,
                   bytes_max: int = READ_BYTES_DEFAULT) -> CommittedRead:
    """See :meth:`Queues.read_committed`."""
    start = check_position(start, "start")
    end = None if end is None else check_position(end, "end")
    if not isinstance(entries_max, int) or not 1 <= entries_max <= READ_ENTRIES_MAX:
        raise InvalidArgumentError(f"entries_max is in [1, {READ_ENTRIES_MAX}], got {entries_max!r}")
    check_bytes_max(bytes_max)
    handle = queues.logs.get(_partition_log(queues, queue, group, generation, partition))
    snapshot = snapshot or queues.txn.snapshot()
    # The last LSN to read: the tail now, or the one holding the end (the chunk ``end`` points
    # into when it is inside one, else the one before it).
    until = handle.tail_lsn() if end is None else (end.lsn if end.entry > 0 else end.lsn - 1)
    position = start
    out: list[Entry] = []
    if (end is not None and end <= start) or start.lsn > until:
        return CommittedRead(out, start, False)
    budget = Budget(entries_max, bytes_max)
    log_judge = queues.aborted.of(handle.id)
    judge = functools.partial(log_judge.judge, snapshot)
    with contextlib.closing(handle.read(start.lsn, until)) as items:
        for step in _resolved_items(queues, items):
            stop_max = None if end is None or isinstance(step, Gap) or step.lsn < end.lsn else end.entry
            entries, position, outcome = read_item(step, position, judge, budget, handle.id, stop_max)
            out.extend(entries)
            if outcome is Outcome.SEALED:
                break
            if outcome is Outcome.WAIT:
                return CommittedRead(out, position, True)
            if outcome is Outcome.PARTIAL or (outcome is Outcome.TAKEN and (
                    budget.spent or (end is not None and position >= end))):
                return CommittedRead(out, position, False)
        else:
            # Everything up to ``until`` was read: records or gaps, nothing is left below it.
            if end is None or end.entry == 0:
                position = max(position, Position(until + 1, 0))
    return CommittedRead(out, position, False)


def _resolved_items(queues: Queues, items: Iterator[object]) -> Iterator[Chunk | Gap]:
    """The items of a range read as chunks with their payloads, resolved a page at a time (one
    read of the data log per page, see :func:`resolved`)."""
    size = 4  # growing: a short read resolves little more than it delivers
    while True:
        page = list(itertools.islice(items, size))
        if not page:
            return
        yield from resolved(queues, page)
        size = min(2 * size, RESOLVE_PAGE)


def _check_decided(handle: Any, committed: Position, position: Position, snapshot: Snapshot,
                   partition: int) -> None:
    """Refuse to acknowledge up to ``position`` when a chunk before it (or the one it points into)
    belongs to a transaction still in progress: its entries would be acknowledged before they are
    committed, and trimmed away with the log. ``snapshot`` is taken after the log's tail was read,
    so every chunk up to the tail was appended by a transaction it knows."""
    last = position.lsn if position.entry > 0 else position.lsn - 1
    if not snapshot.in_progress or last < committed.lsn:
        return
    with contextlib.closing(handle.read(committed.lsn, last)) as items:
        for item in items:
            if isinstance(item, Record):
                write_pointer = chunk_write_pointer(item.payload)
                if snapshot.visibility(write_pointer) is Visibility.WAIT:
                    raise InvalidArgumentError(
                        f"partition {partition}'s position {tuple(position)} is past the chunk at LSN {item.lsn} of "
                        f"transaction {write_pointer}, still in progress: acknowledge up to Position({item.lsn}, 0) "
                        "at most, or once it is decided")


def acknowledge(queues: Queues, queue: str, group: str, generation: int, positions: Mapping[int, Position]) -> None:
    """See :meth:`Queues.acknowledge`."""
    if not isinstance(positions, Mapping):
        raise InvalidArgumentError(f"positions maps partitions to Positions, got {type(positions).__name__}")
    layout = layout_of(queues, queue, group, generation)
    if layout is None:
        return  # drained and dropped at a barrier: every position in it was acknowledged
    wanted: dict[int, Position] = {}
    for partition, given in positions.items():
        log_id = _partition_log(queues, queue, group, generation, partition)
        position = check_position(given, f"partition {partition}'s position")
        handle = queues.logs.get(log_id)
        tail = handle.tail_lsn()
        if position > Position(tail + 1, 0):
            raise InvalidArgumentError(f"partition {partition}'s position {tuple(position)} is past its log's tail "
                                       f"LSN {tail}: it would acknowledge entries not enqueued yet")
        _check_decided(handle, queues.position(queue, group, generation, partition), position,
                       queues.txn.snapshot(), partition)
        wanted[partition] = position
    for attempt in range(ACKNOWLEDGE_ATTEMPTS_MAX):
        tx = queues.txn.begin()
        try:
            moved: dict[int, Position] = {}
            for partition, position in wanted.items():
                # Never backwards: a lower position would deliver acknowledged entries again.
                if position > queues.position(queue, group, generation, partition):
                    key = position_key(queue, group, generation, partition)
                    tx.stage_put(NAMESPACE, key, position.encode())
                    tx.add_conflicts(NAMESPACE.encode() + b"/" + key)
                    moved[partition] = position
            if moved:  # else nothing to commit: the finally ends the transaction
                tx.commit()
        except TransactionConflictError:
            if attempt + 1 == ACKNOWLEDGE_ATTEMPTS_MAX:
                raise
            continue
        finally:
            tx.abort()  # does nothing once committed
        break
    for partition, position in moved.items():
        if position.lsn > 1:  # the log below the position holds acknowledged entries only
            with contextlib.suppress(UnknownLogError):
                handle = queues.logs.get(layout.logs[partition])
                if position.lsn - 1 > handle.trim_point():
                    queues.trim_acknowledged(handle.id, position.lsn - 1, handle)
    if moved:
        queues.evict_data_soon(queue)
    record, _ = queues.group_record(queue, group)
    if record.previous is not None and record.previous.generation == generation:
        queues.finish_resize(queue, group)
