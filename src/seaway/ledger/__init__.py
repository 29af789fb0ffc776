"""The change ledger: one entry for every committed control-plane change (Ozone's HDDS-13513).

An entry is written in the same atomic write as the change it records, by the layer that makes
the change (a log created, a stream scaled, a consumer group resized, a transaction committed...),
so that a change and its entry never exist one without the other. Each entry has an index that
goes up by one, the time it was written, and a typed *change*: one frozen dataclass per operation,
with declared fields (never a free-form map), defined in this package so that every layer, the
notification plugins and their readers share one schema.
"""

from __future__ import annotations

from seaway.ledger._changes import (
    CHANGE_BYTES_MAX,
    CHANGES,
    Change,
    ConsumerGroupCreated,
    ConsumerGroupDeleted,
    ConsumerGroupResized,
    LogCreated,
    LogGroupCreated,
    LogRemoved,
    LogSealed,
    LogTrimmed,
    NotifyConfigDeleted,
    NotifyConfigured,
    QueueCreated,
    QueueDeleted,
    ReaderGroupCreated,
    ReaderGroupDeleted,
    ReaderGroupReset,
    RetentionApplied,
    ScopeCreated,
    ScopeDeleted,
    StreamCreated,
    StreamDeleted,
    StreamScaled,
    StreamSealed,
    StreamTruncated,
    StreamUpdated,
    TxnAbortedByTimeout,
    TxnCommitted,
    decode_change,
    encode_change,
)
from seaway.ledger._entry import LedgerEntry

__all__ = [
    "CHANGES",
    "CHANGE_BYTES_MAX",
    "Change",
    "ConsumerGroupCreated",
    "ConsumerGroupDeleted",
    "ConsumerGroupResized",
    "LedgerEntry",
    "LogCreated",
    "LogGroupCreated",
    "LogRemoved",
    "LogSealed",
    "LogTrimmed",
    "NotifyConfigDeleted",
    "NotifyConfigured",
    "QueueCreated",
    "QueueDeleted",
    "ReaderGroupCreated",
    "ReaderGroupDeleted",
    "ReaderGroupReset",
    "RetentionApplied",
    "ScopeCreated",
    "ScopeDeleted",
    "StreamCreated",
    "StreamDeleted",
    "StreamScaled",
    "StreamSealed",
    "StreamTruncated",
    "StreamUpdated",
    "TxnAbortedByTimeout",
    "TxnCommitted",
    "decode_change",
    "encode_change",
]
