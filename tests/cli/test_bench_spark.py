"""``seaway bench spark`` at tiny sizes: every figure is there and sane (it starts a Spark session)."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import Cli

pytestmark = pytest.mark.timeout(240)


def test_bench_spark_reports_source_sink_parquet_and_microbatch_figures(cli: Cli) -> None:
    ran = cli("bench", "spark", "--events", "2000", "--rounds", "1", "--paced-events-per-s", "50",
              "--paced-s", "2", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    for name in ("source_per_s", "parquet_source_per_s", "microbatch_p50_ms", "microbatch_p99_ms", "write_per_s",
                 "source_to_sink_per_s", "parquet_source_to_sink_per_s", "microbatch_reference_p50_ms",
                 "microbatch_rate_source_p50_ms"):
        assert isinstance(figures[name], int | float) and figures[name] > 0, (name, figures[name])
    assert figures["microbatches"] >= 1 and figures["microbatch_p50_ms"] <= figures["microbatch_p99_ms"]
    assert abs(figures["source_ratio_to_parquet"] - figures["source_per_s"] / figures["parquet_source_per_s"]) < 0.01
    assert abs(figures["source_to_sink_ratio"]
               - figures["source_to_sink_per_s"] / figures["parquet_source_to_sink_per_s"]) < 0.01
    assert figures["targets"]["source_to_sink_ratio"] == 0.5
    assert figures["source_to_sink_warm_up_s"] > 0 and figures["parquet_source_to_sink_warm_up_s"] > 0
    # Where a micro-batch's time goes, as Spark reports it: the planning and the batch itself.
    assert {"latestOffset", "addBatch", "walCommit", "commitOffsets"} <= set(figures["microbatch_parts_p50_ms"])
    assert figures["microbatch_parts_p50_ms"]["addBatch"] <= figures["microbatch_p99_ms"]
    assert figures["events"] == 2000


def test_bench_spark_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "spark", "--events", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err  # a usage error
