"""The order of a producer's batches in a log: Kafka's rule for an idempotent producer, kept by the store.

A producer numbers its batches of a log 0, 1, 2... (its sequence numbers). The store takes batch
``s`` only when every earlier batch of the producer is stored or in flight, and nothing later is:

- ``s`` above the next expected number: an earlier batch has not arrived (it was refused before the
  store saw it, or failed after it was taken): :class:`SequenceGapError`, retriable. The producer
  sends the missing batches first, then this one again.
- ``s`` is the next expected one but a later batch is still undecided (taken, then an earlier one
  failed, so the next expected number went back): :class:`SequenceGapError` too, until that later
  batch is decided.
- ``s`` below the next expected one, neither stored nor in flight: a later batch is stored already,
  so this one can never be stored in order: :class:`SequenceOrderError`, final.

So a batch refused and sent again never lands after one sent later, however many are in flight, and
with any retriable refusal, before or after the store took the batch. A producer the log does not
know starts at 0. The state kept here is memory only: for a producer it no longer holds (after a
restart, or once dropped with nothing in flight), the next expected number is the one after its
last stored batch, which the store's idempotence window remembers (``stored_next``).

This class is pure state, no I/O: the store's writer thread calls it in the order appends arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from seaway._invariant import invariant
from seaway.errors import SeawayError, SequenceGapError, SequenceOrderError


@dataclass(slots=True)
class _Producer:
    next: int
    """The sequence number the producer's next new batch must carry."""
    live: set[int] = field(default_factory=set)
    """Sequence numbers taken and not yet decided."""
    rolled_back: bool = False
    """A taken batch failed while later ones were live: ``next`` may be below some of them."""


PRODUCERS_KEPT_MAX = 65_536
"""Producers with nothing in flight whose next number is kept in memory (beyond it, the idle ones
are dropped, and asked of the idempotence window again when they append)."""


class ProducerOrder:
    """The rule above, for every (log, producer) with batches in flight, and the most recent others."""

    def __init__(self) -> None:
        self._producers: dict[tuple[int, bytes], _Producer] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, log_id: int, producer_id: bytes, sequence: int,
              stored_next: Callable[[], int | None]) -> SeawayError | None:
        """Whether a batch neither stored nor in flight may be taken now: None, or why not.
        ``stored_next()``: the number after the producer's last stored batch (None: none is)."""
        state = self._producers.get((log_id, producer_id))
        if state is None:
            expected = stored_next() or 0
            later_live = False
        else:
            expected = state.next
            later_live = state.rolled_back and any(s > sequence for s in state.live)
        if sequence > expected or (sequence == expected and later_live):
            waiting_for = expected if sequence > expected else max(s for s in state.live if s > sequence)  # type: ignore[union-attr]
            return SequenceGapError(
                f"log {log_id}: batch {sequence} of producer {producer_id!r} came before batch {expected} was "
                f"stored" + ("" if sequence > expected else f" (batch {waiting_for} is still undecided)")
                + "; nothing was stored: send the earlier batches first")
        if sequence < expected:
            return SequenceOrderError(
                f"log {log_id}: batch {sequence} of producer {producer_id!r} was not stored, and batch "
                f"{expected - 1} that it sent later is: storing it now would break the producer's order")
        return None

    def taken(self, log_id: int, producer_id: bytes, sequence: int) -> None:
        """The batch passed :meth:`check` and is on its way to the disk."""
        key = (log_id, producer_id)
        state = self._producers.get(key)
        if state is None:
            if len(self._producers) >= PRODUCERS_KEPT_MAX:
                self._drop_idle()
            state = self._producers[key] = _Producer(sequence)
        invariant(sequence == state.next, f"log {log_id}: batch {sequence} taken, {state.next} expected")
        state.live.add(sequence)
        state.next = sequence + 1

    def decided(self, log_id: int, producer_id: bytes, sequence: int, stored: bool) -> None:
        """A taken batch was stored, or failed (not stored, as far as this store knows)."""
        key = (log_id, producer_id)
        state = self._producers.get(key)
        if state is None:
            return
        state.live.discard(sequence)
        if stored:
            state.next = max(state.next, sequence + 1)
        elif sequence < state.next:
            state.next = sequence
            state.rolled_back = bool(state.live)
        if not state.live:
            state.rolled_back = False

    def _drop_idle(self) -> None:
        """Forget the producers with nothing in flight: for them the next expected number is the
        one after the last stored batch, which the idempotence window gives again (batches are
        stored in order)."""
        for key in [k for k, state in self._producers.items() if not state.live]:
            del self._producers[key]
