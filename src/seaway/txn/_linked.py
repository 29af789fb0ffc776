"""Metadata writes completed with the LSNs of the appends made in the same step as the commit (see
:meth:`TransactionManager.commit_appending` and :meth:`Transaction.append_at_commit`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seaway.errors import InvalidArgumentError
from seaway.log import LinkedBatch, LsnSlot, check_meta_key, check_slots, fill_lsns


@dataclass(frozen=True, slots=True)
class LinkedWrite:
    """A metadata put applied with the commit, its key and value completed first with the LSNs the
    commit's linked appends got (``key_slots``, ``value_slots``: slots of the key and of the value,
    naming records of those batches; see :class:`~seaway.log.LsnSlot`)."""

    namespace: str
    key: bytes
    value: bytes
    key_slots: Sequence[LsnSlot] = field(default=())
    value_slots: Sequence[LsnSlot] = field(default=())


def check_linked_writes(writes: Sequence[LinkedWrite], batches: Sequence[LinkedBatch]) -> None:
    """Raise :class:`InvalidArgumentError` unless each write's slots fit and name records of ``batches``."""
    records = [len(batch.payloads) for batch in batches]
    for write in writes:
        if not isinstance(write, LinkedWrite):
            raise InvalidArgumentError(f"a linked write is a LinkedWrite, got {type(write).__name__}")
        check_meta_key(write.namespace, write.key)
        if not isinstance(write.value, bytes):
            raise InvalidArgumentError(f"a linked write's value is bytes, got {type(write.value).__name__}")
        check_slots("a linked write's key", len(write.key), write.key_slots, len(batches), records)
        check_slots("a linked write's value", len(write.value), write.value_slots, len(batches), records)


def filled(writes: Sequence[LinkedWrite], lsns: Sequence[range]) -> list[tuple[str, bytes, bytes | None]]:
    """The writes as a commit takes them, their slots filled with ``lsns`` (each batch's LSNs)."""
    return [(w.namespace, fill_lsns(w.key, w.key_slots, lsns), fill_lsns(w.value, w.value_slots, lsns))
            for w in writes]
