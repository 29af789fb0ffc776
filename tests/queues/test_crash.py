"""Exactly-once processing survives SIGKILL: of a consumer process in the middle of its
transaction (30 times), and of the server under producers and consumers (10 times).

The input queue's entries are numbered; processors move each to an output queue inside the
transaction that acknowledges it. Afterwards the output holds every input entry exactly once (and,
its group hashing on the same key as the input's, each key's entries in order). Set
``SEAWAY_CRASH_SEED`` to replay a failing run; the seed is in every failure message.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.server import ServerProcess
from seaway.testing._queue_crash import DONE, GROUP

pytestmark = pytest.mark.slow

PYTHON = [sys.executable, "-m", "seaway.testing._queue_crash"]


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("SEAWAY_CRASH_SEED", random.randrange(1 << 30)))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data") as proc:
        yield proc


def _setup(url: str, entries: int) -> None:
    with seaway.connect(url) as sw:
        for queue in ("in", "out"):
            sw.queues.create(queue)
            sw.queues.create_group(queue, GROUP if queue == "in" else "check", 2, "HASH", key="k")
        if entries:
            producer = sw.queues.producer("in")
            for start in range(0, entries, 500):
                with sw.transaction() as tx:
                    numbers = range(start, min(start + 500, entries))
                    producer.enqueue_batch(tx, [b"%d" % i for i in numbers], [{"k": i % 13} for i in numbers])


def _processor(url: str, consumer: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*PYTHON, "process", url, "in", "out", str(consumer)])


def _check_output(url: str, entries: int, seed: int) -> None:
    with seaway.connect(url) as sw:
        got: list[int] = []
        for c in range(2):
            consumer = sw.queues.consumer("out", "check", c)
            mine: list[int] = []
            empty = 0
            deadline = time.monotonic() + 60
            while empty < 3 and time.monotonic() < deadline:  # cut-off transactions time out meanwhile
                with sw.transaction() as tx:
                    batch = [int(e.payload) for e in consumer.dequeue(tx, 1000, 1.0)]
                mine += batch
                empty = 0 if batch else empty + 1
            by_key: dict[int, list[int]] = {}
            for n in mine:
                by_key.setdefault(n % 13, []).append(n)
            assert all(v == sorted(v) for v in by_key.values()), f"seed {seed}: a key out of order"
            got += mine
        missing = set(range(entries)) - set(got)
        dupes = len(got) - len(set(got))
        assert not missing and not dupes, f"seed {seed}: {len(missing)} missing, {dupes} duplicates"
        assert len(got) == entries


def test_killed_consumers_process_every_entry_exactly_once(server: ServerProcess, seed: int) -> None:
    rng = random.Random(seed)
    entries = 3000
    _setup(server.url, entries)
    procs = {c: _processor(server.url, c) for c in range(2)}
    try:
        for _ in range(30):
            time.sleep(rng.uniform(0.1, 0.5))
            victim = rng.randrange(2)
            procs[victim].kill()
            procs[victim].wait()
            procs[victim] = _processor(server.url, victim)
        with seaway.connect(server.url) as sw:
            sw.meta.put(DONE[1], DONE[0], b"1")
        for proc in procs.values():
            assert proc.wait(120) == 0, f"seed {seed}: a processor failed"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _check_output(server.url, entries, seed)


def test_killed_server_loses_and_repeats_nothing(server: ServerProcess, seed: int) -> None:
    rng = random.Random(seed)
    entries = 1500
    _setup(server.url, 0)
    producer = subprocess.Popen([*PYTHON, "produce", server.url, "in", "0", str(entries)])
    procs = [producer] + [_processor(server.url, c) for c in range(2)]
    try:
        for _ in range(10):
            time.sleep(rng.uniform(0.3, 1.0))
            server.kill()
            server.restart()
        assert producer.wait(180) == 0, f"seed {seed}: the producer failed"
        with seaway.connect(server.url) as sw:
            sw.meta.put(DONE[1], DONE[0], b"1")
        for proc in procs[1:]:
            assert proc.wait(180) == 0, f"seed {seed}: a processor failed"
    except BaseException:
        print(server.log_text()[-4000:])
        raise
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _check_output(server.url, entries, seed)
