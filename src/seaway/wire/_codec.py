"""Pure conversions between Seaway's values and the protocol's messages. No I/O, no gRPC calls.

Errors cross the wire as a gRPC status whose trailing metadata carries the stable Seaway code and
the retriable flag, so the client raises the same class the server raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from itertools import repeat
from typing import Any

import grpc

from seaway.errors import (
    AuthenticationError,
    ClientError,
    ClosedError,
    CorruptionError,
    InvalidArgumentError,
    LogExistsError,
    LogSealedError,
    OverloadedError,
    PayloadTooLargeError,
    PermissionDeniedError,
    SeawayError,
    ServerError,
    TailMismatchError,
    TimedOutError,
    UnavailableError,
    UnknownLogError,
    error_class,
)
from seaway.ledger import CHANGE_BYTES_MAX, Change, LedgerEntry, decode_change, encode_change
from seaway.log import (
    LSN_MAX,
    Durability,
    Gap,
    GapType,
    LogAttributes,
    LogInfo,
    MetaBatch,
    MetaDelete,
    MetaPut,
    ReadItem,
    Record,
    RecordRun,
    RunItem,
)
from seaway.wire import seaway_pb2 as pb

# Record(*fields) without the Python-level __new__ of a named tuple: one is made per record received.
_new_record = partial(tuple.__new__, Record)

CODE_KEY = "seaway-code"
RETRIABLE_KEY = "seaway-retriable"
TOKEN_KEY = "authorization"

_GAP_TO_WIRE = {GapType.BRIDGE: pb.BRIDGE, GapType.HOLE: pb.HOLE, GapType.TRIM: pb.TRIM,
                GapType.DATALOSS: pb.DATALOSS, GapType.SEALED: pb.SEALED}
_GAP_FROM_WIRE = {v: k for k, v in _GAP_TO_WIRE.items()}


# --- errors ----------------------------------------------------------------------------------------


def status_of(error: SeawayError) -> grpc.StatusCode:
    """The gRPC status that best matches a Seaway error (the Seaway code travels beside it)."""
    for cls, status in ((UnknownLogError, grpc.StatusCode.NOT_FOUND),
                        (LogExistsError, grpc.StatusCode.ALREADY_EXISTS),
                        (AuthenticationError, grpc.StatusCode.UNAUTHENTICATED),
                        (PermissionDeniedError, grpc.StatusCode.PERMISSION_DENIED),
                        (ClosedError, grpc.StatusCode.FAILED_PRECONDITION),
                        (LogSealedError, grpc.StatusCode.FAILED_PRECONDITION),
                        (TailMismatchError, grpc.StatusCode.FAILED_PRECONDITION),
                        (ClientError, grpc.StatusCode.INVALID_ARGUMENT),
                        (OverloadedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
                        (TimedOutError, grpc.StatusCode.DEADLINE_EXCEEDED)):
        if isinstance(error, cls):
            return status
    return grpc.StatusCode.UNAVAILABLE if error.retriable else grpc.StatusCode.INTERNAL


def error_metadata(error: SeawayError) -> tuple[tuple[str, str], ...]:
    return ((CODE_KEY, error.code), (RETRIABLE_KEY, "1" if error.retriable else "0"))


def error_from_status(status: grpc.StatusCode | None, details: str | None,
                      metadata: Sequence[tuple[str, Any]] | None) -> SeawayError:
    """The Seaway error a failed call stands for.

    A status with a Seaway code is the server's error, re-raised as the same class. Without one the
    call failed in transport (the server is down, the connection broke, a deadline passed).
    """
    code = dict(metadata or ()).get(CODE_KEY)
    message = details or (status.name if status is not None else "unknown error")
    if isinstance(code, str):
        return error_class(code)(message)
    if status == grpc.StatusCode.UNAUTHENTICATED:
        return AuthenticationError(message)
    if status == grpc.StatusCode.DEADLINE_EXCEEDED:
        return TimedOutError(message)
    if status == grpc.StatusCode.RESOURCE_EXHAUSTED and "Concurrent RPC limit" in message:
        # grpc's own refusal of a call over the server's bound of calls in progress (calls_max).
        return OverloadedError(f"the server has as many calls in progress as it takes: {message}")
    if status == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return PayloadTooLargeError(f"the message exceeds a size limit: {message}")
    if status == grpc.StatusCode.UNAVAILABLE:
        return UnavailableError(message)
    return ServerError(message) if status == grpc.StatusCode.INTERNAL else UnavailableError(message)


def error_to_msg(error: SeawayError) -> pb.Error:
    """One part of a call failed (a batch of ``AppendMany``): its error, as a status would carry it."""
    return pb.Error(code=error.code, message=str(error) or error.code, retriable=error.retriable)


def error_from_msg(msg: pb.Error) -> SeawayError:
    return error_class(msg.code)(msg.message or msg.code)


# --- logs and attributes ----------------------------------------------------------------------------


def overrides_to_msg(overrides: dict[str, Any]) -> pb.Attributes:
    msg = pb.Attributes()
    if "backlog_s" in overrides:
        msg.backlog_s = overrides["backlog_s"] or 0.0
    if "payload_bytes_max" in overrides:
        msg.payload_bytes_max = overrides["payload_bytes_max"]
    if "durability" in overrides:
        durability = overrides["durability"]
        msg.durability = durability.value if isinstance(durability, Durability) else str(durability)
    return msg


def overrides_from_msg(msg: pb.Attributes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if msg.HasField("backlog_s"):
        out["backlog_s"] = msg.backlog_s or None
    if msg.HasField("payload_bytes_max"):
        out["payload_bytes_max"] = msg.payload_bytes_max
    if msg.HasField("durability"):
        try:
            out["durability"] = Durability(msg.durability)
        except ValueError:
            raise InvalidArgumentError(f"durability must be 'sync' or 'async', got {msg.durability!r}") from None
    return out


def log_info_to_msg(info: LogInfo) -> pb.LogInfo:
    attrs = info.attributes
    msg = pb.LogInfo(name=info.name, log_id=info.log_id, attributes=pb.Attributes(
        backlog_s=attrs.backlog_s or 0.0, payload_bytes_max=attrs.payload_bytes_max,
        durability=attrs.durability.value))
    if info.group is not None:
        msg.group = info.group
    return msg


def log_info_from_msg(msg: pb.LogInfo) -> LogInfo:
    resolved = overrides_from_msg(msg.attributes)
    return LogInfo(msg.name, msg.log_id, msg.group if msg.HasField("group") else None,
                   LogAttributes(**resolved), {})


# --- read items -----------------------------------------------------------------------------------


def items_to_msg(log_id: int, items: Iterable[ReadItem | RunItem]) -> pb.ReadItems:
    """Pack one log's items, in order: each record run or single record as a run, each gap as one."""
    msg = pb.ReadItems(log_id=log_id)
    add_items(msg, items)
    return msg


def add_items(msg: pb.ReadItems, items: Iterable[ReadItem | RunItem]) -> None:
    """Append items of ``msg``'s log to it, in order (a part of a reply built in place, not copied)."""
    runs = msg.runs
    for item in items:
        kind = type(item)
        if kind is RecordRun:
            run: RecordRun = item  # type: ignore[assignment]
            records = runs.add().records
            records.first_lsn = run.first_lsn
            records.timestamp_ms = run.timestamp_ms
            records.payloads.extend(run.payloads)
        elif kind is Record:
            record: Record = item  # type: ignore[assignment]
            runs.add().records.CopyFrom(pb.RecordRun(first_lsn=record.lsn, timestamp_ms=record.timestamp_ms,
                                                     payloads=[record.payload]))
        else:
            gap: Gap = item  # type: ignore[assignment]
            runs.add().gap.CopyFrom(pb.Gap(type=_GAP_TO_WIRE[gap.type], lsn_lo=gap.lsn_lo, lsn_hi=gap.lsn_hi))


def items_from_msg(msg: pb.ReadItems, runs: bool = False) -> list[ReadItem]:
    """The items of a message: a :class:`Record` each, or with ``runs`` a :class:`RecordRun` per run."""
    log_id = msg.log_id
    out: list[Any] = []
    for run in msg.runs:
        if run.HasField("records"):
            r = run.records
            if r.first_lsn < 1 or r.first_lsn + len(r.payloads) - 1 > LSN_MAX:
                raise InvalidArgumentError(f"a run of records from {r.first_lsn} is outside the LSN range")
            first = r.first_lsn
            if runs:
                out.append(RecordRun(log_id, first, r.timestamp_ms, list(r.payloads)))
                continue
            out.extend(map(_new_record, zip(repeat(log_id), range(first, first + len(r.payloads)),
                                            repeat(r.timestamp_ms), r.payloads)))
        elif run.HasField("gap"):
            kind = _GAP_FROM_WIRE.get(run.gap.type)
            if kind is None:
                raise InvalidArgumentError(f"unknown gap type {run.gap.type}")
            out.append(Gap(log_id, kind, run.gap.lsn_lo, run.gap.lsn_hi))
    return out


# --- metadata batches -------------------------------------------------------------------------------


def meta_batch_to_msg(batch: MetaBatch) -> pb.MetaBatch:
    msg = pb.MetaBatch()
    for c in batch.conditions:
        cond = msg.conditions.add(namespace=c.namespace, key=c.key)
        if c.version is not None:
            cond.version = c.version
        if c.value is not None:
            cond.value = c.value
    for op in batch.ops:
        if isinstance(op, MetaPut):
            msg.ops.add().put.CopyFrom(pb.MetaPutOp(namespace=op.namespace, key=op.key, value=op.value))
        elif isinstance(op, MetaDelete):
            msg.ops.add().delete.CopyFrom(pb.MetaKey(namespace=op.namespace, key=op.key))
        else:
            msg.ops.add().delete_range.CopyFrom(pb.MetaRange(namespace=op.namespace, start=op.start, end=op.end))
    if batch.ledger is not None:
        msg.ledger = batch.ledger
    for new in batch.new_logs:
        added = msg.new_logs.add(name=new.name)
        if new.log_id is not None:
            added.log_id = new.log_id
        if new.group is not None:
            added.group = new.group
    return msg


def meta_batch_from_msg(msg: pb.MetaBatch) -> MetaBatch:
    """The batch a message stands for, checked as the embedded API checks it."""
    batch = MetaBatch()
    for c in msg.conditions:
        if c.HasField("version"):
            batch.expect_version(c.namespace, c.key, c.version)
        if c.HasField("value"):
            batch.expect_value(c.namespace, c.key, c.value)
        if not c.HasField("version") and not c.HasField("value"):
            raise InvalidArgumentError(f"a condition on {c.namespace}/{c.key!r} names neither a version nor a value")
    for op in msg.ops:
        which = op.WhichOneof("op")
        if which == "put":
            batch.put(op.put.namespace, op.put.key, op.put.value)
        elif which == "delete":
            batch.delete(op.delete.namespace, op.delete.key)
        elif which == "delete_range":
            batch.delete_range(op.delete_range.namespace, op.delete_range.start, op.delete_range.end)
        else:
            raise InvalidArgumentError("an operation of a metadata batch is empty")
    if msg.HasField("ledger"):
        batch.record(change_from_msg(msg.ledger))  # encoded again by this version: what it stores it knows
    for new in msg.new_logs:
        batch.create_log(new.name, new.log_id if new.HasField("log_id") else None,
                         group=new.group if new.HasField("group") else None)
    return batch


def change_from_msg(body: bytes) -> Change:
    """The ledger change a client sent; :class:`InvalidArgumentError` if this server cannot decode it."""
    if len(body) > CHANGE_BYTES_MAX:
        raise PayloadTooLargeError(f"a ledger change is at most {CHANGE_BYTES_MAX} bytes, got {len(body)}")
    try:
        return decode_change(body)
    except CorruptionError as exc:  # the client's bytes, not the store's: the client's mistake
        raise InvalidArgumentError(str(exc)) from None


def ledger_entry_to_msg(entry: LedgerEntry) -> pb.LedgerEntry:
    return pb.LedgerEntry(index=entry.index, time_ms=entry.time_ms, change=encode_change(entry.change))


def ledger_entry_from_msg(msg: pb.LedgerEntry) -> LedgerEntry:
    """An entry the server sent (a change it cannot have written is :class:`CorruptionError`)."""
    return LedgerEntry(msg.index, msg.time_ms, decode_change(msg.change))
