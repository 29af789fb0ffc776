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
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from seaway._errors import (
    ConditionFailedError,
    ConsumerOutsideGroupError,
    CorruptionError,
    InvalidArgumentError,
    LsnOutOfRangeError,
    SeawayError,
    UnknownLogError,
)
from seaway.log import Gap, GapType, Record, RecordRun
from seaway.queues._records import (
    NAMESPACE,
    READ_BYTES_DEFAULT,
    Claim,
    GroupRecord,
    Layout,
    Position,
    Strategy,
    check_bytes_max,
    chunk_count,
    chunk_write_pointer,
    claim_key,
    decode_chunk,
    encode_lsn,
    entries_within,
    pointer_key,
    position_key,
    skipped_key,
)
from seaway.txn import Snapshot, Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues
    from seaway.txn import Transaction

DEQUEUE_MAX = 10_000
CLAIM_ATTEMPTS_MAX = 16
CLAIMED_WAIT_S = 10.0
"""How long a consumer waits for the records of a range it claimed (they exist: this only bounds a
stalled connection)."""
WAIT_PAUSE_S_MIN = 0.002
WAIT_PAUSE_S_MAX = 0.05
"""A dequeue stopped at a chunk still in progress looks again after these pauses (doubling)."""
GROUP_REFRESH_S = 1.0
"""How long a consumer goes on with the group's record it read while it keeps getting entries (a
resize seals its log, which it notices at once)."""
FIFO_EVICT_EVERY = 8
"""A FIFO consumer trims the shared log below every claim once every this many commits."""
TRIM_INTERVAL_S = 0.5
"""A consumer trims its partition's log to its committed position at most this often (a trim
is a call to the store; the log layer drops whole time partitions once every log in them is
trimmed)."""


class Entry(NamedTuple):
    write_pointer: int
    counter: int
    payload: bytes

    @property
    def id(self) -> tuple[int, int]:
        """The entry's id: the producer transaction's write pointer and its counter in it."""
        return self.write_pointer, self.counter


def trimmed_error(log_id: int, position: Position, trim_lsn: int) -> LsnOutOfRangeError:
    """The error for entries trimmed from a queue partition's log before they were acknowledged
    (the log trimmed by hand, or another instance of the consumer acknowledged them): a consumer
    never steps over them silently."""
    return LsnOutOfRangeError(
        f"queue partition log {log_id} was trimmed up to LSN {trim_lsn}, above the position "
        f"{tuple(position)} this consumer reads from: entries there were never delivered by it (another "
        "instance acknowledged them, or the log was trimmed by hand). A new Consumer starts from the "
        "committed position")


class _Budget:
    """What one dequeue may still return, in payload bytes (its first entry goes whatever its size)."""

    def __init__(self, bytes_max: int) -> None:
        self.bytes_left = bytes_max
        self.taken = False

    def take(self, payloads: list[bytes], start: int, stop: int) -> None:
        if stop > start:
            self.bytes_left = max(0, self.bytes_left - sum(len(p) for p in payloads[start:stop]))
            self.taken = True


class _Judge:
    """Whether a chunk may be delivered: by the transaction's snapshot, and for a chunk that
    snapshot must wait at, by a fresher one taken while waiting (read committed: an entry committed
    after the transaction began is delivered, never one that is not committed)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.fresh: Snapshot | None = None
        self.blocked = False

    def __call__(self, write_pointer: int) -> Visibility:
        visibility = self.snapshot.visibility(write_pointer)
        if visibility is Visibility.WAIT and self.fresh is not None:
            visibility = self.fresh.visibility(write_pointer)
        self.blocked = self.blocked or visibility is Visibility.WAIT
        return visibility


@dataclass
class _Chunk:
    lsn: int
    write_pointer: int
    counters: list[int]
    payloads: list[bytes]


@dataclass
class _End:
    """A gap: nothing up to ``next_lsn``; ``sealed``: the log ends there for good; ``trimmed``:
    the log was trimmed up to there (entries the consumer never delivered, if it lies above its
    position)."""

    next_lsn: int
    sealed: bool
    trimmed: bool = False


class _Cursor:
    """Reading one partition: the committed position, the position after what was delivered in
    the current transaction, and the chunks read ahead."""

    def __init__(self, queues: Queues, generation: int, partition: int, log_id: int, committed: Position,
                 until: int | None = None) -> None:
        self.queues = queues
        self.until = until
        """A FIFO claim's last LSN: the cursor ends after it (and never trims: others' claims
        may lie below)."""
        self.generation = generation
        self.partition = partition
        self.log_id = log_id
        self.committed = committed
        self.pending = committed
        self.ended = False
        self._ahead: deque[_Chunk | _End] = deque()
        self._reader: Any = None
        self._trimmed = 0
        self._trimmed_s = 0.0
        self._log: Any = None

    def _open(self) -> Any:
        if self._reader is None:
            self._reader = self.queues.logs.reader(256, runs=True)
            self._reader.start_reading(self.log_id, max(1, self.committed.lsn),
                                       *(() if self.until is None else (self.until,)))
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _fill(self, timeout_s: float) -> None:
        if self.ended:
            return
        for item in self._open().read(64, timeout_s):
            if isinstance(item, RecordRun):
                for i, payload in enumerate(item.payloads):
                    self._push(item.first_lsn + i, payload)
            elif isinstance(item, Record):
                self._push(item.lsn, item.payload)
            elif isinstance(item, Gap):
                if item.type is GapType.DATALOSS:
                    raise CorruptionError(f"queue partition log {self.log_id} lost entries "
                                          f"{item.lsn_lo}-{item.lsn_hi}")
                sealed = item.type is GapType.SEALED
                self._ahead.append(_End(item.lsn_lo if sealed else item.lsn_hi + 1, sealed,
                                        item.type is GapType.TRIM))

    def _push(self, lsn: int, payload: bytes) -> None:
        write_pointer, counters, payloads = decode_chunk(payload)
        self._ahead.append(_Chunk(lsn, write_pointer, counters, payloads))

    def take(self, judge: _Judge, entries_max: int, timeout_s: float, budget: _Budget) -> list[Entry]:
        out: list[Entry] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < entries_max and budget.bytes_left > 0:
            if self.until is not None and self.pending.lsn > self.until:
                self.ended = True
                break
            if not self._ahead:
                if self.ended:
                    break
                wait_s = max(0.0, deadline - time.monotonic()) if not out else 0.0
                if self.until is not None:  # a claimed range: its records are there, on their way
                    wait_s = max(wait_s, CLAIMED_WAIT_S)
                self._fill(wait_s)
                if not self._ahead:
                    break
            head = self._ahead[0]
            if isinstance(head, _End):
                if head.trimmed and head.next_lsn > self.pending.lsn:
                    raise trimmed_error(self.log_id, self.pending, head.next_lsn - 1)
                self._ahead.popleft()
                if head.next_lsn > self.pending.lsn:
                    self.pending = Position(head.next_lsn, 0)
                if head.sealed:
                    self.ended = True
                    self.close()
                continue
            if head.lsn < self.pending.lsn:  # below a position inside a chunk: already delivered
                self._ahead.popleft()
                continue
            visibility = judge(head.write_pointer)
            if visibility is Visibility.WAIT:
                break
            start = self.pending.entry if head.lsn == self.pending.lsn else 0
            if visibility is Visibility.SKIP:
                stop = start
            else:
                stop = entries_within(head.payloads, start, entries_max - len(out), budget.bytes_left,
                                      not budget.taken)
                if stop == start and start < len(head.payloads):
                    break  # the next entry would go past the read's bytes
                out.extend(Entry(head.write_pointer, head.counters[i], head.payloads[i]) for i in range(start, stop))
                budget.take(head.payloads, start, stop)
            if visibility is Visibility.SKIP or stop == len(head.payloads):
                self._ahead.popleft()
                self.pending = Position(head.lsn + 1, 0)
            else:
                self.pending = Position(head.lsn, stop)
        if self.until is not None and self.pending.lsn > self.until:
            self.ended = True
        return out

    def committed_now(self) -> None:
        self.committed = self.pending
        if self.until is not None:
            return
        if time.monotonic() - self._trimmed_s >= TRIM_INTERVAL_S:
            self.trim()

    def trim(self) -> None:
        """Trim the partition's log up to the committed position."""
        trim_to = self.committed.lsn - 1
        if self.until is None and trim_to > self._trimmed:
            try:
                if self._log is None:
                    self._log = self.queues.logs.get(self.log_id)
                self._log.trim(trim_to)
            except UnknownLogError:  # deleted at a resize's barrier: nothing to trim
                pass
            self._trimmed, self._trimmed_s = trim_to, time.monotonic()


@dataclass(frozen=True)
class _Source:
    """Where a consumer reads: a partition of a layout, or (``partition`` -1) a FIFO layout's log,
    with the consumer ids whose claims it holds."""

    layout: Layout
    partition: int
    log_id: int
    owners: tuple[int, ...]


class Consumer:
    """Consumer ``consumer_id`` of a queue's group. Not thread-safe: one transaction at a time."""

    def __init__(self, queues: Queues, queue: str, group: str, consumer_id: int) -> None:
        if not isinstance(consumer_id, int) or isinstance(consumer_id, bool) or consumer_id < 0:
            raise InvalidArgumentError(f"a consumer id is a non-negative integer, got {consumer_id!r}")
        self._queues = queues
        self.queue = queue
        self.group = group
        self.consumer_id = consumer_id
        self._cursors: dict[tuple[int, int], _Cursor] = {}
        self._tx: int | None = None
        self._touched: set[tuple[int, int]] = set()
        self._fifo_commits = 0
        self._record: tuple[GroupRecord | None, float] = (None, 0.0)
        self._stale = False

    def __repr__(self) -> str:
        return f"Consumer({self.queue!r}, {self.group!r}, {self.consumer_id})"

    def close(self) -> None:
        """Stop reading; trim what this consumer's commits acknowledged."""
        for cursor in self._cursors.values():
            cursor.close()
            with contextlib.suppress(SeawayError):
                cursor.trim()
        self._cursors.clear()

    def _drop_cursors(self) -> None:
        for where in list(self._cursors):
            if where not in self._touched:
                self._cursors.pop(where).close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cursor(self, generation: int, partition: int, log_id: int) -> _Cursor:
        cursor = self._cursors.get((generation, partition))
        if cursor is None:
            committed = self._queues.position(self.queue, self.group, generation, partition)
            cursor = self._cursors[(generation, partition)] = _Cursor(self._queues, generation, partition, log_id,
                                                                       committed)
        return cursor

    def _sources(self) -> list[_Source] | None:
        """What to read now, in order, or None at a resize's barrier (nothing to read until every
        old partition is drained)."""
        record, read_s = self._record
        if (record is None or record.previous is not None or self._stale
                or time.monotonic() - read_s >= GROUP_REFRESH_S):
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
        undrained = [source for source in self._of(old, inherited) if not self._drained(source)]
        if undrained:
            return undrained
        return self._of(current, [self.consumer_id]) if self._queues.finish_resize(self.queue, self.group) else None

    @staticmethod
    def _of(layout: Layout, owners: list[int]) -> list[_Source]:
        if layout.strategy is Strategy.FIFO:
            return [_Source(layout, -1, layout.logs[0], tuple(owners))]
        return [_Source(layout, p, layout.logs[p], ()) for p in owners if p < len(layout.logs)]

    def _drained(self, source: _Source) -> bool:
        final = self._queues.final_lsn(source.log_id)
        if final is None:
            return False
        generation = source.layout.generation
        if source.partition >= 0:
            cursor = self._cursors.get((generation, source.partition))
            position = (cursor.committed if cursor is not None
                        else self._queues.position(self.queue, self.group, generation, source.partition))
            return position.lsn > final
        if self._queues.claim_pointer(self.queue, self.group, generation)[0] <= final:
            return False
        return not any(self._queues.meta.get(NAMESPACE, claim_key(self.queue, self.group, generation, owner))
                       for owner in source.owners)

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
        judge = _Judge(tx.snapshot)
        deadline = time.monotonic() + timeout_s
        pause_s = WAIT_PAUSE_S_MIN
        while True:
            try:
                out = self._dequeue_once(tx, judge, entries_max, timeout_s, _Budget(bytes_max))
            except (LsnOutOfRangeError, CorruptionError):
                # The cursors' read-ahead is no longer to be trusted: the next dequeue starts again
                # from the committed positions as stored (and raises again if entries are gone).
                self._drop_cursors()
                raise
            if out or not judge.blocked or time.monotonic() + pause_s > deadline:
                break
            # Stopped at a chunk still in progress: wait for its transaction to end (its chunk
            # cannot be stepped over), judging by fresh snapshots, until the deadline.
            time.sleep(pause_s)
            pause_s = min(2 * pause_s, WAIT_PAUSE_S_MAX)
            judge.fresh, judge.blocked = self._queues.txn.snapshot(), False
            timeout_s = 0.0
        if not out or any(cursor.ended for cursor in self._cursors.values()):
            self._stale = True  # idle, or a log ended (a resize): read the group again next time
        return out

    def _dequeue_once(self, tx: Transaction, judge: _Judge, entries_max: int, timeout_s: float,
                      budget: _Budget) -> list[Entry]:
        out: list[Entry] = []
        for source in self._sources() or ():
            if source.partition < 0:
                out.extend(self._dequeue_claims(tx, judge, source, entries_max - len(out),
                                                timeout_s if not out else 0.0, budget))
                if len(out) >= entries_max or budget.bytes_left <= 0:
                    break
                continue
            cursor = self._cursor(source.layout.generation, source.partition, source.log_id)
            before = cursor.pending
            out.extend(cursor.take(judge, entries_max - len(out), timeout_s if not out else 0.0, budget))
            if cursor.pending != before:
                self._stage(tx, cursor, position_key(self.queue, self.group, cursor.generation, cursor.partition),
                            cursor.pending.encode())
            if len(out) >= entries_max or budget.bytes_left <= 0 or not cursor.ended:
                break
        return out

    # --- FIFO -----------------------------------------------------------------------------------

    def _dequeue_claims(self, tx: Transaction, judge: _Judge, source: _Source, entries_max: int,
                        timeout_s: float, budget: _Budget) -> list[Entry]:
        """A FIFO layout: the claims this consumer holds first (its own, and after a resize those
        of the old consumers it inherits), then a new claim of the next entries no one claimed."""
        out: list[Entry] = []
        generation = source.layout.generation
        for owner in (*[o for o in source.owners if o != self.consumer_id], self.consumer_id):
            # One claim per owner and transaction: a claim finished here is deleted by the commit,
            # so a new one (under the same key) waits for the next transaction.
            held = (generation, -1 - owner) in self._cursors
            cursor = self._claim_cursor(generation, owner, source.log_id)
            if cursor is None and owner == self.consumer_id and not held:
                cursor = self._claim(judge, source, entries_max - len(out))
            if cursor is None:
                continue
            before = cursor.pending
            out.extend(cursor.take(judge, entries_max - len(out), 0.0, budget))
            if cursor.pending != before:
                key = claim_key(self.queue, self.group, generation, owner)
                if cursor.pending.lsn > (cursor.until or 0):  # the whole claim delivered
                    self._stage(tx, cursor, key, None)
                else:
                    self._stage(tx, cursor, key, Claim(cursor.until or 0, cursor.pending).encode())
            if len(out) >= entries_max or budget.bytes_left <= 0:
                break
        return out

    def _claim_cursor(self, generation: int, owner: int, log_id: int) -> _Cursor | None:
        """The cursor of ``owner``'s claim, if it holds one not fully delivered in this transaction."""
        where = (generation, -1 - owner)
        cursor = self._cursors.get(where)
        if cursor is None:
            found = self._queues.meta.get(NAMESPACE, claim_key(self.queue, self.group, generation, owner))
            if found is None:
                return None
            claim = Claim.decode(found.value)
            cursor = self._cursors[where] = _Cursor(self._queues, generation, -1 - owner, log_id, claim.position,
                                                    claim.last_lsn)
        return None if cursor.ended else cursor

    def _claim(self, judge: _Judge, source: _Source, entries_max: int) -> _Cursor | None:
        """Claim the next resolved entries of a FIFO log (at most about ``entries_max``): a
        conditional batch moves the shared pointer and records the claim, at once (not with the
        transaction: an abort leaves the claim to this consumer, which delivers it again)."""
        generation = source.layout.generation
        handle = self._queues.logs.get(source.log_id)
        for _ in range(CLAIM_ATTEMPTS_MAX):
            first, version = self._queues.claim_pointer(self.queue, self.group, generation)
            last: int | None = None
            count = 0
            for item in handle.read(first):
                if isinstance(item, Record):
                    if judge(chunk_write_pointer(item.payload)) is Visibility.WAIT:
                        break
                    last = item.lsn
                    count += chunk_count(item.payload)
                elif isinstance(item, Gap):
                    if item.type is GapType.SEALED:
                        break
                    if item.type is GapType.DATALOSS:
                        raise CorruptionError(f"queue partition log {source.log_id} lost entries "
                                              f"{item.lsn_lo}-{item.lsn_hi}")
                    if item.type is GapType.TRIM and item.lsn_hi >= first:
                        raise trimmed_error(source.log_id, Position(first, 0), item.lsn_hi)
                    last = item.lsn_hi
                if count >= entries_max:
                    break
            if last is None:
                return None
            mine = claim_key(self.queue, self.group, generation, self.consumer_id)
            # Both conditions: the pointer as read (no other consumer claimed meanwhile), and no
            # claim under this consumer id (another instance of it claimed meanwhile: a second
            # claim would replace the first, whose entries no one would then deliver).
            batch = self._queues.meta.batch().expect_version(
                NAMESPACE, pointer_key(self.queue, self.group, generation), version).expect_absent(
                NAMESPACE, mine).put(
                NAMESPACE, pointer_key(self.queue, self.group, generation), encode_lsn(last + 1)).put(
                NAMESPACE, mine, Claim(last, Position(first, 0)).encode())
            try:
                batch.commit()
            except ConditionFailedError:
                if self._queues.meta.get(NAMESPACE, mine) is not None:
                    # Deliver that claim: of the two instances' transactions, one commits and the
                    # other conflicts on the claim's key.
                    self._cursors.pop((generation, -1 - self.consumer_id), None)
                    return self._claim_cursor(generation, self.consumer_id, source.log_id)
                continue  # another consumer claimed meanwhile
            self._cursors.pop((generation, -1 - self.consumer_id), None)
            return self._claim_cursor(generation, self.consumer_id, source.log_id)
        return None

    def _stage(self, tx: Transaction, cursor: _Cursor, key: bytes, value: bytes | None) -> None:
        """Stage the cursor's new position (a partition's, or a claim's: None when it is done)."""
        if self._tx is None:
            self._tx = tx.id
            tx.after_end(self._ended)
        if value is None:
            tx.stage_delete(NAMESPACE, key)
        else:
            tx.stage_put(NAMESPACE, key, value)
        tx.add_conflicts(NAMESPACE.encode() + b"/" + key)
        self._touched.add((cursor.generation, cursor.partition))

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
        if committed and any(where[1] < 0 for where in self._touched):
            self._fifo_commits += 1
            if self._fifo_commits % FIFO_EVICT_EVERY == 0:
                generation = max(where[0] for where in self._touched if where[1] < 0)
                cursor = next(c for w, c in self._cursors.items() if w[0] == generation and w[1] < 0)
                self._queues.evict_claimed(self.queue, self.group, generation, cursor.log_id)
        self._touched.clear()
        self._tx = None
        for where, cursor in list(self._cursors.items()):  # partitions drained and gone after a resize
            if cursor.ended and cursor.committed == cursor.pending:
                cursor.close()
                del self._cursors[where]
