"""Consumers: dequeue inside a transaction; the position commits with the transaction's writes.

Consumer ``c`` of a group reads its partition's log from its committed position, a chunk at a
time, and judges each chunk by the transaction's snapshot: a committed one is delivered, an
aborted or timed-out one is stepped over, and at one still in progress (or begun after the
snapshot) the consumer stops - a later transaction will see it committed or aborted, so a producer
that commits late is never skipped. What it delivered moves its position, which the transaction
stages as a metadata write applied with its commit (and a conflict key, so that two instances of
the same consumer cannot both commit the same entries). Abort gives the entries back: the consumer
goes back to its committed position and delivers them again. Committed positions are where the
partition's log is trimmed: whole ranges, never one entry at a time.

During a resize the consumer first drains the old partitions it inherits (see
:meth:`Queues.resize_group`), then waits at the barrier until every old partition is drained.

A FIFO group's claims are in :mod:`seaway.queues._claims`; reading one log, in
:mod:`seaway.queues._cursor`, by the rules of :mod:`seaway.queues._chunks`.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from seaway.errors import (
    ConditionFailedError,
    ConsumerOutsideGroupError,
    CorruptionError,
    InvalidArgumentError,
    LsnOutOfRangeError,
    OverloadedError,
    SeawayError,
)
from seaway.log import Record
from seaway.queues._chunks import Budget, Entry
from seaway.queues._claims import FifoClaims
from seaway.queues._cursor import Cursor, Judge, Slot, SlotKind, Source
from seaway.queues._records import (
    NAMESPACE,
    READ_BYTES_DEFAULT,
    GroupRecord,
    Layout,
    Strategy,
    check_bytes_max,
    position_key,
    reset_state_of,
    resets_key,
    skipped_key,
)
from seaway.txn import TxnStatus, Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues
    from seaway.txn import Transaction

DEQUEUE_MAX = 10_000
WAIT_PAUSE_S_MIN = 0.002
WAIT_PAUSE_S_MAX = 0.05
"""A dequeue stopped at a chunk still in progress waits for its transaction to end
(``sw.txn.wait_ended``, woken by the end); only where that cannot help (a chunk whose write
pointer a fresh snapshot still waits at though the manager says it ended, or a server too busy
to hold the wait) does it look again after these pauses (doubling)."""
CONSUMER_RECORD_REFRESH_S = 1.0
"""How long a consumer goes on with the group's record it read while it keeps getting entries (a
resize seals its log, which it notices at once)."""
FIFO_EVICT_EVERY = 8
"""A FIFO consumer trims the shared log below every claim once every this many commits."""


class Consumer(FifoClaims):
    """Consumer ``consumer_id`` of a queue's group. Not thread-safe: one transaction at a time."""

    def __init__(self, queues: Queues, queue: str, group: str, consumer_id: int) -> None:
        if not isinstance(consumer_id, int) or isinstance(consumer_id, bool) or consumer_id < 0:
            raise InvalidArgumentError(f"a consumer id is a non-negative integer, got {consumer_id!r}")
        self._queues = queues
        self.queue = queue
        self.group = group
        self.consumer_id = consumer_id
        self._cursors: dict[Slot, Cursor] = {}
        self._tx: int | None = None
        self._touched: set[Slot] = set()
        self._fifo_commits = 0
        self._record: tuple[GroupRecord | None, float] = (None, 0.0)
        self._stale = False
        self._resets: int | None = None
        """The group's reset count when this consumer's cursors were made (see ``reset_group``)."""
        self._resets_version = 0
        """The version of the group's reset count as read with it."""
        self._claims_fenced = False
        """A FIFO reset is in progress (as read with the count): claim nothing in this transaction."""
        self._idle_at: tuple[int, int] | None = None
        """After a FIFO claim found nothing past the claim pointer: the log and that pointer (what
        a dequeue with time left waits on)."""
        self.blocked_by: int | None = None
        """After a :meth:`dequeue` that returned nothing because the consumer's next entry is in a
        transaction still in progress: that transaction's id (else None). The consumer waits for it
        to end (``sw.txn.status(id)``; an operator may ``sw.txn.abort(id)`` a stuck one)."""

    def __repr__(self) -> str:
        return f"Consumer({self.queue!r}, {self.group!r}, {self.consumer_id})"

    def close(self) -> None:
        """Stop reading; trim what this consumer's commits acknowledged."""
        for cursor in self._cursors.values():
            cursor.close()
            with contextlib.suppress(SeawayError):
                cursor.trim()
        self._cursors.clear()
        with contextlib.suppress(SeawayError):
            self._queues.evict_data_soon(self.queue)

    def _drop_cursors(self) -> None:
        for where in list(self._cursors):
            if where not in self._touched:
                self._cursors.pop(where).close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cursor(self, generation: int, partition: int, log_id: int) -> Cursor:
        where = Slot(generation, SlotKind.PARTITION, partition)
        cursor = self._cursors.get(where)
        if cursor is None:
            committed = self._queues.start_position(
                log_id, self._queues.position(self.queue, self.group, generation, partition))
            cursor = self._cursors[where] = Cursor(self._queues, where, log_id, committed)
        return cursor

    def _sources(self) -> list[Source] | None:
        """What to read now, in order, or None at a resize's barrier (nothing to read until every
        old partition is drained)."""
        record, read_s = self._record
        if (record is None or record.previous is not None or self._stale
                or time.monotonic() - read_s >= CONSUMER_RECORD_REFRESH_S):
            record = self._queues.group_record(self.queue, self.group)[0]
            self._record, self._stale = (record, time.monotonic()), False
        current = record.current
        if self.consumer_id >= current.size:
            raise ConsumerOutsideGroupError(f"consumer {self.consumer_id} is outside group {self.group!r} of size "
                                            f"{current.size}")
        old = record.previous
        if old is None:
            return self._of(current, [self.consumer_id])
        inherited = [p for p in range(old.size) if p % current.size == self.consumer_id]
        undrained = [source for source in self._of(old, inherited)
                     if not self._queues.drained(self.queue, self.group, old,
                                                  source.owners if source.partition is None
                                                  else [source.partition])]
        if undrained:
            return undrained
        return self._of(current, [self.consumer_id]) if self._queues.finish_resize(self.queue, self.group) else None

    @staticmethod
    def _of(layout: Layout, owners: list[int]) -> list[Source]:
        if layout.strategy is Strategy.FIFO:
            return [Source(layout, None, layout.logs[0], tuple(owners))]
        return [Source(layout, p, layout.logs[p], ()) for p in owners if p < len(layout.logs)]

    def dequeue(self, tx: Transaction, entries_max: int = 500, timeout_s: float = 0.0, *,
                bytes_max: int = READ_BYTES_DEFAULT) -> list[Entry]:
        """Up to ``entries_max`` entries of this consumer's share, in order, as part of ``tx``:
        acknowledged when ``tx`` commits, given back (to this consumer) if it aborts. Waits up to
        ``timeout_s`` for the first entry; returns what it has otherwise (possibly nothing). Stops
        before an entry that would take its payloads past ``bytes_max`` bytes (at most
        READ_BYTES_MAX), but returns at least one entry when it has one."""
        tx.check_open()
        if not isinstance(entries_max, int) or not 1 <= entries_max <= DEQUEUE_MAX:
            raise InvalidArgumentError(f"entries_max is in [1, {DEQUEUE_MAX}], got {entries_max!r}")
        check_bytes_max(bytes_max)
        if self._tx is not None and self._tx != tx.id:
            raise InvalidArgumentError(f"{self!r} is dequeuing in transaction {self._tx}: commit or abort it first")
        if self._tx is None:
            self._check_reset(tx)
        judge = Judge(tx.snapshot, self._queues.aborted)
        deadline = time.monotonic() + timeout_s
        pause_s = WAIT_PAUSE_S_MIN
        while True:
            try:
                out = self._dequeue_once(tx, judge, timeout_s, Budget(entries_max, bytes_max))
            except (LsnOutOfRangeError, CorruptionError):
                # The cursors' read-ahead is no longer to be trusted: the next dequeue starts again
                # from the committed positions as stored (and raises again if entries are gone).
                self._drop_cursors()
                raise
            remaining_s = deadline - time.monotonic()
            idle_at, self._idle_at = self._idle_at, None
            if not out and not judge.blocked and idle_at is not None and remaining_s > 0:
                # A FIFO log with nothing past the claim pointer: wait for a record there, then
                # claim again (a chunk still in progress is then waited for as below).
                if not self._wait_appended(*idle_at, remaining_s):
                    break
                timeout_s = max(0.0, deadline - time.monotonic())
                continue
            if out or not judge.blocked or judge.blocked_by is None or remaining_s <= 0:
                break
            # Stopped at a chunk still in progress: wait for its transaction to end (its chunk
            # cannot be stepped over), woken by the end itself, then judge by a fresh snapshot.
            blocker = judge.blocked_by
            if not self._wait_ended(blocker, remaining_s):
                break  # still in progress at the deadline
            judge.fresh, judge.blocked = self._queues.txn.snapshot(), False
            timeout_s = 0.0
            if judge.fresh.visibility(blocker) is Visibility.WAIT:
                # Ended, yet a fresh snapshot waits at it (a write pointer the manager never
                # issued): nothing will wake this wait, so look again after a pause.
                time.sleep(min(pause_s, max(0.0, deadline - time.monotonic())))
                pause_s = min(2 * pause_s, WAIT_PAUSE_S_MAX)
        self.blocked_by = judge.blocked_by if not out and judge.blocked else None
        if not out or any(cursor.ended for cursor in self._cursors.values()):
            self._stale = True  # idle, or a log ended (a resize): read the group again next time
        return out

    def _wait_appended(self, log_id: int, lsn: int, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for a record at or after ``lsn`` of log ``log_id`` (gaps do not
        count: a bridge or a trim there wakes no one); whether one came."""
        deadline = time.monotonic() + timeout_s
        with self._queues.logs.reader(buffered_items_max=16) as reader:
            reader.start_reading(log_id, lsn)
            while (left_s := deadline - time.monotonic()) > 0:
                items = reader.read(16, timeout_s=left_s)
                if any(isinstance(item, Record) for item in items):
                    return True
                if reader.done:
                    return False
        return False

    def _wait_ended(self, write_pointer: int, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for transaction ``write_pointer`` to end; whether it did. A
        server too busy to hold the wait (OVERLOADED) has it done as a pause."""
        try:
            return bool(self._queues.txn.wait_ended([write_pointer], timeout_s))
        except OverloadedError:
            time.sleep(min(WAIT_PAUSE_S_MAX, timeout_s))
            return True

    def reads(self) -> list[tuple[str, bytes]]:
        """The metadata keys this consumer's transactions read at their first dequeue (the group's
        reset count): begin with them, ``sw.txn.begin(reads=consumer.reads())`` or
        ``tx.commit_and_begin(reads=consumer.reads())``, and the dequeue takes them from the begin
        (read after its snapshot, as the dequeue would read them) instead of reading them itself."""
        return [(NAMESPACE, resets_key(self.queue, self.group))]

    def _check_reset(self, tx: Transaction) -> None:
        """At a transaction's first dequeue: if the group was reset since the cursors were made,
        drop them, so that they start again from the positions as stored. The count is read after
        the transaction began (by its begin, when it was begun with :meth:`reads`): a reset that
        committed before its snapshot is seen, and one that commits after conflicts with this
        transaction's positions instead."""
        key = (NAMESPACE, resets_key(self.queue, self.group))
        read = (reset_state_of(tx.reads[key], self.group),) if key in tx.reads else ()
        resets, self._resets_version, self._claims_fenced = self._reset_state(*read)
        if self._resets is not None and resets != self._resets:
            self._drop_cursors()
        self._resets = resets

    def _reset_state(self, read: tuple[int, int, int | None] | None = None) -> tuple[int, int, bool]:
        """The group's reset count, its version, and whether a FIFO reset in progress fenced the
        claims (see ``Queues._fence_claims``); a fence whose reset ended without committing is
        cleared (a reset that committed replaced it). ``read``: the state as the transaction's
        begin read it (else read now)."""
        for _ in range(3):
            count, version, pending = read or self._queues.reset_state(self.queue, self.group)
            read = None  # read again after clearing a void fence
            if pending is None:
                return count, version, False
            status = self._queues.txn.status(pending)
            if status is TxnStatus.IN_PROGRESS:
                return count, version, True
            if status is not TxnStatus.COMMITTED:  # the reset failed: its fence is void
                with contextlib.suppress(ConditionFailedError):
                    self._queues.meta.batch().expect_version(
                        NAMESPACE, resets_key(self.queue, self.group), version).put(
                        NAMESPACE, resets_key(self.queue, self.group), str(count).encode()).commit()
        return count, version, True  # changing under us: claim next time

    def _dequeue_once(self, tx: Transaction, judge: Judge, timeout_s: float, budget: Budget) -> list[Entry]:
        out: list[Entry] = []
        for source in self._sources() or ():
            if source.partition is None:
                out.extend(self._dequeue_claims(tx, judge, source, budget))
                if budget.spent:
                    break
                continue
            cursor = self._cursor(source.layout.generation, source.partition, source.log_id)
            before = cursor.pending
            out.extend(cursor.take(judge, budget, timeout_s if not out else 0.0))
            if cursor.pending != before:
                self._stage(tx, cursor, position_key(self.queue, self.group, cursor.generation, cursor.slot.number),
                            cursor.pending.encode())
            if budget.spent or not cursor.ended:
                break
        return out

    def _stage(self, tx: Transaction, cursor: Cursor, key: bytes, value: bytes | None) -> None:
        """Stage the cursor's new position (a partition's, or a claim's: None when it is done)."""
        if self._tx is None:
            self._tx = tx.id
            tx.after_end(self._ended)
        if value is None:
            tx.stage_delete(NAMESPACE, key)
        else:
            tx.stage_put(NAMESPACE, key, value)
        tx.add_conflicts(NAMESPACE.encode() + b"/" + key)
        self._touched.add(cursor.slot)

    def skip(self, tx: Transaction, entries: list[Entry]) -> None:
        """Count ``entries`` as poison, skipped without processing (they were dequeued in ``tx``
        and are acknowledged by its commit like the others); ``describe`` shows the count."""
        tx.check_open()
        key = skipped_key(self.queue, self.group, self.consumer_id)
        found = self._queues.meta.get(NAMESPACE, key)
        tx.stage_put(NAMESPACE, key, str((0 if found is None else int(found.value)) + len(entries)).encode())
        tx.add_conflicts(NAMESPACE.encode() + b"/" + key)

    def _ended(self, committed: bool) -> None:
        for where in self._touched:
            cursor = self._cursors.get(where)
            if cursor is None:
                continue
            if committed:
                cursor.committed_now()
            else:  # back to the committed position as stored: another instance may have moved it
                cursor.close()
                del self._cursors[where]
        evict: tuple[int, int] | None = None
        if committed and any(where.kind is SlotKind.CLAIM for where in self._touched):
            self._fifo_commits += 1
            if self._fifo_commits % FIFO_EVICT_EVERY == 0:
                generation = max(where.generation for where in self._touched if where.kind is SlotKind.CLAIM)
                cursor = next(c for w, c in self._cursors.items()
                              if w.generation == generation and w.kind is SlotKind.CLAIM)
                evict = generation, cursor.log_id
        self._touched.clear()
        self._tx = None  # before the eviction: whatever it raises, the consumer is free again
        for where, cursor in list(self._cursors.items()):  # partitions drained and gone after a resize
            if cursor.ended and cursor.committed == cursor.pending:
                cursor.close()
                del self._cursors[where]
        if evict is not None:
            # Best-effort, after the commit (which must not fail for it): the next one tries again.
            with contextlib.suppress(SeawayError):
                self._queues.evict_claimed(self.queue, self.group, *evict)
        if committed:  # the data log below what every group acknowledged (at most every few seconds)
            self._queues.evict_data_soon(self.queue)
