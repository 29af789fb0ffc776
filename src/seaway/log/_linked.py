"""Linked appends: batches for several logs in one step, where a later batch's records carry the LSNs
that earlier batches of the same step got.

A queue producer writes its payloads once to a data log and small records pointing at them (by LSN)
to other logs; with a linked append both go in one step (one call through a server) instead of one
step each, the pointing records completed by whoever appends them. Each :class:`LsnSlot` names an
earlier batch's record and where its LSN goes: at a byte offset of a record of a later batch, as 8
bytes big-endian (or as 16 lowercase hex digits, for a key that sorts by LSN). The slots' places are
given by the writer (zeros, say): the bytes there are replaced.

:func:`append_linked` appends the batches that name no other first (all at once), then those that
name only those, and so on. A batch whose source failed is not appended (its outcome is the
source's error); the others are, each with its own outcome, as :meth:`LogHandle.append_batch_async`
gives it (a refused batch's records are not stored).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seaway.errors import InvalidArgumentError, SeawayError

if TYPE_CHECKING:
    from seaway.log._api import LogsApi

LINKED_BATCHES_MAX = 64
"""Batches one linked append carries at most (a server's appends in flight per connection, 64 by
default, bound it too)."""
_U64 = 8
_HEX = 16


@dataclass(frozen=True, slots=True)
class LsnSlot:
    """Where an earlier batch's record's LSN is written: at byte ``offset`` of the target, as an
    unsigned 64-bit big-endian integer, or (``hex``) as 16 lowercase hex digits."""

    batch: int
    """The batch (its index in the linked append) whose record's LSN is written."""
    record: int
    """The record's index in that batch."""
    offset: int
    hex: bool = False

    @property
    def width(self) -> int:
        return _HEX if self.hex else _U64


@dataclass(frozen=True, slots=True)
class LinkedBatch:
    """Records appended to one log as one batch (consecutive LSNs), with the LSNs of earlier batches
    written into them first: ``slots`` are ``(record index, slot)``."""

    log_id: int
    payloads: Sequence[bytes]
    slots: Sequence[tuple[int, LsnSlot]] = field(default=())


def check_slots(what: str, size: int, slots: Iterable[LsnSlot], before: int, records: Sequence[int]) -> None:
    """Raise :class:`InvalidArgumentError` unless each slot fits in ``size`` bytes and names a record
    of one of the first ``before`` batches (``records``: each batch's record count)."""
    for slot in slots:
        if not isinstance(slot, LsnSlot):
            raise InvalidArgumentError(f"{what}: a slot is an LsnSlot, got {type(slot).__name__}")
        if not 0 <= slot.batch < before:
            raise InvalidArgumentError(f"{what}: a slot names batch {slot.batch}, not one before it (0-{before - 1})")
        if not 0 <= slot.record < records[slot.batch]:
            raise InvalidArgumentError(f"{what}: a slot names record {slot.record} of batch {slot.batch}, "
                                       f"which has {records[slot.batch]}")
        if not 0 <= slot.offset <= size - slot.width:
            raise InvalidArgumentError(f"{what}: a slot at byte {slot.offset} does not fit its {size} bytes")


def check_linked(batches: Sequence[LinkedBatch]) -> None:
    """Raise :class:`InvalidArgumentError` unless ``batches`` is a valid linked append: 1 to
    LINKED_BATCHES_MAX batches of at least one record, each slot within its record and naming a
    record of an earlier batch."""
    if not 1 <= len(batches) <= LINKED_BATCHES_MAX:
        raise InvalidArgumentError(f"a linked append carries 1 to {LINKED_BATCHES_MAX} batches, not {len(batches)}")
    records: list[int] = []
    for i, batch in enumerate(batches):
        if not isinstance(batch, LinkedBatch):
            raise InvalidArgumentError(f"a linked append's batches are LinkedBatch, got {type(batch).__name__}")
        if not batch.payloads:
            raise InvalidArgumentError(f"batch {i} of a linked append has no record")
        for record, slot in batch.slots:
            if not isinstance(record, int) or not 0 <= record < len(batch.payloads):
                raise InvalidArgumentError(f"batch {i} of a linked append has a slot in record {record!r}, "
                                           f"of {len(batch.payloads)}")
            payload = batch.payloads[record]
            if not isinstance(payload, bytes):
                raise InvalidArgumentError(f"a record is bytes, got {type(payload).__name__}")
            check_slots(f"batch {i} of a linked append", len(payload), (slot,), i, records)
        records.append(len(batch.payloads))


def fill_lsns(data: bytes, slots: Iterable[LsnSlot], lsns: Sequence[range]) -> bytes:
    """``data`` with each slot's LSN written in (``lsns``: each batch's LSNs); the slots were checked."""
    out = bytearray(data)
    for slot in slots:
        lsn = lsns[slot.batch][slot.record]
        out[slot.offset:slot.offset + slot.width] = (b"%016x" % lsn) if slot.hex else lsn.to_bytes(_U64, "big")
    return bytes(out)


def _depth(batches: Sequence[LinkedBatch]) -> list[int]:
    """Each batch's step: 0 for one that names no other, else one more than the deepest it names."""
    depth: list[int] = []
    for batch in batches:
        depth.append(1 + max(depth[slot.batch] for _, slot in batch.slots) if batch.slots else 0)
    return depth


def append_linked(logs: LogsApi, batches: Sequence[LinkedBatch]) -> list[range | SeawayError]:
    """Append ``batches`` (see the module's docstring); each one's LSNs, or the error it failed with
    (a copy of its source's, for one not appended because a batch it names failed). Raises
    :class:`InvalidArgumentError` (nothing appended) for an invalid linked append."""
    check_linked(batches)
    outcomes: list[range | SeawayError | None] = [None] * len(batches)
    depth = _depth(batches)
    for step in range(max(depth) + 1):
        started: list[tuple[int, Future[range]]] = []
        for i, batch in enumerate(batches):
            if depth[i] != step:
                continue
            failed = next((outcomes[s.batch] for _, s in batch.slots if isinstance(outcomes[s.batch], SeawayError)),
                          None)
            if failed is not None:
                outcomes[i] = copy.copy(failed)
                continue
            lsns: list[range] = [o if isinstance(o, range) else range(0) for o in outcomes]
            payloads = list(batch.payloads)
            by_record: dict[int, list[LsnSlot]] = {}
            for record, slot in batch.slots:
                by_record.setdefault(record, []).append(slot)
            for record, slots in by_record.items():
                payloads[record] = fill_lsns(payloads[record], slots, lsns)
            try:
                started.append((i, logs.get(batch.log_id).append_batch_async(payloads)))
            except SeawayError as exc:
                outcomes[i] = exc
        for i, future in started:
            try:
                outcomes[i] = future.result()
            except SeawayError as exc:
                outcomes[i] = exc
    return [o if o is not None else SeawayError("not appended") for o in outcomes]
