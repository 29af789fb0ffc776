"""Exactly-once processing survives SIGKILL: of a consumer process in the middle of its
transaction (30 times), of the server under producers and consumers (10 times), and of consumers
and producers alike while the input's group is resized (issue 21 item 3).

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
from seaway.queues import Position
from seaway.server import ServerProcess
from seaway.testing._queue_crash import BATCH, DONE, GROUP, PRODUCED_PREFIX

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


def _committed_inputs(sw: seaway.Seaway) -> set[int]:
    """The entries of every producer transaction that committed (each staged a key of its own)."""
    numbers: set[int] = set()
    for key, found in sw.meta.scan_all(DONE[1], prefix=PRODUCED_PREFIX):
        first = int(key[len(PRODUCED_PREFIX):])
        numbers.update(range(first, first + int(found.value)))
    return numbers


def _output(sw: seaway.Seaway) -> list[list[int]]:
    """Each partition of the output's group, read by position (nothing is acknowledged)."""
    shares = []
    for c in range(2):
        got: list[int] = []
        position = Position(1, 0)
        while True:
            read = sw.queues.read_committed("out", "check", 1, c, position, entries_max=10_000)
            got += [int(e.payload) for e in read.entries]
            if not read.entries:
                break
            position = read.next
        shares.append(got)
    return shares


def test_killed_producers_and_consumers_while_the_group_is_resized(server: ServerProcess, seed: int) -> None:
    """Producers and processors are SIGKILLed at random moments, mostly inside a transaction, while
    the input's HASH group is resized between 1 and 3 consumers; every entry whose producer
    transaction committed is moved to the output exactly once, and each key's entries of one
    producer stay in order."""
    rng = random.Random(seed)
    transactions = 60
    _setup(server.url, 0)
    instances = iter(range(1, 1000))

    def producer() -> subprocess.Popen[bytes]:
        first = next(instances) * 1_000_000  # a new range: a killed producer's numbers are not reused
        return subprocess.Popen([*PYTHON, "produce-marked", server.url, "in", str(first), str(transactions)])

    producers = [producer() for _ in range(2)]
    processors = {c: _processor(server.url, c) for c in range(3)}
    kills = {"producer": 0, "processor": 0, "resize": 0}
    try:
        with seaway.connect(server.url) as sw:
            for step in range(24):
                time.sleep(rng.uniform(0.1, 0.4))  # a random moment, not a wait for anything
                action = ("processor", "producer", "resize")[step % 3]
                if action == "processor":
                    victim = rng.randrange(3)
                    processors[victim].kill()
                    processors[victim].wait()
                    processors[victim] = _processor(server.url, victim)
                elif action == "producer":
                    i = rng.randrange(len(producers))
                    if producers[i].poll() is None:
                        producers[i].kill()
                        producers[i].wait()
                        producers[i] = producer()
                else:
                    try:
                        sw.queues.resize_group("in", GROUP, rng.choice([1, 2, 3]), wait_s=None)
                    except seaway.InvalidArgumentError:  # the previous resize still drains
                        continue
                kills[action] += 1
            for proc in producers:
                assert proc.wait(180) == 0, f"seed {seed}: a producer failed"
            expected = _committed_inputs(sw)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                if sum(map(len, _output(sw))) >= len(expected):
                    break
                time.sleep(0.5)  # polling the output while the processors work
            sw.meta.put(DONE[1], DONE[0], b"1")
            for proc in processors.values():
                assert proc.wait(120) == 0, f"seed {seed}: a processor failed"
            shares = _output(sw)
            described = sw.queues.describe_group("in", GROUP)
    except BaseException:
        print(server.log_text()[-4000:])
        raise
    finally:
        for proc in [*producers, *processors.values()]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert kills["producer"] >= 4 and kills["processor"] >= 8 and kills["resize"] >= 2, (seed, kills)
    got = [n for share in shares for n in share]
    assert len(expected) >= 2 * transactions * BATCH, (seed, len(expected))
    missing, extra = expected - set(got), set(got) - expected
    dupes = len(got) - len(set(got))
    assert not missing and not extra and not dupes, (
        f"seed {seed}: {len(missing)} missing, {len(extra)} never committed, {dupes} duplicates; "
        f"missing from producers {sorted({n // 1_000_000 for n in missing})}; the input's group: {described}")
    for share in shares:
        last: dict[tuple[int, int], int] = {}
        for n in share:
            key = (n % 13, n // 1_000_000)  # a key's entries of one producer instance
            assert n > last.get(key, -1), f"seed {seed}: key {key} out of order at {n}"
            last[key] = n
