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

from seaway._progress import Progress
from seaway.bench._log import cpu_jiffies, steal_pct
from seaway.bench._remote import consume, pack_latencies, produce, unpack_latencies
from seaway.cli._store import EXIT_ABSENT, EXIT_USAGE
from seaway.log import RecordRun, lsn_str
from tests.cli.conftest import Cli, Where


def seaway_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys, seaway.cli; sys.exit(seaway.cli.main())", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_demo_help_explains_its_options() -> None:
    result = seaway_cmd("demo", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--duration-s", "--rate", "--address", "--seed", "--data-dir"):
        assert option in result.stdout, option
    assert "resumes" in result.stdout and "demo/page-counts" in result.stdout


def test_demo_refuses_a_bad_duration_with_a_clear_error(tmp_path: Path) -> None:
    result = seaway_cmd("demo", "--data-dir", str(tmp_path), "--duration-s", "0")
    assert result.returncode != 0
    assert "duration_s must be in (0, 86400]" in result.stderr
    assert not (tmp_path / "store").exists()  # refused before a server was started


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


@pytest.mark.slow
def test_bench_logs_only_mux_runs_that_part_alone() -> None:
    result = seaway_cmd("bench", "logs", "--only", "mux", "--rounds", "1", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["multiplexed_read_ratio"] == pytest.approx(
        figures["catchup_records_per_s_1000_logs"] / figures["catchup_records_per_s_1_log"], rel=0.01)
    assert figures["multiplexed_tailing_ratio"] > 0
    assert "append_p50_ms_1" not in figures and "meta_batches_per_s" not in figures  # the other parts did not run


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
    ago_ms = [50, 50, 50, 10, 90]  # two batches' stamps, one odd record
    stamps = [now - ms * 1_000_000 for ms in ago_ms]
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
    # Each is its own stamp's age plus the time this test took to get here (under 30 ms even loaded).
    assert all(0 <= got - want < 30 for got, want in zip(latencies, sorted(ago_ms), strict=True)), latencies
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


def test_log_commands_take_every_spelling_of_an_lsn_and_print_one(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    appended = cli("log", "append", log, "a", "b", "c", "d", *where.args, "--json")
    figures = json.loads(appended.out)
    lsns = range(figures["first_lsn"], figures["first_lsn"] + 4)  # one batch: one epoch, consecutive
    assert figures["first_lsn_str"] == lsn_str(lsns[0]) and figures["last_lsn_str"] == lsn_str(lsns[-1])
    epoch = lsns[0] >> 32
    spelled = [f"e{epoch}n{lsn & 0xFFFFFFFF}" for lsn in lsns]
    assert cli("log", "append", log, "e", *where.args).out.startswith(f"appended 1 record to {log} at e")
    for start in (spelled[1], str(lsns[1]), hex(lsns[1]), f" E{epoch}N{lsns[1] & 0xFFFFFFFF} "):
        lines = cli("log", "tail", log, "--from", start, *where.args).out.splitlines()
        assert [line.split("\t")[0] for line in lines[:3]] == spelled[1:], start
        assert [line.split("\t")[2] for line in lines[:3]] == ["b", "c", "d"], start
    item = json.loads(cli("log", "tail", log, "--from", spelled[3], *where.args, "--json").out.splitlines()[0])
    assert (item["lsn"], item["lsn_str"], item["payload"]) == (lsns[3], spelled[3], "d")
    trimmed = cli("log", "trim", log, spelled[0], *where.args)
    assert trimmed.out == f"trimmed {log} up to {spelled[0]}\n", trimmed.err
    assert json.loads(cli("log", "trim", log, hex(lsns[1]), *where.args, "--json").out) == {
        "log": log, "trimmed_to": lsns[1], "trimmed_to_str": spelled[1]}
    gap = json.loads(cli("log", "tail", log, *where.args, "--json").out.splitlines()[0])
    assert (gap["gap"], gap["lsn_lo_str"], gap["lsn_hi_str"]) == ("TRIM", "e0n1", spelled[1])
    assert f"\ttrimmed to {spelled[1]}\t" in cli("log", "info", log, *where.args).out
    row = json.loads(cli("log", "info", log, *where.args, "--json").out)[0]
    assert (row["trim_point"], row["trim_point_str"]) == (lsns[1], spelled[1])
    assert row["tail_lsn_str"] == lsn_str(row["tail_lsn"]) and row["tail_lsn"] > lsns[-1]
    assert cli("log", "find-time", log, "0", *where.args).out == f"{spelled[2]}\n"  # the first record kept
    assert json.loads(cli("log", "find-time", log, "0", *where.args, "--json").out)["lsn_str"] == spelled[2]


def test_lsns_in_log_errors_are_spelled_as_printed(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    first = json.loads(cli("log", "append", log, "a", *where.args, "--json").out)["first_lsn"]
    past = cli("log", "trim", log, str(first + 5), *where.args)
    assert past.status == 1 and past.out == ""
    assert past.err == (f"seaway: error: log {log!r}: cannot trim to {lsn_str(first + 5)}, the tail is "
                        f"{lsn_str(first)} [TRIM_PAST_TAIL]\n")
    for bad in ("e1", "12abc", "e4294967296n0", str(2**64), "-1"):
        refused = cli("log", "trim", log, bad, *where.args)
        assert refused.status == EXIT_USAGE and refused.err.count("\n") == 1, bad
        assert "[INVALID_ARGUMENT]" in refused.err and repr(bad) in refused.err, bad
        assert cli("log", "tail", log, "--from", bad, *where.args).status == EXIT_USAGE


def test_read_only_commands_refuse_a_directory_that_is_not_a_store(cli: Cli, tmp_path: Path) -> None:
    missing, empty, store = tmp_path / "missing", tmp_path / "empty", tmp_path / "store"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a store")
    for reads in (("info",), ("tail", "l"), ("tail", "l", "--from", "e0n1"), ("find-time", "l", "0")):
        for where in (missing, empty):
            refused = cli("log", *reads, "--data-dir", str(where))
            assert refused.status == EXIT_USAGE and refused.err.count("\n") == 1, refused
            assert str(where) in refused.err and "[INVALID_ARGUMENT]" in refused.err
    assert not missing.exists() and [p.name for p in empty.iterdir()] == ["notes.txt"]  # nothing created
    assert cli("log", "trim", "l", "bogus", "--data-dir", str(missing)).status == EXIT_USAGE
    assert not missing.exists()
    assert cli("log", "create", "l", "--data-dir", str(store)).status == 0  # a write creates the store
    assert cli("log", "append", "l", "x", "--data-dir", str(store)).status == 0
    assert cli("log", "info", "--data-dir", str(store)).out.startswith("l\tid ")
    assert cli("log", "tail", "l", "--data-dir", str(store)).out.endswith("\tx\n")


def test_the_command_reads_lsns_and_meta_keys_as_a_user_types_them(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert seaway_cmd("log", "create", "l", "--data-dir", data).returncode == 0
    assert seaway_cmd("log", "append", "l", "a", "b", "--data-dir", data).returncode == 0
    tail = seaway_cmd("log", "tail", "l", "--from", "e1n2", "--data-dir", data)
    assert tail.returncode == 0 and tail.stdout.split("\t")[0] == "e1n2" and tail.stdout.endswith("\tb\n")
    put = seaway_cmd("meta", "put", "app", "clé", "valeur", "--data-dir", data)
    assert put.returncode == 0, put.stderr
    assert seaway_cmd("meta", "get", "app", "clé", "--data-dir", data).stdout.startswith("valeur\tversion ")


def test_log_commands_seal_delete_and_append_conditionally(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    first = json.loads(cli("log", "append", log, "a", "--if-tail", "0", *where.args, "--json").out)["first_lsn"]
    stale = cli("log", "append", log, "b", "--if-tail", "0", *where.args)
    assert stale.status == 1 and "[TAIL_MISMATCH]" in stale.err and stale.err.count("\n") == 1
    second = cli("log", "append", log, "b", "--if-tail", lsn_str(first), *where.args, "--json")
    last = json.loads(second.out)["last_lsn"]  # each command of a data directory opens a new epoch
    sealed = json.loads(cli("log", "seal", log, *where.args, "--json").out)
    assert sealed == {"log": log, "final_lsn": last, "final_lsn_str": lsn_str(last)}
    late = cli("log", "append", log, "c", *where.args)
    assert late.status == 1 and "[LOG_SEALED]" in late.err
    assert json.loads(cli("log", "info", log, *where.args, "--json").out)[0]["final_lsn"] == last
    assert cli("log", "info", log, *where.args).out.rstrip("\n").endswith("\tsealed")
    lines = cli("log", "tail", log, *where.args).out.splitlines()
    assert [line.split("\t")[2] for line in lines if "\t" in line] == ["a", "b"]
    deleted = cli("log", "delete", log, *where.args)
    assert deleted.status == 0 and deleted.out.startswith(f"deleted {log} (id ")
    gone = cli("log", "tail", log, *where.args)
    assert gone.status == EXIT_ABSENT and "[UNKNOWN_LOG]" in gone.err


def test_short_lived_logs_leave_little_on_disk_beside_a_permanent_one() -> None:
    from seaway.bench._disk import DiskBenchConfig, run_disk_bench  # noqa: PLC0415

    figures = run_disk_bench(DiskBenchConfig(partitions=3, short_lived_per_partition=10))
    extra = figures["disk_bytes_with_short_lived"] - figures["disk_bytes_permanent_alone"]
    assert figures["short_lived_bytes_written"] == 3 * 10 * 40 * 1000
    assert extra < figures["short_lived_bytes_written"] / 4, figures  # most of it given back
    assert figures["disk_use_ratio_short_lived"] == round(
        figures["disk_bytes_with_short_lived"] / figures["disk_bytes_permanent_alone"], 3)
