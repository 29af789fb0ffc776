"""``seaway bench cli``: how fast the command starts, against an empty interpreter measured in the
same run (the machine is shared: the ratio is what compares across runs).

Each command runs ``runs`` times as a child process: ``seaway --help``, and a one-record
``seaway log append`` over a data directory made for the run (with a warm-up run, so that the
store exists and Python's bytecode cache is written). Reported: the median wall time and the least
CPU time (user and system) of each, the reference's, and their targets (0.3 s and 0.5 s of wall).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HELP_TARGET_S = 0.3
APPEND_TARGET_S = 0.5


def _timed(argv: Sequence[str], runs: int) -> tuple[float, float]:
    """The median wall time and the least CPU time of ``runs`` runs of ``argv`` (each must succeed)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), min(cpus)


def run_cli_bench(runs: int = 9) -> dict[str, Any]:
    """Run the benchmark; return its figures (seconds)."""
    command = [sys.executable, "-m", "seaway.cli"]
    with tempfile.TemporaryDirectory(prefix="seaway-bench-cli-") as tmp:
        data = str(Path(tmp) / "data")
        append = [*command, "log", "append", "bench", "x", "--data-dir", data]
        subprocess.run([*command, "log", "create", "bench", "--data-dir", data], check=True,
                       stdout=subprocess.DEVNULL)
        for argv in ([*command, "--help"], append):  # warm-up: the bytecode cache, the page cache
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        empty_wall, empty_cpu = _timed([sys.executable, "-c", "pass"], runs)
        help_wall, help_cpu = _timed([*command, "--help"], runs)
        append_wall, append_cpu = _timed(append, runs)
    return {
        "runs": runs,
        "bytecode_cache": os.environ.get("PYTHONDONTWRITEBYTECODE") is None,
        "empty_interpreter_s": round(empty_wall, 4), "empty_interpreter_cpu_s": round(empty_cpu, 4),
        "help_s": round(help_wall, 4), "help_cpu_s": round(help_cpu, 4), "help_target_s": HELP_TARGET_S,
        "help_beyond_interpreter_s": round(help_wall - empty_wall, 4),
        "log_append_s": round(append_wall, 4), "log_append_cpu_s": round(append_cpu, 4),
        "log_append_target_s": APPEND_TARGET_S,
        "log_append_beyond_interpreter_s": round(append_wall - empty_wall, 4),
    }
