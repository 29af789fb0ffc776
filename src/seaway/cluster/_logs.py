"""``sw.logs`` over a replicated cluster: :class:`ClusterLogs` implements :class:`seaway.log.LogsApi`
(handles implementing :class:`seaway.log.SegmentLog`, a reader implementing
:class:`seaway.log.LogReaderApi`), so that streams and queues can keep their logs in a cluster.

Names, groups and attributes live in ZooKeeper and are served by the nodes (the client speaks only to
nodes). Batches, seals, deletions and tails go to the log's sequencer node (the first live node of
the log's order, as for :meth:`ClusterClient.append`); reads merge what the node set holds
(:class:`MergeReader`), with LogDevice's gaps, which are the single store's: TRIM, HOLE, BRIDGE,
DATALOSS, and SEALED past the final LSN of a sealed log. ``docs/cluster.md`` says what differs from
one node.
"""

from __future__ import annotations

import builtins
import contextlib
import heapq
import itertools
import json
import os
import queue
import threading
import time
from collections.abc import Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import grpc

from seaway.cluster._client import ClusterClient
from seaway.cluster._codec import read_reply_from_msg
from seaway.errors import (
    ClosedError,
    InvalidArgumentError,
    LogDeletedError,
    LsnOutOfRangeError,
    PayloadTooLargeError,
    SeawayError,
    TrimPastTailError,
    UnknownLogError,
)
from seaway.log import (
    BUFFERED_BYTES_MAX_DEFAULT,
    LSN_MAX,
    LSN_OLDEST,
    UNSET,
    AppendCoalescer,
    AppendCounts,
    CoalesceConfig,
    Coalescers,
    Durability,
    Gap,
    GapType,
    LogAttributes,
    LogBounds,
    LogGroup,
    LogHandle,
    LogInfo,
    LogReaderApi,
    LogsApi,
    PartitionInfo,
    ProducerMark,
    ReadItem,
    Record,
    RecordRun,
    SegmentLog,
    attribute_overrides,
    check_count_ranges,
    check_log_ids,
    check_lsn,
    get_or_create_log,
    read_logs,
)
from seaway.log.replication import EpochRecord, MergeReader, ReadReply
from seaway.wire import cluster_pb2 as pb

BATCH_BYTES_MAX = 16 << 20
"""Payload bytes of one batch (a node's bound: what a sequencer stores at once)."""
RECORD_BYTES_MAX = 1 << 20
"""The largest record a cluster stores."""
DELETED_TRIM = 2**64 - 1
"""The trim point nodes hold for a deleted log."""
STORE_BYTES_PER_S = 4 << 20
"""What an append's attempt timeout allows for storing its payloads, on top of the client's own."""
IDS_PER_CALL = 20_000
LIST_PAGE = 1_000
IDLE_ASK_S = 0.02
"""How long a node that had nothing new for a reader waits before it is asked again."""
RECORD_REFRESH_S = 0.5
"""How often a reader that waits reads its logs' epoch records again (a seal, a deletion, a new epoch)."""


def _to_json(overrides: dict[str, Any]) -> str:
    return json.dumps({k: (v.value if isinstance(v, Durability) else v) for k, v in overrides.items()})


def _from_json(raw: str) -> dict[str, Any]:
    doc = json.loads(raw) if raw else {}
    return {k: (Durability(v) if k == "durability" else v) for k, v in doc.items()}


class ClusterLog(LogHandle):
    """A handle on one log of a cluster; the same methods as :class:`seaway.Log`.

    Where a cluster differs (docs/cluster.md): an acknowledged batch is whole, at consecutive LSNs
    of one epoch, but one the sequencer's node failed with in flight may be kept in part (each slot
    is decided alone by recovery); a producer's batches are remembered by the node sequencing the
    log, not across a move of its sequencer to another node."""

    def __init__(self, logs: ClusterLogs, info: LogInfo) -> None:
        super().__init__(info, logs)
        self._logs = logs

    def _check_batch(self, payloads: Iterable[object]) -> tuple[bytes, ...]:
        batch = super()._check_batch(payloads)
        size = sum(map(len, batch))
        if size > BATCH_BYTES_MAX:
            raise PayloadTooLargeError(f"a cluster's batch holds at most {BATCH_BYTES_MAX} payload bytes, got {size}")
        return batch

    def _make_appends(self) -> AppendCoalescer:
        logs, log_id = self._logs, self.id

        def send(payloads: tuple[bytes, ...], mark: ProducerMark | None, if_tail: int | None) -> Future[range]:
            return logs._append(log_id, payloads, mark, if_tail)

        return logs._coalescers.get(log_id, send)

    def _bounds(self) -> LogBounds:
        return self._logs._bounds_of(self.id)

    def tail_lsn(self) -> int:
        return self._bounds().tail_lsn

    def seal(self) -> int:
        """Seal the log for good; its final LSN. The appends this connection made of the log before
        are answered first (sent one batch at a time, they could otherwise reach the sequencer
        after the seal and be refused, though made before it)."""
        self._appends().drain(self._logs._client.timeout_s)
        reply = self._logs._client.sequencer_call(self.id, "SealLog", pb.LogRef(log_id=self.id))
        return int(reply.lsn)

    def final_lsn(self) -> int | None:
        return self._bounds().final_lsn

    def delete(self) -> None:
        self._logs.delete(self)

    def trim_point(self) -> int:
        return self._bounds().trim_point

    def is_empty(self) -> bool:
        bounds = self._bounds()
        if bounds.trim_point >= bounds.tail_lsn:
            return True
        return not any(isinstance(item, Record) for item in self.read(bounds.trim_point + 1, bounds.tail_lsn))

    def data_size(self) -> int:
        """An estimate: the payload bytes (plus a small overhead a record) acknowledged since the
        nodes started, times the log's replication; trimmed records are not taken off."""
        counts = self._logs.append_counts([self.id])[self.id]
        record = self._logs._client.epoch_record(self.id)
        replication = record.history[-1].replication if record.history else 1
        return (counts.payload_bytes + 32 * counts.records) * replication

    def trim(self, lsn: int) -> None:
        check_lsn(lsn, "lsn")
        tail = self.tail_lsn()
        if lsn > tail:
            raise TrimPastTailError(f"log {self.name!r}: cannot trim to {lsn:#x}, the tail is {tail:#x}")
        if lsn > 0:
            self._logs._client.trim(self.id, lsn)

    def find_time(self, timestamp_ms: int) -> int:
        """The LSN of the first record stamped at or after ``timestamp_ms`` (each record carries its
        sequencer's wall-clock time); the LSN after the tail if there is none. A scan from the trim
        point, not a search: the nodes keep no time index."""
        if not isinstance(timestamp_ms, int) or isinstance(timestamp_ms, bool) or not 0 <= timestamp_ms < 2**63:
            raise InvalidArgumentError(f"timestamp_ms must be a non-negative integer, got {timestamp_ms!r}")
        bounds = self._bounds()
        if bounds.trim_point < bounds.tail_lsn:
            for item in self.read(bounds.trim_point + 1, bounds.tail_lsn):
                if isinstance(item, Record) and item.timestamp_ms >= timestamp_ms:
                    return item.lsn
        return bounds.tail_lsn + 1

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Generator[ReadItem, None, None]:
        return self._logs.read({self: lsn_from}, until=lsn_until)


class ClusterLogs:
    """The logs of a replicated cluster, by name, with the methods of :class:`seaway.log.Logs`
    (``LogsApi``): ``ClusterLogs("seaway://h1:p1,h2:p2", token=..., tls_root_cert=...)``."""

    def __init__(self, url: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
                 timeout_s: float = 30.0, attempt_timeout_s: float = 2.0) -> None:
        self._client = ClusterClient(url, token=token, tls_root_cert=tls_root_cert, timeout_s=timeout_s,
                                     attempt_timeout_s=attempt_timeout_s)
        # One batch of a log in flight at a time: two calls in flight could reach the sequencer in
        # either order, and a log's appends are stored in the order they were made.
        self._coalescers = Coalescers(CoalesceConfig(batches_in_flight_max=1))
        self._pool = ThreadPoolExecutor(16, thread_name_prefix="seaway-cluster-append")
        self._producer = os.urandom(16)
        """This connection's producer id for appends made without one: a batch sent again after a
        failure keeps its sequence number, so a sequencer that saw it stores it once."""
        self._sequences: dict[int, int] = {}
        self._lock = threading.Lock()
        self._groups: dict[str, LogGroup] = {}
        self._closed = False

    @property
    def client(self) -> ClusterClient:
        """The cluster client underneath (log ids, epoch records, node sets)."""
        return self._client

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the cluster connection is closed")

    # --- appends ---------------------------------------------------------------------------------

    def _append(self, log_id: int, payloads: tuple[bytes, ...], mark: ProducerMark | None,
                if_tail: int | None) -> Future[range]:
        self._check_open()
        if mark is None:
            with self._lock:
                sequence = self._sequences.get(log_id, 0)
                self._sequences[log_id] = sequence + 1
            mark = ProducerMark(self._producer, sequence)
        request = pb.AppendBatchRequest(log_id=log_id, payloads=payloads, producer_id=mark.producer_id,
                                        sequence=mark.sequence)
        if if_tail is not None:
            request.has_if_tail, request.if_tail = True, if_tail

        # A large batch takes a while to store on R nodes: its node is given that long before the
        # client takes it for stalled and moves the sequencer (which would store the batch again).
        attempt_s = self._client.attempt_timeout_s + sum(map(len, payloads)) / STORE_BYTES_PER_S

        def send() -> range:
            reply = self._client.sequencer_call(log_id, "AppendBatch", request, attempt_s)
            return range(reply.first_lsn, reply.first_lsn + reply.count)

        return self._pool.submit(send)

    # --- names, groups, attributes ---------------------------------------------------------------

    def _group(self, name: str) -> LogGroup:
        group = self._groups.get(name)
        if group is None:
            self.groups()  # groups are never changed once made: a cache that only grows
            group = self._groups.get(name)
            if group is None:
                raise UnknownLogError(f"no log group {name!r}")
        return group

    def _info(self, config: pb.LogConfig) -> LogInfo:
        overrides = _from_json(config.attributes)
        attributes = LogAttributes()
        group = config.group or None
        if group is not None:
            attributes = attributes.with_overrides(self._group(group).overrides)
        return LogInfo(config.name, config.log_id, group, attributes.with_overrides(overrides), overrides)

    def create(self, name: str, *, log_id: int | None = None, group: str | None = None,
               backlog_s: float | None = UNSET, payload_bytes_max: int = UNSET,
               durability: Durability = UNSET) -> ClusterLog:
        """Create a log stored on every live node, with the cluster's replication. Attributes not
        given are inherited from its group, then the defaults."""
        self._check_open()
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a log name must be a string, got {name!r}")
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        if log_id is not None and (not isinstance(log_id, int) or isinstance(log_id, bool) or log_id < 1):
            raise InvalidArgumentError(f"a log id is a positive integer, got {log_id!r}")
        request = pb.LogConfig(name=name, log_id=log_id or 0, group=group or "", attributes=_to_json(overrides))
        reply = self._client.call_any("CreateNamedLog", request, timeout_s=10.0)
        return ClusterLog(self, self._info(reply))

    def create_group(self, name: str, first_id: int, last_id: int, *, backlog_s: float | None = UNSET,
                     payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> LogGroup:
        self._check_open()
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        for value in (first_id, last_id):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"a group's ids must satisfy 1 <= first <= last <= 2**62, got "
                                           f"[{first_id!r}, {last_id!r}]")
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a group name must be a string, got {name!r}")
        self._client.call_any("CreateGroup", pb.GroupConfig(name=name, first_id=first_id, last_id=last_id,
                                                              attributes=_to_json(overrides)), timeout_s=10.0)
        group = LogGroup(name, first_id, last_id, overrides)
        self._groups[name] = group
        return group

    def get(self, name_or_id: str | int) -> ClusterLog:
        self._check_open()
        if isinstance(name_or_id, bool) or not isinstance(name_or_id, str | int):
            raise UnknownLogError(f"no log {name_or_id!r}")
        if isinstance(name_or_id, int):
            if not 0 < name_or_id < 2**64:
                raise UnknownLogError(f"no log {name_or_id!r}")
            lookup = pb.LogLookup(log_id=name_or_id)
        else:
            if not name_or_id:
                raise UnknownLogError("no log ''")
            lookup = pb.LogLookup(name=name_or_id)
        return ClusterLog(self, self._info(self._client.call_any("GetLog", lookup, timeout_s=10.0)))

    def get_or_create(self, name: str, *, group: str | None = None, backlog_s: float | None = UNSET,
                      payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> ClusterLog:
        log: ClusterLog = get_or_create_log(self, name, group=group, backlog_s=backlog_s,
                                            payload_bytes_max=payload_bytes_max, durability=durability)
        return log

    def delete(self, log: LogHandle | int | str) -> None:
        """Delete a log: appends accepted before are decided, later ones fail with
        :class:`LogDeletedError`; its name is free again, its id never given again, and every node
        drops its copies."""
        resolved = self._resolve(log)
        resolved._appends().drain(self._client.timeout_s)  # the appends made before it are decided first
        self._client.sequencer_call(resolved.id, "DeleteLog", pb.LogRef(log_id=resolved.id))
        self._coalescers.forget(resolved.id)
        with self._lock:
            self._sequences.pop(resolved.id, None)

    def _resolve(self, log: LogHandle | int | str) -> ClusterLog:
        if isinstance(log, LogHandle):
            if not isinstance(log, ClusterLog) or log._logs is not self:
                raise UnknownLogError(f"{log!r} belongs to another store")
            return log
        return self.get(log)

    def list(self) -> builtins.list[ClusterLog]:
        self._check_open()
        out: builtins.list[ClusterLog] = []
        after = 0
        while True:
            reply = self._client.call_any("ListLogs", pb.ListLogsRequest(after_id=after, limit=LIST_PAGE),
                                          timeout_s=10.0)
            out.extend(ClusterLog(self, self._info(config)) for config in reply.logs)
            if len(reply.logs) < LIST_PAGE:
                return out
            after = reply.logs[-1].log_id

    def groups(self) -> builtins.list[LogGroup]:
        self._check_open()
        reply = self._client.call_any("ListGroups", pb.StatusRequest(), timeout_s=10.0)
        groups = [LogGroup(g.name, g.first_id, g.last_id, _from_json(g.attributes)) for g in reply.groups]
        self._groups.update((g.name, g) for g in groups)
        return groups

    def partitions(self) -> builtins.list[PartitionInfo]:
        """None: a cluster's nodes keep no time partitions (retention trims instead, see
        :meth:`run_retention`)."""
        self._check_open()
        return []

    def run_retention(self) -> builtins.list[int]:
        """Trim every log with a ``backlog_s`` up to its first record younger than that; return
        the ids of the logs trimmed (a cluster has no partitions to drop)."""
        self._check_open()
        trimmed: builtins.list[int] = []
        now_ms = int(time.time() * 1000)
        for log in self.list():
            backlog_s = log.attributes.backlog_s
            if backlog_s is None:
                continue
            with contextlib.suppress(UnknownLogError):  # deleted meanwhile
                keep_from = log.find_time(now_ms - int(backlog_s * 1000))
                if keep_from - 1 > log.trim_point():
                    log.trim(keep_from - 1)
                    trimmed.append(log.id)
        return trimmed

    # --- state of many logs ----------------------------------------------------------------------

    def _bounds_of(self, log_id: int) -> LogBounds:
        self._check_open()
        reply = self._client.sequencer_call(log_id, "GetBounds", pb.LogRef(log_id=log_id))
        return LogBounds(reply.tail_lsn, reply.final_lsn if reply.sealed else None, reply.trim_point)

    def append_counts(self, log_ids: Iterable[int]) -> dict[int, AppendCounts]:
        """Records and payload bytes acknowledged for each log by the sequencers of the nodes alive
        now, since they started (a node that died takes its counts with it: a sampler sees lower
        counts, as after a restart). Unknown and deleted logs count zero."""
        ids = check_log_ids(log_ids)
        self._check_open()
        totals = {log_id: [0, 0] for log_id in ids}
        unique = builtins.list(totals)
        for node in sorted(self._client.refresh_members()):
            stub = self._client.stub(node)
            if stub is None:
                continue
            for start in range(0, len(unique), IDS_PER_CALL):
                part = unique[start:start + IDS_PER_CALL]
                try:
                    reply = stub.AppendCounts(pb.LogIds(log_ids=part), timeout=5.0)
                except grpc.RpcError:
                    continue  # a node that does not answer counts nothing
                for log_id, records, size in zip(part, reply.records, reply.payload_bytes, strict=False):
                    totals[log_id][0] += records
                    totals[log_id][1] += size
        return {log_id: AppendCounts(records, size) for log_id, (records, size) in totals.items()}

    def bounds(self, log_ids: Iterable[int]) -> dict[int, LogBounds]:
        """Each log's tail, final LSN and trim point, from its sequencer node (one call a log).
        Unknown and deleted logs are left out."""
        ids = check_log_ids(log_ids)
        self._check_open()
        found: dict[int, LogBounds] = {}
        for log_id in ids:
            if log_id in found:
                continue
            with contextlib.suppress(UnknownLogError):  # or deleted (a subclass)
                found[log_id] = self._bounds_of(log_id)
        return found

    def count_records(self, ranges: Mapping[int, tuple[int, int | None]]) -> dict[int, int]:
        """How many records a reader of each range would get, counted by reading them (a cluster
        keeps no index of epochs and holes); records lost to DATALOSS are not counted."""
        checked = check_count_ranges(ranges)
        found = self.bounds(checked)
        counts: dict[int, int] = {}
        for log_id, (lsn_from, lsn_until) in checked.items():
            if log_id not in found:
                continue
            until = min(lsn_until, found[log_id].tail_lsn)
            start = max(lsn_from, LSN_OLDEST)
            counts[log_id] = 0 if start > until else sum(
                1 for item in self.read({log_id: start}, until=until) if isinstance(item, Record))
        return counts

    # --- reading ---------------------------------------------------------------------------------

    def reader(self, buffered_items_max: int = 2_000, *, runs: bool = False,
               buffered_bytes_max: int = BUFFERED_BYTES_MAX_DEFAULT) -> ClusterReader:
        """A reader over any of these logs. With ``runs``, it delivers :class:`RecordRun` items
        instead of a :class:`Record` each (consecutive records of one log stamped alike, as read)."""
        self._check_open()
        return ClusterReader(self, buffered_items_max, buffered_bytes_max, runs=runs)

    def read(self, starts: Mapping[LogHandle | int | str, int],
             until: int | None = None) -> Generator[ReadItem, None, None]:
        return read_logs(self.reader(), self._resolve, starts, until)

    def close(self) -> None:
        if self._closed:
            return
        self._coalescers.close(5.0)
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def __enter__(self) -> ClusterLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Reading:
    """One log read by a :class:`ClusterReader`."""

    def __init__(self, log_id: int, record: EpochRecord, trim: int, lsn_from: int, lsn_until: int,
                 generation: int) -> None:
        self.log_id = log_id
        self.until = lsn_until
        self.generation = generation
        self.final = record.final
        stop = lsn_until if record.final is None else min(lsn_until, record.final)
        self.merge = MergeReader(log_id, record, lsn_from, stop, trim_point=trim)
        self.sealed_sent = False
        self.refreshed = time.monotonic()

    def seal_at(self, final: int) -> None:
        self.final = final
        self.merge.until_lsn = min(self.merge.until_lsn, final)

    @property
    def done(self) -> bool:
        return self.merge.done and (self.final is None or self.until <= self.final or self.sealed_sent)


def _as_runs(items: builtins.list[ReadItem]) -> builtins.list[Any]:
    """Records as :class:`RecordRun` items: consecutive ones of a log stamped alike make one run."""
    out: builtins.list[Any] = []
    for item in items:
        if not isinstance(item, Record):
            out.append(item)
            continue
        last = out[-1] if out else None
        if (isinstance(last, RecordRun) and last.log_id == item.log_id and last.last_lsn + 1 == item.lsn
                and last.timestamp_ms == item.timestamp_ms):
            last.payloads.append(item.payload)
        else:
            out.append(RecordRun(item.log_id, item.lsn, item.timestamp_ms, [item.payload]))
    return out


class ClusterReader:
    """Reads many logs of a cluster at once, each in LSN order (:class:`seaway.log.LogReaderApi`).
    Each log is a :class:`MergeReader` over its node set."""

    def __init__(self, logs: ClusterLogs, buffered_items_max: int, buffered_bytes_max: int, *,
                 runs: bool = False) -> None:
        if buffered_items_max < 1 or buffered_bytes_max < 1:
            raise InvalidArgumentError("a reader's bounds must be positive")
        self._runs = runs
        self._logs = logs
        self._client = logs._client
        self._buffered_items_max = buffered_items_max
        self._buffered_bytes_max = buffered_bytes_max
        self._reading: dict[int, _Reading] = {}
        self._buffer: builtins.list[ReadItem] = []
        self._replies: queue.SimpleQueue[tuple[int, int, int, Any]] = queue.SimpleQueue()
        self._generation = 0
        self._lock = threading.RLock()
        self._later: builtins.list[tuple[float, int, int, int, int, ReadReply | None]] = []
        """Answers held back (a heap by due time): empty ones, and failed calls."""
        self._order = itertools.count()
        self._members_refreshed = time.monotonic()
        self._closed = False
        self._woken = False

    def start_reading(self, log: LogHandle | int | str, lsn_from: int = LSN_OLDEST, lsn_until: int = LSN_MAX) -> None:
        log_id = self._logs._resolve(log).id
        check_lsn(lsn_from, "lsn_from")
        check_lsn(lsn_until, "lsn_until")
        if lsn_from < LSN_OLDEST or lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_from:#x} until {lsn_until:#x}")
        record, trim = self._record(log_id)
        with self._lock:
            self._generation += 1
            self._drop(log_id)
            self._reading[log_id] = _Reading(log_id, record, trim, lsn_from, lsn_until, self._generation)

    def _record(self, log_id: int) -> tuple[EpochRecord, int]:
        reply = self._client.call_any("GetEpochRecord", pb.LogRef(log_id=log_id))
        record = EpochRecord.decode(reply.record)
        if record.deleted:
            raise LogDeletedError(f"log {log_id} was deleted")
        return record, int(reply.trim_point)

    def stop_reading(self, log: LogHandle | int | str) -> None:
        log_id = log.id if isinstance(log, LogHandle) else log if isinstance(log, int) else self._logs._resolve(log).id
        with self._lock:
            self._reading.pop(log_id, None)
            self._drop(log_id)

    def _drop(self, log_id: int) -> None:
        self._buffer = [item for item in self._buffer if item.log_id != log_id]

    @property
    def done(self) -> bool:
        with self._lock:
            return not self._buffer and all(r.done for r in self._reading.values())

    def wake(self) -> None:
        self._woken = True

    def read(self, items_max: int = 1000, timeout_s: float | None = None, *,
             bytes_max: int | None = None) -> builtins.list[ReadItem]:
        if items_max < 1:
            raise InvalidArgumentError("items_max must be at least 1")
        if bytes_max is not None and bytes_max < 1:
            raise InvalidArgumentError("bytes_max must be at least 1")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self._closed:
                raise ClosedError("the reader is closed")
            self._logs._check_open()
            with self._lock:  # logs may be started and stopped from other threads meanwhile
                self._pump(0.0 if self._buffer else 0.02)
                if self._buffer or self.done:
                    taken = self._take(items_max, bytes_max)
                    return _as_runs(taken) if self._runs else taken
            if self._woken:
                self._woken = False
                return []
            if deadline is not None and time.monotonic() >= deadline:
                return []

    def _take(self, items_max: int, bytes_max: int | None) -> builtins.list[ReadItem]:
        """At most ``items_max`` items and ``bytes_max`` payload bytes (the reader's own byte bound
        at most), and at least one item."""
        out: builtins.list[ReadItem] = []
        size = 0
        limit = self._buffered_bytes_max if bytes_max is None else min(bytes_max, self._buffered_bytes_max)
        while self._buffer and len(out) < items_max:
            item = self._buffer[0]
            length = len(item.payload) if isinstance(item, Record) else 0
            if out and size + length > limit:
                break
            out.append(self._buffer.pop(0))
            size += length
        return out

    def _pump(self, wait_s: float) -> None:
        """Ask the nodes, take their answers (waiting up to ``wait_s`` for the first), and move what
        can be delivered into the buffer."""
        now = time.monotonic()
        full = len(self._buffer) >= self._buffered_items_max \
            or sum(len(i.payload) for i in self._buffer if isinstance(i, Record)) >= self._buffered_bytes_max
        for reading in builtins.list(self._reading.values()):
            if reading.merge.done or full:  # nothing more is asked for while the buffer is full
                continue
            for node, request in reading.merge.requests():
                stub = self._client.stub(node)
                if stub is None:  # not a live member: asked again at the next turn
                    reading.merge.lost(node)
                    continue
                msg = pb.ReadFrom(log_id=reading.log_id, lsn=request.lsn, max_copies=request.max_copies)
                call = stub.Read.future(msg, timeout=5.0)
                key = (reading.log_id, reading.generation, node)
                call.add_done_callback(lambda done, key=key: self._replies.put((*key, done)))
        if self._later:
            wait_s = max(0.0, min(wait_s, self._later[0][0] - now))
        answered: builtins.list[tuple[int, int, int, Any]] = []
        with contextlib.suppress(queue.Empty):
            answered.append(self._replies.get(timeout=wait_s) if wait_s > 0 else self._replies.get_nowait())
            while True:
                answered.append(self._replies.get_nowait())
        now = time.monotonic()
        for log_id, generation, node, done in answered:
            try:
                reply: ReadReply | None = read_reply_from_msg(done.result())
            except grpc.RpcError:
                reply = None
            if reply is None or not reply.copies:
                # Nothing new (or no answer): that node is asked again a little later, not at once
                # (a tailing reader would otherwise ask as fast as the nodes answer).
                heapq.heappush(self._later, (now + IDLE_ASK_S, next(self._order), log_id, generation, node, reply))
            else:
                self._answer(log_id, generation, node, reply)
        while self._later and self._later[0][0] <= now:
            _, _, log_id, generation, node, reply = heapq.heappop(self._later)
            self._answer(log_id, generation, node, reply)
        now_ms = int(time.monotonic() * 1000)
        room = self._buffered_items_max - len(self._buffer)
        for reading in self._reading.values():
            if room <= 0:
                break
            items = reading.merge.take(now_ms)
            self._buffer.extend(items)
            room -= len(items)
            if reading.merge.done and reading.final is not None and reading.until > reading.final \
                    and not reading.sealed_sent:
                reading.sealed_sent = True
                self._buffer.append(Gap(reading.log_id, GapType.SEALED, reading.merge.next_lsn, reading.until))
            if not items and not reading.merge.done and (reading.merge.needs_record
                                                         or now - reading.refreshed > RECORD_REFRESH_S):
                self._refresh(reading)

    def _answer(self, log_id: int, generation: int, node: int, reply: ReadReply | None) -> None:
        """A node's answer (None: its call failed) to the log read at ``generation``."""
        target = self._reading.get(log_id)
        if target is None or target.generation != generation:
            return
        if reply is None:
            target.merge.lost(node)
            return
        if reply.trim_point >= DELETED_TRIM:
            self.stop_reading(log_id)
            raise LogDeletedError(f"log {log_id} was deleted while it was being read")
        target.merge.on_reply(reply)

    def _refresh(self, reading: _Reading) -> None:
        """Read the log's epoch record again: a new epoch, a seal, a deletion."""
        reading.refreshed = time.monotonic()
        try:
            record, _ = self._record(reading.log_id)
        except LogDeletedError:
            self.stop_reading(reading.log_id)
            raise
        except SeawayError:
            return
        reading.merge.update_record(record)
        if record.final is not None:
            reading.seal_at(record.final)
        if time.monotonic() - self._members_refreshed > RECORD_REFRESH_S:  # once for all the logs read
            self._members_refreshed = time.monotonic()
            with contextlib.suppress(SeawayError):
                self._client.refresh_members()

    def __iter__(self) -> Iterator[ReadItem]:
        while True:
            items = self.read()
            if not items:
                return
            yield from items

    def close(self) -> None:
        self._closed = True
        with self._lock:
            self._reading.clear()
            self._buffer.clear()
            self._later.clear()

    def __enter__(self) -> ClusterReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _conforms(logs: ClusterLogs, log: ClusterLog, reader: ClusterReader) -> tuple[LogsApi, SegmentLog, LogReaderApi]:
    """Checked by mypy: these classes implement the protocols the layers above use."""
    return logs, log, reader
