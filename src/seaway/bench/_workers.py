"""The benches' worker processes: each prints ``ready`` once set up, waits (if it is to be started
together with others) for a line on its standard input, then prints one JSON line of figures.

What the benches measure is the workload, not the start of Python processes: the clock starts once
every worker said it is ready.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

WORKER_WAIT_S = 600.0


def start(argv: Sequence[str], *, waits_for_go: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE if waits_for_go else None, stdout=subprocess.PIPE,
                            text=True)


def await_ready(procs: Sequence[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a benchmark worker failed to start (status {proc.wait(60)})")


def go(procs: Sequence[subprocess.Popen[str]]) -> None:
    """Start the workers that wait for it, all at once."""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def result(proc: subprocess.Popen[str], timeout_s: float = WORKER_WAIT_S) -> dict[str, Any]:
    """The worker's figures (its last line), once it exited with status 0."""
    out, _ = proc.communicate(timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"a benchmark worker failed with status {proc.returncode}")
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


@contextmanager
def killed_at_exit(procs: list[subprocess.Popen[str]]) -> Iterator[list[subprocess.Popen[str]]]:
    """Kill the workers still running when the block ends (after a failure, say)."""
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
