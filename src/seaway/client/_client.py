"""The remote client: the embedded API (``sw.logs``, ``Log``, ``Reader``) over the gRPC protocol.

Calls that are safe to repeat (reads of state, trims) are retried on transport failures with the
client's :class:`RetryPolicy`. Appends are retried too: each batch carries the client's producer id
and a sequence number, so the server stores a batch sent twice once (see ``_append.py``).
"""

from __future__ import annotations

import builtins
import itertools
import os
import queue
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import grpc

from seaway._errors import (
    ClosedError,
    ConditionFailedError,
    InvalidArgumentError,
    LsnOutOfRangeError,
    SeawayError,
    UnknownLogError,
)
from seaway.client._append import AppendQueue, AppendQueueConfig
from seaway.log import (
    LSN_MAX,
    LSN_OLDEST,
    UNSET,
    AppendCoalescer,
    BatchingWriter,
    CoalesceConfig,
    Coalescers,
    Gap,
    LogGroup,
    LogHandle,
    LogInfo,
    MetaApi,
    MetaBatch,
    ReadItem,
    RecordRun,
    RetryPolicy,
    Versioned,
    attribute_overrides,
    check_meta_key,
    lsn_str,
    scan_bounds,
    take,
)
from seaway.logsdb import Durability, PartitionInfo, ProducerMark
from seaway.wire import (
    TOKEN_KEY,
    error_from_status,
    items_from_msg,
    log_info_from_msg,
    meta_batch_to_msg,
    overrides_from_msg,
    overrides_to_msg,
    seaway_pb2,
    seaway_pb2_grpc,
)

pb = seaway_pb2
DEFAULT_PORT = 7070
MESSAGE_BYTES_MAX = 64 << 20


def _translate(exc: grpc.RpcError) -> SeawayError:
    call: Any = exc
    return error_from_status(call.code(), call.details(), call.trailing_metadata())


class RemoteSeaway:
    """A connection to a Seaway server. Use as a context manager, or call :meth:`close`."""

    def __init__(self, target: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
                 tls: bool = False, timeout_s: float = 30.0, retry: RetryPolicy | None = None,
                 appends: AppendQueueConfig | None = None, coalesce: CoalesceConfig | None = None) -> None:
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
        self._appends = AppendQueue(lambda request: self._call_async("AppendMany", request), self._retry,
                                    appends or AppendQueueConfig())
        self._coalescers = Coalescers(coalesce)
        self.producer_id = uuid.uuid4().bytes
        self._sequences: dict[int, itertools.count[int]] = {}
        self._sequences_lock = threading.Lock()
        self.logs = RemoteLogs(self)
        self.meta = RemoteMetadataStore(self)

    def _next_mark(self, log_id: int) -> ProducerMark:
        with self._sequences_lock:
            counter = self._sequences.setdefault(log_id, itertools.count())
            return ProducerMark(self.producer_id, next(counter))

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
                error = _translate(exc)
            if not (idempotent and error.retriable and attempt < self._retry.attempts_max):
                raise error
            time.sleep(self._retry.delay_s(attempt))

    def _call_async(self, method: str, request: Any) -> Future[Any]:
        self._check_open()
        outer: Future[Any] = Future()
        inner = getattr(self._stub, method).future(request, timeout=self._timeout_s, metadata=self._metadata)

        def done(call: Any) -> None:
            try:
                outer.set_result(call.result())
            except grpc.RpcError as exc:
                outer.set_exception(_translate(exc))
            except grpc.FutureCancelledError:
                outer.set_exception(ClosedError("the client closed before the call finished"))

        inner.add_done_callback(done)
        return outer

    def _stream(self, request: pb.ReadRequest) -> Any:
        self._check_open()
        return self._stub.Read(request, metadata=self._metadata)

    def health(self) -> str:
        """``SERVING`` when the server accepts calls."""
        reply: pb.HealthReply = self._call("Health", pb.Empty())
        return reply.status

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the client is closed")

    def close(self) -> None:
        """Close the connection; idempotent. Calls in flight fail with a transport error, appends
        still waiting for a call with :class:`ClosedError`."""
        if not self._closed:
            self._closed = True
            self._coalescers.close(drain_s=0)
            self._appends.close()
            self._channel.close()

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
        """Batches go out as idempotent appends: this client's producer id and its next sequence
        number for the log, unless the caller gave a mark. So a retriable failure is retried, up to
        the client's retry policy, without storing the batch twice; batches queued while the
        client's earlier calls are in flight go together in its next call (see
        :class:`~seaway.client.AppendQueueConfig`)."""
        client, log_id = self._client, self.id

        def send(payloads: tuple[bytes, ...], mark: ProducerMark | None) -> Future[range]:
            return client._appends.put(log_id, payloads, mark or client._next_mark(log_id), client._timeout_s)

        return client._coalescers.get(log_id, send)

    def writer(self, *, flush_records_max: int = 500, flush_bytes_max: int = 1 << 20,
               flush_interval_s: float = 0.05, ordered: bool = True,
               retry: RetryPolicy | None = None, in_flight_batches_max: int = 8) -> BatchingWriter:
        # A producer of its own, as embedded: a batch the writer sends again (after the client's
        # own retries gave up) keeps its sequence number, so it is stored once.
        producer_id = os.urandom(16)

        def append(payloads: list[bytes], sequence: int) -> Future[range]:
            return self.append_batch_async(payloads, producer_id=producer_id, sequence=sequence)

        return BatchingWriter(append, flush_records_max=flush_records_max,
                              flush_bytes_max=flush_bytes_max, flush_interval_s=flush_interval_s,
                              ordered=ordered, retry=retry, in_flight_batches_max=in_flight_batches_max,
                              payload_bytes_max=self.attributes.payload_bytes_max)

    def _state(self) -> pb.LogState:
        state: pb.LogState = self._client._call("GetLogState", pb.LogRef(log_id=self.id))
        return state

    def tail_lsn(self) -> int:
        return self._state().tail_lsn

    def trim_point(self) -> int:
        return self._state().trim_point

    def is_empty(self) -> bool:
        return self._state().is_empty

    def data_size(self) -> int:
        return self._state().data_size

    def trim(self, lsn: int) -> None:
        _check_lsn(lsn, "lsn")
        self._client._call("Trim", pb.TrimRequest(log_id=self.id, lsn=lsn))

    def find_time(self, timestamp_ms: int) -> int:
        if not isinstance(timestamp_ms, int) or isinstance(timestamp_ms, bool) or not 0 <= timestamp_ms < 2**63:
            raise InvalidArgumentError(f"timestamp_ms must be a non-negative integer, got {timestamp_ms!r}")
        reply: pb.LsnReply = self._client._call("FindTime", pb.FindTimeRequest(log_id=self.id,
                                                                                timestamp_ms=timestamp_ms))
        return reply.lsn

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Iterator[ReadItem]:
        return self._logs.read({self: lsn_from}, until=lsn_until)


def _check_lsn(lsn: object, what: str) -> int:
    if not isinstance(lsn, int) or isinstance(lsn, bool) or not 0 <= lsn <= LSN_MAX:
        raise LsnOutOfRangeError(f"{what} must be an integer in [0, 2**64 - 1], got {lsn!r}")
    return lsn


_DONE = object()


@dataclass(eq=False)
class _Stream:
    """One log's server-push stream; reopened from ``next_lsn`` after a retriable failure."""

    log_id: int
    next_lsn: int
    until: int
    call: Any = None
    stopped: bool = False


def _last_lsn(item: Any) -> int:
    if isinstance(item, Gap):
        return item.lsn_hi
    return item.last_lsn if isinstance(item, RecordRun) else int(item.lsn)


class RemoteReader:
    """Reads many logs of a server at once; the same contract as :class:`seaway.Reader`.

    Each log is one server-push stream, drained by a thread into a bounded queue: when the caller
    stops reading, the queue fills, the thread blocks, and HTTP/2 flow control stops the server.
    A stream that fails retriably (the server restarted, say) is reopened where it stopped, with
    the client's retry policy; the caller sees an error only once that gives up.
    """

    def __init__(self, logs: RemoteLogs, buffered_items_max: int = 2_000, *, runs: bool = False) -> None:
        if buffered_items_max < 1:
            raise InvalidArgumentError("buffered_items_max must be at least 1")
        # The server sends messages of at most this many items; two wait in the queue, one is taken
        # apart: a reader holds about three times ``buffered_items_max`` items at most.
        self._message_items_max = min(buffered_items_max, 2_000)
        self._runs = runs
        self._logs = logs
        self._client = logs._client
        self._queue: queue.Queue[tuple[_Stream, Any]] = queue.Queue(2)
        self._calls: dict[int, _Stream] = {}
        self._pending: list[ReadItem] = []
        self._lock = threading.Lock()
        self._closed = False

    def start_reading(self, log: RemoteLog | int | str, lsn_from: int = LSN_OLDEST, lsn_until: int = LSN_MAX) -> None:
        log_id = self._logs._resolve(log).id
        _check_lsn(lsn_from, "lsn_from")
        _check_lsn(lsn_until, "lsn_until")
        if lsn_from < LSN_OLDEST or lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_str(lsn_from)} until {lsn_str(lsn_until)}")
        self.stop_reading(log_id)
        stream = _Stream(log_id, lsn_from, lsn_until)
        stream.call = self._open(stream)
        with self._lock:
            self._calls[log_id] = stream
        threading.Thread(target=self._drain, args=(stream,), daemon=True, name=f"seaway-read-{log_id}").start()

    def _open(self, stream: _Stream) -> Any:
        return self._client._stream(pb.ReadRequest(log_id=stream.log_id, lsn_from=stream.next_lsn,
                                                   lsn_until=stream.until, items_max=self._message_items_max))

    def _drain(self, stream: _Stream) -> None:
        retry = self._client._retry
        attempt = 0
        while not stream.stopped:
            try:
                for msg in stream.call:
                    items = items_from_msg(msg, self._runs)
                    if items:
                        stream.next_lsn = _last_lsn(items[-1]) + 1
                    attempt = 0
                    self._put(stream, items)
                self._put(stream, _DONE)
                return
            except grpc.RpcError as exc:
                if stream.stopped or stream.call.code() == grpc.StatusCode.CANCELLED:
                    return
                error = _translate(exc)
            attempt += 1
            if not error.retriable or attempt >= retry.attempts_max or self._client.closed:
                self._put(stream, error)
                return
            time.sleep(retry.delay_s(attempt))
            try:
                stream.call = self._open(stream)
            except SeawayError as exc:
                self._put(stream, exc)
                return

    def _put(self, stream: _Stream, value: object) -> None:
        while True:
            with self._lock:
                if self._calls.get(stream.log_id) is not stream:
                    return  # stopped: drop what it still delivers
            try:
                self._queue.put((stream, value), timeout=0.2)
                return
            except queue.Full:
                continue

    def stop_reading(self, log: RemoteLog | int | str) -> None:
        log_id = self._logs._resolve(log).id if not isinstance(log, int) else log
        with self._lock:
            stream = self._calls.pop(log_id, None)
            self._pending = [i for i in self._pending if i.log_id != log_id]
        if stream is not None:
            stream.stopped = True
            stream.call.cancel()

    @property
    def done(self) -> bool:
        with self._lock:
            return not self._calls and not self._pending and self._queue.empty()

    def read(self, items_max: int = 1000, timeout_s: float | None = None) -> list[ReadItem]:
        if items_max < 1:
            raise InvalidArgumentError("items_max must be at least 1")
        if self._closed:
            raise ClosedError("the reader is closed")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._pending:
            with self._lock:
                if not self._calls and self._queue.empty():
                    return []
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return []
            try:
                stream, value = self._queue.get(timeout=0.2 if remaining is None else min(remaining, 0.2))
            except queue.Empty:
                continue
            with self._lock:
                if self._calls.get(stream.log_id) is not stream:
                    continue
                if value is _DONE:
                    del self._calls[stream.log_id]
                elif isinstance(value, SeawayError):
                    del self._calls[stream.log_id]
                    raise value
                else:
                    self._pending.extend(value)
        with self._lock:
            return take(self._pending, items_max)[0]

    def __iter__(self) -> Iterator[ReadItem]:
        while True:
            items = self.read()
            if not items:
                return
            yield from items

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for log_id in list(self._calls):
            self.stop_reading(log_id)

    def __enter__(self) -> RemoteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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

    def _resolve(self, log: RemoteLog | int | str) -> RemoteLog:
        if isinstance(log, RemoteLog):
            if log._client is not self._client:
                raise UnknownLogError(f"{log!r} belongs to another connection")
            return log
        return self.get(log)

    def list(self) -> builtins.list[RemoteLog]:
        reply: pb.LogList = self._client._call("ListLogs", pb.Empty())
        return [RemoteLog(self, log_info_from_msg(info)) for info in reply.logs]

    def groups(self) -> builtins.list[LogGroup]:
        reply: pb.GroupList = self._client._call("ListGroups", pb.Empty())
        return [LogGroup(g.name, g.first_id, g.last_id, overrides_from_msg(g.attributes)) for g in reply.groups]

    def partitions(self) -> builtins.list[PartitionInfo]:
        reply: pb.PartitionList = self._client._call("ListPartitions", pb.Empty())
        return [PartitionInfo(p.partition_id, p.created_ms, p.size_bytes, tuple(p.log_ids)) for p in reply.partitions]

    def run_retention(self) -> builtins.list[int]:
        """Drop the time partitions no log retains any more; return their ids."""
        reply: pb.PartitionIds = self._client._call("RunRetention", pb.Empty())
        return list(reply.partition_ids)

    def reader(self, buffered_items_max: int = 2_000, *, runs: bool = False) -> RemoteReader:
        """As :meth:`seaway.log.Logs.reader`."""
        self._client._check_open()
        return RemoteReader(self, buffered_items_max, runs=runs)

    def read(self, starts: Mapping[RemoteLog | int | str, int], until: int | None = None) -> Iterator[ReadItem]:
        reader = self.reader()
        for log, lsn_from in starts.items():
            resolved = self._resolve(log)
            lsn_until = resolved.tail_lsn() if until is None else until
            if lsn_from <= lsn_until:
                reader.start_reading(resolved, lsn_from, lsn_until)
        return _closing_iter(reader)


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
        reply: pb.MetaScanReply = self._client._call("MetaScan", request)
        return [(e.key, Versioned(e.value, e.version)) for e in reply.entries]

    def commit(self, batch: MetaBatch) -> int:
        reply: pb.MetaCommitReply = self._client._call("MetaCommit", meta_batch_to_msg(batch), idempotent=False)
        if reply.HasField("failed"):
            f = reply.failed
            raise ConditionFailedError(f.message, f.namespace, f.key, f.version)
        return reply.revision

    @property
    def revision(self) -> int:
        reply: pb.MetaRevisionReply = self._client._call("MetaRevision", pb.Empty())
        return reply.revision


def _closing_iter(reader: RemoteReader) -> Iterator[ReadItem]:
    with reader:
        yield from reader


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


