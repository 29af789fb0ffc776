"""The changes the ledger records: one frozen dataclass per operation, with typed fields.

Ozone's reviewers rejected a free-form map of extra arguments for its ledger; here each operation
declares its fields, their types are checked when an entry is encoded and decoded, and a reader
gets the same dataclass back. The encoding is compact JSON ``{"op": ..., "f": {...}}``: readable
by any language, and an unknown operation (from a newer version) is a clear error, not a guess.

Resources are named by kind and path (``log/clicks``, ``stream/web/access``,
``queue/orders/group/billing``...), which is what notification filters match prefixes and
suffixes against.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from seaway.errors import CorruptionError, InvalidArgumentError, PayloadTooLargeError

CHANGES: dict[str, type[Change]] = {}
"""Operation name -> its dataclass."""
CHANGE_BYTES_MAX = 64 << 10
"""The most bytes one encoded change takes: a change describes a control-plane operation, never
data, and a bounded entry keeps every read of the ledger bounded."""


@dataclass(frozen=True)
class Change:
    """A control-plane change; subclasses set ``OPERATION`` and declare their fields."""

    OPERATION: ClassVar[str] = ""

    def resource(self) -> str:
        raise NotImplementedError

    @classmethod
    def upgrade(cls, fields: dict[str, Any]) -> dict[str, Any]:
        """The fields of an entry written by an earlier version, in this version's form (an
        operation whose fields changed overrides this)."""
        return fields

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _fits(value, hints[f.name]):
                raise InvalidArgumentError(f"{self.OPERATION}: field {f.name} must be {hints[f.name]}, got "
                                           f"{value!r:.80}")


_HINTS: dict[type[Change], dict[str, Any]] = {}


def _hints(cls: type[Change]) -> dict[str, Any]:
    """The class's field types, resolved once: resolving them (``get_type_hints``) costs ten times
    what the checks do, and every transaction's commit builds a change."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def _fits(value: object, kind: Any) -> bool:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, k) for k in typing.get_args(kind))
    if origin is tuple:
        item = typing.get_args(kind)[0]
        return isinstance(value, tuple) and all(_fits(v, item) for v in value)
    if kind is type(None):
        return value is None
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _register(cls: type[Change]) -> type[Change]:
    if not cls.OPERATION or cls.OPERATION in CHANGES:
        raise AssertionError(f"a change needs an operation name of its own: {cls.__name__}")
    CHANGES[cls.OPERATION] = cls
    return cls


def encode_change(change: Change) -> bytes:
    """``change`` encoded; :class:`PayloadTooLargeError` past ``CHANGE_BYTES_MAX`` bytes,
    :class:`InvalidArgumentError` for what is not a change."""
    if not isinstance(change, Change) or type(change).OPERATION not in CHANGES:
        raise InvalidArgumentError(f"not a ledger change: {change!r:.80}")
    fields = {f.name: getattr(change, f.name) for f in dataclasses.fields(change)}
    body = json.dumps({"op": change.OPERATION, "f": fields}, separators=(",", ":")).encode()
    if len(body) > CHANGE_BYTES_MAX:
        raise PayloadTooLargeError(f"a ledger change is at most {CHANGE_BYTES_MAX} bytes encoded, "
                                   f"{change.OPERATION} takes {len(body)}")
    return body


def decode_change(body: bytes) -> Change:
    """The change encoded in ``body``; :class:`CorruptionError` if it is not one this version knows."""
    try:
        data = json.loads(body)
        cls = CHANGES[data["op"]]
        hints = _hints(cls)
        values = {}
        stored = cls.upgrade(data["f"])
        for f in dataclasses.fields(cls):
            value = stored[f.name]
            if typing.get_origin(hints[f.name]) is tuple and isinstance(value, list):
                value = tuple(value)  # JSON has lists only
            values[f.name] = value
        return cls(**values)
    except (ValueError, KeyError, TypeError, RecursionError, InvalidArgumentError) as exc:
        raise CorruptionError(f"not a ledger change this version knows: {body[:120]!r} ({exc})") from None


# --- logs ---------------------------------------------------------------------------------------


@_register
@dataclass(frozen=True)
class LogCreated(Change):
    OPERATION: ClassVar[str] = "log.created"
    log_id: int
    name: str
    group: str | None

    def resource(self) -> str:
        return f"log/{self.name}"


@_register
@dataclass(frozen=True)
class LogSealed(Change):
    OPERATION: ClassVar[str] = "log.sealed"
    log_id: int
    name: str
    final_lsn: int

    def resource(self) -> str:
        return f"log/{self.name}"


@_register
@dataclass(frozen=True)
class LogTrimmed(Change):
    OPERATION: ClassVar[str] = "log.trimmed"
    log_id: int
    name: str
    trim_point: int

    def resource(self) -> str:
        return f"log/{self.name}"


@_register
@dataclass(frozen=True)
class LogRemoved(Change):
    OPERATION: ClassVar[str] = "log.removed"
    log_id: int
    name: str

    def resource(self) -> str:
        return f"log/{self.name}"


@_register
@dataclass(frozen=True)
class LogGroupCreated(Change):
    OPERATION: ClassVar[str] = "log_group.created"
    name: str
    first_id: int
    last_id: int

    def resource(self) -> str:
        return f"log-group/{self.name}"


# --- scopes and streams ---------------------------------------------------------------------------
# A stream's entries name what changed and how much; the values that grow with the stream (segment
# lists, stream cuts: 10,000 segments take hundreds of KiB) stay in its metadata, where the entry
# says to read them, so that every stream the limits allow fits in an entry's CHANGE_BYTES_MAX.


def _cut_segments(cut: object) -> int:
    """How many segments an earlier version's cut (JSON text) names."""
    return len(json.loads(cut)["positions"]) if isinstance(cut, str) else 0


@_register
@dataclass(frozen=True)
class ScopeCreated(Change):
    OPERATION: ClassVar[str] = "scope.created"
    scope: str

    def resource(self) -> str:
        return f"scope/{self.scope}"


@_register
@dataclass(frozen=True)
class ScopeDeleted(Change):
    OPERATION: ClassVar[str] = "scope.deleted"
    scope: str

    def resource(self) -> str:
        return f"scope/{self.scope}"


@_register
@dataclass(frozen=True)
class StreamCreated(Change):
    OPERATION: ClassVar[str] = "stream.created"
    stream: str
    segment_count: int
    """How many segments the first generation has: ``0.0`` to ``0.<count - 1>``, of equal ranges."""
    config: str
    """The stream's configuration as JSON (``StreamConfig.to_json``)."""

    @classmethod
    def upgrade(cls, fields: dict[str, Any]) -> dict[str, Any]:
        if "segments" in fields and "segment_count" not in fields:  # before: the segments listed
            return {**fields, "segment_count": len(fields["segments"])}
        return fields

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class StreamUpdated(Change):
    OPERATION: ClassVar[str] = "stream.updated"
    stream: str
    config: str

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class StreamScaled(Change):
    """One completed scaling: how many segments it sealed and created. The segments themselves
    are the generation's delta: ``Stream.history(generation - 1, 1)``."""

    OPERATION: ClassVar[str] = "stream.scaled"
    stream: str
    generation: int
    """The generation the scaling made."""
    sealed_count: int
    created_count: int

    @classmethod
    def upgrade(cls, fields: dict[str, Any]) -> dict[str, Any]:
        if "sealed" in fields and "sealed_count" not in fields:  # before: the segments listed
            return {**fields, "sealed_count": len(fields["sealed"]), "created_count": len(fields["created"])}
        return fields

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class StreamSealed(Change):
    OPERATION: ClassVar[str] = "stream.sealed"
    stream: str

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class StreamTruncated(Change):
    """The stream was truncated: its head (``Stream.head()``, until a later truncation, which has
    an entry of its own) moved to a cut of ``segment_count`` segments, with ``size_bytes`` of the
    stream's bytes below it (``Stream.size_until(head)``)."""

    OPERATION: ClassVar[str] = "stream.truncated"
    stream: str
    segment_count: int
    size_bytes: int

    @classmethod
    def upgrade(cls, fields: dict[str, Any]) -> dict[str, Any]:
        if "cut" in fields and "segment_count" not in fields:  # before: the cut itself, no size
            return {**fields, "segment_count": _cut_segments(fields["cut"]), "size_bytes": 0}
        return fields

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class RetentionApplied(Change):
    """A retention policy truncated the stream (a truncation made by hand is StreamTruncated): the
    fields are StreamTruncated's, and the policy as JSON."""

    OPERATION: ClassVar[str] = "stream.retention_applied"
    stream: str
    segment_count: int
    size_bytes: int
    policy: str

    @classmethod
    def upgrade(cls, fields: dict[str, Any]) -> dict[str, Any]:
        if "cut" in fields and "segment_count" not in fields:  # before: the cut itself, no size
            return {**fields, "segment_count": _cut_segments(fields["cut"]), "size_bytes": 0}
        return fields

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class StreamDeleted(Change):
    OPERATION: ClassVar[str] = "stream.deleted"
    stream: str

    def resource(self) -> str:
        return f"stream/{self.stream}"


@_register
@dataclass(frozen=True)
class ReaderGroupCreated(Change):
    OPERATION: ClassVar[str] = "reader_group.created"
    group: str
    stream: str

    def resource(self) -> str:
        return f"reader-group/{self.group}"


@_register
@dataclass(frozen=True)
class ReaderGroupDeleted(Change):
    OPERATION: ClassVar[str] = "reader_group.deleted"
    group: str

    def resource(self) -> str:
        return f"reader-group/{self.group}"


@_register
@dataclass(frozen=True)
class ReaderGroupReset(Change):
    """A reader group's position moved (``ReaderGroup.reset``) to a cut of ``segment_count``
    segments; its readers were removed from it."""

    OPERATION: ClassVar[str] = "reader_group.reset"
    group: str
    segment_count: int

    def resource(self) -> str:
        return f"reader-group/{self.group}"


# --- queues and consumer groups -------------------------------------------------------------------


@_register
@dataclass(frozen=True)
class QueueCreated(Change):
    OPERATION: ClassVar[str] = "queue.created"
    queue: str

    def resource(self) -> str:
        return f"queue/{self.queue}"


@_register
@dataclass(frozen=True)
class QueueDeleted(Change):
    OPERATION: ClassVar[str] = "queue.deleted"
    queue: str

    def resource(self) -> str:
        return f"queue/{self.queue}"


@_register
@dataclass(frozen=True)
class ConsumerGroupCreated(Change):
    OPERATION: ClassVar[str] = "consumer_group.created"
    queue: str
    group: str
    size: int
    strategy: str
    key: str | None

    def resource(self) -> str:
        return f"queue/{self.queue}/group/{self.group}"


@_register
@dataclass(frozen=True)
class ConsumerGroupResized(Change):
    OPERATION: ClassVar[str] = "consumer_group.resized"
    queue: str
    group: str
    size: int
    strategy: str
    key: str | None
    generation: int

    def resource(self) -> str:
        return f"queue/{self.queue}/group/{self.group}"


@_register
@dataclass(frozen=True)
class ConsumerGroupDeleted(Change):
    OPERATION: ClassVar[str] = "consumer_group.deleted"
    queue: str
    group: str

    def resource(self) -> str:
        return f"queue/{self.queue}/group/{self.group}"


# --- transactions (summary fields only) ------------------------------------------------------------


@_register
@dataclass(frozen=True)
class TxnCommitted(Change):
    OPERATION: ClassVar[str] = "txn.committed"
    txn_id: int
    logs: int
    """How many logs the transaction registered."""
    writes: int
    """How many metadata writes its commit applied."""
    transactions: int = 1
    """How many transactions this commit committed as one (``commit_all``): ``txn_id`` is the
    first of them, ``logs`` counts the logs of them all."""

    def resource(self) -> str:
        return f"txn/{self.txn_id}"


@_register
@dataclass(frozen=True)
class TxnAbortedByTimeout(Change):
    OPERATION: ClassVar[str] = "txn.timed_out"
    txn_id: int
    logs: int

    def resource(self) -> str:
        return f"txn/{self.txn_id}"


# --- notifications ----------------------------------------------------------------------------------


@_register
@dataclass(frozen=True)
class NotifyConfigured(Change):
    OPERATION: ClassVar[str] = "notify.configured"
    name: str
    config: str
    """The configuration as JSON."""

    def resource(self) -> str:
        return f"notify/{self.name}"


@_register
@dataclass(frozen=True)
class NotifyConfigDeleted(Change):
    OPERATION: ClassVar[str] = "notify.config_deleted"
    name: str

    def resource(self) -> str:
        return f"notify/{self.name}"
