"""The demo's exactly-once with its driver killed for real: the demo's Spark driver (its Python,
its JVM and workers: the whole process group) SIGKILLed at random moments once its queries publish,
twice, then run to its end from the same checkpoints: the report, counted from what the
sinks published, is what the generated lines make (every line counted once)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Any

import seaway
from seaway.demo import GeneratorConfig, expected, generate
from seaway.demo.run import ACCESS, prepare, read_report
from seaway.server import ServerProcess
from seaway.spark._write import NAMESPACE
from tests.spark.test_write_crash import seed

LINES = 400
WINDOW_S = 2
KILLS = 2
RUN_WAIT_S = 300.0
KILL_AFTER_S = 1.5
"""A kill comes at a random moment up to this long after the run's first publish."""


def markers(sw: Any) -> dict[bytes, bytes]:
    return {key: v.value for key, v in sw.meta.scan_all(NAMESPACE, prefix=b"demo-") if key.endswith(b"/published")}


def run_driver(args: list[str], log: Path, sw: Any, kill_rng: random.Random | None) -> int:
    with log.open("wb") as out:
        child = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=out)
        try:
            if kill_rng is not None:
                before = markers(sw)
                deadline = time.monotonic() + RUN_WAIT_S
                while markers(sw) == before and child.poll() is None:
                    assert time.monotonic() < deadline, "the demo published nothing in time"
                    time.sleep(0.05)  # polling the store for progress (a bounded wait), not a sync
                time.sleep(kill_rng.uniform(0.0, KILL_AFTER_S))  # the random moment of the kill
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGKILL)
            code = child.wait(RUN_WAIT_S)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
    if code not in (0, -signal.SIGKILL):
        raise AssertionError(f"the demo failed ({code}): {log.read_text()[-3000:]}")
    return code


def test_the_demo_killed_twice_counts_every_line_once(spark: Any, server: ServerProcess,
                                                            tmp_path: Path) -> None:
    config = GeneratorConfig(seed=5, rate_per_s=50, users=60, malformed_fraction=0.05,
                             start_ms=1_700_000_000_000)
    lines = list(islice(generate(config), LINES))
    with seaway.connect(server.url) as sw:
        prepare(sw)
        with sw.streams.get(ACCESS).writer() as writer:
            for g in lines:
                writer.write(g.line.encode(), routing_key=g.event.user if g.event is not None else None)
            writer.flush()
        args = [sys.executable, "-m", "seaway.testing._demo_child", server.url, str(tmp_path / "demo"), str(WINDOW_S)]
        rng = random.Random(seed())
        kills = 0
        for _ in range(KILLS):
            kills += run_driver(args, tmp_path / "demo.log", sw, rng) == -signal.SIGKILL
        assert kills >= 1, "the demo ended before each of its kills"
        assert run_driver(args, tmp_path / "demo.log", sw, None) == 0
    report = read_report(spark, server.url, WINDOW_S)
    want = expected(lines, window_s=WINDOW_S)
    assert (report.page_views, report.unique_users, report.dead_letters) == (
        want.page_views, want.unique_users, want.malformed)
    assert report.parsed + report.dead_letters == LINES
