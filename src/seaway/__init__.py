"""Seaway: durable, ordered, transactional event storage for Python.

``seaway.open(path)`` opens the embedded store; ``seaway.connect("seaway://host:port")`` a server
with the same API. Their ``logs`` namespace holds LogDevice-style logs.
"""

from seaway._clock import Clock, SystemClock
from seaway._errors import (
    AuthenticationError,
    ClientError,
    ClosedError,
    CorruptionError,
    DataDirLockedError,
    InvalidArgumentError,
    LogExistsError,
    LsnOutOfRangeError,
    OverloadedError,
    PayloadTooLargeError,
    PreemptedError,
    SeawayError,
    SequenceTooOldError,
    ServerError,
    StorageError,
    TimedOutError,
    TransportError,
    TrimPastTailError,
    UnavailableError,
    UnknownLogError,
    error_class,
)
from seaway._seaway import Seaway, SeawayConfig, open  # noqa: A004
from seaway.client import RemoteSeaway, connect
from seaway.log import (
    LSN_INVALID,
    LSN_MAX,
    LSN_OLDEST,
    BatchingWriter,
    Gap,
    GapType,
    Log,
    LogAttributes,
    LogGroup,
    LogStoreConfig,
    Reader,
    Record,
    RecordRun,
    RetryPolicy,
    epoch_of,
    esn_of,
    lsn_str,
    make_lsn,
)
from seaway.logsdb import Durability, LogsDBConfig

OLDEST = LSN_OLDEST
"""Read from the oldest record."""

__version__ = "0.1.0"

__all__ = [
    "LSN_INVALID",
    "LSN_MAX",
    "LSN_OLDEST",
    "OLDEST",
    "AuthenticationError",
    "BatchingWriter",
    "ClientError",
    "Clock",
    "ClosedError",
    "CorruptionError",
    "DataDirLockedError",
    "Durability",
    "Gap",
    "GapType",
    "InvalidArgumentError",
    "Log",
    "LogAttributes",
    "LogExistsError",
    "LogGroup",
    "LogStoreConfig",
    "LogsDBConfig",
    "LsnOutOfRangeError",
    "OverloadedError",
    "PayloadTooLargeError",
    "PreemptedError",
    "Reader",
    "Record",
    "RecordRun",
    "RemoteSeaway",
    "RetryPolicy",
    "Seaway",
    "SeawayConfig",
    "SeawayError",
    "SequenceTooOldError",
    "ServerError",
    "StorageError",
    "SystemClock",
    "TimedOutError",
    "TransportError",
    "TrimPastTailError",
    "UnavailableError",
    "UnknownLogError",
    "__version__",
    "connect",
    "epoch_of",
    "error_class",
    "esn_of",
    "lsn_str",
    "make_lsn",
    "open",
]
