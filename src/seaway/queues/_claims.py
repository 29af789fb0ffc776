"""A FIFO group's claims: its consumers share one log, and each takes the next entries no one took.

A consumer with nothing in hand *claims* the next entries: from the claim pointer (the first LSN no
consumer claimed) up to about ``entries_max`` entries of decided chunks, by one conditional metadata
batch that moves the pointer and records the claim under the consumer's id, provided the pointer is
as read (no other consumer claimed meanwhile) and the id holds no claim (no other instance of it
claimed meanwhile: a claim is never replaced). A range of aborted chunks only is stepped over by
moving the pointer, with no claim. The claim is made at once, not with the transaction;
its progress is staged in the transaction, and the commit that delivers its last entry deletes it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from seaway.errors import ConditionFailedError
from seaway.log import Gap, GapType, Record
from seaway.queues._chunks import Budget, Entry, after_gap
from seaway.queues._cursor import Cursor, Judge, Slot, SlotKind, Source
from seaway.queues._records import (
    NAMESPACE,
    Claim,
    Position,
    chunk_count,
    chunk_write_pointer,
    claim_key,
    encode_lsn,
    pointer_key,
    resets_key,
)
from seaway.txn import Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues
    from seaway.txn import Transaction

CLAIM_ATTEMPTS_MAX = 16


class FifoClaims:
    """The FIFO part of a :class:`~seaway.queues.Consumer` (a mixin: it reads and writes the
    consumer's cursors, and stages through its transaction)."""

    _queues: Queues
    queue: str
    group: str
    consumer_id: int
    _cursors: dict[Slot, Cursor]
    _resets: int | None
    _resets_version: int
    _claims_fenced: bool
    _idle_at: tuple[int, int] | None

    @property
    def _round(self) -> int:
        """The round of the claims this consumer reads and makes: the group's reset count, as read
        at the transaction's first dequeue."""
        return self._resets or 0

    def _stage(self, tx: Transaction, cursor: Cursor, key: bytes, value: bytes | None) -> None:
        raise NotImplementedError

    def _dequeue_claims(self, tx: Transaction, judge: Judge, source: Source, budget: Budget) -> list[Entry]:
        """A FIFO layout: the claims this consumer holds first (its own, and after a resize those
        of the old consumers it inherits), then a new claim of the next entries no one claimed."""
        out: list[Entry] = []
        generation = source.layout.generation
        # Only the owners of this layout's claims: a consumer a resize added has no share of the old
        # layout (its id is none of the old ones' it inherits), and a claim it made there would be
        # no one's to deliver after an abort, holding the barrier forever.
        mine = [self.consumer_id] if self.consumer_id in source.owners else []
        for owner in (*[o for o in source.owners if o != self.consumer_id], *mine):
            # One claim per owner and transaction: a claim finished here is deleted by the commit,
            # so a new one (under the same key) waits for the next transaction.
            held = Slot(generation, SlotKind.CLAIM, owner) in self._cursors
            cursor = self._claim_cursor(generation, owner, source.log_id)
            if cursor is None and owner == self.consumer_id and not held:
                cursor = self._claim(judge, source, budget.entries_left)
            if cursor is None:
                continue
            before = cursor.pending
            out.extend(cursor.take(judge, budget, 0.0))
            if cursor.pending != before:
                key = claim_key(self.queue, self.group, generation, owner, self._round)
                if cursor.pending.lsn > (cursor.until or 0):  # the whole claim delivered
                    self._stage(tx, cursor, key, None)
                else:
                    self._stage(tx, cursor, key, Claim(cursor.until or 0, cursor.pending).encode())
            if budget.spent:
                break
        return out

    def _claim_cursor(self, generation: int, owner: int, log_id: int) -> Cursor | None:
        """The cursor of ``owner``'s claim, if it holds one not fully delivered in this transaction."""
        where = Slot(generation, SlotKind.CLAIM, owner)
        cursor = self._cursors.get(where)
        if cursor is None:
            found = self._queues.meta.get(NAMESPACE, claim_key(self.queue, self.group, generation, owner,
                                                                self._round))
            if found is None:
                return None
            claim = Claim.decode(found.value)
            cursor = self._cursors[where] = Cursor(self._queues, where, log_id, claim.position,
                                                    claim.last_lsn)
        return None if cursor.ended else cursor

    def _claim(self, judge: Judge, source: Source, entries_max: int) -> Cursor | None:
        """Claim the next resolved entries of a FIFO log (at most about ``entries_max``): a
        conditional batch moves the shared pointer and records the claim, at once (not with the
        transaction: an abort leaves the claim to this consumer, which delivers it again)."""
        if self._claims_fenced:
            return None  # a reset is reading the claims: none may be added until it ends
        generation = source.layout.generation
        handle = self._queues.logs.get(source.log_id)
        for _ in range(CLAIM_ATTEMPTS_MAX):
            first, version = self._queues.claim_pointer(self.queue, self.group, generation)
            last: int | None = None
            start = first  # where the claim starts: above entries acknowledged and trimmed, if any
            count = 0
            for item in handle.read(first):
                if isinstance(item, Record):
                    visibility = judge.judge(chunk_write_pointer(item.payload), source.log_id)
                    if visibility is Visibility.WAIT:
                        break
                    last = item.lsn
                    if visibility is Visibility.VISIBLE:
                        count += chunk_count(item.payload)
                elif isinstance(item, Gap):
                    if (item.type is GapType.TRIM and item.lsn_hi >= first and item.lsn_hi
                            < self._queues.start_position(source.log_id, Position(first, 0)).lsn):
                        last = item.lsn_hi  # acknowledged and trimmed after a reset moved the pointer back
                        start = last + 1
                        continue
                    if after_gap(item, Position(first, 0), source.log_id)[1]:
                        break  # sealed: the log ends here
                    last = item.lsn_hi
                if count >= entries_max:
                    break
            if last is None:
                self._idle_at = (source.log_id, first)  # nothing past the pointer: what a dequeue waits on
                return None
            if count == 0:
                # Only chunks of aborted or timed-out transactions (and gaps): nothing to deliver,
                # so the pointer steps over them with no claim. A claim of them would be held until
                # a commit deletes it, and a consumer whose transaction delivered nothing aborts it.
                with contextlib.suppress(ConditionFailedError):  # another consumer claimed meanwhile
                    self._queues.meta.batch().expect_version(
                        NAMESPACE, pointer_key(self.queue, self.group, generation), version).put(
                        NAMESPACE, pointer_key(self.queue, self.group, generation), encode_lsn(last + 1)).commit()
                continue
            mine = claim_key(self.queue, self.group, generation, self.consumer_id, self._round)
            # Three conditions: the pointer as read (no other consumer claimed meanwhile), no
            # claim under this consumer id (another instance of it claimed meanwhile: a second
            # claim would replace the first, whose entries no one would then deliver), and the
            # group not reset since the transaction read its count (a claim of the round that
            # reset ended would be no one's: given back by an abort, its entries would be lost).
            batch = self._queues.meta.batch().expect_version(
                NAMESPACE, pointer_key(self.queue, self.group, generation), version).expect_absent(
                NAMESPACE, mine).expect_version(
                NAMESPACE, resets_key(self.queue, self.group), self._resets_version).put(
                NAMESPACE, pointer_key(self.queue, self.group, generation), encode_lsn(last + 1)).put(
                NAMESPACE, mine, Claim(last, Position(start, 0)).encode())
            try:
                batch.commit()
            except ConditionFailedError:
                if self._queues.reset_state(self.queue, self.group)[1] != self._resets_version:
                    return None  # reset meanwhile: the next transaction claims in the new round
                if self._queues.meta.get(NAMESPACE, mine) is not None:
                    # Deliver that claim: of the two instances' transactions, one commits and the
                    # other conflicts on the claim's key.
                    self._cursors.pop(Slot(generation, SlotKind.CLAIM, self.consumer_id), None)
                    return self._claim_cursor(generation, self.consumer_id, source.log_id)
                continue  # another consumer claimed meanwhile
            self._cursors.pop(Slot(generation, SlotKind.CLAIM, self.consumer_id), None)
            return self._claim_cursor(generation, self.consumer_id, source.log_id)
        return None

