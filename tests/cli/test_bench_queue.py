"""``seaway bench queue`` at tiny sizes: the exactly-once check holds in every round and every figure
is there."""

from __future__ import annotations

import json
import os
import time

from seaway.bench._log import process_cpu_s
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
    # The CPU of every process of the round over the entries: at least the work of moving 6,000 1 KB
    # entries through a server and two groups (far above 1 us each), and its target beside it.
    assert 1.0 < figures["cpu_us_per_entry"] < 1e6
    assert figures["targets"]["cpu_us_per_entry"] == 20
    assert abs(figures["produced_ratio_to_log_remote"]
               - figures["produced_per_s"] / figures["log_remote_produced_per_s"]) < 0.01


def test_bench_queue_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "queue", "--transactions", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err  # a usage error


def test_process_cpu_s_counts_a_process_own_cpu() -> None:
    before = process_cpu_s(os.getpid())
    assert before is not None
    started = time.process_time()
    while time.process_time() - started < 0.3:  # burn CPU, measured by the process's own clock
        sum(range(1000))
    after = process_cpu_s(os.getpid())
    assert after is not None and after - before >= 0.2
    assert process_cpu_s(2**22 + 12345) is None  # beyond pid_max: no such process
