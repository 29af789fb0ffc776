"""The demo's results, read back from the streams the pipeline wrote."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import functions as F

from seaway.demo._pipeline import DEAD_LETTERS, PAGE_COUNTS, UNIQUE_USERS
from seaway.errors import InvalidArgumentError


@dataclass(frozen=True)
class Report:
    """Views per page, distinct users per window (window start in ms -> users), dead letters."""

    page_views: dict[str, int]
    unique_users: dict[int, int]
    window_s: int
    dead_letters: int

    @property
    def parsed(self) -> int:
        """Lines parsed into page views (every view is counted on exactly one page)."""
        return sum(self.page_views.values())

    def lines(self, generated_now: int, generated_total: int, top: int = 10) -> list[str]:
        """The report as text lines."""
        out = [f"events generated: {generated_now} in this run, {generated_total} in all runs",
               f"parsed: {self.parsed} page views; malformed (in {DEAD_LETTERS}): {self.dead_letters}",
               f"top pages of {len(self.page_views)} (views):"]
        ranked = sorted(self.page_views.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        width = max((len(page) for page, _ in ranked), default=0)
        out += [f"  {page:<{width}}  {views:>8}" for page, views in ranked]
        out.append(f"unique users per {self.window_s} s window ({len(self.unique_users)} windows, UTC):")
        windows = sorted(self.unique_users.items())
        if len(windows) > top:
            out.append(f"  ... {len(windows) - top} earlier windows")
            windows = windows[-top:]
        out += [f"  {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(start // 1000))}  {users:>8}"
                for start, users in windows]
        return out


def _results(spark: Any, address: str, stream: str, ddl: str) -> Any:
    raw = spark.read.format("seaway").option("address", address).option("stream", stream).load()
    return raw.select(F.from_json(F.col("payload").cast("string"), ddl).alias("r")).select("r.*")


def read_report(spark: Any, address: str, window_s: int) -> Report:
    """Read the result streams (one batch read each) and count what the sinks published: each row
    of a running total carries its batch's increment (``added``), and a key's count is their sum,
    so a batch published twice (or lost) shows as a wrong count. (The largest running total, the
    current one, would hide it.)"""
    pages = (_results(spark, address, PAGE_COUNTS, "page string, views long, added long")
             .groupBy("page").agg(F.sum("added").alias("views")).collect())
    windows = (_results(spark, address, UNIQUE_USERS, "window_start_ms long, window_s int, users long, added long")
               .where(F.col("window_s") == window_s)
               .groupBy("window_start_ms").agg(F.sum("added").alias("users")).collect())
    dead = spark.read.format("seaway").option("address", address).option("stream", DEAD_LETTERS).load().count()
    return Report(page_views=counted(pages, "page", "views"),
                  unique_users={int(k): v for k, v in counted(windows, "window_start_ms", "users").items()},
                  window_s=window_s, dead_letters=int(dead))


def counted(rows: Iterable[Any], key: str, total: str) -> dict[Any, int]:
    """Each key's summed increments; a key whose rows carry none was written by an older demo
    (which published running totals without their increments): a clear error, not a wrong count."""
    out: dict[Any, int] = {}
    for row in rows:
        value = getattr(row, total)
        if value is None:
            raise InvalidArgumentError(
                f"the demo's results hold rows an older seaway demo wrote (no increment for {key} "
                f"{getattr(row, key)!r}): run the demo over a new --data-dir (or remove this one)")
        out[getattr(row, key)] = int(value)
    return out
