"""Writing to Seaway from Spark, exactly once: ``df.write`` and ``df.writeStream`` into a
transactional stream or a queue.

How a batch is published (the sink half of Spark's exactly-once: "replayable sources and
idempotent sinks"):

1. Each task (``write``, on an executor) stages its rows in a transaction of its own, begun with
   the ``txnTimeoutS`` option's timeout: events written to the stream, or entries sent to the
   queue's logs, all invisible until the commit. Before its first row it notes the transaction's
   id under the sink's *staging* prefix in the metadata store, so that a later commit finds it if
   the task's result is lost. It returns a :class:`SeawayCommitMessage` with the id; on a failure
   it aborts its transaction.
2. The driver's ``commit(messages, batch_id)`` runs in a fresh process, with a new writer object:
   everything it needs is in the store. It reads the sink's *marker*, the highest batch id
   published (one key per sink id). A batch id at or below it was published before (the driver
   died after the commit and before Spark recorded it, and Spark runs the batch again): the staged
   transactions are aborted and nothing becomes visible. Otherwise one ``sw.txn.commit_all``
   commits every task's transaction and writes the new marker, one atomic step with the marker as
   a conflict key: after any crash all of the batch is visible with its marker, or none of it, and
   of two commits of one batch racing, the second fails.
3. ``abort(messages, batch_id)`` aborts what the messages name. Transactions that no message
   names (a task lost with its executor, a driver killed during a batch, a speculative attempt)
   are aborted, through their staging notes (which hold the task's batch id), by the next commit
   of the same sink id, of that batch or a later one; if none comes, they time out.

A batch ``df.write`` (no batch id) commits its tasks' transactions atomically, without a marker.

The writers take Spark's Arrow record batches (``DataSourceArrowWriter``, ``DataSourceStreamArrowWriter``):
a task reads whole columns (the payloads, the routing keys) rather than Spark making a ``Row`` of
each row in Python first; only a payload made of all the columns (no ``payload`` column) goes
through rows, converted as Spark converts them.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    BinaryType,
    ByteType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from seaway.errors import InvalidArgumentError, PayloadTooLargeError, SeawayError, UnknownTransactionError
from seaway.queues import Strategy
from seaway.spark._options import Options
from seaway.txn import TxnStatus

log = logging.getLogger("seaway.spark")

NAMESPACE = "spark.sink"
"""Where sinks keep their markers (``<sink id>/published``) and staging notes
(``<sink id>/staged/<transaction id>``)."""
TXN_TIMEOUT_S_DEFAULT = 600.0
"""A task's transaction lives this long unless the driver commits or aborts it: longer than a
batch takes from its first task to the driver's commit."""
DRIVER_TXN_TIMEOUT_S = 60.0
CLEANUP_MAX = 1000
"""Staging notes of lost tasks one commit aborts at most (the rest, by the next commits)."""
QUEUE_BATCH_ROWS = 500
STAGE_BATCH_EVENTS = 1000
"""Rows of one routing key joined into one stream write (one append)."""
STAGE_BATCH_BYTES = 2 << 20
"""Payload bytes a task holds before it writes (below the writer's ``append_bytes_max``)."""
STAGE_PENDING_EVENTS_MAX = 5000
"""Rows held over all routing keys before every key's rows are written."""
SINK_ID_BYTES_MAX = 200
BATCH_SINK_PREFIX = "batch-"
"""A batch write without a sinkId stages under ``batch-<random>``."""
WRITE_OPTIONS = ("sinkId", "routingKeyColumn", "txnTimeoutS", "checkpointLocation")
"""Ours, and Spark's checkpointLocation, which Spark passes on to the sink."""
@dataclass(frozen=True)
class SeawayCommitMessage(WriterCommitMessage):
    """What a task staged: its transaction (None when it had no rows), rows and payload bytes."""

    txn_id: int | None
    rows: int
    payload_bytes: int


@dataclass(frozen=True)
class _Plan:
    """How a row becomes an event or an entry: column positions, resolved on the driver against
    the schema, so that a missing or mistyped column fails before any task starts."""

    columns: tuple[str, ...]
    payload_index: int | None
    """The ``payload`` column (binary or string); None: the row as a JSON object."""
    key_index: int | None
    key_column: str | None
    hash_keys: tuple[tuple[str, int], ...]
    """A queue's HASH keys and the columns that give them."""
    schema: StructType
    """The rows' schema (to convert a batch to rows when the payload is all the columns)."""

    def payloads(self, batch: pa.RecordBatch, first_row: int) -> list[bytes]:
        """Each row's payload; ``first_row`` is the task's number of the batch's first row (for errors)."""
        if self.payload_index is None:
            return [json.dumps(dict(zip(self.columns, (_jsonable(v) for v in row), strict=True)),
                               separators=(",", ":")).encode() for row in _rows(batch, self.schema)]
        column = batch.column(self.payload_index)
        values = _not_null(column, first_row, "column payload is null (an event needs a payload)")
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            return [v.encode() for v in values]
        return values

    def routing_keys(self, batch: pa.RecordBatch, first_row: int) -> list[str] | None:
        """Each row's routing key; None without a routing key column."""
        if self.key_index is None:
            return None
        column = batch.column(self.key_index)
        values = _not_null(column, first_row, f"the routing key column {self.key_column!r} is null")
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            return values
        return [bytes(v).decode("utf-8", "surrogateescape") for v in values]

    def entry_keys(self, batch: pa.RecordBatch, first_row: int) -> list[dict[str, Any]] | None:
        """Each row's entry keys (a queue's HASH keys); None when no group hashes."""
        if not self.hash_keys:
            return None
        columns = [_not_null(batch.column(index), first_row, f"column {name!r}, the key of a HASH group, is null")
                   for name, index in self.hash_keys]
        names = [name for name, _ in self.hash_keys]
        return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _not_null(column: pa.Array, first_row: int, what: str) -> list[Any]:
    """The column's values as Python objects (binary as bytes); a null fails the task, naming its row."""
    values: list[Any] = column.to_pylist()
    if column.null_count:
        raise InvalidArgumentError(f"row {first_row + values.index(None)} of a task: {what}")
    return values


def _rows(batch: pa.RecordBatch, schema: StructType) -> list[Any]:
    """The batch's rows as Spark's row writers get them (dates, times, nested rows converted alike)."""
    from pyspark.sql.conversion import ArrowTableToRowsConversion  # noqa: PLC0415 - only for this case

    return list(ArrowTableToRowsConversion.convert(pa.Table.from_batches([batch]), schema))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "asDict"):  # a nested Row
        return {k: _jsonable(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _plan(options: Options, schema: StructType, sw: Any) -> _Plan:
    """Check the target and the schema against each other (on the driver, before any task)."""
    fields = {f.name: (i, f.dataType) for i, f in enumerate(schema.fields)}
    payload_index = None
    if "payload" in fields:
        index, kind = fields["payload"]
        if not isinstance(kind, (BinaryType, StringType)):
            raise InvalidArgumentError(f"the payload column is binary or string, got {kind.simpleString()}")
        payload_index = index
    key_column = options.get("routingKeyColumn")
    if key_column is None and "routing_key" in fields:
        key_column = "routing_key"
    key_index = None
    if key_column is not None:
        if options.target_kind == "queue":
            raise InvalidArgumentError("a queue has no routing key: its entries' keys come from the columns "
                                       "named like its HASH groups' keys")
        if key_column not in fields:
            raise InvalidArgumentError(f"the routing key column {key_column!r} is not in the data "
                                       f"(columns: {', '.join(fields)})")
        index, kind = fields[key_column]
        if not isinstance(kind, (StringType, BinaryType)):
            raise InvalidArgumentError(f"the routing key column {key_column!r} is string or binary, "
                                       f"got {kind.simpleString()}")
        key_index = index
    hash_keys: list[tuple[str, int]] = []
    if options.target_kind == "stream":
        stream = sw.streams.get(options.target)
        if not stream.metadata.state()[0].config.transactional:
            raise InvalidArgumentError(f"stream {options.target!r} was not created transactional: Spark writes "
                                       "to it in transactions (create it with transactional=True)")
    elif options.target_kind == "queue":
        for group in sw.queues.groups(options.target):
            info = sw.queues.describe_group(options.target, group)
            if info.strategy is not Strategy.HASH or info.key is None:
                continue
            if info.key not in fields:
                raise InvalidArgumentError(f"queue {options.target!r}: group {group!r} hashes on key {info.key!r}, "
                                           f"which no column gives (columns: {', '.join(fields)})")
            index, kind = fields[info.key]
            if not isinstance(kind, (StringType, BinaryType, LongType, IntegerType, ShortType, ByteType)):
                raise InvalidArgumentError(f"column {info.key!r} (a HASH key) is string, binary or integer, "
                                           f"got {kind.simpleString()}")
            if (info.key, index) not in hash_keys:
                hash_keys.append((info.key, index))
    else:
        raise InvalidArgumentError("Spark writes to a stream or a queue, not to a log")
    return _Plan(tuple(schema.names), payload_index, key_index, key_column, tuple(hash_keys), schema)


def _staged_key(scope: str, txn_id: int) -> bytes:
    return f"{scope}/staged/{txn_id:020d}".encode()


def _marker_key(scope: str) -> bytes:
    return f"{scope}/published".encode()


def _marker_value(batch_id: int, checkpoint: str | None) -> bytes:
    return json.dumps({"batch": batch_id, "checkpoint": checkpoint}).encode()


def _parse_marker(value: bytes) -> tuple[int, str | None]:
    """The batch id and the checkpoint of a marker (one of an earlier version: a bare batch id)."""
    if not value.startswith(b"{"):
        return int(value), None
    got = json.loads(value)
    return int(got["batch"]), got["checkpoint"]


def _checkpoint_of(options: Options) -> str | None:
    """The query's checkpoint as the sink compares it (``dir`` and ``dir/`` are one)."""
    given = options.get("checkpointLocation")
    return None if not given else os.path.normpath(given)


def _abort_quietly(sw: Any, txn_id: int) -> None:
    # Aborting one that ended (committed by an earlier attempt, aborted, timed out, forgotten) is
    # what a cleanup meets; nothing is left to do for it.
    with contextlib.suppress(SeawayError):
        sw.txn.abort(txn_id)


class _Sink:
    """What the batch and the stream writer share: staging on executors, publishing on the driver."""

    def __init__(self, options: Options, plan: _Plan, scope: str, txn_timeout_s: float) -> None:
        self._checkpoint = _checkpoint_of(options)
        self._options = options
        self._plan = plan
        self._scope = scope
        self._txn_timeout_s = txn_timeout_s

    # --- on executors -----------------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SeawayCommitMessage:
        batches = (batch for batch in iterator if batch.num_rows)
        first = next(batches, None)
        if first is None:
            return SeawayCommitMessage(None, 0, 0)
        with self._options.connect() as sw:
            tx = sw.txn.begin(self._txn_timeout_s)
            try:
                # Noted before anything is staged: a commit finds it even if this task's result is lost.
                # The note holds the batch, so that a commit knows which lost attempts are dead.
                sw.meta.put(NAMESPACE, _staged_key(self._scope, tx.id), (_task_batch_id() or "").encode())
                every = itertools.chain([first], batches)
                count, nbytes = (self._stage_stream(sw, tx, every) if self._options.target_kind == "stream"
                                 else self._stage_queue(sw, tx, every))
            except BaseException:
                with contextlib.suppress(SeawayError):
                    tx.abort()
                    sw.meta.delete(NAMESPACE, _staged_key(self._scope, tx.id))
                raise
        return SeawayCommitMessage(tx.id, count, nbytes)

    def _stage_stream(self, sw: Any, tx: Any, batches: Iterable[pa.RecordBatch]) -> tuple[int, int]:
        """Write the rows as events in ``tx``: those of one routing key joined into batches (one
        append each, in the rows' order), since a call per row costs more than the append."""
        failures: list[BaseException] = []
        count = nbytes = 0
        pending: dict[Any, list[bytes]] = {}
        pending_rows = pending_bytes = 0
        first_row: dict[Any, int] = {}

        def send(key: Any) -> None:
            events = pending.pop(key)
            try:
                future = writer.write_batch(events, key, txn=tx)
            except PayloadTooLargeError as exc:
                largest = max(len(e) for e in events)
                raise PayloadTooLargeError(f"a row of a task from row {first_row[key]} on: its payload is {largest} "
                                           f"bytes, over what stream {self._options.target!r} takes ({exc})") from None
            future.add_done_callback(lambda f: failures.append(e) if (e := f.exception()) else None)

        with sw.streams.get(self._options.target).writer() as writer:
            for batch in batches:
                payloads = self._plan.payloads(batch, count)
                keys: list[Any] = self._plan.routing_keys(batch, count) or [None] * len(payloads)
                for payload, key in zip(payloads, keys, strict=True):
                    events = pending.setdefault(key, [])
                    if not events:
                        first_row[key] = count
                    events.append(payload)
                    count += 1
                    nbytes += len(payload)
                    pending_rows += 1
                    pending_bytes += len(payload)
                    if len(events) >= STAGE_BATCH_EVENTS:
                        pending_bytes -= sum(map(len, events))
                        pending_rows -= len(events)
                        send(key)
                    elif pending_bytes >= STAGE_BATCH_BYTES or pending_rows >= STAGE_PENDING_EVENTS_MAX:
                        for waiting in list(pending):  # many keys with few rows each, or large rows
                            send(waiting)
                        pending_rows = pending_bytes = 0
            for waiting in list(pending):
                send(waiting)
            writer.flush()
        if failures:
            raise failures[0]
        return count, nbytes

    def _stage_queue(self, sw: Any, tx: Any, batches: Iterable[pa.RecordBatch]) -> tuple[int, int]:
        producer = sw.queues.producer(self._options.target)
        count = nbytes = 0
        payloads: list[bytes] = []
        keys: list[dict[str, Any] | None] = []

        def send() -> None:
            try:
                producer.enqueue_batch(tx, payloads, keys if self._plan.hash_keys else None)
            except PayloadTooLargeError as exc:
                largest = max(range(len(payloads)), key=lambda i: len(payloads[i]))
                raise PayloadTooLargeError(f"row {count - len(payloads) + largest} of a task: its payload is "
                                           f"{len(payloads[largest])} bytes, over what queue "
                                           f"{self._options.target!r} takes ({exc})") from None
            payloads.clear()
            keys.clear()

        for batch in batches:
            batch_keys = self._plan.entry_keys(batch, count)
            for i, payload in enumerate(self._plan.payloads(batch, count)):
                keys.append(None if batch_keys is None else batch_keys[i])
                payloads.append(payload)
                count += 1
                nbytes += len(payload)
                if len(payloads) >= QUEUE_BATCH_ROWS:
                    send()
        if payloads:
            send()
        producer.flush(tx)  # in the queue's logs now: the driver commits by id, with no hook to run
        return count, nbytes

    # --- on the driver ----------------------------------------------------------------------------

    def publish(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
        ids = _txn_ids(messages)
        with self._options.connect() as sw:
            if batch_id is not None:
                try:
                    published = self.published(sw)
                except InvalidArgumentError:
                    self._discard(sw, ids)
                    raise
                if published is not None and batch_id <= published:
                    log.info("batch already published: nothing to do",
                             extra={"sink": self._scope, "batch": batch_id, "published": published})
                    lost = self._lost(sw, set(ids), batch_id)  # a replay after a crash: the crash's leftovers
                    self._discard(sw, [*ids, *lost])
                    return
            lost = self._lost(sw, set(ids), batch_id)
            for txn_id in lost:
                _abort_quietly(sw, txn_id)
            # The driver's own transaction carries the group when no task had rows.
            driver = sw.txn.begin(DRIVER_TXN_TIMEOUT_S)
            conflicts: list[bytes] = []
            writes: list[tuple[str, bytes, bytes | None]] = []
            if batch_id is not None:
                marker = _marker_key(self._scope)
                conflicts.append(marker)
                writes.append((NAMESPACE, marker, _marker_value(batch_id, self._checkpoint)))
            try:
                sw.txn.commit_all([driver.id, *ids], conflicts=conflicts, writes=writes)
            except SeawayError:
                for txn_id in ids:  # commit_all aborted them; the notes go (an abort by id is idempotent)
                    _abort_quietly(sw, txn_id)
                self._forget(sw, ids)
                raise
            self._forget(sw, [*ids, *lost])
            if batch_id is None:
                self._sweep_batch_notes(sw)

    def published(self, sw: Any) -> int | None:
        """The highest batch id this sink published (None: none yet). A marker written under another
        checkpoint is refused: that query's batch ids are not this one's (finding 17)."""
        got = sw.meta.get(NAMESPACE, _marker_key(self._scope))
        if got is None:
            return None
        batch_id, checkpoint = _parse_marker(got.value)
        if checkpoint is not None and self._checkpoint is not None and checkpoint != self._checkpoint:
            raise InvalidArgumentError(
                f"sinkId {self._scope!r} published batches up to {batch_id} for the checkpoint {checkpoint!r}, "
                f"not {self._checkpoint!r}: a new checkpoint numbers its batches from 0 again, which would be "
                "taken as published and dropped. Give this query a new sinkId (or restart it with its checkpoint)")
        return batch_id

    def discard(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        with self._options.connect() as sw:
            self._discard(sw, _txn_ids(messages))

    def _discard(self, sw: Any, ids: Sequence[int]) -> None:
        for txn_id in ids:
            _abort_quietly(sw, txn_id)
        self._forget(sw, ids)

    def _lost(self, sw: Any, known: set[int], batch_id: int | None) -> list[int]:
        """Transactions staged under this sink that no message names, of this batch or an earlier
        one (at most CLEANUP_MAX; the next commits take the rest): a task lost with its executor, a
        driver killed during a batch, a speculative or zombie attempt. None of them can ever be
        published (this commit publishes the batch, or a replay of it aborts what it staged), and
        an aborted transaction's late writes are never read, so one still being written to is
        aborted too (finding 15): left for the next batch's commit, a driver killed in the last
        batch held readers back until its transactions timed out. A later batch's note is left. A
        note without a batch (a batch write, or a Spark that does not name it) is taken as lost."""
        prefix = f"{self._scope}/staged/".encode()
        lost = []
        for key, versioned in sw.meta.scan_all(NAMESPACE, prefix=prefix):
            txn_id = int(key[len(prefix):])
            if txn_id in known:
                continue
            noted = versioned.value
            if batch_id is not None and noted and int(noted) > batch_id:
                continue
            lost.append(txn_id)
            if len(lost) >= CLEANUP_MAX:
                break
        return lost

    def _sweep_batch_notes(self, sw: Any) -> None:
        """Remove staging notes of other batch writes (``batch-*``, a random sink id each) whose
        transactions ended: a batch write that crashed leaves notes no later commit of its own finds
        (finding 18). Its transactions, unknown to be dead while they are in progress (another batch
        write may be running), are left to time out; at most CLEANUP_MAX notes are looked at."""
        ended = []
        for key, _ in itertools.islice(sw.meta.scan_all(NAMESPACE, prefix=BATCH_SINK_PREFIX.encode()), CLEANUP_MAX):
            txn_id = int(key.rsplit(b"/", 1)[1])
            try:
                status = sw.txn.status(txn_id)
            except UnknownTransactionError:
                status = None  # forgotten: long ended
            if status is not TxnStatus.IN_PROGRESS:
                ended.append(key)
        if ended:
            batch = sw.meta.batch()
            for key in ended:
                batch.delete(NAMESPACE, key)
            batch.commit()

    def _forget(self, sw: Any, ids: Sequence[int]) -> None:
        """Remove the staging notes of ended transactions (a note left by a crash here is found
        and removed by a later commit: aborting an ended transaction does nothing)."""
        for start in range(0, len(ids), 1000):
            batch = sw.meta.batch()
            for txn_id in ids[start:start + 1000]:
                batch.delete(NAMESPACE, _staged_key(self._scope, txn_id))
            batch.commit()


def _txn_ids(messages: Sequence[WriterCommitMessage | None]) -> list[int]:
    return [m.txn_id for m in messages if isinstance(m, SeawayCommitMessage) and m.txn_id is not None]


def _task_batch_id() -> str | None:
    """The streaming batch a task belongs to: a local property Spark sets on streaming tasks (not a
    documented API: used only to spare other attempts of the batch being committed, see ``_lost``)."""
    context = TaskContext.get()
    return None if context is None else context.getLocalProperty("streaming.sql.batchId")


class SeawayBatchWriter(_Sink, DataSourceArrowWriter):
    """``df.write.format("seaway")``: all the tasks' rows become visible together, or none."""

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        self.publish(messages, None)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        self.discard(messages)


class SeawayStreamWriter(_Sink, DataSourceStreamArrowWriter):
    """``df.writeStream.format("seaway")``: each micro-batch is published once, whatever Spark
    replays after a crash (see the module's docstring)."""

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        self.publish(messages, batchId)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        self.discard(messages)


def _open(options: Any, schema: StructType, overwrite: bool, *, streaming: bool) -> tuple[Options, _Plan, str, float]:
    opts = Options.parse(options, WRITE_OPTIONS)
    if overwrite:
        raise InvalidArgumentError("Seaway streams and queues are append-only: write in append mode "
                                   "(no overwrite, no complete output mode)")
    timeout_s = opts.get_float("txnTimeoutS", TXN_TIMEOUT_S_DEFAULT, lo=1.0, hi=3600.0)
    sink_id = opts.get("sinkId")
    if sink_id is None:
        if streaming:
            raise InvalidArgumentError("writeStream to seaway needs the option sinkId: a name unique to this "
                                       "query, kept across its restarts (it names the batches it published)")
        sink_id = f"{BATCH_SINK_PREFIX}{os.urandom(8).hex()}"  # a batch write's staging notes, its own
    if not 0 < len(sink_id.encode()) <= SINK_ID_BYTES_MAX or "/" in sink_id:
        raise InvalidArgumentError(f"the option sinkId is 1-{SINK_ID_BYTES_MAX} bytes without '/', got {sink_id!r:.80}")
    with opts.connect() as sw:
        plan = _plan(opts, schema, sw)
        if streaming:  # a sink id reused with a new checkpoint fails the query's start, before any task
            _Sink(opts, plan, sink_id, timeout_s).published(sw)
    return opts, plan, sink_id, timeout_s


def batch_writer(options: Any, schema: StructType, overwrite: bool) -> SeawayBatchWriter:
    return SeawayBatchWriter(*_open(options, schema, overwrite, streaming=False))


def stream_writer(options: Any, schema: StructType, overwrite: bool) -> SeawayStreamWriter:
    return SeawayStreamWriter(*_open(options, schema, overwrite, streaming=True))


__all__ = ["NAMESPACE", "SeawayBatchWriter", "SeawayCommitMessage", "SeawayStreamWriter",
           "batch_writer", "stream_writer"]
