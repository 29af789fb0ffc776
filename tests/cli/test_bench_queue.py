"""``seaway bench queue`` at tiny sizes: the exactly-once check holds in every round and every figure
is there."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def test_bench_queue_reports_throughput_latency_and_exactly_once(cli: Cli) -> None:
    ran = cli("bench", "queue", "--transactions", "4", "--paced-events-per-s", "4000", "--paced-s", "0.5",
              "--reference-batches", "2", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    assert figures["exactly_once"] is True and figures["key_order"] is True
    assert figures["paced_exactly_once"] is True and figures["embedded_exactly_once"] is True
    assert figures["produced"] == 3 * 4 * 500
    for group in ("users", "pages"):
        assert figures["groups_remote"][group]["consumed"] == figures["produced"]
    for name in ("produced_per_s", "consumed_per_s_min_group", "paced_latency_p50_ms", "log_remote_produced_per_s",
                 "embedded_produced_per_s"):
        assert isinstance(figures[name], int | float) and figures[name] > 0, (name, figures[name])
    assert abs(figures["produced_ratio_to_log_remote"]
               - figures["produced_per_s"] / figures["log_remote_produced_per_s"]) < 0.01


def test_bench_queue_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "queue", "--transactions", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err  # a usage error
