"""The demo's four Spark queries, on the seaway data source, and how to run and drain them.

The flow is CDAP's access-log example::

    demo/access --parse--------> queue demo.pageviews --group page-counts (HASH page, 3)--> demo/page-counts
               \\--dead-letters-> demo/dead-letters     \\-group unique-users (HASH user, 2)--> demo/unique-users

Every query writes through the exactly-once sink and keeps its offsets and state in a checkpoint
under ``checkpoint_dir``: stopped and started again (the same checkpoints, the same server), the
pipeline goes on where it stopped and counts nothing twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException

from seaway.demo._transforms import (
    dead_letters,
    decode_pageviews,
    lines_of,
    page_counts,
    pageviews,
    parse,
    unique_users,
)
from seaway.errors import InvalidArgumentError, TimedOutError

SCOPE = "demo"
ACCESS = "demo/access"
DEAD_LETTERS = "demo/dead-letters"
PAGE_COUNTS = "demo/page-counts"
UNIQUE_USERS = "demo/unique-users"
PAGEVIEWS = "demo.pageviews"
GROUPS = (("unique-users", 2, "user"), ("page-counts", 3, "page"))
"""The queue's consumer groups (name, size, HASH key), as in CDAP's picture."""
log = logging.getLogger("seaway.demo")

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
    start_timeout_s: float = 120.0
    restarts_max: int = 3

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
        self.restarts = 0

    @property
    def spark(self) -> Any:
        return self._spark

    # --- the queries -------------------------------------------------------------------------------

    def _read(self, **options: str) -> Any:
        reader = self._spark.readStream.format("seaway").option("address", self._config.address)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    def _frame(self, name: str) -> tuple[Any, str, str]:
        """The query's DataFrame and its target's kind and name (every query appends)."""
        if name in ("parse", "dead-letters"):
            parsed = parse(lines_of(self._read(stream=ACCESS, startingOffsets="earliest")))
            if name == "parse":
                return pageviews(parsed), "queue", PAGEVIEWS
            return dead_letters(parsed), "stream", DEAD_LETTERS
        views = decode_pageviews(self._read(queue=PAGEVIEWS, group=name))
        if name == "page-counts":
            return page_counts(views), "stream", PAGE_COUNTS
        return unique_users(views, self._config.window_s), "stream", UNIQUE_USERS

    def _start(self, name: str, available_now: bool) -> Any:
        frame, kind, target = self._frame(name)
        # No queryName: Spark hands it to the sink as an option, which the seaway sink refuses as unknown.
        writer = (frame.writeStream.format("seaway").outputMode("append")
                  .option("address", self._config.address).option(kind, target)
                  .option("sinkId", f"{self._config.sink_prefix}-{name}")
                  .option("checkpointLocation", str(self._config.checkpoint_dir / name)))
        if available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{int(self._config.trigger_s * 1000)} milliseconds")
        query = writer.start()
        self._running[name] = query
        self._await_started(query, name)
        return query

    def _await_started(self, query: Any, name: str) -> None:
        """Wait (bounded) until the query has initialized its source. Spark gives each Python
        source and sink helper process 10 s to connect back, a limit it does not let us change;
        starting the queries one at a time keeps several interpreters from starting at once."""
        deadline = time.monotonic() + self._config.start_timeout_s
        while query.isActive and query.status["message"] == "Initializing sources":
            if time.monotonic() > deadline:
                raise TimedOutError(f"query {name} did not start within {self._config.start_timeout_s} s")
            time.sleep(0.05)

    # --- running -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every query on a processing-time trigger (each ``trigger_s``), one after another."""
        for name in QUERIES:
            if name not in self._running:
                self._start(name, available_now=False)

    def poll(self) -> dict[str, QueryStats]:
        """Update :attr:`stats` from the running queries' recent progress. A query that failed is
        started again from its checkpoint (safe: the source replays and the sink publishes each
        batch once), up to ``restarts_max`` times in all; then its failure is raised."""
        for name, query in list(self._running.items()):
            self.stats[name].add(query.recentProgress)
            failure = query.exception()
            if failure is not None:
                self._restart_or_raise(name, failure)
                self._start(name, available_now=False)
        return self.stats

    def _restart_or_raise(self, name: str, failure: BaseException) -> None:
        del self._running[name]
        if self.restarts >= self._config.restarts_max:
            raise failure
        self.restarts += 1
        log.warning("query %s failed; starting it again from its checkpoint: %s", name, str(failure)[:500])

    def drain(self) -> None:
        """Process everything written so far, then stop: the running queries are waited on until
        they have processed all that is available (stage by stage: the consumers after the
        parser); the others are run with an ``availableNow`` trigger, to the same end.

        Raises :class:`TimedOutError` after ``drain_timeout_s`` for a stage (the queries are then
        stopped), or a query's failure (after ``restarts_max`` restarts)."""
        try:
            for stage in STAGES:
                deadline = time.monotonic() + self._config.drain_timeout_s
                waits = []
                for name in stage:
                    if name in self._running:
                        waits.append((name, self._running[name].processAllAvailable))
                    else:
                        waits.append((name, self._start(name, available_now=True).awaitTermination))
                for name, wait in waits:
                    self._drain_one(name, wait, deadline)
            self.poll()
        finally:
            self.stop()

    def _drain_one(self, name: str, wait: Callable[[], object], deadline: float) -> None:
        while True:
            try:
                self._wait(wait, name, deadline)
                return
            except StreamingQueryException as failure:
                self.stats[name].add(self._running[name].recentProgress)
                self._restart_or_raise(name, failure)
                wait = self._start(name, available_now=True).awaitTermination

    def _wait(self, call: Callable[[], object], name: str, deadline: float) -> None:
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
        waiter.join(max(0.0, deadline - time.monotonic()))
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
