"""The access-log demo: its Spark transformations on static DataFrames, and the pipeline end to end."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.demo import Expected, Generated, GeneratorConfig, expected, generate
from seaway.demo._pipeline import PAGE_COUNTS, prepare
from seaway.demo._report import counted, read_report
from seaway.demo._transforms import dead_letters, decode_pageviews, pageviews, parse
from seaway.demo.run import DemoConfig, QueryStats, Report, run_demo
from seaway.server import ServerProcess


def _lines(spark: Any, lines: list[str]) -> Any:
    return spark.createDataFrame([(line,) for line in lines], "line string")


def test_parse_recovers_every_field_and_sends_every_malformed_line_to_dead_letters(spark: Any) -> None:
    items = list(islice(generate(GeneratorConfig(seed=4, malformed_fraction=0.2, rate_per_s=20)), 300))
    parsed = parse(_lines(spark, [g.line for g in items]))
    rows = pageviews(parsed).collect()
    want = [g.event for g in items if g.event is not None]
    assert len(rows) == len(want)
    assert sorted((r.ip, r.user, r.time_ms, r.method, r.page, r.status, r.bytes, r.agent) for r in rows) == sorted(
        (e.ip, e.user, e.time_ms, e.method, e.page, e.status, e.bytes, e.agent) for e in want)
    dead = sorted(r.payload for r in dead_letters(parsed).collect())
    assert dead == sorted(g.line for g in items if g.event is None)
    assert any("/Foo/" in line for line in dead)  # a line of the right shape whose time is not a time


def test_parse_reads_a_dash_for_no_bytes_and_refuses_the_edges(spark: Any) -> None:
    ok = '1.2.3.4 - u1 [01/Feb/2024:00:00:09 +0000] "GET /a HTTP/1.0" 304 - "-" "x"'
    bad = ["", ok[:-1], ok + " trailing", ok.replace("304", "30"), ok.replace("GET", "get"),
           ok.replace(":09 ", ":61 ")]
    rows = parse(_lines(spark, [ok, *bad])).collect()
    assert [r.valid for r in rows] == [True] + [False] * len(bad)
    assert (rows[0].bytes, rows[0].status, rows[0].time_ms) == (0, 304, 1_706_745_609_000)


def test_pageviews_come_back_whole_from_their_json_queue_entries(spark: Any) -> None:
    items = list(islice(generate(GeneratorConfig(seed=9, rate_per_s=25, malformed_fraction=0.0)), 50))
    views = pageviews(parse(_lines(spark, [g.line for g in items]))).collect()
    # Through the queue, as the pipeline does: each row as a JSON object, decoded by the consumers.
    entries = spark.createDataFrame([(json.dumps(r.asDict()).encode(),) for r in views], "payload binary")
    assert decode_pageviews(entries).collect() == views


T0_MS = 1_700_000_000_000


def test_the_report_counts_what_the_sinks_published_so_a_batch_published_twice_shows(
        spark: Any, server: ServerProcess) -> None:
    # Finding 42: the report took each key's largest running total, which a batch published twice
    # leaves right. It adds up each published row's increment instead.
    with seaway.connect(server.url) as sw:
        prepare(sw)
    rows = [("a", "a", 2, 2), ("b", "b", 1, 1), ("a", "a", 5, 3),
            ("a", "a", 5, 3)]  # the batch that took a from 2 to 5, published twice
    frame = spark.createDataFrame(rows, "routing_key string, page string, views long, added long")
    frame.write.format("seaway").mode("append").option("address", server.url).option("stream", PAGE_COUNTS).save()
    assert read_report(spark, server.url, window_s=2).page_views == {"a": 8, "b": 1}


def test_the_pipeline_run_twice_counts_every_line_exactly_once(spark: Any, server: ServerProcess,
                                                                tmp_path: Path) -> None:
    # Few users and short windows, and a second run whose lines fall partly in the first run's last
    # window: the unique users there are right only if the first run's state carried over and no
    # line was counted twice.
    first = DemoConfig(data_dir=tmp_path / "demo", address=server.url, events_max=300, rate_per_s=100,
                       start_ms=T0_MS, window_s=2, users=40, malformed_fraction=0.05, trigger_s=0.5)
    phases: list[str] = []
    one = run_demo(first, lambda: spark, lambda status: phases.append(status.phase))
    lines_one = list(islice(generate(first.generator(T0_MS)), 300))
    _check(one.report, expected(lines_one, window_s=2))
    assert (one.generated_now, one.generated_total, one.runs) == (300, 300, 1)
    _check_reads(one.queries, lines_one)
    assert list(dict.fromkeys(phases)) == ["generating", "draining", "reporting"]

    second = replace(first, events_max=200, start_ms=T0_MS + 3000, live=False)
    two = run_demo(second, lambda: spark)
    lines_two = list(islice(generate(second.generator(T0_MS + 3000), first=300), 200))
    want = expected(lines_one + lines_two, window_s=2)
    assert T0_MS + 2000 in want.unique_users and want.unique_users[T0_MS + 2000] > 0
    _check(two.report, want)
    assert (two.generated_now, two.generated_total, two.runs) == (200, 500, 2)
    _check_reads(two.queries, lines_two)  # only this run's lines: the checkpoints resumed


def _check(report: Report, want: Expected) -> None:
    assert report.page_views == want.page_views
    assert report.unique_users == want.unique_users
    assert report.dead_letters == want.malformed
    assert report.parsed + report.dead_letters == want.lines


def _check_reads(queries: dict[str, QueryStats], lines: list[Generated]) -> None:
    valid = sum(1 for g in lines if g.event is not None)
    assert {name: stats.input_rows for name, stats in queries.items()} == {
        "parse": len(lines), "dead-letters": len(lines), "page-counts": valid, "unique-users": valid}


def test_results_an_older_demo_wrote_without_increments_give_a_clear_error_not_a_crash() -> None:
    class Row:
        def __init__(self, page: str, views: int | None) -> None:
            self.page, self.views = page, views

    assert counted([Row("a", 8), Row("b", 1)], "page", "views") == {"a": 8, "b": 1}
    with pytest.raises(seaway.InvalidArgumentError, match="older seaway demo"):
        counted([Row("a", 8), Row("b", None)], "page", "views")
