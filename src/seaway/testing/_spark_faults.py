"""Test-only faults for the Spark sink, outside the production code: a data source named
``seaway_faults`` that is ``seaway`` with its stream writer wrapped, for a Spark driver started by a
test harness (``seaway.testing._spark_child``) to register and use.

The fault is set in the environment (``FAULT_ENV``, before the JVM starts, so that Spark's Python
workers inherit it): ``<point>:<batch id>:<process group>``. It SIGKILLs that process group (the
driver's Python, its JVM and their workers) and the process it runs in, at:

- ``write``: a task of the batch, right after it staged its rows;
- ``commit``: the driver, right after the sink's commit of the batch returned (published, and not
  yet recorded by Spark);
- ``in-commit``: the driver, at a random moment from the start of the sink's commit of the batch
  on (before, during or just after its atomic step).
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from seaway.spark import SeawayDataSource

FAULT_ENV = "SEAWAY_TEST_SPARK_FAULT"
IN_COMMIT_WINDOW_S = 0.15
"""The random moment of an ``in-commit`` fault falls this long at most after the commit starts."""


def fault_value(point: str, batch_id: int, process_group: int) -> str:
    return f"{point}:{batch_id}:{process_group}"


def _armed(point: str, batch_id: object) -> int | None:
    """The process group to kill if the fault names this point of this batch."""
    where, _, group = os.environ.get(FAULT_ENV, "").rpartition(":")
    return int(group) if where == f"{point}:{batch_id}" else None


def _kill(group: int) -> None:
    os.killpg(group, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)  # a worker may run in a process group of its own


class _FaultyStreamWriter(DataSourceStreamArrowWriter):
    """The seaway stream writer, with the faults around its calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        message: WriterCommitMessage = self.inner.write(iterator)
        context = TaskContext.get()
        # Spark sets this local property on streaming tasks (not a documented API: a test's only).
        batch_id = None if context is None else context.getLocalProperty("streaming.sql.batchId")
        if (group := _armed("write", batch_id)) is not None:
            _kill(group)
        return message

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        if (group := _armed("in-commit", batchId)) is not None:
            timer = threading.Timer(random.uniform(0.0, IN_COMMIT_WINDOW_S), _kill, (group,))
            timer.daemon = True
            timer.start()
        self.inner.commit(messages, batchId)
        if (group := _armed("commit", batchId)) is not None:
            _kill(group)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.abort(messages, batchId)


class FaultySeawayDataSource(SeawayDataSource):
    """``format("seaway_faults")``: ``seaway``, its stream writer under the fault of ``FAULT_ENV``."""

    @classmethod
    def name(cls) -> str:
        return "seaway_faults"

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        return _FaultyStreamWriter(super().streamWriter(schema, overwrite))


__all__ = ["FAULT_ENV", "FaultySeawayDataSource", "fault_value"]
