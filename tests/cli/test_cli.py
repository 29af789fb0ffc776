"""The ``seaway`` command, run as a user runs it: a real subprocess."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from seaway.cli._bench_log import cpu_jiffies, steal_pct
from seaway.cli._bench_remote import consume, pack_latencies, produce, unpack_latencies
from seaway.cli._demo import run_demo
from seaway.cli._progress import Progress
from seaway.log import RecordRun


def seaway_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys, seaway.cli; sys.exit(seaway.cli.main())", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_demo_runs_twice_on_the_same_directory(tmp_path: Path) -> None:
    lines: list[str] = []
    first = run_demo(tmp_path, lines.append)
    second = run_demo(tmp_path, lines.append)
    assert first == second == {"records": 220, "gaps": 1}  # everything before this run's first record is trimmed
    assert any("reopened log" in line for line in lines)
    assert any(line.strip().startswith("gap TRIM") for line in lines)


@pytest.mark.slow
def test_bench_log_json_reports_figures_and_ratios() -> None:
    result = seaway_cmd("bench", "log", "--batches", "4", "--rounds", "2", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in ("append_per_s", "read_per_s", "raw_append_per_s", "raw_read_per_s", "append_ratio", "read_ratio"):
        assert figures[key] > 0, key
    assert figures["records"] == 4 * 500
    assert figures["append_ratio"] == pytest.approx(figures["append_per_s"] / figures["raw_append_per_s"], rel=0.01)
    assert figures["machine"]["cpus"] >= 1


def test_bad_arguments_exit_non_zero_with_one_line() -> None:
    result = seaway_cmd("bench", "log", "--batches", "0")
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "--batches" in result.stderr


@pytest.mark.slow
def test_bench_log_remote_reports_both_sides() -> None:
    result = subprocess.run([sys.executable, "-m", "seaway.cli", "bench", "log", "--remote", "--batches", "2",
                             "--paced-events-per-s", "3000", "--json"],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in ("produced_per_s", "consumed_per_s", "latency_p50_ms", "latency_p99_ms", "paced_latency_p50_ms",
                "embedded_produced_per_s", "embedded_consumed_per_s"):
        assert figures[key] > 0, key
    assert figures["latency_p50_ms"] <= figures["latency_p99_ms"]
    assert "started for this run" in figures["server"]
    for key in ("steal_pct", "paced_steal_pct", "embedded_steal_pct"):  # Linux: /proc/stat is there
        assert 0 <= figures[key] <= 100, key


def test_steal_is_the_stolen_share_of_the_time_between_samples() -> None:
    assert steal_pct((10, 1000), (30, 2000)) == 2.0
    assert steal_pct((10, 1000), (10, 1000)) is None and steal_pct(None, (1, 2)) is None
    sample = cpu_jiffies()
    assert sample is not None and 0 <= sample[0] <= sample[1]


def test_a_consumer_takes_each_records_latency_from_its_own_stamp() -> None:
    now = time.time_ns()
    stamps = [now - 5_000_000] * 3 + [now - 1_000_000, now - 9_000_000]  # two batches' stamps, one odd record
    runs = [RecordRun(1, 1, 0, tuple(struct.pack(">Q", s) + b"pad" for s in stamps[:3])),
            RecordRun(1, 4, 0, tuple(struct.pack(">Q", s) + b"pad" for s in stamps[3:]))]

    class Reader:
        def __init__(self, **_kw: object) -> None:
            self.runs = list(runs)

        def __enter__(self) -> Reader:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def start_reading(self, *_args: object) -> None:
            pass

        def read(self, *_args: object, **_kw: object) -> list[RecordRun]:
            return [self.runs.pop(0)] if self.runs else []

    result = consume(Reader, object(), 5)
    assert result["records"] == 5
    latencies = sorted(result["latencies_ms"])
    assert [round(x) for x in latencies] == sorted(round(x) for x in [5, 5, 5, 1, 9])  # + a little read time
    assert unpack_latencies(pack_latencies(result["latencies_ms"])) == result["latencies_ms"]  # to the parent


def test_progress_bar_draws_on_a_terminal_only() -> None:
    shown = io.StringIO()
    with Progress(4, "work", stream=shown, force=True) as progress:
        for _ in range(4):
            progress.advance()
    assert "100% work" in shown.getvalue() and "[" + "#" * Progress.WIDTH + "]" in shown.getvalue()
    hidden = io.StringIO()  # not a terminal: nothing drawn
    with Progress(4, "work", stream=hidden) as progress:
        progress.advance(4)
    assert hidden.getvalue() == ""


class _TimedLog:
    """Stands in for a log: records when each batch is sent and answers at once."""

    def __init__(self) -> None:
        self.sent_s: list[float] = []

    def append_batch_async(self, payloads: list[bytes]) -> Future[range]:
        self.sent_s.append(time.time())
        done: Future[range] = Future()
        done.set_result(range(1, len(payloads) + 1))
        return done


def test_paced_producers_send_at_their_phase_of_the_interval() -> None:
    calls: list[str] = []
    log = _TimedLog()
    # 100 records a batch at 2,000 records/s: a batch every 50 ms, this producer half an interval in.
    figures = produce(log, 4, 100, 16, 1, 2_000, lambda: calls.append("ready"), phase=0.5)
    offsets_ms = [(t - figures["started"]) * 1000 for t in log.sent_s]
    assert calls == ["ready"] and figures["records"] == 400
    for n, offset in enumerate(offsets_ms):
        assert (n + 0.5) * 50 - 1 <= offset <= (n + 0.5) * 50 + 40, offsets_ms
