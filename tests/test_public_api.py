"""The public surface of ``seaway`` is deliberate: a change to it shows up here."""

from __future__ import annotations

import types

import seaway
import seaway.ledger
import seaway.log
import seaway.logsdb
import seaway.queues
import seaway.streams
import seaway.txn


def test_exported_names_are_pinned() -> None:
    assert sorted(seaway.__all__) == sorted([
        "LSN_INVALID", "LSN_MAX", "LSN_OLDEST", "OLDEST", "AuthenticationError", "BatchingWriter", "BufferFullError",
        "ClientError", "Clock",
        "ClosedError", "ConditionFailedError", "CorruptionError", "DataDirLockedError", "Durability", "Gap", "GapType",
        "InvalidArgumentError", "Log", "LogAttributes", "LogDeletedError", "LogExistsError", "LogGroup",
        "LedgerConfig", "LogSealedError", "LogStoreConfig",
        "LogsDBConfig", "LsnOutOfRangeError", "MetaBatch", "OverloadedError", "PayloadTooLargeError",
        "PermissionDeniedError", "PreemptedError",
        "Reader", "Record", "RecordRun", "RemoteSeaway", "RetryPolicy", "Seaway",
        "SequenceGapError", "SequenceOrderError", "SequenceTooOldError", "SeawayConfig", "SeawayError", "ServerError",
        "StorageError", "Store", "StoreFailedError", "SystemClock", "TailMismatchError", "TimedOutError",
        "TransportError", "TrimPastTailError",
        "UnavailableError", "UnknownLogError", "Versioned",
        "InvalidStreamCutError", "ScaleConflictError", "StreamChangedError", "StreamConflictError",
        "ScopeExistsError", "ScopeNotEmptyError", "StreamExistsError",
        "StreamNotSealedError", "StreamSealedError", "StreamTruncatedError", "UnknownScopeError", "UnknownStreamError",
        "ReaderExistsError", "ReaderGroupExistsError", "ReaderOfflineError", "UnknownReaderGroupError",
        "ByDataRate", "ByEventRate", "FixedSegments", "RetentionBySize", "RetentionByTime", "Stream", "StreamConfig",
        "StreamCut", "Streams",
        "Snapshot", "Transaction", "TransactionConflictError", "TransactionNotInProgressError",
        "TransactionTimedOutError", "TxnConfig", "TxnStatus", "UnknownTransactionError",
        "ConsumerGroupExistsError", "ControlNodeUnavailableError", "ConsumerOutsideGroupError", "MissingHashKeyError",
        "QueueExistsError", "Strategy",
        "UnknownConsumerGroupError", "UnknownQueueError",
        "__version__", "connect", "epoch_of", "error_class", "esn_of", "lsn_str", "make_lsn", "open",
    ])


def test_every_exported_name_exists_and_modules_are_private() -> None:
    for module in (seaway, seaway.ledger, seaway.log, seaway.logsdb, seaway.queues, seaway.streams, seaway.txn):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
        public_modules = [n for n in dir(module)
                          if not n.startswith("_") and isinstance(getattr(module, n), types.ModuleType)]
        allowed = {"log", "logsdb", "cli", "client", "demo", "ledger", "notify", "queues", "server", "spark", "streams",
                   "testing", "txn", "wire", "bench", "errors", "console", "cluster",
                   "replication"}  # seaway.log.replication: the cluster's roles and messages, for their drivers
        assert set(public_modules) <= allowed, public_modules


def test_error_codes_are_unique_and_found_by_code() -> None:
    errors = [getattr(seaway, n) for n in seaway.__all__ if n.endswith("Error")]
    codes = [e.code for e in errors]
    assert len(codes) == len(set(codes))
    for error in errors:
        assert seaway.error_class(error.code) is error
    assert seaway.error_class("NO_SUCH_CODE") is seaway.SeawayError


def test_the_consoles_public_names_are_pinned() -> None:
    import seaway.console  # noqa: PLC0415 - an optional part of the install, loaded only here

    assert seaway.console.__all__ == ["Console", "ConsoleConfig"]
    for name in seaway.console.__all__:
        assert getattr(seaway.console, name).__module__.startswith("seaway.console._")
