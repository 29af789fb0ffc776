"""Pure conversions of the transaction manager's values to and from the protocol's messages.

A snapshot crosses the wire in its own encoding (:meth:`Snapshot.encode`), the one the manager
and readers already share, rather than as a message of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from seaway.errors import ServerError
from seaway.log import LinkedBatch, LsnSlot
from seaway.txn import (
    InvalidChanges,
    InvalidVersion,
    LinkedWrite,
    LiveChanges,
    TxnInfo,
    TxnStatus,
)
from seaway.wire import seaway_pb2 as pb

_STATUS_TO_WIRE = {TxnStatus.IN_PROGRESS: pb.TXN_IN_PROGRESS, TxnStatus.COMMITTED: pb.TXN_COMMITTED,
                   TxnStatus.ABORTED: pb.TXN_ABORTED, TxnStatus.TIMED_OUT: pb.TXN_TIMED_OUT,
                   TxnStatus.UNKNOWN: pb.TXN_UNKNOWN}
_STATUS_FROM_WIRE = {v: k for k, v in _STATUS_TO_WIRE.items()}


def txn_status_to_msg(status: TxnStatus) -> pb.TxnOutcome:
    return _STATUS_TO_WIRE[status]


def txn_status_from_msg(value: int) -> TxnStatus:
    """The status a server answered; one this client does not know is the server's fault."""
    try:
        return _STATUS_FROM_WIRE[value]  # type: ignore[index]
    except KeyError:
        raise ServerError(f"the server answered an unknown transaction status {value}") from None


def txn_page_key(info: TxnInfo) -> bytes:
    """A transaction's key in ``TxnList``'s pages (``PageRequest.after``, a reply's ``next``): 0
    for in progress, 1 for invalid, then its id (8 bytes big-endian), so that byte order is the
    list's order."""
    return bytes([info.status is not TxnStatus.IN_PROGRESS]) + info.id.to_bytes(8, "big")


def txn_page_cursor(key: bytes) -> TxnInfo:
    """The transaction a ``TxnList`` page key stands for, as the manager's ``list(after=...)``
    takes it."""
    status = TxnStatus.IN_PROGRESS if key[0] == 0 else TxnStatus.ABORTED
    return TxnInfo(int.from_bytes(key[1:9], "big"), status, None, None, ())


def txn_info_to_msg(info: TxnInfo) -> pb.TxnInfo:
    msg = pb.TxnInfo(id=info.id, status=txn_status_to_msg(info.status), log_ids=info.logs)
    if info.began_ms is not None:
        msg.began_ms = info.began_ms
    if info.expiry_ms is not None:
        msg.expiry_ms = info.expiry_ms
    return msg


def txn_info_from_msg(msg: pb.TxnInfo) -> TxnInfo:
    return TxnInfo(msg.id, txn_status_from_msg(msg.status), msg.began_ms if msg.HasField("began_ms") else None,
                   msg.expiry_ms if msg.HasField("expiry_ms") else None, tuple(msg.log_ids))


def txn_writes_to_msg(writes: Iterable[tuple[str, bytes, bytes | None]]) -> list[pb.TxnWrite]:
    """A commit's metadata writes; a delete is a write without a value."""
    out = []
    for namespace, key, value in writes:
        msg = pb.TxnWrite(namespace=namespace, key=key)
        if value is not None:
            msg.value = value
        out.append(msg)
    return out


def txn_writes_from_msg(msgs: Iterable[pb.TxnWrite]) -> list[tuple[str, bytes, bytes | None]]:
    return [(w.namespace, w.key, w.value if w.HasField("value") else None) for w in msgs]


def invalid_version_to_msg(version: InvalidVersion) -> pb.InvalidKnown:
    return pb.InvalidKnown(epoch=version.epoch, version=version.version)


def invalid_version_from_msg(msg: pb.InvalidKnown) -> InvalidVersion:
    return InvalidVersion(msg.epoch, msg.version)


def invalid_changes_to_msg(changes: InvalidChanges) -> pb.InvalidChanges:
    return pb.InvalidChanges(epoch=changes.epoch, version=changes.version, reset=changes.reset, fetch=changes.fetch,
                             added=changes.added, removed=changes.removed)


def invalid_changes_from_msg(msg: pb.InvalidChanges) -> InvalidChanges:
    return InvalidChanges(msg.epoch, msg.version, msg.reset, msg.fetch, tuple(msg.added), tuple(msg.removed))


def _slot_to_msg(slot: LsnSlot) -> pb.LsnSlot:
    return pb.LsnSlot(batch=slot.batch, record=slot.record, offset=slot.offset, hex=slot.hex)


def _slot_from_msg(msg: pb.LsnSlot) -> LsnSlot:
    return LsnSlot(msg.batch, msg.record, msg.offset, msg.hex)


def linked_batches_to_msg(batches: Iterable[LinkedBatch]) -> list[pb.LinkedBatch]:
    return [pb.LinkedBatch(log_id=b.log_id, payloads=b.payloads,
                           slots=[pb.LinkedSlot(payload=r, slot=_slot_to_msg(s)) for r, s in b.slots]) for b in batches]


def linked_batches_from_msg(msgs: Iterable[pb.LinkedBatch]) -> list[LinkedBatch]:
    return [LinkedBatch(m.log_id, tuple(m.payloads), [(s.payload, _slot_from_msg(s.slot)) for s in m.slots])
            for m in msgs]


def linked_writes_to_msg(writes: Iterable[LinkedWrite]) -> list[pb.LinkedWrite]:
    return [pb.LinkedWrite(namespace=w.namespace, key=w.key, value=w.value,
                           key_slots=[_slot_to_msg(s) for s in w.key_slots],
                           value_slots=[_slot_to_msg(s) for s in w.value_slots]) for w in writes]


def linked_writes_from_msg(msgs: Iterable[pb.LinkedWrite]) -> list[LinkedWrite]:
    return [LinkedWrite(m.namespace, m.key, m.value, [_slot_from_msg(s) for s in m.key_slots],
                        [_slot_from_msg(s) for s in m.value_slots]) for m in msgs]


def live_changes_to_msg(changes: LiveChanges) -> pb.LiveChanges:
    return pb.LiveChanges(epoch=changes.epoch, version=changes.version, since=changes.since, reset=changes.reset,
                          ids=changes.ids, added=changes.added)


def live_changes_from_msg(msg: pb.LiveChanges) -> LiveChanges:
    """The in-progress set's changes a server answered; malformed ones are the server's fault."""
    ids, added = tuple(msg.ids), tuple(msg.added)
    if not msg.reset and len(added) != len(ids):
        raise ServerError(f"the server's changes of the transactions in progress have {len(ids)} ids and "
                          f"{len(added)} flags")
    return LiveChanges(msg.epoch, msg.version, msg.since, msg.reset, ids, added)
