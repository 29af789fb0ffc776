"""The demo's Spark transformations: parse access log lines, count views per page, count unique users
per window. Plain DataFrame -> DataFrame functions; parsing works on static DataFrames too, the
counts keep running totals in a streaming query's state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

LINE_PATTERN = (r'^(\S+) \S+ (\S+) \[([^\]]+)\] "([A-Z]+) (\S+) HTTP/[0-9.]+" ([0-9]{3}) ([0-9]{1,18}|-) '
                r'"[^"]*" "([^"]*)"$')
"""A combined log format line: ip, ident (ignored), user, [time], "method page protocol", status,
bytes, "referrer" (ignored), "agent". Anchored at both ends: a line cut short does not match."""

TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"
"""The log format's time, in Spark's datetime pattern (month names in English, as Spark reads them)."""

PAGEVIEW_DDL = ("ip string, user string, time_ms long, method string, page string, status int, bytes long, "
                "agent string")
"""A parsed line: the rows the parser enqueues (as JSON) and the consumers decode. ``user`` and
``page`` are also the queue's HASH keys."""

_GROUPS = {"ip": 1, "user": 2, "time": 3, "method": 4, "page": 5, "status": 6, "bytes": 7, "agent": 8}


def lines_of(events: DataFrame) -> DataFrame:
    """The ``line`` (string) of each event read from a stream (its ``payload``, UTF-8)."""
    return events.select(F.col("payload").cast("string").alias("line"))


def parse(lines: DataFrame) -> DataFrame:
    """``lines`` (a string column ``line``) with the fields of :data:`PAGEVIEW_DDL` added and a
    boolean ``valid``: the line matched the format and its time is a real time. Fields of an
    invalid line are null or meaningless; use :func:`pageviews` and :func:`dead_letters`."""
    line = F.col("line")

    def field(name: str) -> Any:
        return F.regexp_extract(line, LINE_PATTERN, _GROUPS[name])

    time = F.try_to_timestamp(field("time"), F.lit(TIME_FORMAT))
    size = F.when(field("bytes") == "-", F.lit("0")).otherwise(field("bytes"))
    return lines.select(
        line,
        field("ip").alias("ip"),
        field("user").alias("user"),
        F.unix_millis(time).alias("time_ms"),
        field("method").alias("method"),
        field("page").alias("page"),
        field("status").try_cast("int").alias("status"),
        size.try_cast("long").alias("bytes"),
        field("agent").alias("agent"),
    ).withColumn("valid", F.coalesce(line.rlike(LINE_PATTERN) & F.col("time_ms").isNotNull(), F.lit(False)))


def pageviews(parsed: DataFrame) -> DataFrame:
    """The valid rows of :func:`parse`, in :data:`PAGEVIEW_DDL`'s columns."""
    return parsed.where("valid").select("ip", "user", "time_ms", "method", "page", "status", "bytes", "agent")


def dead_letters(parsed: DataFrame) -> DataFrame:
    """The invalid lines of :func:`parse`, as ``payload`` (the line as it came)."""
    return parsed.where("not valid").select(F.col("line").alias("payload"))


def decode_pageviews(entries: DataFrame) -> DataFrame:
    """Pageview rows back from queue entries whose ``payload`` is a JSON object of them."""
    return (entries.select(F.from_json(F.col("payload").cast("string"), PAGEVIEW_DDL).alias("v"))
            .select("v.*"))


def _running_count(key: tuple[Any, ...], frames: Iterator[Any], state: GroupState) -> Iterator[Any]:
    """The group's count so far: the state's, plus this batch's rows (one output row per group, with
    the batch's own part: what the report adds up)."""
    before = int(state.get[0]) if state.exists else 0
    total = before
    for frame in frames:
        total += len(frame)
    state.update((total,))
    yield pd.DataFrame({"key": [key[0]], "count": [total], "added": [total - before]})


def running_counts(rows: DataFrame, key: str, key_type: str) -> DataFrame:
    """Rows per value of ``key`` so far, as ``key``, ``count`` and ``added`` (this batch's rows of
    the key; streaming only): each batch gives the keys it saw with their new totals, which is what
    Spark's update output mode would give. The seaway sink takes append mode only (a stream is
    append-only), and Spark allows a plain aggregation no other mode without a watermark, so the
    totals are kept in the query's state by hand, in append mode."""
    return rows.groupBy(key).applyInPandasWithState(
        _running_count, f"key {key_type}, count long, added long", "count long", "append",
        GroupStateTimeout.NoTimeout)


def page_counts(views: DataFrame) -> DataFrame:
    """Views per page so far (streaming): ``routing_key`` (the page), ``page``, ``views``, ``added``
    (the batch's views of the page); each batch gives the pages it changed with their running totals."""
    counts = running_counts(views.select("page"), "page", "string")
    return counts.select(F.col("key").alias("routing_key"), F.col("key").alias("page"), F.col("count").alias("views"),
                         "added")


def unique_users(views: DataFrame, window_s: int) -> DataFrame:
    """Exact distinct users per tumbling window of the lines' own time, windows aligned on the epoch
    (streaming): ``routing_key`` (the window start, as text), ``window_start_ms``, ``window_s``,
    ``users``, ``added`` (the batch's new users of the window); each batch gives the windows it
    changed with their running totals.

    Spark streams have no distinct count, so this drops repeated (window, user) pairs first and
    counts what is left; both steps keep state in the query's checkpoint (no watermark: the demo's
    windows are few, and a late line still counts)."""
    window_ms = window_s * 1000
    start = F.col("time_ms") - F.pmod(F.col("time_ms"), F.lit(window_ms))
    firsts = views.select(start.alias("window_start_ms"), "user").dropDuplicates(["window_start_ms", "user"])
    counts = running_counts(firsts.select("window_start_ms"), "window_start_ms", "long")
    return counts.select(F.col("key").cast("string").alias("routing_key"), F.col("key").alias("window_start_ms"),
                         F.lit(window_s).alias("window_s"), F.col("count").alias("users"), "added")
