"""The gRPC service: each call checked, limited, counted, and answered with a typed error if it fails.

Handlers translate messages with :mod:`seaway.wire` and call the embedded store's public API; they
hold no state of their own beyond per-connection counters.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

import grpc

from seaway._seaway import Seaway
from seaway.errors import (
    BufferFullError,
    ConditionFailedError,
    CorruptionError,
    InvalidArgumentError,
    OverloadedError,
    PermissionDeniedError,
    SeawayError,
    ServerError,
    UnavailableError,
    UnknownLogError,
)
from seaway.ledger import decode_change
from seaway.log import COMMIT_MANY_MAX, LogHandle, MetaBatch, check_linked
from seaway.notify import NotifyConfig
from seaway.server import _pages
from seaway.server._metrics import Metrics
from seaway.server._read_many import ReadSession, ReadStreamBounds
from seaway.txn import STATE_NAMESPACE, Begun, Snapshot, check_reads
from seaway.wire import (
    error_metadata,
    error_to_msg,
    invalid_changes_to_msg,
    invalid_version_from_msg,
    ledger_entry_to_msg,
    linked_batches_from_msg,
    linked_writes_from_msg,
    live_changes_to_msg,
    log_info_to_msg,
    meta_batch_from_msg,
    overrides_from_msg,
    overrides_to_msg,
    seaway_pb2,
    seaway_pb2_grpc,
    status_of,
    txn_status_to_msg,
    txn_writes_from_msg,
)

pb = seaway_pb2
_log = logging.getLogger("seaway.server")
_T = TypeVar("_T")
READ_VALUES_BYTES_MAX = 256 << 10
"""Bytes of metadata values the begins of one call carry in its reply at most (a begin's reads):
those past it the client reads with MetaGet, so that the reply stays under the message bound."""
RESERVED_PREFIX = "seaway."
"""Logs named so are the store's own (the transaction manager's write-ahead log): clients may read
them, never create, append to, trim, seal or delete one (a sealed manager log would fail every
transaction). Metadata namespaces named so (the ledger's floors) are the store's too."""
STORE_NAMESPACES = ("notify", "txn")
"""The store's own metadata namespaces (besides ``seaway.*``): clients change them only through
the calls of the API that owns them (Notify*, Txn*), which keep their invariants."""
SECRET_NAMESPACES = ("notify", STATE_NAMESPACE)
"""Namespaces clients may not even read: the notification targets' secrets (NotifyList shows them
redacted), and the transaction manager's saved state (the metadata writes of commits being decided,
which may yet fail: clients ask through the Txn* calls)."""
STORE_CHANGE_KINDS = ("log", "log_group", "txn", "notify")
"""Kinds of ledger change only the server writes (with the change itself): a client's batch may
not record one, nor may it append or prune the ledger."""


@dataclass(frozen=True)
class ServiceLimits:
    """What one connection may hold at once, and how much one message may carry."""

    request_bytes_max: int = 64 << 20
    calls_max: int = 512
    """Calls in progress at once over all connections (read streams and health watchers included);
    one more is refused at once (RESOURCE_EXHAUSTED, which the client raises as the retriable
    :class:`OverloadedError`) before its body is decoded."""
    calls_per_connection_max: int = 128
    """Calls in progress at once on one connection (HTTP/2 streams)."""
    handshake_s: float = 10.0
    """How long a new connection may take to finish its (TLS and HTTP/2) handshake."""
    connection_idle_s: float = 300.0
    """A connection with no call in progress for this long is closed (a client reconnects on its
    next call): a connection that never authenticates holds nothing for longer."""
    appends_in_flight_per_connection_max: int = 64
    """Batches being appended for one connection at once (an ``AppendMany`` call counts each)."""
    append_batches_per_call_max: int = 64
    """The most batches one ``AppendMany`` call may carry."""
    read_streams_per_connection_max: int = 16
    read_streams_max: int = 64
    """``ReadMany`` streams over all connections. A stream reads any number of logs; it holds a server
    thread while it streams, and another that takes its control messages."""
    read_stream_logs_max: int = 100_000
    """Logs one stream reads at once: a guard on the little the server keeps for each (not a bound
    on what is read at once, which is in bytes and items)."""
    txn_wait_s_max: float = 5.0
    """How long one ``TxnWaitEnded`` call waits at most (the client calls again for a longer wait)."""
    txn_waits_max: int = 16
    """``TxnWaitEnded`` calls waiting at once over all connections: each holds a server thread
    (one more is refused with the retriable OVERLOADED)."""
    txn_waits_per_connection_max: int = 8
    read_message_items_max: int = 2000
    """The most records and gaps in one reply, and read ahead for a stream."""
    read_message_bytes_max: int = 1 << 20
    """The most payload bytes in one reply (one record larger than this goes alone)."""
    read_buffer_bytes_max: int = 1 << 20
    """Payload bytes the server reads ahead for a stream, besides the reply being sent (plus one
    record larger than this). What the client has not granted is not read ahead beyond this."""
    read_bytes_max: int = 128 << 20
    """What all streams may hold at once: each takes ``read_buffer_bytes_max +
    read_message_bytes_max`` of it while open, and one that does not fit is refused (OVERLOADED)."""

    def read_stream_bounds(self) -> ReadStreamBounds:
        return ReadStreamBounds(message_items_max=self.read_message_items_max,
                                message_bytes_max=self.read_message_bytes_max,
                                buffer_bytes_max=self.read_buffer_bytes_max, logs_max=self.read_stream_logs_max)

    @property
    def read_stream_bytes(self) -> int:
        """What one stream takes of ``read_bytes_max``."""
        return self.read_buffer_bytes_max + self.read_message_bytes_max


class _PeerSlots:
    """Counts of in-flight work per connection (gRPC peer), with a bound per kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def acquire(self, peer: str, kind: str, limit: int, total_limit: int | None = None, n: int = 1) -> None:
        with self._lock:
            if self._counts[(peer, kind)] + n > limit:
                raise OverloadedError(f"{peer} would have more than {limit} {kind} in progress")
            if total_limit is not None and sum(v for (_, k), v in self._counts.items() if k == kind) + n > total_limit:
                raise OverloadedError(f"the server already serves {total_limit} {kind}")
            self._counts[(peer, kind)] += n

    def release(self, peer: str, kind: str, n: int = 1) -> None:
        with self._lock:
            self._counts[(peer, kind)] -= n
            if self._counts[(peer, kind)] <= 0:
                del self._counts[(peer, kind)]


class SeawayService(seaway_pb2_grpc.SeawayServicer):
    def __init__(self, store: Seaway, limits: ServiceLimits, metrics: Metrics, stopping: threading.Event) -> None:
        self._store = store
        self._limits = limits
        self._metrics = metrics
        self._stopping = stopping
        self._slots = _PeerSlots()
        self._sessions: set[ReadSession] = set()
        self._sessions_lock = threading.Lock()

    # --- plumbing -------------------------------------------------------------------------------

    def _fail(self, method: str, context: grpc.ServicerContext, exc: BaseException) -> None:
        error = self._typed(method, exc)
        self._metrics.errors.labels(method=method, code=error.code).inc()
        context.set_trailing_metadata(error_metadata(error))
        context.abort(status_of(error), str(error) or error.code)

    def _typed(self, method: str, exc: BaseException) -> SeawayError:
        """The typed error a failure is answered with."""
        if isinstance(exc, BufferFullError):  # the server's own bound, so the server's condition to its clients
            error: SeawayError = OverloadedError(f"the server's appends waiting for this log are at their bound: {exc}")
        elif isinstance(exc, SeawayError):
            error = exc
        elif isinstance(exc, TypeError | ValueError | OverflowError | KeyError):
            error = InvalidArgumentError(f"bad request: {exc}")
        else:
            _log.error("request failed with an unexpected error", extra={"method": method}, exc_info=exc)
            error = ServerError(f"internal error: {type(exc).__name__}")
        return error

    def _log_of(self, log_id: int) -> LogHandle:
        return self._store.logs.get(int(log_id))

    def _clients_log(self, log_id: int) -> LogHandle:
        """A log a client may change: not one of the store's own."""
        log = self._log_of(log_id)
        if log.name.startswith(RESERVED_PREFIX):
            raise InvalidArgumentError(f"log {log.name!r} is the store's own: clients only read it")
        return log

    # --- unary calls ----------------------------------------------------------------------------

    def Health(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.HealthReply:
        from seaway import __version__  # noqa: PLC0415 - the package imports this module

        serving = not (self._stopping.is_set() or self._store.closed or self._store.write_failure)
        status = "SERVING" if serving else "NOT_SERVING"
        return pb.HealthReply(status=status, version=__version__, time_ms=self._store.clock.now_ms())

    def CreateLog(self, request: pb.CreateLogRequest, context: grpc.ServicerContext) -> pb.LogInfo:
        def run() -> pb.LogInfo:
            if request.name.startswith(RESERVED_PREFIX):
                raise InvalidArgumentError(f"log names starting with {RESERVED_PREFIX!r} are the store's own")
            return log_info_to_msg(self._store.logs.create(
                request.name, log_id=request.log_id if request.HasField("log_id") else None,
                group=request.group if request.HasField("group") else None,
                **overrides_from_msg(request.attributes)).info)
        return self._unary("CreateLog", context, run)

    def CreateGroup(self, request: pb.CreateGroupRequest, context: grpc.ServicerContext) -> pb.GroupInfo:
        def run() -> pb.GroupInfo:
            group = self._store.logs.create_group(request.name, request.first_id, request.last_id,
                                                  **overrides_from_msg(request.attributes))
            return pb.GroupInfo(name=group.name, first_id=group.first_id, last_id=group.last_id,
                                attributes=overrides_to_msg(group.overrides))
        return self._unary("CreateGroup", context, run)

    def GetLog(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.LogInfo:
        def run() -> pb.LogInfo:
            which = request.WhichOneof("ref")
            if which is None:
                raise InvalidArgumentError("a log is named by name or log_id")
            key: str | int = request.name if which == "name" else request.log_id
            return log_info_to_msg(self._store.logs.get(key).info)
        return self._unary("GetLog", context, run)

    # Lists come in pages bounded by bytes (see _pages): a store may hold more than one reply carries.

    def ListLogs(self, request: pb.PageRequest, context: grpc.ServicerContext) -> pb.LogList:
        return self._unary("ListLogs", context, lambda: _pages.logs_page(
            [log.info for log in self._store.logs.list()], request, self._limits.read_message_bytes_max))

    def ListGroups(self, request: pb.PageRequest, context: grpc.ServicerContext) -> pb.GroupList:
        return self._unary("ListGroups", context, lambda: _pages.groups_page(
            self._store.logs.groups(), request, self._limits.read_message_bytes_max))

    def ListPartitions(self, request: pb.PageRequest, context: grpc.ServicerContext) -> pb.PartitionList:
        return self._unary("ListPartitions", context, lambda: _pages.partitions_page(
            self._store.logs.partitions(), request, self._limits.read_message_bytes_max))

    def RunRetention(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.PartitionIds:
        return self._unary("RunRetention", context,
                           lambda: pb.PartitionIds(partition_ids=self._store.logs.run_retention()))

    def AppendCounts(self, request: pb.AppendCountsRequest, context: grpc.ServicerContext) -> pb.AppendCountsReply:
        def run() -> pb.AppendCountsReply:
            counts = self._store.logs.append_counts(request.log_ids)  # checks the ids and their number
            # Answered in the request's order; a repeated id is answered each time it is asked.
            return pb.AppendCountsReply(records=[counts[i].records for i in request.log_ids],
                                        payload_bytes=[counts[i].payload_bytes for i in request.log_ids])
        return self._unary("AppendCounts", context, run)

    def GetLogBounds(self, request: pb.LogBoundsRequest, context: grpc.ServicerContext) -> pb.LogBoundsReply:
        def run() -> pb.LogBoundsReply:
            found = self._store.logs.bounds(request.log_ids)  # checks the ids and their number
            return pb.LogBoundsReply(logs=[
                pb.LogBoundsItem(log_id=log_id, tail_lsn=b.tail_lsn, trim_point=b.trim_point, final_lsn=b.final_lsn)
                for log_id, b in found.items()])
        return self._unary("GetLogBounds", context, run)

    def CountRecords(self, request: pb.CountRecordsRequest, context: grpc.ServicerContext) -> pb.CountRecordsReply:
        def run() -> pb.CountRecordsReply:
            ranges = {r.log_id: (r.lsn_from, r.lsn_until) for r in request.ranges}
            if len(ranges) != len(request.ranges):
                raise InvalidArgumentError("a log is named twice in one CountRecords request")
            found = self._store.logs.count_records(ranges)  # checks the ids, LSNs and their number
            return pb.CountRecordsReply(logs=[pb.CountItem(log_id=log_id, records=records)
                                              for log_id, records in found.items()])
        return self._unary("CountRecords", context, run)

    def Append(self, request: pb.AppendRequest, context: grpc.ServicerContext) -> pb.AppendReply:
        def run() -> pb.AppendReply:
            (result,) = self._append(context, (request,), "Append")
            if isinstance(result, SeawayError):
                raise result
            return pb.AppendReply(first_lsn=result.start, count=len(result))
        return self._unary("Append", context, run)

    def AppendMany(self, request: pb.AppendManyRequest, context: grpc.ServicerContext) -> pb.AppendManyReply:
        def run() -> pb.AppendManyReply:
            # A call beyond the connection's bound could never start: refuse it for good.
            limit = min(self._limits.append_batches_per_call_max, self._limits.appends_in_flight_per_connection_max)
            if len(request.batches) > limit:
                raise InvalidArgumentError(f"a call carries at most {limit} batches, not {len(request.batches)}")
            results = []
            for r in self._append(context, request.batches, "AppendMany"):
                if isinstance(r, SeawayError):
                    self._metrics.errors.labels(method="AppendMany", code=r.code).inc()
                    results.append(pb.AppendResult(error=error_to_msg(r)))
                else:
                    results.append(pb.AppendResult(appended=pb.AppendReply(first_lsn=r.start, count=len(r))))
            return pb.AppendManyReply(results=results)
        return self._unary("AppendMany", context, run)

    def _append(self, context: grpc.ServicerContext, batches: Sequence[pb.AppendRequest],
                method: str) -> list[range | SeawayError]:
        """Append each batch, in order; wait for them all. A batch that fails has its typed error in
        its place; the others are appended all the same."""
        peer = context.peer()
        count = len(batches)
        self._slots.acquire(peer, "appends", self._limits.appends_in_flight_per_connection_max, n=count)
        started = time.perf_counter()
        try:
            pending: list[tuple[Future[range], int] | SeawayError] = []
            for batch in batches:
                try:
                    log = self._clients_log(batch.log_id)
                    payloads = tuple(batch.payloads)  # each access to the field would copy them again
                    producer = batch.producer_id or None  # an idempotent append, or a plain one
                    future = log.append_batch_async(payloads, producer_id=producer,
                                                    sequence=batch.sequence if producer else None,
                                                    if_tail=batch.if_tail if batch.HasField("if_tail") else None)
                    pending.append((future, sum(map(len, payloads))))
                except Exception as exc:  # this batch only; see _typed
                    pending.append(self._typed(method, exc))
            results: list[range | SeawayError] = []
            for item in pending:
                if isinstance(item, SeawayError):
                    results.append(item)
                    continue
                future, size = item
                try:
                    lsns = future.result()
                except Exception as exc:
                    results.append(self._typed(method, exc))
                    continue
                self._metrics.append_seconds.observe(time.perf_counter() - started)
                self._metrics.appended_records.inc(len(lsns))
                self._metrics.appended_bytes.inc(size)
                results.append(lsns)
            return results
        finally:
            self._slots.release(peer, "appends", count)

    def Trim(self, request: pb.TrimRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._clients_log(request.log_id).trim(request.lsn)
            return pb.Empty()
        return self._unary("Trim", context, run)

    def GetLogState(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.LogState:
        def run() -> pb.LogState:
            log = self._log_of(request.log_id)
            return pb.LogState(tail_lsn=log.tail_lsn(), trim_point=log.trim_point(), is_empty=log.is_empty(),
                               data_size=log.data_size(), final_lsn=log.final_lsn())
        return self._unary("GetLogState", context, run)

    def SealLog(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.LsnReply:
        return self._unary("SealLog", context, lambda: pb.LsnReply(lsn=self._clients_log(request.log_id).seal()))

    def DeleteLog(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._clients_log(request.log_id).delete()
            return pb.Empty()
        return self._unary("DeleteLog", context, run)

    def FindTime(self, request: pb.FindTimeRequest, context: grpc.ServicerContext) -> pb.LsnReply:
        return self._unary("FindTime", context,
                           lambda: pb.LsnReply(lsn=self._log_of(request.log_id).find_time(request.timestamp_ms)))

    # --- the metadata store -----------------------------------------------------------------------

    @staticmethod
    def _readable(namespace: str) -> str:
        if namespace in SECRET_NAMESPACES:
            raise PermissionDeniedError(f"namespace {namespace!r} is the store's own and private: read it "
                                        "through its API (sw.notify, sw.txn)")
        return namespace

    @staticmethod
    def _clients_namespace(namespace: str) -> str:
        """A namespace a client may write into: not one of the store's own."""
        if namespace in STORE_NAMESPACES or namespace.startswith(RESERVED_PREFIX):
            raise PermissionDeniedError(f"namespace {namespace!r} is the store's own: it changes only "
                                        "through its API (sw.notify, sw.ledger.set_floor, transactions)")
        return namespace

    def _clients_writes(self, writes: list[tuple[str, bytes, bytes | None]]) -> list[tuple[str, bytes, bytes | None]]:
        """A transaction's staged writes, which its commit applies: the same rule as a batch."""
        for namespace, _, _ in writes:
            self._clients_namespace(namespace)
        return writes

    def _clients_batch(self, batch: MetaBatch) -> MetaBatch:
        """A client's batch, refused if it writes into the store's own namespaces or records a
        change only the store makes."""
        for op in batch.ops:
            self._clients_namespace(op.namespace)
        for condition in batch.conditions:  # a condition on a value is a read of it
            self._readable(condition.namespace)
        for new in batch.new_logs:
            if new.name.startswith(RESERVED_PREFIX):
                raise InvalidArgumentError(f"log names starting with {RESERVED_PREFIX!r} are the store's own")
        if batch.ledger is not None:
            kind = decode_change(batch.ledger).OPERATION.partition(".")[0]
            if kind in STORE_CHANGE_KINDS:
                raise PermissionDeniedError(f"only the store records {kind}.* changes, with the change itself")
        return batch

    def MetaGet(self, request: pb.MetaKey, context: grpc.ServicerContext) -> pb.MetaGetReply:
        def run() -> pb.MetaGetReply:
            self._readable(request.namespace)
            found = self._store.meta.get(request.namespace, request.key)
            if found is None:
                return pb.MetaGetReply(found=False)
            return pb.MetaGetReply(found=True, value=found.value, version=found.version)
        return self._unary("MetaGet", context, run)

    def MetaScan(self, request: pb.MetaScanRequest, context: grpc.ServicerContext) -> pb.MetaScanReply:
        def run() -> pb.MetaScanReply:
            # Bounded by bytes as the store reads (values are up to 1 MiB, a scan up to 10,000 keys);
            # the client scans on from the last key while `more` is set.
            rows, more = self._store.meta.scan_page(
                self._readable(request.namespace), prefix=request.prefix,
                start=request.start if request.HasField("start") else None,
                end=request.end if request.HasField("end") else None, limit=request.limit or 1000,
                bytes_max=self._limits.read_message_bytes_max)
            return pb.MetaScanReply(entries=[pb.MetaEntry(key=k, value=v.value, version=v.version) for k, v in rows],
                                    more=more)
        return self._unary("MetaScan", context, run)

    def MetaCommit(self, request: pb.MetaBatch, context: grpc.ServicerContext) -> pb.MetaCommitReply:
        def run() -> pb.MetaCommitReply:
            try:
                batch = self._clients_batch(meta_batch_from_msg(request))
                return pb.MetaCommitReply(revision=self._store.meta.commit(batch))
            except ConditionFailedError as exc:  # an answer, not a failure of the call
                return pb.MetaCommitReply(failed=pb.MetaConditionFailed(
                    namespace=exc.namespace, key=exc.key, version=exc.version, message=str(exc)))
        return self._unary("MetaCommit", context, run)

    def MetaCommitMany(self, request: pb.MetaCommitManyRequest,
                       context: grpc.ServicerContext) -> pb.MetaCommitManyReply:
        def run() -> pb.MetaCommitManyReply:
            self._many_bounded(len(request.batches))
            batches: list[MetaBatch | SeawayError] = []
            for msg in request.batches:
                try:
                    batches.append(self._clients_batch(meta_batch_from_msg(msg)))
                except Exception as exc:  # this batch's answer, not the call's
                    batches.append(self._typed("MetaCommitMany", exc))
            applied = iter(self._store.meta.commit_many([b for b in batches if isinstance(b, MetaBatch)]))
            reply = pb.MetaCommitManyReply()
            for batch in batches:
                outcome = batch if isinstance(batch, SeawayError) else next(applied)
                if isinstance(outcome, ConditionFailedError):  # an answer, as MetaCommit gives it
                    reply.results.add(reply=pb.MetaCommitReply(failed=pb.MetaConditionFailed(
                        namespace=outcome.namespace, key=outcome.key, version=outcome.version, message=str(outcome))))
                elif isinstance(outcome, SeawayError):
                    reply.results.add(error=error_to_msg(outcome))
                else:
                    reply.results.add(reply=pb.MetaCommitReply(revision=outcome))
            return reply
        return self._unary("MetaCommitMany", context, run)

    def _many_bounded(self, count: int) -> None:
        if not 1 <= count <= COMMIT_MANY_MAX:
            raise InvalidArgumentError(f"a joined call carries 1-{COMMIT_MANY_MAX} items, got {count}")

    def MetaRevision(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.MetaRevisionReply:
        return self._unary("MetaRevision", context,
                           lambda: pb.MetaRevisionReply(revision=self._store.meta.revision))

    # --- the change ledger ------------------------------------------------------------------------

    def _ledger_bounds(self) -> pb.LedgerBoundsReply:
        tail, head = self._store.ledger.bounds()
        return pb.LedgerBoundsReply(tail=tail, head=head)

    def LedgerBounds(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.LedgerBoundsReply:
        return self._unary("LedgerBounds", context, self._ledger_bounds)

    def LedgerRead(self, request: pb.LedgerReadRequest, context: grpc.ServicerContext) -> pb.LedgerReadReply:
        def run() -> pb.LedgerReadReply:
            reply = pb.LedgerReadReply()
            size = 0
            for entry in self._store.ledger.read(request.index_from, request.limit or 1000):
                msg = ledger_entry_to_msg(entry)
                size += msg.ByteSize() + 4  # and its tag and length
                if reply.entries and size > self._limits.read_message_bytes_max:
                    break  # the client reads on from the last index it got (one entry always fits)
                reply.entries.append(msg)
            return reply
        return self._unary("LedgerRead", context, run)

    def LedgerAppend(self, request: pb.LedgerAppendRequest, context: grpc.ServicerContext) -> pb.LedgerAppendReply:
        def run() -> pb.LedgerAppendReply:
            raise PermissionDeniedError("the ledger is written by the store's own changes, not by clients")
        return self._unary("LedgerAppend", context, run)

    def LedgerPrune(self, request: pb.LedgerPruneRequest, context: grpc.ServicerContext) -> pb.LedgerBoundsReply:
        def run() -> pb.LedgerBoundsReply:
            raise PermissionDeniedError("the ledger is pruned by the server's bounds, not by clients "
                                        "(register a floor to hold it back: sw.ledger.set_floor)")
        return self._unary("LedgerPrune", context, run)

    def LedgerSetFloor(self, request: pb.LedgerFloorRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            if request.name.startswith("notify/"):
                raise PermissionDeniedError(f"floor {request.name!r} is a notification plugin's own")
            if request.HasField("index"):
                self._store.ledger.set_floor(request.name, request.index)
            else:
                self._store.ledger.remove_floor(request.name)
            return pb.Empty()
        return self._unary("LedgerSetFloor", context, run)

    # --- notification configurations ---------------------------------------------------------------

    def NotifySet(self, request: pb.NotifySetRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.notify.set(NotifyConfig.from_json(request.config_json))  # checked against the policy
            return pb.Empty()
        return self._unary("NotifySet", context, run)

    def NotifyDelete(self, request: pb.NotifyName, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.notify.delete(
                request.name, expect_version=request.expect_version if request.HasField("expect_version") else None)
            return pb.Empty()
        return self._unary("NotifyDelete", context, run)

    def NotifyList(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.NotifyListReply:
        def run() -> pb.NotifyListReply:
            reply = pb.NotifyListReply()
            for name, (version, config) in self._store.notify.versions().items():
                info = reply.configs.add(config_json=config.redacted().to_json(), version=version)
                try:
                    checkpoint = self._store.notify.checkpoint(name)
                except CorruptionError as exc:  # written by a local user, not a plugin: say so, list the rest
                    info.checkpoint_error = str(exc)
                    continue
                if checkpoint is not None:
                    info.checkpoint = checkpoint.to_bytes()
            return reply
        return self._unary("NotifyList", context, run)

    # --- the transaction manager ---------------------------------------------------------------
    # Each call blocks its server thread until the manager's edit is durable (an append to its log,
    # whose sync concurrent calls share), as a metadata commit does.

    def TxnBegin(self, request: pb.TxnBeginRequest, context: grpc.ServicerContext) -> pb.TxnBeginReply:
        def run() -> pb.TxnBeginReply:
            txn = self._store.txn_manager
            reads = self._begin_reads(request)  # refused before anything is begun
            timeout_s = request.timeout_s if request.HasField("timeout_s") else None
            if reads:
                return self._begun_reply(txn.begin_with(timeout_s, request.log_ids, reads), request,
                                         [READ_VALUES_BYTES_MAX])
            snapshot = txn.begin(timeout_s, request.log_ids)
            reply = pb.TxnBeginReply(default_timeout_s=txn.default_timeout_s)
            # Taken after the begin: a list at least as new as the snapshot's, which is sound (see
            # seaway.txn._invalid); the reply grows with the list's changes, not with its length.
            self._fill_snapshot(reply, snapshot, request.invalid_known if request.HasField("invalid_known") else None,
                                request.live_known if request.HasField("live_known") else None)
            return reply
        return self._unary("TxnBegin", context, run)

    def _begin_reads(self, request: pb.TxnBeginRequest) -> tuple[tuple[str, bytes], ...]:
        """A begin's reads, checked: keys a client may read."""
        reads = check_reads([(read.namespace, read.key) for read in request.reads])
        for namespace, _ in reads:
            self._readable(namespace)
        return reads

    def _begun_reply(self, begun: Begun, request: pb.TxnBeginRequest, room: list[int],
                     shared: dict[tuple[int, int, int, int], pb.InvalidChanges] | None = None) -> pb.TxnBeginReply:
        """A begin's reply, as TxnBegin's, with the values its reads found, as long as ``room`` (the
        bytes of values the call's reply may still carry, shared by its begins) lasts; the others
        are listed as unread, for the client to read itself."""
        reply = pb.TxnBeginReply(default_timeout_s=self._store.txn_manager.default_timeout_s)
        self._fill_snapshot(reply, begun.snapshot, request.invalid_known if request.HasField("invalid_known") else None,
                            request.live_known if request.HasField("live_known") else None, shared)
        for at, found in enumerate(begun.reads):
            if found is None:
                reply.reads.add(found=False)
            elif len(found.value) > room[0]:
                reply.reads.add(found=False)
                reply.unread.append(at)
            else:
                room[0] -= len(found.value)
                reply.reads.add(found=True, value=found.value, version=found.version)
        return reply

    def _fill_snapshot(self, reply: pb.TxnBeginReply | pb.TxnSnapshotReply, snapshot: Snapshot,
                       invalid_known: pb.InvalidKnown | None, live_known: pb.InvalidKnown | None,
                       shared: dict[tuple[int, int, int, int], pb.InvalidChanges] | None = None) -> None:
        """A snapshot's reply: the snapshot encoded, with its invalid ids as changes to the client's
        copy when it named one (``shared``: the messages of a call, one per versions), and its
        in-progress ids likewise (as of the snapshot's own version: see seaway.txn._idlog), so
        that the reply grows with what changed since the client's last call, not with either set."""
        txn = self._store.txn_manager
        if invalid_known is not None:
            known = invalid_version_from_msg(invalid_known)
            now = txn.invalid_changes(known)
            key = (known.epoch, known.version, now.epoch, now.version)
            found = None if shared is None else shared.get(key)
            if found is None:
                found = invalid_changes_to_msg(now)
                if shared is not None:
                    shared[key] = found
            reply.invalid.CopyFrom(found)
            snapshot = snapshot.with_invalid(())
        if live_known is not None:
            reply.live.CopyFrom(live_changes_to_msg(txn.live_changes(snapshot, live_known.epoch, live_known.version)))
            snapshot = snapshot.with_in_progress(())
        reply.snapshot = snapshot.encode()

    def TxnBeginMany(self, request: pb.TxnBeginManyRequest, context: grpc.ServicerContext) -> pb.TxnBeginManyReply:
        def run() -> pb.TxnBeginManyReply:
            self._many_bounded(len(request.begins))
            txn = self._store.txn_manager
            reply = pb.TxnBeginManyReply()
            # Every begin appended before any is waited for (those that register logs share the
            # log's syncs). The invalid list's changes are taken after them all, so after each
            # begin, as TxnBegin does (changes taken before a begin can miss a transaction its
            # snapshot already counts as ended: its writes would be visible to the new
            # transaction); one message per (version known, version now). The in-progress ids
            # are each snapshot's own.
            # A begin whose reads are refused is not begun; the others read theirs once all began.
            reads: list[tuple[tuple[str, bytes], ...] | SeawayError] = []
            for begin in request.begins:
                try:
                    reads.append(self._begin_reads(begin))
                except Exception as exc:
                    reads.append(self._typed("TxnBeginMany", exc))
            wanted = [begin for begin, keys in zip(request.begins, reads, strict=True)
                      if not isinstance(keys, SeawayError)]
            begun = iter(txn.begin_many([(begin.timeout_s if begin.HasField("timeout_s") else None, begin.log_ids)
                                         for begin in wanted]))
            shared: dict[tuple[int, int, int, int], pb.InvalidChanges] = {}
            room = [READ_VALUES_BYTES_MAX]
            for begin, keys in zip(request.begins, reads, strict=True):
                try:
                    if isinstance(keys, SeawayError):
                        raise keys
                    outcome = next(begun)
                    if isinstance(outcome, SeawayError):
                        raise outcome
                    values = txn.read_at_begin(outcome.write_pointer, keys) if keys else ()
                    reply.results.add(begun=self._begun_reply(Begun(outcome, values), begin, room, shared))
                except Exception as exc:  # this begin's answer, not the call's
                    reply.results.add(error=error_to_msg(self._typed("TxnBeginMany", exc)))
            return reply
        return self._unary("TxnBeginMany", context, run)

    def TxnCommitMany(self, request: pb.TxnCommitManyRequest,
                      context: grpc.ServicerContext) -> pb.TxnCommitManyReply:
        def run() -> pb.TxnCommitManyReply:
            self._many_bounded(len(request.commits))
            commits: list[tuple[int, list[bytes], list[tuple[str, bytes, bytes | None]]] | SeawayError] = []
            for commit in request.commits:
                try:
                    commits.append((commit.id, list(commit.conflicts),
                                    self._clients_writes(txn_writes_from_msg(commit.writes))))
                except Exception as exc:
                    commits.append(self._typed("TxnCommitMany", exc))
            outcomes = iter(self._store.txn_manager.commit_many(
                [c for c in commits if not isinstance(c, SeawayError)]))
            reply = pb.TxnCommitManyReply()
            for commit_ in commits:
                outcome = commit_ if isinstance(commit_, SeawayError) else next(outcomes)
                if outcome is None:
                    reply.results.add(committed=pb.Empty())
                else:
                    reply.results.add(error=error_to_msg(outcome))
            return reply
        return self._unary("TxnCommitMany", context, run)

    def TxnRegister(self, request: pb.TxnRegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.txn.api.register(request.id, request.log_ids)
            return pb.Empty()
        return self._unary("TxnRegister", context, run)

    def TxnCommit(self, request: pb.TxnCommitRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.txn.api.commit(request.id, request.conflicts,
                                       self._clients_writes(txn_writes_from_msg(request.writes)))
            return pb.Empty()
        return self._unary("TxnCommit", context, run)

    def TxnAppendCommit(self, request: pb.TxnAppendCommitRequest,
                        context: grpc.ServicerContext) -> pb.TxnAppendCommitReply:
        def run() -> pb.TxnAppendCommitReply:
            batches = linked_batches_from_msg(request.batches)
            check_linked(batches)  # refused for good before it waits for slots it could never get
            for batch in batches:
                with contextlib.suppress(UnknownLogError):  # that batch's own outcome, not the call's
                    self._clients_log(batch.log_id)  # a log a client may write, as for AppendMany
            writes = self._clients_writes(txn_writes_from_msg(request.writes))
            linked = linked_writes_from_msg(request.linked_writes)
            self._clients_writes([(w.namespace, w.key, None) for w in linked])
            peer = context.peer()
            count = max(1, len(batches))  # its appends count against the connection's, as AppendMany's do
            self._slots.acquire(peer, "appends", self._limits.appends_in_flight_per_connection_max, n=count)
            try:
                outcomes = self._store.txn_manager.commit_appending(request.id, batches, request.conflicts,
                                                                    writes, linked)
            finally:
                self._slots.release(peer, "appends", count)
            if outcomes is None:
                return pb.TxnAppendCommitReply(committed=True)
            reply = pb.TxnAppendCommitReply()
            for outcome in outcomes:
                if isinstance(outcome, range):
                    reply.results.add(appended=pb.AppendReply(first_lsn=outcome.start, count=len(outcome)))
                else:
                    reply.results.add(error=error_to_msg(self._typed("TxnAppendCommit", outcome)))
            return reply
        return self._unary("TxnAppendCommit", context, run)

    def TxnCommitBegin(self, request: pb.TxnCommitBeginRequest,
                       context: grpc.ServicerContext) -> pb.TxnCommitBeginReply:
        def run() -> pb.TxnCommitBeginReply:
            commit, begin = request.commit, request.begin
            reads = self._begin_reads(begin)  # refused before the commit
            outcome = self._store.txn_manager.commit_then_begin(
                commit.id, commit.conflicts, self._clients_writes(txn_writes_from_msg(commit.writes)),
                begin.timeout_s if begin.HasField("timeout_s") else None, begin.log_ids, reads)
            if isinstance(outcome, SeawayError):  # committed; the next begin refused
                return pb.TxnCommitBeginReply(begin_error=error_to_msg(self._typed("TxnCommitBegin", outcome)))
            return pb.TxnCommitBeginReply(begun=self._begun_reply(outcome, begin, [READ_VALUES_BYTES_MAX]))
        return self._unary("TxnCommitBegin", context, run)

    def TxnCommitAll(self, request: pb.TxnCommitAllRequest, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.txn.api.commit_all(request.ids, request.conflicts,
                                           self._clients_writes(txn_writes_from_msg(request.writes)))
            return pb.Empty()
        return self._unary("TxnCommitAll", context, run)

    def TxnAbort(self, request: pb.TxnRef, context: grpc.ServicerContext) -> pb.Empty:
        def run() -> pb.Empty:
            self._store.txn.api.abort(request.id)
            return pb.Empty()
        return self._unary("TxnAbort", context, run)

    def TxnStatus(self, request: pb.TxnRef, context: grpc.ServicerContext) -> pb.TxnStatusReply:
        return self._unary("TxnStatus", context, lambda: pb.TxnStatusReply(
            status=txn_status_to_msg(self._store.txn.api.status(request.id))))

    def TxnWaitEnded(self, request: pb.TxnWaitEndedRequest, context: grpc.ServicerContext) -> pb.TxnWaitEndedReply:
        def run() -> pb.TxnWaitEndedReply:
            limits, peer = self._limits, context.peer()
            self._slots.acquire(peer, "transaction waits", limits.txn_waits_per_connection_max, limits.txn_waits_max)
            try:
                timeout_s = min(request.timeout_s, limits.txn_wait_s_max)  # NaN or negative: refused by the manager
                return pb.TxnWaitEndedReply(ended=self._store.txn.api.wait_ended(request.ids, timeout_s))
            finally:
                self._slots.release(peer, "transaction waits")
        return self._unary("TxnWaitEnded", context, run)

    def TxnSnapshot(self, request: pb.TxnSnapshotRequest, context: grpc.ServicerContext) -> pb.TxnSnapshotReply:
        def run() -> pb.TxnSnapshotReply:
            txn = self._store.txn_manager
            reply = pb.TxnSnapshotReply(default_timeout_s=txn.default_timeout_s)
            self._fill_snapshot(reply, txn.snapshot(),
                                request.invalid_known if request.HasField("invalid_known") else None,
                                request.live_known if request.HasField("live_known") else None)
            return reply
        return self._unary("TxnSnapshot", context, run)

    def TxnInvalid(self, request: pb.TxnInvalidRequest, context: grpc.ServicerContext) -> pb.TxnInvalidReply:
        def run() -> pb.TxnInvalidReply:
            ids, version, more = self._store.txn_manager.invalid_page(request.after, request.limit)
            return pb.TxnInvalidReply(ids=ids, epoch=version.epoch, version=version.version, more=more)
        return self._unary("TxnInvalid", context, run)

    def TxnList(self, request: pb.PageRequest, context: grpc.ServicerContext) -> pb.TxnListReply:
        return self._unary("TxnList", context, lambda: _pages.txns_page(
            self._store.txn.api.list, request, self._limits.read_message_bytes_max))

    def _unary(self, method: str, context: grpc.ServicerContext, run: Callable[[], _T]) -> _T:
        self._metrics.requests.labels(method=method).inc()
        try:  # the token was checked before the request was decoded (see _decoding.py)
            return run()
        except Exception as exc:  # every failure becomes a typed status; see _fail
            self._fail(method, context, exc)
            raise  # not reached: abort raises

    # --- reading many logs over one stream ----------------------------------------------------------

    def ReadMany(self, request_iterator: Iterator[pb.ReadControls],
                 context: grpc.ServicerContext) -> Iterator[pb.ReadReply]:
        self._metrics.requests.labels(method="ReadMany").inc()
        peer = context.peer()
        limits = self._limits
        try:
            self._slots.acquire(peer, "read streams", limits.read_streams_per_connection_max, limits.read_streams_max)
        except Exception as exc:
            self._fail("ReadMany", context, exc)
            return
        try:
            # All streams' bytes are one server-wide pool: its "peer" is the server itself.
            self._slots.acquire("the server", "read bytes", limits.read_bytes_max, n=limits.read_stream_bytes)
        except Exception as exc:
            self._slots.release(peer, "read streams")
            self._fail("ReadMany", context, exc)
            return
        session = ReadSession(self._store.logs, limits.read_stream_bounds(), self._metrics.read_records.inc)
        self._metrics.open_readers.inc()
        released = threading.Lock()

        def release() -> None:  # once: when the stream ends, or at once when the client cancels it
            session.close()
            if released.acquire(blocking=False):
                self._metrics.open_readers.dec()
                self._slots.release("the server", "read bytes", limits.read_stream_bytes)
                self._slots.release(peer, "read streams")

        with self._sessions_lock:
            self._sessions.add(session)
        if self._stopping.is_set():  # stop_reads() may have run before the session was added
            session.close(_shutting_down())
        context.add_callback(release)
        threading.Thread(target=self._take_controls, args=(request_iterator, session), daemon=True,
                         name="seaway-read-controls").start()
        try:
            yield from session.replies()
            if session.error is not None:
                raise session.error
        except Exception as exc:
            self._fail("ReadMany", context, exc)
        finally:
            with self._sessions_lock:
                self._sessions.discard(session)
            release()

    @staticmethod
    def _take_controls(requests: Iterator[pb.ReadControls], session: ReadSession) -> None:
        """Hand the client's control messages to the session until it stops sending (or goes away)."""
        try:
            for msg in requests:
                if not session.control(msg):
                    return
        except Exception:  # the call ended (cancelled, broken): the stream ends with it
            pass
        finally:
            session.close()

    def stop_reads(self) -> None:
        """The server is stopping: end every read stream now (with UNAVAILABLE, so that clients read
        on from where they were once a server is back), rather than after the grace period."""
        with self._sessions_lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.close(_shutting_down())


def _shutting_down() -> UnavailableError:
    # Not the end of any log: a tailing client must not take this for one.
    return UnavailableError("the server is shutting down; read again from the next LSN")
