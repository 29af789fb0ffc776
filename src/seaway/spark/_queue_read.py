"""Reading a queue as one of its consumer groups: ``spark.readStream.format("seaway").option("queue", q)
.option("group", g)``.

One Spark input partition per consumer of the group (its queue partition). The offset names the
generation read and, per consumer, the position the next read starts from::

    {"generation": 1, "consumers": {"0": {"lsn": 4294967300, "entry": 0}, "1": {...}}}

The driver computes offsets (``latestOffset``): from the previous end, each partition advances
over committed entries (aborted chunks stepped over) and stops before the first chunk of a
transaction still in progress, which is a stable point: every chunk before it is decided. It
counts them with :meth:`Queues.count_committed`, from the entry counts committed transactions
recorded, without reading their payloads: only the executors read entries. The
executors read ``[start, end)`` of their partition with :meth:`Queues.read_committed`, which gives
the same entries every time, so a batch Spark runs again (after a crash, from its offset log) reads
exactly what it read before. Spark's checkpoint is the source of truth for the query; ``commit(end)``
acknowledges the batch's end to the group (:meth:`Queues.acknowledge`: its positions, then
eviction), which is where a query with a new checkpoint starts and what lets entries be evicted.

A resize is followed: the old generation's partitions are read to their sealed ends first, then
one empty batch moves the offset to the new generation (so that no batch mixes the two, and each
key keeps its order across batches), whose partitions are read from then on.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from seaway._invariant import InvariantViolation, invariant
from seaway.errors import InvalidArgumentError, SeawayError
from seaway.queues import Entry, GroupInfo, PartitionInfo, Position, Strategy
from seaway.spark._options import Options

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "payload binary, write_pointer long, counter int, consumer int"
"""An entry as it is stored: its payload and id (the producer transaction's write pointer, its
number in it), and the consumer (queue partition) of the generation it was read from."""
ENTRY_COLUMNS = ("payload", "write_pointer", "counter", "consumer")
KNOWN_OPTIONS = ("group", "maxEntriesPerTrigger")
ENTRIES_PER_TRIGGER_DEFAULT = 100_000
ENTRIES_PER_TRIGGER_MAX = 10_000_000
READ_PIECE_ENTRIES = 5_000
"""Entries one read call fetches (a range is read in pieces, so memory stays bounded)."""


def _parse(options: Mapping[str, str]) -> Options:
    opts = Options.parse(options, known=KNOWN_OPTIONS)
    if opts.target_kind != "queue":
        raise InvalidArgumentError("the queue reader reads the option queue")
    if not opts.get("group"):
        raise InvalidArgumentError("give the option group: the consumer group this query reads the queue as")
    return opts


def _check_group(info: GroupInfo) -> None:
    if info.strategy is Strategy.FIFO:
        raise InvalidArgumentError(
            f"group {info.name!r} of queue {info.queue!r} is FIFO: its consumers take entries by claims, in an "
            "order no checkpoint can replay. Read a ROUND_ROBIN or HASH group (create one for the query: every "
            "group of a queue receives every entry)")


def queue_schema(options: Mapping[str, str]) -> str:
    """The default schema; checks the options and that the group exists and can be read."""
    opts = _parse(options)
    with opts.connect() as sw:
        _check_group(sw.queues.describe_group(opts.target, opts.get("group")))
    return DEFAULT_SCHEMA


def queue_stream_reader(options: Mapping[str, str], schema: StructType) -> QueueStreamReader:
    return QueueStreamReader(_parse(options), schema)


# --- offsets --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Offset:
    generation: int
    positions: dict[int, Position]

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation,
                "consumers": {str(c): {"lsn": p.lsn, "entry": p.entry} for c, p in sorted(self.positions.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Offset:
        try:
            return cls(int(data["generation"]), {int(c): Position(int(p["lsn"]), int(p["entry"]))
                                                  for c, p in data["consumers"].items()})
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InvalidArgumentError(f"not a seaway queue offset: {data!r:.200} (was the checkpoint written by "
                                       "another source?)") from None


def _share(available: list[int], budget: int) -> list[int]:
    """Split ``budget`` entries between partitions holding ``available``: evenly, a partition
    with less taking all it has and leaving the rest to the others."""
    given = [0] * len(available)
    open_ = [i for i, n in enumerate(available) if n > 0]
    while budget > 0 and open_:
        each = max(1, budget // len(open_))
        for i in list(open_):
            take = min(each, available[i] - given[i], budget)
            given[i] += take
            budget -= take
            if given[i] == available[i]:
                open_.remove(i)
            if budget == 0:
                break
    return given


@dataclass(frozen=True)
class QueueRange(InputPartition):
    """One consumer's range of one batch: ``[start, end)`` of its queue partition."""

    generation: int
    consumer: int
    start: tuple[int, int]
    end: tuple[int, int]


class QueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader. ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` run in
    one long-lived process on the driver (which keeps a connection); ``read`` runs on executors, on
    a pickled copy, and connects for each range."""

    def __init__(self, options: Options, schema: StructType) -> None:
        self._options = options
        self._schema = schema
        self._queue = options.target
        self._group = str(options.get("group"))
        self._entries_max = int(options.get_int("maxEntriesPerTrigger", ENTRIES_PER_TRIGGER_DEFAULT, lo=1,
                                                hi=ENTRIES_PER_TRIGGER_MAX) or ENTRIES_PER_TRIGGER_DEFAULT)
        self._sw: Any = None
        self._bounds: dict[tuple[int, int], int] | None = None
        self._acknowledged: _Offset | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sw"] = None  # a connection is the driver's; executors open their own
        return state

    def _client(self) -> Any:
        if self._sw is None:
            self._sw = self._options.connect()
        return self._sw

    def _describe(self) -> GroupInfo:
        info: GroupInfo = self._client().queues.describe_group(self._queue, self._group)
        _check_group(info)
        return info

    # --- driver -----------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        """The group's committed positions: of the generation a resize drains, if one does."""
        info = self._describe()
        generation = min(p.generation for p in info.partitions)
        return _Offset(generation, {p.partition: p.position for p in info.partitions
                                    if p.generation == generation}).to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self._entries_max)

    def prepareForTriggerAvailableNow(self) -> None:
        """``trigger(availableNow=True)``: read what the partitions hold now, no further."""
        self._bounds = {(p.generation, p.partition): p.tail_lsn for p in self._describe().partitions}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset = _Offset.from_json(start)
        # Spark asks for the next batch once the previous one (ending at ``start``) is done and
        # recorded in its commit log, and calls ``commit`` only when it plans the batch after
        # that: acknowledging here does not leave an idle query's last batch unacknowledged.
        self._acknowledge(offset)
        info = self._describe()
        parts = [p for p in info.partitions if p.generation == offset.generation]
        if not parts or all(p.partition in offset.positions and p.drained_at(offset.positions[p.partition])
                                for p in parts):
            newer = sorted({p.generation for p in info.partitions if p.generation > offset.generation})
            if newer:
                return self._next_generation(info, offset, newer[0])
            if not parts:
                raise InvalidArgumentError(f"group {self._group!r} has no generation {offset.generation}, which the "
                                           "query's checkpoint reads: start the query with a new checkpoint")
        # ReadAllAvailable (or any other limit) is bounded all the same: the rest comes in the next batches.
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else self._entries_max
        ends = {}
        counts = []
        for p in parts:
            count, ends[p.partition] = self._advance(p, offset.positions.get(p.partition, Position(1, 0)), budget)
            counts.append(count)
        for p, share, count in zip(parts, _share(counts, budget), counts, strict=True):
            if share < count:  # this batch takes part of what the partition holds
                ends[p.partition] = self._advance(p, offset.positions.get(p.partition, Position(1, 0)), share)[1]
        return _Offset(offset.generation, ends).to_json()

    def _next_generation(self, info: GroupInfo, offset: _Offset, generation: int) -> dict[str, Any]:
        """Every partition of the offset's generation is read to its sealed end: an empty batch
        moves the query to the next generation, at the group's positions there."""
        if generation != offset.generation + 1:
            raise InvalidArgumentError(
                f"group {self._group!r}: the query read generation {offset.generation}, but the group is now at "
                f"{generation}: generation {offset.generation + 1} was consumed by other consumers of the group "
                "meanwhile. Start the query with a new checkpoint (and run no other consumers of its group)")
        return _Offset(generation, {p.partition: p.position for p in info.partitions
                                    if p.generation == generation}).to_json()

    def _advance(self, part: PartitionInfo, start: Position, entries_max: int) -> tuple[int, Position]:
        """How many committed entries (at most ``entries_max``) the partition holds from ``start``
        before its first chunk still in progress, and the position after them (where a
        ``read_committed`` of the range ends)."""
        bound = None
        if self._bounds is not None:
            bound = Position(self._bounds.get((part.generation, part.partition), 0) + 1, 0)
            if bound <= start:
                return 0, start
        # Counted from the chunk counts committed transactions recorded: no payload crosses to the
        # driver (only chunks those do not cover are read: aborted, in progress, or older).
        got = self._client().queues.count_committed(self._queue, self._group, part.generation, part.partition,
                                                    start, bound, entries_max=entries_max)
        return got.entries, got.next

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[QueueRange]:
        first, last = _Offset.from_json(start), _Offset.from_json(end)
        if first.generation != last.generation:  # the empty batch that moves to the next generation
            return [QueueRange(last.generation, c, (p.lsn, p.entry), (p.lsn, p.entry))
                    for c, p in sorted(last.positions.items())]
        starts = {c: first.positions.get(c, Position(1, 0)) for c in last.positions}
        return [QueueRange(last.generation, c, (starts[c].lsn, starts[c].entry), (p.lsn, p.entry))
                for c, p in sorted(last.positions.items())]

    def commit(self, end: dict[str, Any]) -> None:
        """Spark is done with the batches up to ``end``: acknowledge them to the group."""
        self._acknowledge(_Offset.from_json(end))

    def _acknowledge(self, offset: _Offset) -> None:
        """Move the group's positions to ``offset`` (and the logs' trim points below them). An
        acknowledgement is cumulative, so one that fails for a passing reason is left to the next."""
        if offset == self._acknowledged:
            return
        queues = self._client().queues
        try:
            info = queues.describe_group(self._queue, self._group)
            for p in info.partitions:  # a generation the query moved past was read to its sealed end
                if p.generation < offset.generation and p.final_lsn is not None:
                    queues.acknowledge(self._queue, self._group, p.generation,
                                       {p.partition: Position(p.final_lsn + 1, 0)})
            queues.acknowledge(self._queue, self._group, offset.generation, offset.positions)
        except SeawayError as exc:
            if not exc.retriable:
                raise
            log.warning("seaway queue %s group %s: acknowledging %s failed (%s); the next batch retries",
                        self._queue, self._group, offset.to_json(), exc)
            return
        self._acknowledged = offset

    def stop(self) -> None:
        if self._sw is not None:
            self._sw.close()
            self._sw = None

    # --- executors --------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if not isinstance(partition, QueueRange):
            raise InvariantViolation(f"a queue reader reads QueueRanges, got {partition!r}")
        start, end = Position(*partition.start), Position(*partition.end)
        if start >= end:
            return
        row = _row_maker(self._schema, partition.consumer)
        with self._options.connect() as sw:
            snapshot = sw.txn.snapshot()  # later than the driver's: it sees every chunk before end decided
            position = start
            while position < end:
                got = sw.queues.read_committed(self._queue, self._group, partition.generation, partition.consumer,
                                               position, end, entries_max=READ_PIECE_ENTRIES, snapshot=snapshot)
                invariant(not got.blocked and got.next > position,
                          f"queue {self._queue!r} group {self._group!r} consumer {partition.consumer}: the range "
                          f"{tuple(start)}-{tuple(end)} planned by the driver is not all decided at {tuple(position)}")
                for entry in got.entries:
                    yield row(entry)
                position = got.next


# --- rows -------------------------------------------------------------------------------------------


def _row_maker(schema: StructType, consumer: int) -> Any:
    """A function from an entry to a row of ``schema``: the entry's own columns by name, the others
    from its payload decoded as a JSON object (a missing field is null)."""
    fields = [(f.name, f.dataType) for f in schema.fields]
    decode = any(name not in ENTRY_COLUMNS for name, _ in fields)

    def row(entry: Entry) -> tuple[Any, ...]:
        data: Mapping[str, Any] = {}
        if decode:
            try:
                data = json.loads(entry.payload)
            except ValueError:
                data = None  # type: ignore[assignment]
            if not isinstance(data, dict):
                raise InvalidArgumentError(f"entry {entry.id} of consumer {consumer}: the payload is not a JSON "
                                           "object, which the query's schema decodes (read it with the default "
                                           "schema)")
        out: list[Any] = []
        for name, kind in fields:
            if name == "payload":
                out.append(entry.payload if not isinstance(kind, StringType)
                           else entry.payload.decode("utf-8", "replace"))
            elif name == "write_pointer":
                out.append(entry.write_pointer)
            elif name == "counter":
                out.append(entry.counter)
            elif name == "consumer":
                out.append(consumer)
            else:
                out.append(_convert(data.get(name), kind, name, entry))
        return tuple(out)

    return row


_INTEGRAL = (LongType, IntegerType, ShortType, ByteType)


def _convert(value: Any, kind: DataType, name: str, entry: Entry) -> Any:
    """A JSON value as the column's type wants it; a value that does not fit raises."""
    if value is None:
        return None
    try:
        if isinstance(kind, StringType):
            return value if isinstance(value, str) else json.dumps(value)
        if isinstance(kind, _INTEGRAL) and not isinstance(value, bool):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("not a whole number")
            return int(value)
        if isinstance(kind, (DoubleType, FloatType)) and not isinstance(value, bool):
            return float(value)
        if isinstance(kind, BooleanType) and isinstance(value, bool):
            return value
        if isinstance(kind, BinaryType):
            return value.encode() if isinstance(value, str) else bytes(value)
        if isinstance(kind, TimestampType):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return dt.datetime.fromtimestamp(value / 1000, dt.UTC)  # epoch milliseconds
            return dt.datetime.fromisoformat(value)
        if not isinstance(kind, (*_INTEGRAL, DoubleType, FloatType, BooleanType)):
            return value  # arrays, maps, structs: as JSON gives them, for Spark to check
        raise ValueError(f"a {type(value).__name__}")
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidArgumentError(f"entry {entry.id}: field {name!r} ({value!r:.60}) does not fit the column's "
                                   f"type {kind.simpleString()}: {exc}") from None
