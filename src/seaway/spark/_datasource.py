"""The ``seaway`` data source: one name for every direction, dispatching on the options.

Each direction lives in a module of its own (reading streams and logs, reading queues, writing);
this class only chooses. Its methods run on Spark's driver, in Python worker processes; the
readers and writers it returns are pickled to the executors.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from seaway.errors import InvalidArgumentError
from seaway.spark import _queue_read, _stream_read, _write


class SeawayDataSource(DataSource):
    """``format("seaway")``: read or write Seaway streams, logs and queues."""

    @classmethod
    def name(cls) -> str:
        return "seaway"

    def _kind(self) -> str:
        kinds = [k for k in ("stream", "log", "queue") if self.options.get(k)]
        if len(kinds) != 1:
            raise InvalidArgumentError("give exactly one of the options stream, log and queue "
                                       f"(got {', '.join(kinds) or 'none'})")
        return kinds[0]

    def schema(self) -> Any:
        if self._kind() == "queue":
            return _queue_read.queue_schema(self.options)
        return _stream_read.stream_schema(self.options)

    def reader(self, schema: StructType) -> Any:
        if self._kind() == "queue":
            raise InvalidArgumentError("a queue is read as a stream (spark.readStream): each entry is "
                                       "acknowledged by the query's checkpoint")
        return _stream_read.batch_reader(self.options, schema)

    def streamReader(self, schema: StructType) -> Any:
        if self._kind() == "queue":
            return _queue_read.queue_stream_reader(self.options, schema)
        return _stream_read.stream_reader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        return _write.batch_writer(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        return _write.stream_writer(self.options, schema, overwrite)
