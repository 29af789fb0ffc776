"""The remote client: the embedded API (``sw.logs``, ``Log``, ``Reader``) over the gRPC protocol.

Calls that are safe to repeat (reads of state, trims) are retried on transport failures with the
client's :class:`RetryPolicy`. Appends are retried too, in order: each log's plain appends go
through an ordered append pipeline of this connection (:class:`~seaway.log.OrderedAppends`), each
batch with its producer id and a sequence number, so the server stores a batch sent twice once
(docs/ordering.md); ``_append.py`` packs the batches of every log into calls.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar
from urllib.parse import urlparse

import grpc

from seaway.client._append import AppendQueue, AppendQueueConfig
from seaway.client._batch import CallBatcher
from seaway.client._producers import LogProducers
from seaway.client._reader import RemoteReader, translate
from seaway.errors import (
    ClosedError,
    ConditionFailedError,
    ControlNodeUnavailableError,
    CorruptionError,
    InvalidArgumentError,
    PayloadTooLargeError,
    PermissionDeniedError,
    SeawayError,
    ServerError,
    TimedOutError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    TransportError,
    UnavailableError,
    UnknownLogError,
    UnknownNotifyConfigError,
    UnknownTransactionError,
)
from seaway.ledger import Change, LedgerEntry, encode_change
from seaway.log import (
    BUFFERED_BYTES_MAX_DEFAULT,
    COMMIT_MANY_MAX,
    LSN_OLDEST,
    UNSET,
    AppendCoalescer,
    AppendCounts,
    CoalesceConfig,
    Coalescers,
    Durability,
    LedgerApi,
    LinkedBatch,
    LogBounds,
    LogGroup,
    LogHandle,
    LogInfo,
    LogsApi,
    MetaApi,
    MetaBatch,
    OrderedAppends,
    PartitionInfo,
    PipelineConfig,
    ProducerMark,
    ReadItem,
    RetryPolicy,
    Versioned,
    attribute_overrides,
    check_count_ranges,
    check_floor_name,
    check_ledger_index,
    check_ledger_read,
    check_linked,
    check_log_ids,
    check_lsn,
    check_meta_key,
    get_or_create_log,
    read_logs,
    scan_bounds,
)
from seaway.notify import Checkpoint, Notifications, NotifyConfig
from seaway.queues import Queues
from seaway.streams import Streams
from seaway.txn import (
    INVALID_PAGE_IDS_MAX,
    Begun,
    InvalidCopy,
    InvalidVersion,
    LinkedWrite,
    LiveCopy,
    Snapshot,
    Transaction,
    Transactions,
    TxnInfo,
    TxnStatus,
    check_linked_writes,
    check_reads,
    check_txn_logs,  # one rule for a begin's or a register's logs, embedded and remote
)
from seaway.txn import check_wait as _check_wait
from seaway.txn import check_write_pointer as _check_txn_id  # one rule for ids, embedded and remote
from seaway.wire import (
    TOKEN_KEY,
    error_from_msg,
    invalid_changes_from_msg,
    invalid_version_to_msg,
    ledger_entry_from_msg,
    linked_batches_to_msg,
    linked_writes_to_msg,
    live_changes_from_msg,
    log_info_from_msg,
    meta_batch_to_msg,
    overrides_from_msg,
    overrides_to_msg,
    seaway_pb2,
    seaway_pb2_grpc,
    txn_info_from_msg,
    txn_page_key,
    txn_status_from_msg,
    txn_writes_to_msg,
)

pb = seaway_pb2
_R = TypeVar("_R")
DEFAULT_PORT = 7070
MESSAGE_BYTES_MAX = 64 << 20
INVALID_READS_MAX = 5
"""Reads of the server's invalid list in pages, each followed by the changes since its first page,
before a call gives up (only a list that changes faster than it can be read needs a second)."""


def _request_too_large(exc: PayloadTooLargeError) -> bool:
    """Whether gRPC refused a request for its size (sent by no one: the server never read it)."""
    text = str(exc)
    return "SERVER: Received message larger than max" in text or "CLIENT: Sent message larger than max" in text


class RemoteSeaway:
    """A connection to a Seaway server. Use as a context manager, or call :meth:`close`."""

    def __init__(self, target: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
                 tls: bool = False, timeout_s: float = 30.0, retry: RetryPolicy | None = None,
                 appends: AppendQueueConfig | None = None, coalesce: CoalesceConfig | None = None,
                 logs: LogsApi | None = None, control: str | None = None) -> None:
        """``logs``: the users' logs when they are not the server's (a cluster's, reached directly:
        the server is then the cluster's control node), closed with this client; ``control``: what
        the server is called in the error raised when it does not answer
        (:class:`ControlNodeUnavailableError` instead of :class:`UnavailableError`)."""
        options = [("grpc.max_receive_message_length", MESSAGE_BYTES_MAX),
                   ("grpc.max_send_message_length", MESSAGE_BYTES_MAX),
                   # Reconnect quickly after a server restart; the retry policy bounds the waiting.
                   ("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000),
                   ("grpc.http2.lookahead_bytes", 8 << 20)]
        if tls or tls_root_cert is not None:
            self._channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(tls_root_cert), options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self.target = target
        self._stub = seaway_pb2_grpc.SeawayStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata = ((TOKEN_KEY, f"Bearer {token}"),) if token else ()
        self._timeout_s = timeout_s
        self._retry = retry or RetryPolicy()
        self._closed = False
        self._appends = AppendQueue(lambda request: self._call_async("AppendMany", request),
                                    appends or AppendQueueConfig())
        coalesce = coalesce or CoalesceConfig()
        self._coalescers = Coalescers(coalesce)
        # Per log: the ordered append pipeline of this connection's plain appends (its own producer).
        self._producers = LogProducers(lambda log_id, new_id: OrderedAppends(
            lambda payloads, mark, if_tail: self._appends.put(log_id, payloads, mark, self._timeout_s, if_tail),
            PipelineConfig(batches_in_flight_max=coalesce.batches_in_flight_max, retry=self._retry),
            new_producer=new_id))
        # Begins, commits and metadata batches of this connection's threads, joined into one call
        # each while calls of their kind are on the wire (see _batch.py).
        self._begins: CallBatcher[pb.TxnBeginRequest, pb.TxnBeginReply] = CallBatcher(
            lambda items: self._many("TxnBegin", items, idempotent=True))
        self._commits: CallBatcher[pb.TxnCommitRequest, pb.Empty] = CallBatcher(
            lambda items: self._many("TxnCommit", items, idempotent=False))
        self._meta_commits: CallBatcher[pb.MetaBatch, pb.MetaCommitReply] = CallBatcher(
            lambda items: self._many("MetaCommit", items, idempotent=False))
        self._control = control
        self._own_logs = logs
        self.logs: LogsApi = RemoteLogs(self) if logs is None else logs
        self.meta = RemoteMetadataStore(self)
        self.ledger = RemoteLedger(self)
        self.txn = Transactions(RemoteTxn(self))
        # Streams' changes are stamped with the server's time, not this machine's: one client with a
        # skewed clock would otherwise push a stream's time index ahead for every other.
        self.streams = Streams(self.logs, self.meta, ServerClock(self), txn=self.txn)
        self.queues = Queues(self.logs, self.meta, self.txn)
        # The server keeps the configurations (their secrets stay there) and runs the plugins.
        self.notify = RemoteNotifications(self)

    def transaction(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Transaction:
        """Begin a transaction on the server's manager (``with sw.transaction() as tx:`` commits on
        exit, aborts on an exception); as :meth:`seaway.Seaway.transaction`."""
        return self.txn.begin(timeout_s, logs)

    # --- calls ----------------------------------------------------------------------------------

    def _call(self, method: str, request: Any, *, idempotent: bool = True) -> Any:
        """Make a unary call; retry transport failures of idempotent calls; raise typed errors."""
        self._check_open()
        attempt = 0
        while True:
            attempt += 1
            try:
                return getattr(self._stub, method)(request, timeout=self._timeout_s, metadata=self._metadata)
            except grpc.RpcError as exc:
                error = self._translate(exc)
            if not (idempotent and error.retriable and attempt < self._retry.attempts_max):
                raise error
            time.sleep(self._retry.delay_s(attempt))

    def _joined(self, method: str, request: Any) -> Any:
        """One ``TxnBegin``, ``TxnCommit`` or ``MetaCommit``, joined with those other threads of this
        connection make meanwhile (see ``_batch.py``); its reply, or its error raised."""
        batcher: CallBatcher[Any, Any] = (self._begins if method == "TxnBegin" else
                                          self._commits if method == "TxnCommit" else self._meta_commits)
        return batcher.call(request)

    def _many(self, method: str, items: Sequence[Any], *, idempotent: bool) -> list[Any]:
        """``items`` of ``method`` (``TxnBegin``, ``TxnCommit`` or ``MetaCommit``) in one call: the
        single call for one item, else its ``...Many`` form; each item's reply, or its error."""
        if len(items) == 1:
            return [self._call(method, items[0], idempotent=idempotent)]
        request: Any
        if method == "TxnBegin":
            request = pb.TxnBeginManyRequest(begins=items)
        elif method == "TxnCommit":
            request = pb.TxnCommitManyRequest(commits=items)
        else:
            request = pb.MetaCommitManyRequest(batches=items)
        try:
            reply = self._call(f"{method}Many", request, idempotent=idempotent)
        except PayloadTooLargeError as exc:
            # Items that each fit the message bound may not fit it together. A request refused for
            # its size was applied in nothing (refused by gRPC before the server reads it; the
            # ...Many methods answer a batch's own size item by item): sent again in halves. A
            # reply over the bound (begins' invalid lists) came after the items were applied:
            # only begins, which may be sent again, are then split.
            if not (idempotent or _request_too_large(exc)):
                raise
            half = len(items) // 2
            return self._each(method, items[:half], idempotent) + self._each(method, items[half:], idempotent)
        answered = "begun" if method == "TxnBegin" else "committed" if method == "TxnCommit" else "reply"
        return [getattr(result, answered) if result.WhichOneof("result") == answered else error_from_msg(result.error)
                for result in reply.results]

    def _each(self, method: str, items: Sequence[Any], idempotent: bool) -> list[Any]:
        """:meth:`_many`, an error of the call as a whole given to each item."""
        try:
            return self._many(method, items, idempotent=idempotent)
        except SeawayError as exc:
            return [copy.copy(exc) for _ in items]

    def _pages(self, method: str, after: bytes | None = None) -> Iterator[Any]:
        """The replies of a list call answered in pages (``PageRequest``), each asked for after the
        one before (the first after ``after``, a key as a reply's ``next``); each call is retried
        as :meth:`_call` does."""
        request = pb.PageRequest() if after is None else pb.PageRequest(after=after)
        while True:
            reply = self._call(method, request)
            yield reply
            if not reply.HasField("next"):
                return
            if request.HasField("after") and reply.next <= request.after:
                raise ServerError(f"the server's pages of {method} do not move on")
            request = pb.PageRequest(after=reply.next)

    def _translate(self, exc: grpc.RpcError) -> SeawayError:
        error = translate(exc)
        if self._control is not None and type(error) is UnavailableError:
            return ControlNodeUnavailableError(f"{self._control} does not answer ({error}): metadata, transactions, "
                                               f"the ledger, notifications, streams and queues need it")
        return error

    def _call_async(self, method: str, request: Any) -> Future[Any]:
        self._check_open()
        outer: Future[Any] = Future()
        inner = getattr(self._stub, method).future(request, timeout=self._timeout_s, metadata=self._metadata)

        def done(call: Any) -> None:
            try:
                outer.set_result(call.result())
            except grpc.RpcError as exc:
                outer.set_exception(self._translate(exc))
            except grpc.FutureCancelledError:
                outer.set_exception(ClosedError("the client closed before the call finished"))

        inner.add_done_callback(done)
        return outer

    def _read_stream(self, controls: Iterable[pb.ReadControls]) -> Any:
        """A ``ReadMany`` call sending ``controls``; iterate it for the replies."""
        self._check_open()
        return self._stub.ReadMany(iter(controls), metadata=self._metadata)

    def health(self) -> str:
        """``SERVING`` when the server accepts calls."""
        reply: pb.HealthReply = self._call("Health", pb.Empty())
        return reply.status

    def server_time_ms(self) -> int:
        """The server's clock, in epoch milliseconds (one call); this machine's from a server of a
        version that does not tell it."""
        reply: pb.HealthReply = self._call("Health", pb.Empty())
        return int(reply.time_ms) or time.time_ns() // 1_000_000

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the client is closed")

    def close(self) -> None:
        """Close the connection; idempotent. Calls in flight fail with a transport error, appends
        still waiting for a call with :class:`ClosedError`."""
        if not self._closed:
            self._closed = True
            self._coalescers.close(drain_s=0)
            self._producers.close()
            self._appends.close()
            self._channel.close()
            if self._own_logs is not None:
                self._own_logs.close()  # type: ignore[attr-defined]

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> RemoteSeaway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteLog(LogHandle):
    """A handle on one log of a server; the same methods as :class:`seaway.Log`."""

    def __init__(self, logs: RemoteLogs, info: LogInfo) -> None:
        super().__init__(info, logs._client)
        self._logs = logs
        self._client = logs._client

    def _make_appends(self) -> AppendCoalescer:
        """Batches go out as idempotent appends through the log's ordered append pipeline of this
        connection (its producer id, the next sequence number), unless the caller gave a mark (then
        they are the caller's, sent once). So a retriable failure is retried in order, up to the
        client's retry policy, without storing the batch twice; batches queued while the
        client's earlier calls are in flight go together in its next call (see
        :class:`~seaway.client.AppendQueueConfig`)."""
        client, log_id = self._client, self.id

        def send(payloads: tuple[bytes, ...], mark: ProducerMark | None, if_tail: int | None) -> Future[range]:
            if mark is not None:  # the caller's own producer: its order and retries are the caller's
                return client._appends.put(log_id, payloads, mark, client._timeout_s, if_tail)
            return client._producers.put(log_id, payloads, if_tail=if_tail)

        return client._coalescers.get(log_id, send)

    def _state(self) -> pb.LogState:
        state: pb.LogState = self._client._call("GetLogState", pb.LogRef(log_id=self.id))
        return state

    def tail_lsn(self) -> int:
        return self._state().tail_lsn

    def seal(self) -> int:
        reply: pb.LsnReply = self._client._call("SealLog", pb.LogRef(log_id=self.id))
        return reply.lsn

    def final_lsn(self) -> int | None:
        state = self._state()
        return state.final_lsn if state.HasField("final_lsn") else None

    def delete(self) -> None:
        self._logs.delete(self)

    def trim_point(self) -> int:
        return self._state().trim_point

    def is_empty(self) -> bool:
        return self._state().is_empty

    def data_size(self) -> int:
        return self._state().data_size

    def trim(self, lsn: int) -> None:
        check_lsn(lsn, "lsn")
        self._client._call("Trim", pb.TrimRequest(log_id=self.id, lsn=lsn))

    def find_time(self, timestamp_ms: int) -> int:
        if not isinstance(timestamp_ms, int) or isinstance(timestamp_ms, bool) or not 0 <= timestamp_ms < 2**63:
            raise InvalidArgumentError(f"timestamp_ms must be a non-negative integer, got {timestamp_ms!r}")
        reply: pb.LsnReply = self._client._call("FindTime", pb.FindTimeRequest(log_id=self.id,
                                                                                timestamp_ms=timestamp_ms))
        return reply.lsn

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Generator[ReadItem, None, None]:
        return self._logs.read({self: lsn_from}, until=lsn_until)


class RemoteLogs:
    """The logs of a server; the same methods as :class:`seaway.log.Logs`."""

    def __init__(self, client: RemoteSeaway) -> None:
        self._client = client

    def create(self, name: str, *, log_id: int | None = None, group: str | None = None,
               backlog_s: float | None = UNSET, payload_bytes_max: int = UNSET,
               durability: Durability = UNSET) -> RemoteLog:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a log name must be a string, got {name!r}")
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        request = pb.CreateLogRequest(name=name, attributes=overrides_to_msg(overrides))
        if log_id is not None:
            request.log_id = _check_id(log_id)
        if group is not None:
            request.group = group
        info: pb.LogInfo = self._client._call("CreateLog", request, idempotent=False)
        return RemoteLog(self, log_info_from_msg(info))

    def create_group(self, name: str, first_id: int, last_id: int, *, backlog_s: float | None = UNSET,
                     payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> LogGroup:
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        reply: pb.GroupInfo = self._client._call("CreateGroup", pb.CreateGroupRequest(
            name=name, first_id=_check_id(first_id), last_id=_check_id(last_id),
            attributes=overrides_to_msg(overrides)), idempotent=False)
        return LogGroup(reply.name, reply.first_id, reply.last_id, overrides)

    def get(self, name_or_id: str | int) -> RemoteLog:
        if isinstance(name_or_id, bool) or not isinstance(name_or_id, str | int):
            raise UnknownLogError(f"no log {name_or_id!r}")
        if isinstance(name_or_id, int):
            if not 0 < name_or_id < 2**64:
                raise UnknownLogError(f"no log {name_or_id!r}")
            ref = pb.LogRef(log_id=name_or_id)
        else:
            ref = pb.LogRef(name=name_or_id)
        info: pb.LogInfo = self._client._call("GetLog", ref)
        return RemoteLog(self, log_info_from_msg(info))

    def get_or_create(self, name: str, *, group: str | None = None, backlog_s: float | None = UNSET,
                      payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> RemoteLog:
        """As :meth:`seaway.log.Logs.get_or_create`."""
        log: RemoteLog = get_or_create_log(self, name, group=group, backlog_s=backlog_s,
                                           payload_bytes_max=payload_bytes_max, durability=durability)
        return log

    def delete(self, log: LogHandle | int | str) -> None:
        """As :meth:`seaway.log.Logs.delete`. Not retried: after a transport failure, look the
        log up to learn whether it was deleted."""
        log_id = self._resolve(log).id
        self._client._call("DeleteLog", pb.LogRef(log_id=log_id), idempotent=False)
        # Nothing more can be appended to it: its batching and sequence numbers go.
        self._client._coalescers.forget(log_id)
        self._client._producers.forget(log_id)

    def _resolve(self, log: LogHandle | int | str) -> RemoteLog:
        if isinstance(log, LogHandle):
            if not isinstance(log, RemoteLog) or log._client is not self._client:
                raise UnknownLogError(f"{log!r} belongs to another connection")
            return log
        return self.get(log)

    def list(self) -> builtins.list[RemoteLog]:
        """Every log, read in as many replies as it takes (see ``PageRequest`` in the protocol)."""
        return [RemoteLog(self, log_info_from_msg(info))
                for reply in self._client._pages("ListLogs") for info in reply.logs]

    def groups(self) -> builtins.list[LogGroup]:
        return [LogGroup(g.name, g.first_id, g.last_id, overrides_from_msg(g.attributes))
                for reply in self._client._pages("ListGroups") for g in reply.groups]

    def partitions(self) -> builtins.list[PartitionInfo]:
        """Every partition; one with more logs than a reply carries comes in pieces, joined here."""
        out: builtins.list[PartitionInfo] = []
        for reply in self._client._pages("ListPartitions"):
            for p in reply.partitions:
                if out and out[-1].partition_id == p.partition_id:
                    prev = out[-1]
                    out[-1] = PartitionInfo(prev.partition_id, prev.created_ms, prev.size_bytes,
                                            prev.log_ids + tuple(p.log_ids))
                else:
                    out.append(PartitionInfo(p.partition_id, p.created_ms, p.size_bytes, tuple(p.log_ids)))
        return out

    def run_retention(self) -> builtins.list[int]:
        """Drop the time partitions no log retains any more; return their ids."""
        reply: pb.PartitionIds = self._client._call("RunRetention", pb.Empty())
        return list(reply.partition_ids)

    def append_counts(self, log_ids: Iterable[int]) -> dict[int, AppendCounts]:
        """As :meth:`seaway.log.Logs.append_counts`: counted since the server's store opened."""
        found: dict[int, AppendCounts] = {}
        for ids in _parts(check_log_ids(log_ids)):
            reply: pb.AppendCountsReply = self._client._call("AppendCounts", pb.AppendCountsRequest(log_ids=ids))
            if len(reply.records) != len(ids) or len(reply.payload_bytes) != len(ids):
                raise ServerError(f"the server answered {len(reply.records)} counts for {len(ids)} logs")
            found.update((log_id, AppendCounts(records, size))
                         for log_id, records, size in zip(ids, reply.records, reply.payload_bytes, strict=True))
        return found

    def bounds(self, log_ids: Iterable[int]) -> dict[int, LogBounds]:
        """As :meth:`seaway.log.Logs.bounds`: one round trip for up to 20,000 logs."""
        found: dict[int, LogBounds] = {}
        for ids in _parts(check_log_ids(log_ids)):
            reply: pb.LogBoundsReply = self._client._call("GetLogBounds", pb.LogBoundsRequest(log_ids=ids))
            part = {item.log_id: LogBounds(item.tail_lsn, item.final_lsn if item.HasField("final_lsn") else None,
                                           item.trim_point) for item in reply.logs}
            if not part.keys() <= set(ids):
                raise ServerError("the server answered the bounds of logs not asked about")
            found.update(part)
        return found

    def count_records(self, ranges: Mapping[int, tuple[int, int | None]]) -> dict[int, int]:
        """As :meth:`seaway.log.Logs.count_records`: one round trip for up to 20,000 logs."""
        checked = check_count_ranges(ranges)
        found: dict[int, int] = {}
        for ids in _parts(list(checked)):
            request = pb.CountRecordsRequest(ranges=[pb.CountRange(log_id=i, lsn_from=checked[i][0],
                                                                   lsn_until=checked[i][1]) for i in ids])
            reply: pb.CountRecordsReply = self._client._call("CountRecords", request)
            part = {item.log_id: item.records for item in reply.logs}
            if not part.keys() <= set(ids):
                raise ServerError("the server answered the counts of logs not asked about")
            found.update(part)
        return found

    def reader(self, buffered_items_max: int = 2_000, *, runs: bool = False,
               buffered_bytes_max: int = BUFFERED_BYTES_MAX_DEFAULT) -> RemoteReader:
        """As :meth:`seaway.log.Logs.reader`: one stream for all the logs it reads."""
        self._client._check_open()
        return RemoteReader(self, buffered_items_max, runs=runs, buffered_bytes_max=buffered_bytes_max)

    def read(self, starts: Mapping[LogHandle | int | str, int],
             until: int | None = None) -> Generator[ReadItem, None, None]:
        return read_logs(self.reader(), self._resolve, starts, until)


class RemoteMetadataStore(MetaApi):
    """The metadata store of a server; the same methods as :class:`seaway.log.MetadataStore`.

    Reads are retried on transport failures. A commit is not: its outcome is then unknown (a
    :class:`TransportError`), and only reading the keys again tells whether it was applied."""

    def __init__(self, client: RemoteSeaway) -> None:
        self._client = client

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        check_meta_key(namespace, key)
        reply: pb.MetaGetReply = self._client._call("MetaGet", pb.MetaKey(namespace=namespace, key=key))
        return Versioned(reply.value, reply.version) if reply.found else None

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        scan_bounds(namespace, prefix, start, end, limit)
        request = pb.MetaScanRequest(namespace=namespace, prefix=prefix, limit=limit)
        if start is not None:
            request.start = start
        if end is not None:
            request.end = end
        out: list[tuple[bytes, Versioned]] = []
        while True:  # a reply stops at the server's byte bound: scan on from the last key
            reply: pb.MetaScanReply = self._client._call("MetaScan", request)
            out += [(e.key, Versioned(e.value, e.version)) for e in reply.entries]
            if not reply.more or not reply.entries or len(out) >= limit:
                return out
            request.start = reply.entries[-1].key + b"\x00"
            request.limit = limit - len(out)

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        reply: pb.MetaCommitReply = self._client._joined("MetaCommit", meta_batch_to_msg(batch))
        if reply.HasField("failed"):
            f = reply.failed
            raise ConditionFailedError(f.message, f.namespace, f.key, f.version)
        return reply.revision

    def commit_many(self, batches: Sequence[MetaBatch]) -> builtins.list[int | SeawayError]:
        if len(batches) > COMMIT_MANY_MAX:
            raise PayloadTooLargeError(f"commit_many takes at most {COMMIT_MANY_MAX} batches, got {len(batches)}")
        if not batches:
            return []
        try:
            replies = self._client._many("MetaCommit", [meta_batch_to_msg(b) for b in batches], idempotent=False)
        except SeawayError as exc:
            if len(batches) > 1:
                raise
            replies = [exc]  # the single call's error: that batch's outcome
        out: builtins.list[int | SeawayError] = []
        for reply in replies:
            if isinstance(reply, SeawayError):
                out.append(reply)
            elif reply.HasField("failed"):
                f = reply.failed
                out.append(ConditionFailedError(f.message, f.namespace, f.key, f.version))
            else:
                out.append(reply.revision)
        return out

    @property
    def revision(self) -> int:
        reply: pb.MetaRevisionReply = self._client._call("MetaRevision", pb.Empty())
        return reply.revision


class RemoteLedger(LedgerApi):
    """The change ledger of a server; the same methods as :class:`seaway.log.LedgerStore` (its soft
    bound is applied by the server). Reads and prunes are retried on transport failures; an append
    is not (its outcome is then unknown)."""

    def __init__(self, client: RemoteSeaway) -> None:
        super().__init__(client.meta)
        self._client = client

    def bounds(self) -> tuple[int, int]:
        reply: pb.LedgerBoundsReply = self._client._call("LedgerBounds", pb.Empty())
        return reply.tail, reply.head

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        check_ledger_read(index_from, limit)
        reply: pb.LedgerReadReply = self._client._call(
            "LedgerRead", pb.LedgerReadRequest(index_from=index_from, limit=limit))
        return [ledger_entry_from_msg(e) for e in reply.entries]

    def set_floor(self, name: str, index: int) -> None:
        request = pb.LedgerFloorRequest(name=check_floor_name(name), index=check_ledger_index(index, "a floor"))
        self._client._call("LedgerSetFloor", request)

    def remove_floor(self, name: str) -> None:
        self._client._call("LedgerSetFloor", pb.LedgerFloorRequest(name=check_floor_name(name)))

    def append(self, change: Change) -> int:
        """Refused by a server (:class:`PermissionDeniedError`): its ledger is written by its own
        changes."""
        reply: pb.LedgerAppendReply = self._client._call(
            "LedgerAppend", pb.LedgerAppendRequest(change=encode_change(change)), idempotent=False)
        return reply.index

    def prune(self, through: int) -> int:
        """Refused by a server (:class:`PermissionDeniedError`): its bounds prune its ledger."""
        reply: pb.LedgerBoundsReply = self._client._call(
            "LedgerPrune", pb.LedgerPruneRequest(through=check_ledger_index(through, "through")))
        return reply.tail


class RemoteNotifications(Notifications):
    """``sw.notify`` through a server: the same methods as embedded, each a call of its own (the
    ``notify`` namespace is the server's). Configurations come back redacted
    (:meth:`NotifyConfig.redacted`); setting one read back keeps the secrets it shows redacted."""

    def __init__(self, client: RemoteSeaway) -> None:
        super().__init__(client.meta, client.ledger)
        self._client = client

    def set(self, config: NotifyConfig) -> None:
        if not isinstance(config, NotifyConfig):
            raise InvalidArgumentError(f"a notification configuration is a NotifyConfig, got {config!r:.80}")
        self._client._call("NotifySet", pb.NotifySetRequest(config_json=config.to_json()), idempotent=False)

    def delete(self, name: str, *, expect_version: int | None = None) -> None:
        request = pb.NotifyName(name=name)
        if expect_version is not None:
            if not isinstance(expect_version, int) or isinstance(expect_version, bool) or expect_version < 1:
                raise InvalidArgumentError(f"expect_version must be a configuration's version (>= 1), "
                                           f"got {expect_version!r:.80}")
            request.expect_version = expect_version
        self._client._call("NotifyDelete", request, idempotent=False)

    def _records(self) -> dict[str, tuple[int, NotifyConfig | CorruptionError]]:
        return dict(self.versions())

    def _infos(self) -> builtins.list[Any]:
        reply: pb.NotifyListReply = self._client._call("NotifyList", pb.Empty())
        return list(reply.configs)

    def versions(self) -> dict[str, tuple[int, NotifyConfig]]:
        configs = ((i.version, NotifyConfig.from_json(i.config_json)) for i in self._infos())
        return {config.name: (version, config) for version, config in configs}

    def get(self, name: str) -> NotifyConfig:
        found = self.versions().get(name)
        if found is None:
            raise UnknownNotifyConfigError(f"no notification configuration named {name!r}")
        return found[1]

    def _configs(self) -> tuple[int, builtins.list[NotifyConfig]]:
        return 0, [config for _, config in self.versions().values()]

    def checkpoint(self, name: str) -> Checkpoint | None:
        for info in self._infos():
            if NotifyConfig.from_json(info.config_json).name != name:
                continue
            if info.HasField("checkpoint_error"):
                raise CorruptionError(info.checkpoint_error)
            if info.HasField("checkpoint"):
                return Checkpoint.from_bytes(info.checkpoint)
        return None

    def save_checkpoint(self, name: str, checkpoint: Checkpoint, config_version: int | None) -> None:
        raise PermissionDeniedError("a plugin's checkpoint is saved by the plugin, in the server")


class RemoteTxn:
    """The server's transaction manager (a :class:`~seaway.txn.TxnApi`): ``RemoteSeaway.txn`` is
    built on it, as ``Seaway.txn`` is on the embedded manager.

    What happens when a call is cut off (a :class:`TransportError`: it may or may not have reached
    the server):

    - ``register``, ``abort``, ``status``, ``snapshot`` and ``list`` are sent again, up to the
      client's :class:`RetryPolicy`: repeating them changes nothing (a log registered twice is
      registered once; aborting an aborted or timed-out transaction does nothing).
    - ``begin`` is sent again too: a transaction the first call may have begun is known to no one,
      wrote nothing, and times out by itself.
    - ``commit`` (and ``commit_all``, by its first id) is never sent again blindly. The client
      asks ``status`` (retried) for the outcome: COMMITTED, and the commit returns; ABORTED (a
      conflict, or an abort by id) raises :class:`TransactionNotInProgressError`, TIMED_OUT
      :class:`TransactionTimedOutError`, UNKNOWN :class:`UnknownTransactionError`; IN_PROGRESS
      means the commit has not taken effect, so it is sent once more. If the server answers that
      one with "being committed" (the first call is still being applied), the client waits for the
      outcome with ``status`` (at most the retry policy's attempts, then :class:`TimedOutError`:
      the outcome is still unknown). A second cut off, or ``status`` unreachable, raises the
      :class:`TransportError`: the outcome is unknown,
      and ``sw.txn.status(id)`` tells it later.
    - ``commit_appending`` is never sent again: its appends may have landed. The client asks
      ``status``; a transaction still in progress is aborted (unless it committed meanwhile) and
      the :class:`TransportError` raised.
    - ``commit_then_begin`` is settled as ``commit`` is; once committed so, the next transaction
      is begun by a ``TxnBegin`` of its own (the one the lost call may have begun times out).
    """

    def __init__(self, client: RemoteSeaway) -> None:
        self._client = client
        self._default_timeout_s: float | None = None
        self._invalid = InvalidCopy()
        self._live = LiveCopy()
        """The server's transactions in progress, likewise: each snapshot is the view at its version."""
        """The server's invalid list, kept up to date by the changes each begin's or snapshot's reply
        carries (so that a reply grows with what was aborted since, not with history)."""

    @property
    def default_timeout_s(self) -> float:
        """The server's default timeout (as its last answer gave it)."""
        default = self._default_timeout_s
        if default is None:  # no begin answered yet: a snapshot's answer carries it too
            _, default = self._snapshot()
        return default

    def begin(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Snapshot:
        return self.begin_with(timeout_s, logs).snapshot

    def begin_with(self, timeout_s: float | None = None, logs: Iterable[int] = (),
                   reads: Iterable[tuple[str, bytes]] = ()) -> Begun:
        """As the manager's: one ``TxnBegin`` (joined with other threads' begins), its reads made by
        the server after the snapshot was taken."""
        request, sent = self._begin_request(timeout_s, logs, reads)
        # Tried again on a transport failure: a begin that did reach the server only leaves a
        # transaction that wrote nothing, which times out (nothing of it is ever visible; with
        # logs, it is invalid until it settles, as any aborted one).
        reply: pb.TxnBeginReply = self._client._joined("TxnBegin", request)
        return self._begun(reply, sent, request.reads)

    def _begin_request(self, timeout_s: float | None, logs: Iterable[int], reads: Iterable[tuple[str, bytes]],
                       ) -> tuple[pb.TxnBeginRequest, tuple[int, int, Any]]:
        """A begin's request, checked, naming this client's copies; and the in-progress copy's
        version it names (for :meth:`_begun`)."""
        request = pb.TxnBeginRequest(log_ids=check_txn_logs(logs),
                                     reads=[pb.MetaKey(namespace=ns, key=key) for ns, key in check_reads(reads)])
        if timeout_s is not None:
            if not isinstance(timeout_s, int | float) or isinstance(timeout_s, bool):
                raise InvalidArgumentError(f"a transaction's timeout must be a number, got {timeout_s!r}")
            request.timeout_s = timeout_s
        request.invalid_known.CopyFrom(invalid_version_to_msg(self._invalid.known))
        sent = self._live.known()
        request.live_known.CopyFrom(pb.InvalidKnown(epoch=sent[0], version=sent[1]))
        return request, sent

    def _begun(self, reply: pb.TxnBeginReply, sent: tuple[int, int, Any], reads: Sequence[pb.MetaKey]) -> Begun:
        """A begin's reply: the snapshot with this client's copies brought up to date, and the reads
        (those the reply had no room for read here, after the begin as well)."""
        if len(reply.reads) != len(reads) or any(at >= len(reads) for at in reply.unread):
            raise ServerError(f"the server answered {len(reply.reads)} reads for {len(reads)} asked")
        self._default_timeout_s = reply.default_timeout_s
        snapshot = self._with_invalid(self._with_live(Snapshot.decode(reply.snapshot), reply, sent), reply)
        values = [Versioned(r.value, r.version) if r.found else None for r in reply.reads]
        for at in reply.unread:
            values[at] = self._client.meta.get(reads[at].namespace, reads[at].key)
        return Begun(snapshot, tuple(values))

    def _with_live(self, snapshot: Snapshot, reply: pb.TxnBeginReply | pb.TxnSnapshotReply,
                   sent: tuple[int, int, Any]) -> Snapshot:
        """The reply's snapshot with the transactions in progress as of its own version: the copy
        of the server's set, brought up to date by the reply's changes (see seaway.txn._idlog)."""
        if not reply.HasField("live"):
            raise ServerError("the server's reply has no changes of the transactions in progress")
        view = self._live.view(live_changes_from_msg(reply.live), sent)
        if view is None:
            raise ServerError("the server's changes of the transactions in progress do not follow the version sent")
        return snapshot.with_in_progress(view)

    def _with_invalid(self, snapshot: Snapshot, reply: pb.TxnBeginReply | pb.TxnSnapshotReply) -> Snapshot:
        """The reply's snapshot with the invalid list: the copy, brought up to date by the reply's
        changes (or read again in pages when they say so)."""
        if not reply.HasField("invalid"):
            raise ServerError("the server's reply has no invalid list's changes")
        if not self._invalid.apply(invalid_changes_from_msg(reply.invalid)):
            self._read_invalid()
        return snapshot.with_invalid(self._invalid.view())

    def _read_invalid(self) -> None:
        """Read the whole invalid list in pages, then the changes since the first page's version
        (pages read one after another may be of different versions: those changes make the copy
        exact, see seaway.txn._invalid)."""
        for _ in range(INVALID_READS_MAX):
            ids: builtins.list[int] = []
            first: InvalidVersion | None = None
            after = 0
            while True:
                page: pb.TxnInvalidReply = self._client._call(
                    "TxnInvalid", pb.TxnInvalidRequest(after=after, limit=INVALID_PAGE_IDS_MAX))
                if first is None:
                    first = InvalidVersion(page.epoch, page.version)
                elif page.epoch != first.epoch:
                    break  # the server restarted meanwhile: read again
                ids.extend(page.ids)
                if not page.more:
                    break
                if not page.ids:
                    raise ServerError("the server's page of the invalid list is empty, and says more follow")
                after = page.ids[-1]
            if first is None or page.epoch != first.epoch:
                continue
            # Built aside: until the changes since the first page are in, the pages may lack ids
            # added meanwhile, which a concurrent begin's snapshot must not miss.
            staged = InvalidCopy()
            staged.load(first.epoch, first.version, ids)
            request = pb.TxnSnapshotRequest(invalid_known=invalid_version_to_msg(first))
            reply: pb.TxnSnapshotReply = self._client._call("TxnSnapshot", request)
            if reply.HasField("invalid") and staged.apply(invalid_changes_from_msg(reply.invalid)):
                self._invalid.take(staged)
                return
        raise UnavailableError(f"the server's invalid list changed faster than it could be read "
                               f"({INVALID_READS_MAX} attempts); try again")

    def register(self, write_pointer: int, logs: Iterable[int]) -> None:
        request = pb.TxnRegisterRequest(id=_check_txn_id(write_pointer), log_ids=check_txn_logs(logs))
        self._client._call("TxnRegister", request)

    def commit(self, write_pointer: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        self._commit("TxnCommit", self._commit_request(write_pointer, conflicts, writes), write_pointer)

    @staticmethod
    def _commit_request(write_pointer: int, conflicts: Iterable[bytes],
                        writes: Iterable[tuple[str, bytes, bytes | None]]) -> pb.TxnCommitRequest:
        try:
            return pb.TxnCommitRequest(id=_check_txn_id(write_pointer), conflicts=list(conflicts),
                                       writes=txn_writes_to_msg(writes))
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"a commit's conflict keys are bytes, its writes (namespace, key, "
                                       f"value or None): {exc}") from None

    def commit_then_begin(self, write_pointer: int, conflicts: Iterable[bytes] = (),
                          writes: Iterable[tuple[str, bytes, bytes | None]] = (), timeout_s: float | None = None,
                          logs: Iterable[int] = (), reads: Iterable[tuple[str, bytes]] = ()) -> Begun | SeawayError:
        """As the manager's, in one call (``TxnCommitBegin``). Cut off, it is settled as ``commit``
        is (the status asked; still in progress, sent once more; never committed twice); committed
        so, the next transaction is begun by a ``TxnBegin`` of its own (a begin the lost call may
        have made is known to no one, wrote nothing, and times out)."""
        commit = self._commit_request(write_pointer, conflicts, writes)
        begin, sent = self._begin_request(timeout_s, logs, reads)
        request = pb.TxnCommitBeginRequest(commit=commit, begin=begin)
        reply = self._settle_commit(lambda: self._call_commit_begin(request), write_pointer)
        if reply is None:  # committed, as its status said: the begin goes on its own
            try:
                return self.begin_with(timeout_s, logs, reads)
            except SeawayError as exc:
                return exc
        if reply.HasField("begin_error"):
            return error_from_msg(reply.begin_error)
        if not reply.HasField("begun"):
            raise ServerError("the server's answer to a commit with a begin has neither")
        return self._begun(reply.begun, sent, begin.reads)

    def _call_commit_begin(self, request: pb.TxnCommitBeginRequest) -> pb.TxnCommitBeginReply:
        reply: pb.TxnCommitBeginReply = self._client._call("TxnCommitBegin", request, idempotent=False)
        return reply

    def commit_all(self, write_pointers: Iterable[int], conflicts: Iterable[bytes] = (),
                   writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """As ``commit``, for several transactions committed as one: the first one's status is the
        outcome of all."""
        ids = [_check_txn_id(write_pointer) for write_pointer in write_pointers]
        if not ids:
            raise InvalidArgumentError("commit_all commits at least one transaction")
        try:
            request = pb.TxnCommitAllRequest(ids=ids, conflicts=list(conflicts), writes=txn_writes_to_msg(writes))
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"a commit's conflict keys are bytes, its writes (namespace, key, "
                                       f"value or None): {exc}") from None
        self._commit("TxnCommitAll", request, ids[0])

    def commit_appending(self, write_pointer: int, batches: Sequence[LinkedBatch], conflicts: Iterable[bytes] = (),
                         writes: Iterable[tuple[str, bytes, bytes | None]] = (),
                         linked_writes: Sequence[LinkedWrite] = ()) -> builtins.list[range | SeawayError] | None:
        """As the manager's, in one call. Never sent twice: when the call is cut off, its appends may
        have landed (or still be landing), so the client asks ``status``; COMMITTED returns, and a
        transaction still in progress is aborted (its appends, wherever they landed, are never
        visible) unless it committed meanwhile, then the :class:`TransportError` is raised (the
        caller's transaction failed; begin another)."""
        check_linked(batches)
        check_linked_writes(linked_writes, batches)
        try:
            request = pb.TxnAppendCommitRequest(
                id=_check_txn_id(write_pointer), batches=linked_batches_to_msg(batches), conflicts=list(conflicts),
                writes=txn_writes_to_msg(writes), linked_writes=linked_writes_to_msg(linked_writes))
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"a commit's conflict keys are bytes, its writes (namespace, key, "
                                       f"value or None): {exc}") from None
        try:
            reply: pb.TxnAppendCommitReply = self._client._call("TxnAppendCommit", request, idempotent=False)
        except TransportError as exc:
            outcome = self._outcome(write_pointer, exc)
            if outcome is TxnStatus.IN_PROGRESS:
                with contextlib.suppress(TransactionNotInProgressError):  # being committed: settled below
                    self.abort(write_pointer)
                outcome = self._settled(write_pointer, TransactionNotInProgressError(str(exc)))
            if outcome is TxnStatus.COMMITTED:
                return None
            raise
        if reply.committed:
            return None
        if len(reply.results) != len(batches):
            raise ServerError(f"the server answered {len(reply.results)} outcomes for {len(batches)} batches")
        return [range(r.appended.first_lsn, r.appended.first_lsn + r.appended.count) if r.HasField("appended")
                else error_from_msg(r.error) for r in reply.results]

    def _commit(self, method: str, request: pb.TxnCommitRequest | pb.TxnCommitAllRequest, write_pointer: int) -> None:
        self._settle_commit(lambda: self._send_commit(method, request), write_pointer)

    def _settle_commit(self, send: Callable[[], _R], write_pointer: int) -> _R | None:
        """Make a commit's call with ``send``; its reply, or None when it was cut off and the
        status then says it committed; raises when it did not (see the class's docstring)."""
        try:
            return send()
        except TransportError as exc:
            outcome = self._outcome(write_pointer, exc)
        if outcome is TxnStatus.IN_PROGRESS:  # the commit did not take effect: send it once more
            try:
                return send()
            except TransactionNotInProgressError as exc:
                if isinstance(exc, TransactionTimedOutError):
                    raise
                outcome = self._settled(write_pointer, exc)  # the first call was still being applied
        self._raise_unless_committed(write_pointer, outcome)
        return None

    def _send_commit(self, method: str, request: pb.TxnCommitRequest | pb.TxnCommitAllRequest) -> None:
        if isinstance(request, pb.TxnCommitRequest):
            self._client._joined(method, request)  # with other threads' commits
        else:
            self._client._call(method, request, idempotent=False)

    def _outcome(self, write_pointer: int, cut_off: TransportError) -> TxnStatus:
        try:
            return self.status(write_pointer)
        except TransportError as exc:
            raise exc from cut_off

    def _settled(self, write_pointer: int, answer: TransactionNotInProgressError) -> TxnStatus:
        """The outcome of a commit that the server is applying, once it is known."""
        retry = self._client._retry
        for attempt in range(1, retry.attempts_max + 1):
            outcome = self.status(write_pointer)
            if outcome is not TxnStatus.IN_PROGRESS:
                return outcome
            time.sleep(retry.delay_s(attempt))
        raise TimedOutError(f"transaction {write_pointer} is still being committed; its outcome is unknown "
                            "(ask its status later)") from answer

    @staticmethod
    def _raise_unless_committed(write_pointer: int, outcome: TxnStatus) -> None:
        if outcome is TxnStatus.COMMITTED:
            return
        if outcome is TxnStatus.TIMED_OUT:
            raise TransactionTimedOutError(f"transaction {write_pointer} timed out")
        if outcome is TxnStatus.UNKNOWN:
            raise UnknownTransactionError(f"no transaction {write_pointer} is known to the server")
        raise TransactionNotInProgressError(f"transaction {write_pointer} did not commit: {outcome.value} "
                                            "(a conflict, or an abort by id)")

    def abort(self, write_pointer: int) -> None:
        self._client._call("TxnAbort", pb.TxnRef(id=_check_txn_id(write_pointer)))

    def status(self, write_pointer: int) -> TxnStatus:
        reply: pb.TxnStatusReply = self._client._call("TxnStatus", pb.TxnRef(id=_check_txn_id(write_pointer)))
        return txn_status_from_msg(reply.status)

    def snapshot(self) -> Snapshot:
        return self._snapshot()[0]

    def wait_ended(self, write_pointers: Iterable[int], timeout_s: float) -> builtins.list[int]:
        """As the manager's: a long poll (``TxnWaitEnded``), each call held by the server at most
        its cap (and at most half this client's call timeout), called again until ``timeout_s``."""
        ids, timeout = _check_wait(write_pointers, timeout_s)
        deadline = time.monotonic() + timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            request = pb.TxnWaitEndedRequest(ids=ids, timeout_s=min(remaining, self._client._timeout_s / 2))
            reply: pb.TxnWaitEndedReply = self._client._call("TxnWaitEnded", request)
            if reply.ended or time.monotonic() >= deadline:
                return builtins.list(reply.ended)

    def _snapshot(self) -> tuple[Snapshot, float]:
        sent = self._live.known()
        request = pb.TxnSnapshotRequest(invalid_known=invalid_version_to_msg(self._invalid.known),
                                        live_known=pb.InvalidKnown(epoch=sent[0], version=sent[1]))
        reply: pb.TxnSnapshotReply = self._client._call("TxnSnapshot", request)
        self._default_timeout_s = reply.default_timeout_s
        return self._with_invalid(self._with_live(Snapshot.decode(reply.snapshot), reply, sent), reply), \
            reply.default_timeout_s

    def list(self, after: TxnInfo | None = None, limit: int | None = None) -> builtins.list[TxnInfo]:
        """As the manager's: in progress, then invalid, each by id, at most ``limit`` after
        ``after``. Read in pages, so a transaction that ended meanwhile may come twice: it is kept
        once, as last seen."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidArgumentError(f"a page's limit is a positive integer, got {limit!r}")
        start = None if after is None else txn_page_key(after)
        found: builtins.list[TxnInfo] = []
        for reply in self._client._pages("TxnList", start):
            found.extend(txn_info_from_msg(info) for info in reply.transactions)
            if limit is not None and len(found) >= limit:
                break
        last = {info.id: at for at, info in enumerate(found)}
        return [info for at, info in enumerate(found) if last[info.id] == at][:limit]


_LOGS_PER_CALL = 20_000
"""Logs one ``GetLogBounds``, ``CountRecords`` or ``AppendCounts`` call names: a reply about a log is at most 46 bytes,
so the reply to one part stays under 1 MiB (a call may name 100,000 logs; a reply carries at most
2 MiB)."""


def _parts(ids: builtins.list[int]) -> Iterator[builtins.list[int]]:
    for at in range(0, len(ids), _LOGS_PER_CALL):
        yield ids[at:at + _LOGS_PER_CALL]


def _check_id(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**64:
        raise InvalidArgumentError(f"a log id must be a positive 64-bit integer, got {value!r}")
    return value


def connect(url: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
            timeout_s: float = 30.0, retry: RetryPolicy | None = None,
            appends: AppendQueueConfig | None = None, coalesce: CoalesceConfig | None = None) -> RemoteSeaway:
    """Connect to a server at ``seaway://host:port`` (or ``seaways://`` for TLS).

    Nothing is sent until the first call; a server that cannot be reached then raises
    :class:`UnavailableError`.
    """
    parsed = urlparse(url)
    if "," in parsed.netloc:  # several nodes: a replicated cluster
        import seaway.cluster  # noqa: PLC0415 - a cluster's client only

        return seaway.cluster.connect_cluster(url, token=token, tls_root_cert=tls_root_cert, timeout_s=timeout_s,
                                              retry=retry, appends=appends, coalesce=coalesce)
    if parsed.scheme not in ("seaway", "seaways") or not parsed.hostname:
        raise InvalidArgumentError(f"a server address is seaway://host:port, got {url!r}")
    try:
        port = parsed.port or DEFAULT_PORT
    except ValueError:
        raise InvalidArgumentError(f"bad port in {url!r}") from None
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return RemoteSeaway(f"{host}:{port}", token=token, tls=parsed.scheme == "seaways",
                        tls_root_cert=tls_root_cert, timeout_s=timeout_s, retry=retry, appends=appends,
                        coalesce=coalesce)


class ServerClock:
    """A clock whose wall time is the server's (one call each: control-plane changes only ask it
    once each), and whose monotonic time is this process's (waits are measured here)."""

    def __init__(self, client: RemoteSeaway) -> None:
        self._client = client

    def now_ms(self) -> int:
        return self._client.server_time_ms()

    def monotonic_s(self) -> float:
        return time.monotonic()
