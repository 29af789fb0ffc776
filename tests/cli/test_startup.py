"""Commands load only what they use (issue 22, item 6): ``seaway --help`` loads neither gRPC, Spark, RocksDB
nor the store's packages; a ``log append`` to a data directory loads neither gRPC nor Spark; and both
start within their budgets (docs/benchmarks.md has the figures measured on the shared machine)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

HEAVY = ("grpc", "pyspark", "py4j", "rocksdict", "prometheus_client", "asyncio", "http.client", "seaway.server",
         "seaway.client", "seaway.wire", "seaway.spark", "seaway.bench")
"""What a command that needs none of it must not load."""
STORE = ("seaway.log", "seaway.logsdb", "seaway.streams", "seaway.queues", "seaway.txn", "seaway.notify",
         "seaway.ledger", "seaway._seaway")
"""The store's packages: ``--help`` needs none of them."""
HELP_CPU_S_MAX = 0.3
APPEND_CPU_S_MAX = 0.5


def _loaded(argv: list[str], cwd: Path) -> list[str]:
    """The modules ``seaway argv`` has loaded when it returns, run in a fresh interpreter."""
    script = ("import contextlib, io, json, sys\nfrom seaway.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
              "print(json.dumps(sorted(sys.modules)))")
    ran = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120,
                         check=True, cwd=cwd)
    loaded: list[str] = json.loads(ran.stdout.splitlines()[-1])
    return loaded


def _among(loaded: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if any(m == n or m.startswith(n + ".") for n in names)]


def test_help_loads_no_transport_no_spark_and_no_store(tmp_path: Path) -> None:
    loaded = _loaded(["--help"], tmp_path)
    assert "seaway.cli._main" in loaded  # the command did run
    assert _among(loaded, HEAVY) == [] and _among(loaded, STORE) == []


def test_every_commands_help_loads_no_transport_and_no_spark(tmp_path: Path) -> None:
    for command in (["log", "append", "--help"], ["stream", "read", "--help"], ["queue", "dequeue", "--help"],
                    ["notify", "config", "set", "--help"], ["demo", "--help"], ["serve", "--help"]):
        assert _among(_loaded(command, tmp_path), HEAVY) == [], command


def test_an_append_to_a_data_directory_loads_no_transport_and_no_spark(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert subprocess.run([sys.executable, "-m", "seaway.cli", "log", "create", "l", "--data-dir", data],
                          capture_output=True, timeout=120, check=False).returncode == 0
    loaded = _loaded(["log", "append", "l", "x", "--data-dir", data], tmp_path)
    assert "seaway._seaway" in loaded  # the store was opened in-process
    assert _among(loaded, ("grpc", "pyspark", "py4j", "seaway.server", "seaway.client", "seaway.spark",
                           "seaway.bench", "asyncio")) == []


def test_the_notify_formats_written_out_for_the_parser_are_the_library_ones() -> None:
    from seaway.cli._notify import FORMATS  # noqa: PLC0415
    from seaway.notify import FORMATS as LIBRARY_FORMATS  # noqa: PLC0415

    assert FORMATS == LIBRARY_FORMATS


def _best_cpu_s(argv: list[str], cwd: Path, env: dict[str, str], runs: int = 3) -> float:
    """The least CPU time (user and system) of ``runs`` runs: on a shared machine the wall time mostly
    measures the wait for a core."""
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, capture_output=True, timeout=120, cwd=cwd, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def test_help_and_a_one_record_append_start_within_their_budgets(tmp_path: Path) -> None:
    # As an installed package runs: from a bytecode cache (the test environment may turn it off).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    seaway_cmd = [sys.executable, "-m", "seaway.cli"]
    subprocess.run([*seaway_cmd, "log", "create", "l", "--data-dir", "data"], check=True, capture_output=True,
                   timeout=120, cwd=tmp_path, env=env)  # also fills the bytecode cache
    empty_s = _best_cpu_s([sys.executable, "-c", "pass"], tmp_path, env)
    help_s = _best_cpu_s([*seaway_cmd, "--help"], tmp_path, env) - empty_s
    append_s = _best_cpu_s([*seaway_cmd, "log", "append", "l", "x", "--data-dir", "data"], tmp_path, env) - empty_s
    assert help_s < HELP_CPU_S_MAX, f"seaway --help took {help_s:.3f} s of CPU beyond an empty interpreter"
    assert append_s < APPEND_CPU_S_MAX, f"a one-record log append took {append_s:.3f} s of CPU"
