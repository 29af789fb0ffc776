"""Reading a queue partition's log: what a gap means, what a chunk yields, when a partition is drained.

Three readers walk a queue partition's log: a consumer's cursor (a tailing reader, in a
transaction), a FIFO claim (up to the first chunk still in progress) and ``read_committed`` (a
range, outside any transaction). They share these rules, written once here:

- a gap: BRIDGE and HOLE hold nothing; TRIM above the reader's position means entries it never
  delivered were trimmed away (:class:`LsnOutOfRangeError`, never a silent skip); DATALOSS is
  :class:`CorruptionError`; SEALED is the log's end;
- a chunk, judged by a snapshot: VISIBLE yields its entries from the position on, within the
  read's entry and byte limits; SKIP (aborted, timed out) is stepped over; WAIT (in progress, or
  begun after the snapshot) stops the reader before it;
- a partition is *drained* once sealed and its position is past the final LSN.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import NamedTuple

from seaway._invariant import invariant
from seaway.errors import CorruptionError, LsnOutOfRangeError
from seaway.log import Gap, GapType
from seaway.queues._records import DataRef, Position, entries_within
from seaway.txn import Visibility


class Entry(NamedTuple):
    write_pointer: int
    counter: int
    payload: bytes

    @property
    def id(self) -> tuple[int, int]:
        """The entry's id: the producer transaction's write pointer and its counter in it."""
        return self.write_pointer, self.counter


def trimmed_error(log_id: int, position: Position, trim_lsn: int) -> LsnOutOfRangeError:
    """Entries trimmed from a queue partition's log before this reader delivered them (the log
    trimmed by hand, or another instance of the consumer acknowledged them)."""
    return LsnOutOfRangeError(
        f"queue partition log {log_id}: the entries up to LSN {trim_lsn} were acknowledged and evicted, or "
        f"trimmed by hand; a read from {tuple(position)} finds them gone (a Consumer: another instance "
        "acknowledged them, or they are lost; it starts again from its committed position as stored)")


def after_gap(gap: Gap, position: Position, log_id: int) -> tuple[Position, bool]:
    """Where a reader at ``position`` goes on after ``gap``, and whether the log ended there."""
    if gap.type is GapType.DATALOSS:
        raise CorruptionError(f"queue partition log {log_id} lost entries {gap.lsn_lo}-{gap.lsn_hi}")
    if gap.type is GapType.TRIM and gap.lsn_hi >= position.lsn:
        raise trimmed_error(log_id, position, gap.lsn_hi)
    if gap.type is GapType.SEALED:  # past the final LSN: the log has nothing more
        return max(position, Position(gap.lsn_lo, 0)), True
    return max(position, Position(gap.lsn_hi + 1, 0)), False


class Budget:
    """What one read may still return: entries and payload bytes (its first entry goes whatever
    its size)."""

    def __init__(self, entries_max: int, bytes_max: int) -> None:
        self.entries_left = entries_max
        self.bytes_left = bytes_max
        self.taken = False

    @property
    def spent(self) -> bool:
        return self.entries_left <= 0 or self.bytes_left <= 0


def take_chunk(lsn: int, write_pointer: int, counters: list[int], payloads: list[bytes], position: Position,
               budget: Budget, stop_max: int | None = None) -> tuple[list[Entry], Position, bool]:
    """The entries of a visible chunk at ``lsn`` a reader at ``position`` takes within ``budget``
    (and before entry ``stop_max``, an end inside the chunk), the position after them, and whether
    the reader is done with the chunk."""
    first = position.entry if lsn == position.lsn else 0
    limit = len(payloads) if stop_max is None else min(len(payloads), stop_max)
    stop, taken = entries_within(payloads, first, min(limit - first, budget.entries_left), budget.bytes_left,
                                 not budget.taken)
    entries = [Entry(write_pointer, counters[i], payloads[i]) for i in range(first, stop)]
    if entries:
        budget.entries_left -= len(entries)
        budget.bytes_left = max(0, budget.bytes_left - taken)
        budget.taken = True
    done = stop == len(payloads)
    return entries, Position(lsn + 1, 0) if done else Position(lsn, stop), done


class Chunk(NamedTuple):
    """A decoded chunk: one producer transaction's entries, in one record of the log. A pointer
    chunk's ``payloads`` are read from its data chunks (see :mod:`seaway.queues._data`): None when
    they are gone, which is an error only if the chunk is to be delivered; until they are read,
    ``ref`` says where they are (None once read, and for a chunk holding its payloads)."""

    lsn: int
    write_pointer: int
    counters: list[int]
    payloads: list[bytes] | None
    ref: DataRef | None = None


class Outcome(enum.Enum):
    """What a reader does after :func:`read_item`."""

    NEXT = "next"
    """Done with the item (a gap, a chunk stepped over or already delivered): go on with the next."""
    TAKEN = "taken"
    """A visible chunk, taken to its end (or to the read's end inside it): go on with the next."""
    PARTIAL = "partial"
    """The budget (or the read's end) ends inside the chunk: stop, the next read goes on in it."""
    WAIT = "wait"
    """A chunk of a transaction still in progress: stop before it."""
    SEALED = "sealed"
    """The log's end."""


def read_item(item: Gap | Chunk, position: Position, visibility: Callable[[int], Visibility], budget: Budget,
              log_id: int, stop_max: int | None = None,
              resolve: Callable[[Chunk], Chunk] | None = None) -> tuple[list[Entry], Position, Outcome]:
    """One step of every reader of a queue partition's log, written once: the entries a reader at
    ``position`` takes from ``item`` (a gap, or a chunk judged by ``visibility``) within ``budget``
    (and before entry ``stop_max`` of the chunk), where it goes on, and what it does next. A
    pointer chunk whose payloads are not read yet is handed to ``resolve`` once it is to be
    delivered (so that nothing waits for the data of a chunk stepped over or waited at)."""
    if isinstance(item, Gap):
        position, sealed = after_gap(item, position, log_id)
        return [], position, Outcome.SEALED if sealed else Outcome.NEXT
    if item.lsn < position.lsn:  # below a position inside a chunk: already delivered
        return [], position, Outcome.NEXT
    judged = visibility(item.write_pointer)
    if judged is Visibility.WAIT:
        return [], position, Outcome.WAIT
    if judged is Visibility.SKIP:
        return [], Position(item.lsn + 1, 0), Outcome.NEXT
    if item.ref is not None:
        invariant(resolve is not None, "a pointer chunk reached read_item with its payloads not read")
        item = resolve(item)  # type: ignore[misc]
    if item.payloads is None:  # its entries acknowledged and evicted (by another instance of the reader), or lost
        raise LsnOutOfRangeError(
            f"queue partition log {log_id}: the chunk at LSN {item.lsn} points at a data chunk of its queue's data "
            "log that is gone: its entries were acknowledged and evicted (by another instance of the consumer), or "
            "the data log was trimmed by hand")
    entries, position, done = take_chunk(item.lsn, item.write_pointer, item.counters, item.payloads, position,
                                         budget, stop_max)
    return entries, position, Outcome.TAKEN if done else Outcome.PARTIAL


def drained(final_lsn: int | None, position: Position) -> bool:
    """A queue partition read to its end: sealed (its final LSN known) and ``position`` past it."""
    return final_lsn is not None and position.lsn > final_lsn
