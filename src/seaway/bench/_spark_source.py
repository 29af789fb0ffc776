"""The reference of ``seaway bench spark``'s micro-batch latency: a Python stream source that holds
nothing, ``seaway-bench-paced``.

It makes ``rate`` rows a second of ``event_bytes`` (one ``payload binary`` column, Arrow batches as the
seaway source yields), in ``partitions`` Spark partitions, counted from its first ``latestOffset``:
what a micro-batch of a Python data source costs in Spark itself (the driver's Python process, the
offset log, the tasks, the Python workers), with no store behind it. It is imported only by the
bench (it needs pyspark) and lives in the package so that Spark's workers import it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

NAME = "seaway-bench-paced"
SCHEMA = "payload binary"
ROWS_PER_ARROW_BATCH = 8_192


@dataclass(frozen=True)
class Slice(InputPartition):
    """Rows ``first..until`` (``until`` excluded) of the paced sequence."""

    first: int
    until: int


class PacedSource(DataSource):
    """Options: ``rate`` (rows a second), ``eventBytes``, ``partitions``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PacedReader(float(self.options["rate"]), int(self.options["eventbytes"]),
                           int(self.options["partitions"]))


class PacedReader(DataSourceStreamReader):
    def __init__(self, rate: float, event_bytes: int, partitions: int) -> None:
        self.rate = rate
        self.event_bytes = event_bytes
        self.partitions_n = partitions
        self._t0: float | None = None
        """When the first ``latestOffset`` ran (driver only): rows are counted from there."""

    def initialOffset(self) -> dict[str, Any]:
        return {"n": 0}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        now = time.monotonic()
        if self._t0 is None:
            self._t0 = now
        return {"n": max(int(start["n"]), int((now - self._t0) * self.rate))}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, until = int(start["n"]), int(end["n"])
        step = max(1, -(-(until - first) // self.partitions_n))
        return [Slice(lo, min(lo + step, until)) for lo in range(first, until, step)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, Slice)
        payload = b"p" * self.event_bytes
        schema = pa.schema([pa.field("payload", pa.binary())])
        for lo in range(partition.first, partition.until, ROWS_PER_ARROW_BATCH):
            n = min(ROWS_PER_ARROW_BATCH, partition.until - lo)
            yield pa.RecordBatch.from_arrays([pa.array([payload] * n, pa.binary())], schema=schema)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # nothing is kept: rows are made from their numbers
