"""Exactly-once across a Spark driver killed for real: a streaming query into a transactional
stream through the seaway sink, its driver SIGKILLed with its whole process group (its Python, its
JVM, their workers) at random moments, four times in one test (a task that staged its rows, at
random moments in and around the sink's commit, right after the commit and before Spark recorded
it, and at a random time once a batch was published), restarted from its checkpoint each time:
the output holds every input event exactly once, by count and by a checksum computed here; no
transaction is left staged. The query reads the union of files and a queue read as a group."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import TxnStatus
from seaway.server import ServerProcess
from seaway.spark._write import NAMESPACE
from tests.spark.test_write import make_stream, read_events, staged_notes

pytestmark = pytest.mark.timeout(600)  # five Spark drivers started one after another: 2-3 minutes
SINK = "crash-sink"
BATCHES = 12
"""Input for this many micro-batches: the four kills need at most about 9 (each comes at most two
batches past the last one published, or up to a second after a publish), with room for those a
kill merges (a driver killed between the file source's log and Spark's offset log leaves two files
for the next batch)."""
ROWS = 25
"""Rows of one file (a batch takes one, and 20 entries of the queue)."""
KILLS = ("write", "in-commit", "commit", "timer")
"""One of each kind (six, with a second in-commit and a second timer, cost a minute more of every
test run for moments the random in-commit and timer kills reach over runs anyway)."""
RUN_WAIT_S = 120.0
TIMER_KILL_S = 0.8
"""A timer kill comes at a random moment up to this long after the run published a batch."""


def published(sw: Any) -> int:
    """The sink's marker: the highest batch id published (-1: none)."""
    got = sw.meta.get(NAMESPACE, f"{SINK}/published".encode())
    return -1 if got is None else int(json.loads(got.value)["batch"] if got.value.startswith(b"{")
                                      else got.value)


class Driver:
    """Starts the Spark driver (``seaway.testing._spark_child``) in a session of its own, again and
    again from one checkpoint, and kills it."""

    def __init__(self, server: ServerProcess, stream: str, source: str, tmp_path: Path) -> None:
        self.args = [sys.executable, "-m", "seaway.testing._spark_child", server.url, stream, SINK,
                     str(tmp_path / "ckpt"), source]
        self.log = tmp_path / "driver.log"

    def run(self, fault: str | None = None) -> int:
        with self.log.open("wb") as log:
            child = subprocess.run([*self.args, *([fault] if fault else [])], start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=log, timeout=RUN_WAIT_S, check=False)
        return self._checked(child.returncode)

    def run_killed_after_a_publish(self, sw: Any, rng: random.Random) -> int:
        """Kill the driver at a random moment after it published a batch of its own."""
        before = published(sw)
        with self.log.open("wb") as log:
            child = subprocess.Popen(self.args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=log)
            try:
                deadline = time.monotonic() + RUN_WAIT_S
                while published(sw) == before and child.poll() is None:
                    assert time.monotonic() < deadline, "the driver published nothing in time"
                    time.sleep(0.05)  # polling the store for progress (a bounded wait), not a sync
                time.sleep(rng.uniform(0.0, TIMER_KILL_S))  # the random moment of the kill
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGKILL)
                return self._checked(child.wait(RUN_WAIT_S))
            finally:
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()

    def _checked(self, code: int) -> int:
        if code not in (0, -signal.SIGKILL):
            raise AssertionError(f"the driver failed ({code}): {self.log.read_text()[-3000:]}")
        return code


def kill_four_times_then_finish(sw: Any, driver: Driver, seed: int) -> None:
    rng = random.Random(seed)
    for kill in rng.sample(KILLS, len(KILLS)):
        began = time.monotonic()
        at = published(sw) + 1 + rng.randint(0, 1)
        assert at < BATCHES, f"seed {seed}: too few batches left to kill the driver in"
        code = driver.run_killed_after_a_publish(sw, rng) if kill == "timer" else driver.run(f"{kill}:{at}")
        print(f"killed: {kill} at batch {at}, published {published(sw)}, {time.monotonic() - began:.1f} s")
        assert code == -signal.SIGKILL, f"seed {seed}: the driver ended before its kill ({kill} at {at})"
    began = time.monotonic()
    assert driver.run() == 0
    print(f"finished: published {published(sw)}, {time.monotonic() - began:.1f} s")


def fingerprint(payloads: list[bytes]) -> tuple[int, int]:
    """Count, and a checksum that a repeated or a missing payload changes: the sum of their digests."""
    return len(payloads), sum(int.from_bytes(hashlib.blake2b(p, digest_size=16).digest(), "big")
                              for p in payloads) % (1 << 128)


def check_output(sw: Any, stream: str, expected: list[bytes]) -> None:
    got = read_events(sw, stream, len(expected))
    assert fingerprint(got) == fingerprint(expected)
    assert sorted(got) == sorted(expected)
    assert not [i for i in sw.txn.list() if i.status is TxnStatus.IN_PROGRESS]
    assert staged_notes(sw) == [f"{SINK}/published".encode()]


def seed() -> int:
    value = int(os.environ.get("SEAWAY_TEST_SEED", time.time_ns() % 1_000_000))
    print(f"seed {value} (SEAWAY_TEST_SEED)")
    return value


def test_a_driver_killed_four_times_writes_each_file_row_and_queue_entry_once(server: ServerProcess,
                                                                           tmp_path: Path) -> None:
    """One query over the union of both sources (a kill costs a driver's start, 15-30 s, so both
    share the four): the file source's offsets are Spark's own, the queue's are acknowledged in
    transactions of the source."""
    source = tmp_path / "in"
    source.mkdir()
    expected = []
    for f in range(BATCHES):  # one file a micro-batch
        rows = [{"routing_key": f"k{i % 6}", "n": f * ROWS + i} for i in range(ROWS)]
        (source / f"{f:03d}.json").write_text("\n".join(json.dumps(row) for row in rows))
        expected += [json.dumps(row, separators=(",", ":")).encode() for row in rows]
    entries = [json.dumps({"routing_key": f"u{n % 7}", "n": 1_000_000 + n}, separators=(",", ":")).encode()
               for n in range(BATCHES * 20)]
    with seaway.connect(server.url) as sw:
        stream = make_stream(sw)
        sw.queues.create("crash-q")
        sw.queues.create_group("crash-q", "spark", size=2, strategy="ROUND_ROBIN")
        producer = sw.queues.producer("crash-q")
        for start in range(0, len(entries), 40):
            with sw.transaction(timeout_s=60) as tx:
                producer.enqueue_batch(tx, entries[start:start + 40])
        driver = Driver(server, stream, f"files:{source}+queue:crash-q:spark", tmp_path)
        kill_four_times_then_finish(sw, driver, seed())
        check_output(sw, stream, expected + entries)
