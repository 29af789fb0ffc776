"""Reading a stream or a log: ``spark.read.format("seaway")`` and ``spark.readStream.format("seaway")``.

Offsets are readable JSON, a stream cut's form with the source's counter of skipped events::

    {"stream": "web/access", "positions": {"0.0": 120, "1.1": 1}}      # or {"log": "clicks", ...}

Each micro-batch reads, for each part (segment, or the log), the LSNs from its start offset to its
end offset; Spark partitions are those ranges, split when long. The driver's reader keeps a client
and what it learnt of the stream (segment records, decided transactional prefixes); the copies
pickled to the executors keep only the options and schema, and connect for each range.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from seaway.errors import ConditionFailedError, InvalidArgumentError
from seaway.spark._options import Options
from seaway.spark._plan import Range, RangeGroup, Target, open_target
from seaway.spark._rows import DEFAULT_SCHEMA, read_range
from seaway.spark._sources import META_NAMESPACE

READ_OPTIONS = ("startingOffsets", "startingTimestamp", "endingOffsets", "maxEventsPerTrigger",
                "maxBytesPerTrigger", "failOnDataLoss", "sourceId", "minPartitions")
SOURCE_ID_CHARS_MAX = 200


def stream_schema(options: Mapping[str, str]) -> str:
    """The default schema of a stream or a log (a user-given schema replaces it)."""
    _parse(options)
    return DEFAULT_SCHEMA


def batch_reader(options: Mapping[str, str], schema: StructType) -> DataSourceReader:
    return SeawayBatchReader(_parse(options), schema)


def stream_reader(options: Mapping[str, str], schema: StructType) -> DataSourceStreamReader:
    return SeawayStreamReader(_parse(options), schema)


def _parse(options: Mapping[str, str]) -> Options:
    opts = Options.parse(options, known=READ_OPTIONS)
    if opts.target_kind == "queue":
        raise InvalidArgumentError("this reader reads streams and logs")
    source_id = opts.get("sourceId")
    if source_id is not None and not 1 <= len(source_id) <= SOURCE_ID_CHARS_MAX:
        raise InvalidArgumentError(f"option sourceId is 1-{SOURCE_ID_CHARS_MAX} characters")
    if opts.get("startingOffsets") is not None and opts.get("startingTimestamp") is not None:
        raise InvalidArgumentError("give the option startingOffsets or startingTimestamp, not both")
    opts.get_int("startingTimestamp", None)
    opts.get_int("maxEventsPerTrigger", None, lo=1)
    opts.get_int("maxBytesPerTrigger", None, lo=1)
    opts.get_int("minPartitions", None, lo=1, hi=10_000)
    opts.get_bool("failOnDataLoss", True)
    return opts


class _Base:
    """What both readers share: the options, the schema, and (on the driver) a client."""

    def __init__(self, options: Options, schema: StructType) -> None:
        self.opts = options
        self.schema = schema
        self.fail_on_data_loss = options.get_bool("failOnDataLoss", True)
        self.partitions_min = options.get_int("minPartitions", None, lo=1) or os.cpu_count() or 2
        self._client: Any = None
        self._target: Target | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = state["_target"] = None  # the driver's connection stays on the driver
        return state

    @property
    def target(self) -> Target:
        if self._target is None:
            self._client = self.opts.connect()
            self._target = open_target(self._client, self.opts.target_kind, self.opts.target)
        return self._target

    def _starting(self) -> dict[int, int]:
        """Where reading starts: ``startingOffsets`` (earliest, latest or an offset's JSON) or
        ``startingTimestamp`` (epoch ms); earliest by default."""
        target = self.target
        timestamp = self.opts.get_int("startingTimestamp", None)
        if timestamp is not None:
            return target.at_time(timestamp)
        text = (self.opts.get("startingOffsets") or "earliest").strip()
        if text.lower() == "earliest":
            return target.head()
        if text.lower() == "latest":
            return target.tail()
        return target.from_offset(_json_offset("startingOffsets", text))[0]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if type(partition) is InputPartition:  # planning found nothing: Spark reads one default partition
            return
        assert isinstance(partition, Range | RangeGroup)
        schema = to_arrow_schema(self.schema, timezone="UTC")
        with self.opts.connect() as client:
            for r in partition.ranges if isinstance(partition, RangeGroup) else (partition,):
                yield from read_range(client, r, schema)


def _json_offset(option: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"option {option} is earliest, latest or an offset's JSON "
                                   f"({{\"stream\": ..., \"positions\": {{...}}}}), got {text!r:.200}")
    return value


class SeawayBatchReader(_Base, DataSourceReader):
    """``spark.read``: the events from the starting position to ``endingOffsets`` (latest: the
    tail when the read is planned). A transactional stream shows what one snapshot, taken when the
    read is planned, says was committed."""

    def partitions(self) -> Sequence[InputPartition]:
        target = self.target
        start = self._starting()
        text = (self.opts.get("endingOffsets") or "latest").strip()
        end = target.tail() if text.lower() == "latest" else \
            target.from_offset(_json_offset("endingOffsets", text))[0]
        return target.ranges(start, end, partitions_min=self.partitions_min,
                             fail_on_data_loss=self.fail_on_data_loss, snapshot=target.snapshot(), hide_open=True)


class SeawayStreamReader(_Base, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches between stream cuts (see the module docstring)."""

    def __init__(self, options: Options, schema: StructType) -> None:
        super().__init__(options, schema)
        if options.get("endingOffsets") is not None:
            raise InvalidArgumentError("option endingOffsets is for batch reads (spark.read)")
        self.source_id = options.get("sourceId")
        starting = (options.get("startingOffsets") or "").strip().lower()
        if starting == "latest" and self.source_id is None:
            raise InvalidArgumentError(
                "startingOffsets=latest needs the option sourceId (a name for this query's source, kept "
                "with its checkpoint): the position 'latest' resolves to is stored in Seaway under it, so "
                "that a restart before the first batch does not move it")
        self.events_max = options.get_int("maxEventsPerTrigger", None, lo=1)
        self.bytes_max = options.get_int("maxBytesPerTrigger", None, lo=1)
        self._available_now: dict[int, int] | None = None

    # --- offsets ---------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        """The starting position; with ``sourceId``, resolved once and kept in Seaway's metadata
        (Spark calls this more than once on a fresh start, and again on a restart before the
        first batch was planned), so that ``latest`` does not move."""
        target = self.target
        if self.source_id is None:
            return target.to_offset(self._starting())
        key = f"source/{self.source_id}/start".encode()
        meta = self._client.meta
        found = meta.get(META_NAMESPACE, key)
        if found is None:
            offset = target.to_offset(self._starting())
            with contextlib.suppress(ConditionFailedError):  # another call stored one first: it holds
                meta.batch().expect_absent(META_NAMESPACE, key).put(
                    META_NAMESPACE, key, json.dumps(offset).encode()).commit()
            found = meta.get(META_NAMESPACE, key)
        stored: dict[str, Any] = json.loads(found.value)
        if stored.get(target.kind) != target.name:
            raise InvalidArgumentError(
                f"sourceId {self.source_id!r} already names a source of {json.dumps(stored)[:200]}: give each "
                "query's source its own sourceId")
        return stored

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.events_max is not None:
            return ReadMaxRows(self.events_max)
        if self.bytes_max is not None:
            return ReadMaxBytes(self.bytes_max)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix what ``availableNow`` reads: up to the tail now (the stable positions, on a
        transactional stream), and no segment made after it."""
        self._available_now = self.target.tail()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        target = self.target
        positions, skipped = target.from_offset(start)
        events_max = bytes_max = None
        if isinstance(limit, ReadMaxRows):
            events_max, bytes_max = limit.max_rows, self.bytes_max
        elif isinstance(limit, ReadMaxBytes):
            events_max, bytes_max = self.events_max, limit.max_bytes
        ends, skipped = target.advance(positions, skipped, events_max=events_max, bytes_max=bytes_max,
                                       fail_on_data_loss=self.fail_on_data_loss, target=self._available_now)
        return target.to_offset(ends, skipped)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        target = self.target
        first, _ = target.from_offset(start)
        last, _ = target.from_offset(end)
        snapshot = target.snapshot()
        return target.ranges(first, last, partitions_min=self.partitions_min,
                             fail_on_data_loss=self.fail_on_data_loss, snapshot=snapshot)

    def commit(self, end: dict[str, Any]) -> None:
        """Record the committed offset under ``sourceId`` (for people and tools: see docs/spark.md).
        Replays do not depend on it: Spark's checkpoint holds the offsets."""
        if self.source_id is None:
            return
        self.target  # noqa: B018 - connect
        self._client.meta.batch().put(META_NAMESPACE, f"source/{self.source_id}/committed".encode(),
                                      json.dumps(end).encode()).commit()

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = self._target = None
