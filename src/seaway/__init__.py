"""Seaway: durable, ordered, transactional event storage for Python.

``seaway.open(path)`` opens the embedded store; ``seaway.connect("seaway://host:port")`` a server
with the same API. Their ``logs`` namespace holds LogDevice-style logs, ``streams`` Pravega-style
streams of auto-scaling segments, ``txn`` transactions, ``queues`` queues with consumer groups,
and ``meta`` the metadata store.

The embedded store's names (``open``, ``Seaway``, ``Log``, ...) are loaded on first use, so that
``import seaway`` followed by ``seaway.connect`` never loads RocksDB.
"""

from __future__ import annotations

import os as _os

# With gRPC's fork support on (grpcio's default), a child started by fork and exec while a channel
# is busy can die before its exec (grpcio 1.80 and later, grpc/grpc#43055): PySpark starts its JVM
# that way, as any subprocess with a preexec_fn. Seaway never uses a channel across a fork(), so it
# turns fork support off before gRPC starts, unless the environment says otherwise.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from typing import TYPE_CHECKING

from seaway._api import Store
from seaway._clock import Clock, SystemClock
from seaway._errors import (
    AuthenticationError,
    BufferFullError,
    ClientError,
    ClosedError,
    ConditionFailedError,
    ConsumerGroupExistsError,
    ConsumerOutsideGroupError,
    ControlNodeUnavailableError,
    CorruptionError,
    DataDirLockedError,
    InvalidArgumentError,
    InvalidStreamCutError,
    LogDeletedError,
    LogExistsError,
    LogSealedError,
    LsnOutOfRangeError,
    MissingHashKeyError,
    OverloadedError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PreemptedError,
    QueueExistsError,
    ReaderExistsError,
    ReaderGroupExistsError,
    ReaderOfflineError,
    ScaleConflictError,
    ScopeExistsError,
    ScopeNotEmptyError,
    SeawayError,
    SequenceGapError,
    SequenceOrderError,
    SequenceTooOldError,
    ServerError,
    StorageError,
    StoreFailedError,
    StreamChangedError,
    StreamConflictError,
    StreamExistsError,
    StreamNotSealedError,
    StreamSealedError,
    StreamTruncatedError,
    TailMismatchError,
    TimedOutError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    TransportError,
    TrimPastTailError,
    UnavailableError,
    UnknownConsumerGroupError,
    UnknownLogError,
    UnknownQueueError,
    UnknownReaderGroupError,
    UnknownScopeError,
    UnknownStreamError,
    UnknownTransactionError,
    error_class,
)
from seaway._lazy import lazy_names

if TYPE_CHECKING:
    from seaway._seaway import Seaway, SeawayConfig, open  # noqa: A004
    from seaway.client import RemoteSeaway, connect
    from seaway.log import (
        LSN_INVALID,
        LSN_MAX,
        LSN_OLDEST,
        BatchingWriter,
        Durability,
        Gap,
        GapType,
        LedgerConfig,
        Log,
        LogAttributes,
        LogGroup,
        LogStoreConfig,
        MetaBatch,
        Reader,
        Record,
        RecordRun,
        RetryPolicy,
        Versioned,
        epoch_of,
        esn_of,
        lsn_str,
        make_lsn,
    )
    from seaway.logsdb import LogsDBConfig
    from seaway.queues import Strategy
    from seaway.streams import (
        ByDataRate,
        ByEventRate,
        FixedSegments,
        RetentionBySize,
        RetentionByTime,
        Stream,
        StreamConfig,
        StreamCut,
        Streams,
    )
    from seaway.txn import Snapshot, Transaction, TxnConfig, TxnStatus

_LAZY = {
    **dict.fromkeys(("Seaway", "SeawayConfig", "open"), "seaway._seaway"),
    **dict.fromkeys(("RemoteSeaway", "connect"), "seaway.client"),
    **dict.fromkeys(("LedgerConfig", "Log", "LogStoreConfig", "Reader"), "seaway.log"),
    "LogsDBConfig": "seaway.logsdb",
    **dict.fromkeys(("LSN_INVALID", "LSN_MAX", "LSN_OLDEST", "BatchingWriter", "Durability", "Gap", "GapType",
                     "LogAttributes", "LogGroup", "MetaBatch", "Record", "RecordRun", "RetryPolicy", "Versioned",
                     "epoch_of", "esn_of", "lsn_str", "make_lsn"), "seaway.log"),
    "Strategy": "seaway.queues",
    **dict.fromkeys(("ByDataRate", "ByEventRate", "FixedSegments", "RetentionBySize", "RetentionByTime", "Stream",
                     "StreamConfig", "StreamCut", "Streams"), "seaway.streams"),
    **dict.fromkeys(("Snapshot", "Transaction", "TxnConfig", "TxnStatus"), "seaway.txn"),
}
"""Every name but the errors and the clock, and where it lives: PEP 562 loads each on first use, so that
``import seaway`` (and the command's ``seaway --help``) stays light, and ``seaway.connect`` never loads RocksDB."""

if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any name imported from here
    __getattr__, __dir__ = lazy_names(globals(), _LAZY)

OLDEST = 1  # LSN_OLDEST, written out: importing seaway.log for it would load the whole log package
"""Read from the oldest record."""

__version__ = "0.1.0"

__all__ = [
    "LSN_INVALID",
    "LSN_MAX",
    "LSN_OLDEST",
    "OLDEST",
    "AuthenticationError",
    "BatchingWriter",
    "BufferFullError",
    "ByDataRate",
    "ByEventRate",
    "ClientError",
    "Clock",
    "ClosedError",
    "ConditionFailedError",
    "ConsumerGroupExistsError",
    "ConsumerOutsideGroupError",
    "ControlNodeUnavailableError",
    "CorruptionError",
    "DataDirLockedError",
    "Durability",
    "FixedSegments",
    "Gap",
    "GapType",
    "InvalidArgumentError",
    "InvalidStreamCutError",
    "LedgerConfig",
    "Log",
    "LogAttributes",
    "LogDeletedError",
    "LogExistsError",
    "LogGroup",
    "LogSealedError",
    "LogStoreConfig",
    "LogsDBConfig",
    "LsnOutOfRangeError",
    "MetaBatch",
    "MissingHashKeyError",
    "OverloadedError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PreemptedError",
    "QueueExistsError",
    "Reader",
    "ReaderExistsError",
    "ReaderGroupExistsError",
    "ReaderOfflineError",
    "Record",
    "RecordRun",
    "RemoteSeaway",
    "RetentionBySize",
    "RetentionByTime",
    "RetryPolicy",
    "ScaleConflictError",
    "ScopeExistsError",
    "ScopeNotEmptyError",
    "Seaway",
    "SeawayConfig",
    "SeawayError",
    "SequenceGapError",
    "SequenceOrderError",
    "SequenceTooOldError",
    "ServerError",
    "Snapshot",
    "StorageError",
    "Store",
    "StoreFailedError",
    "Strategy",
    "Stream",
    "StreamChangedError",
    "StreamConfig",
    "StreamConflictError",
    "StreamCut",
    "StreamExistsError",
    "StreamNotSealedError",
    "StreamSealedError",
    "StreamTruncatedError",
    "Streams",
    "SystemClock",
    "TailMismatchError",
    "TimedOutError",
    "Transaction",
    "TransactionConflictError",
    "TransactionNotInProgressError",
    "TransactionTimedOutError",
    "TransportError",
    "TrimPastTailError",
    "TxnConfig",
    "TxnStatus",
    "UnavailableError",
    "UnknownConsumerGroupError",
    "UnknownLogError",
    "UnknownQueueError",
    "UnknownReaderGroupError",
    "UnknownScopeError",
    "UnknownStreamError",
    "UnknownTransactionError",
    "Versioned",
    "__version__",
    "connect",
    "epoch_of",
    "error_class",
    "esn_of",
    "lsn_str",
    "make_lsn",
    "open",
]
