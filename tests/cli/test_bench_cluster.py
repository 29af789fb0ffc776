"""``seaway bench cluster`` at a tiny size: every figure is there, against its reference from the same run,
and the kills lose no acknowledged record."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import Cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster-processes")]


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def test_bench_cluster_reports_the_cluster_against_one_server_and_the_failover(cli: Cli) -> None:
    ran = cli("bench", "cluster", "--clients", "2", "--seconds", "0.5", "--kills", "2", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    for name in ("append_per_s_cluster", "append_per_s_single", "read_per_s_cluster", "read_per_s_single",
                 "failover_p50_s", "failover_max_s", "append_ratio"):
        assert _positive(figures[name]), (name, figures)
    assert figures["kills"] == 2 and len(figures["failover_s"]) == 2
    assert figures["failover_max_s"] >= figures["failover_p50_s"]
    assert figures["acked_lost"] == 0 and figures["acked"] >= 42  # 20 before each kill, one after at least
    assert figures["failover_p50_target_s"] == 1.0 and figures["failover_max_target_s"] == 3.0


def test_bench_cluster_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "cluster", "--kills", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err
