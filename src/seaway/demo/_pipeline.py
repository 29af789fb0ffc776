"""The demo's four Spark queries, on the seaway data source, and how to run and drain them.

The flow is CDAP's access-log example::

    demo/access --parse--------> queue demo.pageviews --group page-counts (HASH page, 3)--> demo/page-counts
               \\--dead-letters-> demo/dead-letters     \\-group unique-users (HASH user, 2)--> demo/unique-users

Every query writes through the exactly-once sink and keeps its offsets and state in a checkpoint
under ``checkpoint_dir``: stopped and started again (the same checkpoints, the same server), the
pipeline goes on where it stopped and counts nothing twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seaway._errors import InvalidArgumentError, TimedOutError
from seaway.demo._transforms import (
    dead_letters,
    decode_pageviews,
    lines_of,
    page_counts,
    pageviews,
    parse,
    unique_users,
)

SCOPE = "demo"
ACCESS = "demo/access"
DEAD_LETTERS = "demo/dead-letters"
PAGE_COUNTS = "demo/page-counts"
UNIQUE_USERS = "demo/unique-users"
PAGEVIEWS = "demo.pageviews"
GROUPS = (("unique-users", 2, "user"), ("page-counts", 3, "page"))
"""The queue's consumer groups (name, size, HASH key), as in CDAP's picture."""
ACCESS_SEGMENTS = 2
QUERIES = ("parse", "dead-letters", "page-counts", "unique-users")
STAGES = (("parse", "dead-letters"), ("page-counts", "unique-users"))
"""Drain order: the consumers read what the parser wrote, so they drain after it."""


@dataclass(frozen=True)
class PipelineConfig:
    """Where the server is, where the checkpoints go, and how the queries run.

    ``sink_prefix`` names the sink's (sink id, batch id) markers: it must be unique to these
    checkpoints (a fresh checkpoint counts its batches from 0 again, and a reused sink id would
    take them for batches already written). ``window_s`` is fixed for the checkpoints' life.
    """

    address: str
    checkpoint_dir: Path
    sink_prefix: str = "demo"
    window_s: int = 10
    trigger_s: float = 1.0
    drain_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not 1 <= self.window_s <= 86_400:
            raise InvalidArgumentError(f"window_s must be in [1, 86400], got {self.window_s}")
        if not 0.05 <= self.trigger_s <= 60 or not self.drain_timeout_s > 0:
            raise InvalidArgumentError("trigger_s must be in [0.05, 60] and drain_timeout_s positive")


def prepare(sw: Any) -> None:
    """Create what the pipeline reads and writes, if it is not there (``sw``: a store or a client).

    The sink writes its results in transactions, so the streams it writes are transactional; the
    generator's stream is plain, with two segments (two input partitions for the parser)."""
    sw.streams.create_scope(SCOPE, exist_ok=True)
    sw.streams.get_or_create(ACCESS, segments=ACCESS_SEGMENTS)
    for name in (DEAD_LETTERS, PAGE_COUNTS, UNIQUE_USERS):
        sw.streams.get_or_create(name, transactional=True)
    sw.queues.create(PAGEVIEWS, exist_ok=True)
    present = set(sw.queues.groups(PAGEVIEWS))
    for group, size, key in GROUPS:
        if group not in present:
            sw.queues.create_group(PAGEVIEWS, group, size=size, strategy="HASH", key=key)


@dataclass
class QueryStats:
    """What a query did so far, summed over the progress reports seen (each batch once)."""

    batches: int = 0
    input_rows: int = 0
    _seen: set[tuple[str, int]] = field(default_factory=set)

    def add(self, progress: Sequence[Any]) -> None:
        for report in progress:
            key = (str(report.runId), int(report.batchId))
            if key not in self._seen:
                self._seen.add(key)
                self.batches += 1
                self.input_rows += int(report.numInputRows)


class Pipeline:
    """The four queries over one Spark session. Not thread-safe: drive it from one thread."""

    def __init__(self, spark: Any, config: PipelineConfig) -> None:
        self._spark = spark
        self._config = config
        self._running: dict[str, Any] = {}
        self.stats = {name: QueryStats() for name in QUERIES}

    @property
    def spark(self) -> Any:
        return self._spark

    # --- the queries -------------------------------------------------------------------------------

    def _read(self, **options: str) -> Any:
        reader = self._spark.readStream.format("seaway").option("address", self._config.address)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    def _frame(self, name: str) -> tuple[Any, str, str, str]:
        """The query's DataFrame, its target kind and name, and its output mode."""
        if name in ("parse", "dead-letters"):
            parsed = parse(lines_of(self._read(stream=ACCESS, startingOffsets="earliest")))
            if name == "parse":
                return pageviews(parsed), "queue", PAGEVIEWS, "append"
            return dead_letters(parsed), "stream", DEAD_LETTERS, "append"
        views = decode_pageviews(self._read(queue=PAGEVIEWS, group=name))
        if name == "page-counts":
            return page_counts(views), "stream", PAGE_COUNTS, "update"
        return unique_users(views, self._config.window_s), "stream", UNIQUE_USERS, "update"

    def _start(self, name: str, available_now: bool) -> Any:
        frame, kind, target, mode = self._frame(name)
        writer = (frame.writeStream.format("seaway").queryName(name).outputMode(mode)
                  .option("address", self._config.address).option(kind, target)
                  .option("sinkId", f"{self._config.sink_prefix}-{name}")
                  .option("checkpointLocation", str(self._config.checkpoint_dir / name)))
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{int(self._config.trigger_s * 1000)} milliseconds")
        query = writer.start()
        self._running[name] = query
        return query

    # --- running -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every query on a processing-time trigger (each ``trigger_s``)."""
        for name in QUERIES:
            if name not in self._running:
                self._start(name, available_now=False)

    def poll(self) -> dict[str, QueryStats]:
        """Update :attr:`stats` from the running queries' recent progress; raise a query's failure."""
        for name, query in self._running.items():
            failure = query.exception()
            if failure is not None:
                raise failure
            self.stats[name].add(query.recentProgress)
        return self.stats

    def drain(self) -> None:
        """Process everything written so far, then stop: the running queries are waited on until
        they have processed all that is available (stage by stage: the consumers after the
        parser); with none running, each stage is run once with an ``availableNow`` trigger.

        Raises :class:`TimedOutError` after ``drain_timeout_s`` (the queries are then stopped), or a
        query's failure."""
        try:
            for stage in STAGES:
                started = []
                for name in stage:
                    if name in self._running:
                        self._wait(self._running[name].processAllAvailable, name)
                    else:
                        self._start(name, available_now=True)
                        started.append(name)
                for name in started:
                    self._wait(self._running[name].awaitTermination, name)
            self.poll()
        finally:
            self.stop()

    def _wait(self, call: Callable[[], object], name: str) -> None:
        """``call`` in a thread, waited on within the drain's time limit (Spark's waits on a query
        that never finishes would not return)."""
        errors: list[BaseException] = []

        def run() -> None:
            try:
                call()
            except BaseException as exc:  # handed to the caller's thread
                errors.append(exc)

        waiter = threading.Thread(target=run, name=f"drain-{name}", daemon=True)
        waiter.start()
        waiter.join(self._config.drain_timeout_s)
        if waiter.is_alive():
            self.stop()
            raise TimedOutError(f"query {name} did not drain within {self._config.drain_timeout_s} s")
        if errors:
            raise errors[0]

    def stop(self) -> None:
        """Stop every query (a batch in progress is replayed from its checkpoint next time)."""
        for name, query in list(self._running.items()):
            self.stats[name].add(query.recentProgress)
            query.stop()
        self._running.clear()
