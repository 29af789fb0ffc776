"""One hierarchy of errors for every layer of Seaway.

Each error says whose fault it is (its branch), carries a stable ``code`` that will cross the wire
unchanged, and a ``retriable`` flag telling the caller whether the same request may succeed later.
"""

from __future__ import annotations

from typing import ClassVar


class SeawayError(Exception):
    """Root of every error Seaway raises on purpose."""

    code: ClassVar[str] = "SEAWAY_ERROR"
    retriable: ClassVar[bool] = False


# --- The caller's side: the request was wrong (retrying it unchanged fails again), or the caller ---
# --- outran its own bounds (BufferFullError, retriable). -------------------------------------------


class ClientError(SeawayError):
    """The request was invalid; fix it before trying again."""

    code = "CLIENT_ERROR"


class InvalidArgumentError(ClientError, ValueError):
    """An argument is malformed or outside its allowed range."""

    code = "INVALID_ARGUMENT"


class UnknownLogError(ClientError, KeyError):
    """No log (or log group) with that name or id exists."""

    code = "UNKNOWN_LOG"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else self.code


class LogExistsError(ClientError):
    """A log or log group with that name or id already exists."""

    code = "LOG_EXISTS"


class PayloadTooLargeError(ClientError):
    """A record payload, or a whole batch, is larger than the log's limit."""

    code = "PAYLOAD_TOO_LARGE"


class LsnOutOfRangeError(ClientError):
    """An LSN is outside the range the operation accepts."""

    code = "LSN_OUT_OF_RANGE"


class TrimPastTailError(LsnOutOfRangeError):
    """``trim`` was asked to trim records that have not been written yet."""

    code = "TRIM_PAST_TAIL"


class AuthenticationError(ClientError):
    """The request did not carry the server's token."""

    code = "UNAUTHENTICATED"


class PermissionDeniedError(ClientError):
    """The client asked to change what only the store changes: its own namespaces (``notify``,
    ``txn``, ``seaway.*``), logs (``seaway.*``), or the change ledger. Use the API that owns them."""

    code = "PERMISSION_DENIED"


class SequenceTooOldError(ClientError):
    """A producer's sequence number is older than every batch the log remembers of it: whether that
    batch was stored cannot be told any more. The producer had too many batches in flight."""

    code = "SEQUENCE_TOO_OLD"


class SequenceGapError(ClientError):
    """A producer's batch came before an earlier batch of the same producer was stored: the log
    takes a producer's batches only in the order of their sequence numbers (Kafka's rule for an
    idempotent producer), so that a batch refused and sent again never lands after one sent later.
    Nothing was stored. Send the missing batches first, then this one again (Seaway's writers and
    the client do so by themselves)."""

    code = "SEQUENCE_GAP"
    retriable = True


class SequenceOrderError(ClientError):
    """A producer's batch can no longer be stored in order: a batch the producer sent after it is
    stored already (it was in flight when this one failed). Nothing was stored, and sending it
    again cannot succeed. A producer that gets this continues under a new producer id; its caller
    decides what to do with the failed batch."""

    code = "SEQUENCE_ORDER"


class ConditionFailedError(ClientError):
    """A condition of a metadata batch did not hold, so none of the batch was applied. ``key`` names
    the first condition that failed (its namespace and key), ``version`` is that key's version now
    (0: absent). Read again, then decide whether to try again."""

    code = "CONDITION_FAILED"

    def __init__(self, message: str, namespace: str = "", key: bytes = b"", version: int = 0) -> None:
        super().__init__(message)
        self.namespace = namespace
        self.key = key
        self.version = version


class LogSealedError(ClientError):
    """The log was sealed for good: it takes no more appends. Its records stay readable up to its
    final LSN (``Log.final_lsn()``); write to another log."""

    code = "LOG_SEALED"


class LogDeletedError(UnknownLogError):
    """The log was deleted: its records are gone and its id is never used again."""

    code = "LOG_DELETED"


class TailMismatchError(ClientError):
    """A conditional append found the log's tail elsewhere than the caller expected: another writer
    appended (or a slot was plugged) since the caller last looked. Nothing was appended. Read the
    tail again before deciding whether to append (this is how a writer learns it was fenced)."""

    code = "TAIL_MISMATCH"


class BufferFullError(ClientError):
    """This process's own bound on appends waiting to be sent was reached and stayed reached for
    the time allowed: the caller appends faster than the store takes them. Nothing was queued; the
    same append may succeed once the appends before it have gone out, so back off and retry."""

    code = "BUFFER_FULL"
    retriable = True


class ClosedError(ClientError):
    """The object was closed by its owner; it can no longer be used."""

    code = "CLOSED"


# --- Streams ----------------------------------------------------------------------------------------


class UnknownScopeError(ClientError, KeyError):
    """No scope with that name exists."""

    code = "UNKNOWN_SCOPE"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class UnknownStreamError(ClientError, KeyError):
    """No stream with that name exists (or it was deleted)."""

    code = "UNKNOWN_STREAM"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class UnknownSparkSourceError(ClientError, KeyError):
    """No Spark query recorded a source under that ``sourceId``."""

    code = "UNKNOWN_SPARK_SOURCE"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class ScopeExistsError(ClientError):
    code = "SCOPE_EXISTS"


class StreamExistsError(ClientError):
    code = "STREAM_EXISTS"


class ScopeNotEmptyError(ClientError):
    """A scope is deleted only once it holds no streams."""

    code = "SCOPE_NOT_EMPTY"


class StreamSealedError(ClientError):
    """The stream is sealed: it takes no more writes and no scaling."""

    code = "STREAM_SEALED"


class StreamNotSealedError(ClientError):
    """A stream is deleted only once sealed."""

    code = "STREAM_NOT_SEALED"


class StreamConflictError(ClientError):
    """A change of a stream was refused because it was decided on what the stream was before
    another change (catch this to handle every kind below)."""

    code = "STREAM_CONFLICT"


class ScaleConflictError(StreamConflictError):
    """The scaling names segments that are not all of the stream's current set (another scaling
    changed it first, or they never were): read the current segments and decide again."""

    code = "SCALE_CONFLICT"


class StreamChangedError(StreamConflictError):
    """A stream's configuration, truncation or retention set changed between the read this change
    was made from and its write (another process came first): the same call may succeed now."""

    code = "STREAM_CHANGED"
    retriable = True


class InvalidStreamCutError(InvalidArgumentError):
    """A stream cut that is not a consistent position of the stream (or not of this stream)."""

    code = "INVALID_STREAM_CUT"


class StreamTruncatedError(ClientError):
    """A read or a reader group asked for events below the stream's head: they were truncated."""

    code = "STREAM_TRUNCATED"


class UnknownReaderGroupError(ClientError, KeyError):
    """No reader group with that name exists (or it was deleted)."""

    code = "UNKNOWN_READER_GROUP"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class ReaderGroupExistsError(ClientError):
    code = "READER_GROUP_EXISTS"


class ReaderExistsError(ClientError):
    """A reader joined a group under the id of a reader that is still a member: close it or declare
    it offline first."""

    code = "READER_EXISTS"


class ReaderOfflineError(ClientError):
    """The reader is no longer a member of its group (it was declared offline, or the group was
    reset): its segments went back to the group. Make a new reader to go on."""

    code = "READER_OFFLINE"


# --- Transactions and queues -----------------------------------------------------------------------


class UnknownTransactionError(ClientError, KeyError):
    """No transaction with that id is known to the manager (never begun, or finished so long ago
    that its outcome is no longer kept)."""

    code = "UNKNOWN_TRANSACTION"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class TransactionNotInProgressError(ClientError):
    """The transaction already ended (committed, aborted or timed out): it cannot be committed or
    aborted again. Ask for its status to learn how it ended."""

    code = "TRANSACTION_NOT_IN_PROGRESS"


class TransactionTimedOutError(TransactionNotInProgressError):
    """The transaction was idle past its timeout and is now invalid: its writes will never be
    visible. Begin a new transaction and do the work again."""

    code = "TRANSACTION_TIMED_OUT"


class TransactionConflictError(ClientError):
    """A transaction that committed after this one began wrote one of the same conflict keys: this
    one was aborted (nothing it wrote becomes visible). Retry the work in a new transaction."""

    code = "TRANSACTION_CONFLICT"
    retriable = True


class UnknownQueueError(ClientError, KeyError):
    """No queue with that name exists."""

    code = "UNKNOWN_QUEUE"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class QueueExistsError(ClientError):
    code = "QUEUE_EXISTS"


class UnknownConsumerGroupError(ClientError, KeyError):
    """The queue has no consumer group with that name."""

    code = "UNKNOWN_CONSUMER_GROUP"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class ConsumerGroupExistsError(ClientError):
    code = "CONSUMER_GROUP_EXISTS"


class ConsumerOutsideGroupError(ClientError):
    """The consumer id is not in ``[0, size)`` of its group (which may have been resized)."""

    code = "CONSUMER_OUTSIDE_GROUP"


class MissingHashKeyError(InvalidArgumentError):
    """An entry lacks the key a HASH consumer group partitions on."""

    code = "MISSING_HASH_KEY"


class NotifyConfigError(InvalidArgumentError):
    """A notification configuration is malformed (an unknown target type or format, a bad filter...)."""

    code = "NOTIFY_CONFIG_INVALID"


class NotifyConfigOverlapError(NotifyConfigError):
    """A notification configuration overlaps another one (shared event types, overlapping prefix
    and suffix filters), which S3 refuses too: an entry would be delivered by both."""

    code = "NOTIFY_CONFIG_OVERLAP"


class NotifyConfigsFullError(NotifyConfigError):
    """The store holds as many notification configurations as it may (``CONFIGS_MAX``): delete
    one before adding another."""

    code = "NOTIFY_CONFIGS_FULL"


class UnknownNotifyConfigError(ClientError, KeyError):
    """No notification configuration has that name."""

    code = "UNKNOWN_NOTIFY_CONFIG"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.code


class ServerRunningError(ClientError):
    """A server process that is still running was asked to start again: stop or kill it first."""

    code = "SERVER_RUNNING"


# --- The store's side: a condition of the storage, not of the request. ------------------------------


class ServerError(SeawayError):
    """The store could not carry out a valid request."""

    code = "SERVER_ERROR"


class DataDirLockedError(ServerError):
    """Another process (or another open store in this one) holds the data directory."""

    code = "DATA_DIR_LOCKED"


class StorageError(ServerError):
    """The disk write or read failed; the operation was not carried out and may be retried."""

    code = "STORAGE_ERROR"
    retriable = True


class CorruptionError(ServerError):
    """Stored bytes failed their checksum; they are never returned as data."""

    code = "CORRUPTION"


class PreemptedError(ServerError):
    """The log's sequencer was replaced (its epoch sealed) while the append was in flight.

    The append was not acknowledged; it may be retried and will get an LSN in the new epoch.
    """

    code = "PREEMPTED"
    retriable = True


class TimedOutError(ServerError, TimeoutError):
    """The operation did not complete within its time limit; its outcome is unknown. Also a
    :class:`TimeoutError`, as Python's own time limits are."""

    code = "TIMED_OUT"
    retriable = True


class OverloadedError(ServerError):
    """A bounded queue is full; back off and retry."""

    code = "OVERLOADED"
    retriable = True


class StoreFailedError(StorageError):
    """A disk write or sync failed, so the store takes no writes until it is reopened (what reached
    the disk is unknown until it reloads its state). Retrying in this process is in vain: reopen the
    store (restart the server)."""

    code = "STORE_FAILED"
    retriable = False


class InternalError(ServerError):
    """A bug in Seaway: something its code guarantees did not hold (an invariant check failed). The
    operation failed; retrying it is in vain until the bug is fixed. Please report it."""

    code = "INTERNAL_ERROR"
    retriable = False


# --- The transport's fault: the request may or may not have reached the store. ----------------------


class TransportError(SeawayError):
    """The connection to the server failed; whether the request was carried out is unknown."""

    code = "TRANSPORT_ERROR"
    retriable = True


class UnavailableError(TransportError):
    """The server could not be reached (not running, restarting, or the network is down)."""

    code = "UNAVAILABLE"


class ControlNodeUnavailableError(UnavailableError):
    """A cluster's control node (its metadata, transactions, ledger and notifications) does not
    answer, or none is registered; the logs' own nodes may still serve reads and appends."""

    code = "CONTROL_NODE_UNAVAILABLE"


# --- A notification target's fault: the receiver is down, refused, hung or answered garbage. ---------


class DeliveryError(SeawayError):
    """A notification target did not acknowledge a message; the plugin retries it within its bounds."""

    code = "DELIVERY_FAILED"
    retriable = True


class DeliveryRefusedError(DeliveryError):
    """A notification target refused a message for good (a webhook's 4xx other than 408 and 429):
    the plugin gives the entry up at once (counted as dropped, logged with its index)."""

    code = "DELIVERY_REFUSED"
    retriable = False


_BY_CODE: dict[str, type[SeawayError]] = {}


def _register(cls: type[SeawayError]) -> None:
    _BY_CODE[cls.code] = cls
    for sub in cls.__subclasses__():
        _register(sub)


_register(SeawayError)


def error_class(code: str) -> type[SeawayError]:
    """Return the error class for a stable ``code``; unknown codes map to :class:`SeawayError`."""
    return _BY_CODE.get(code, SeawayError)
