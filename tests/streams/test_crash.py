"""Streams under SIGKILL: a process killed at any step of a scaling has it finished on the next
open; every acknowledged event is there exactly once; each routing key's events are in order."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import seaway
from seaway.log import Record
from seaway.server import ServerProcess
from seaway.streams import WriterConfig, key_position
from seaway.testing._stream_crash import KEYS, STREAM, scale_once
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_STREAM_CRASH_KILLS", "12"))
_FEW_RETRIES = seaway.RetryPolicy(attempts_max=2, backoff_s=0.05, backoff_max_s=0.1)
"""The server is gone until the test starts it again: give up soon rather than wait for it."""
_FEW_WRITER_RETRIES = WriterConfig(retries_max=1, successors_wait_s=2.0)


@pytest.mark.slow
def test_scalings_are_finished_after_sigkill_and_no_acknowledged_event_is_lost(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    data, acks = tmp_path / "data", tmp_path / "acks"
    generations = 0
    for run in range(KILLS):
        run_until_killed("seaway.testing._stream_crash", data, acks, run, rng, seed, 0.5)
        with seaway.open(data) as sw:  # opening finishes what the kill cut short
            stream = sw.streams.get(STREAM)
            info = stream.describe()
            assert not info.scaling_under_way, f"seed {seed}: run {run}: a scaling was left half-done"
            assert info.generation >= generations
            generations = info.generation
            current = {s.id for s in info.segments}
            for segment in stream.segments_between(stream.head(), stream.tail()):
                log = sw.logs.get(segment.log_id)
                sealed = log.final_lsn() is not None
                assert sealed == (segment.id not in current), f"seed {seed}: {segment} sealed={sealed}"
            _check_events(sw, stream, acks, seed)
    assert generations > KILLS, f"seed {seed}: too few scalings ({generations}) to mean anything"


def _check_events(sw: seaway.Seaway, stream: seaway.Stream, acks: Path, seed: int) -> None:
    """Each key's events, read along the chain of segments that held its position, generation by
    generation: strictly increasing (in order, none twice), and every acknowledged one there."""
    segments = sorted(stream.segments_between(stream.head(), stream.tail()), key=lambda s: s.generation)
    stored: dict[int, list[bytes]] = {}
    for segment in segments:
        stored[segment.id] = [item.payload for item in sw.logs.get(segment.log_id).read()
                              if isinstance(item, Record)]
    seen: dict[str, list[int]] = defaultdict(list)
    for key in range(KEYS):
        name = f"k{key}"
        point = key_position(name)
        for segment in segments:
            if segment.holds(point):
                seen[name] += [int(p.split()[1]) for p in stored[segment.id] if p.split()[0] == name.encode()]
        assert seen[name] == sorted(set(seen[name])), f"seed {seed}: {name}'s events out of order or twice"
    for line in acks.read_text().splitlines():
        name, n = line.split()
        assert int(n) in set(seen[name]), f"seed {seed}: acknowledged event {line!r} lost"


@pytest.mark.slow
def test_a_server_killed_during_scalings_finishes_them_when_it_restarts(tmp_path: Path) -> None:
    """The scalings and writes come from clients; the server is killed at random moments and
    started again on the same port, 20 times. Each start finishes the scaling the kill cut short."""
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    acks = tmp_path / "acks"
    acks.touch()
    server = ServerProcess(tmp_path / "data")
    generations = 0
    try:
        for run in range(KILLS):
            with seaway.connect(server.url, timeout_s=10) as sw:
                if "crash" not in sw.streams.scopes():
                    sw.streams.create_scope("crash")
                    sw.streams.create(STREAM, segments=2)
                stop = threading.Event()
                threads = [threading.Thread(target=_write_until_stopped, args=(server.url, run, acks, stop)),
                           threading.Thread(target=_scale_until_stopped, args=(server.url, run, stop))]
                for thread in threads:
                    thread.start()
                time.sleep(rng.uniform(0.3, 1.2))
                server.kill()
                stop.set()
                for thread in threads:
                    thread.join(60)
            server.restart()
            with seaway.connect(server.url, timeout_s=10) as sw:
                stream = sw.streams.get(STREAM)
                info = stream.describe()
                assert not info.scaling_under_way, f"seed {seed}: run {run}: the restart left a scaling half-done"
                generations = info.generation
                _check_events(sw, stream, acks, seed)
        assert generations > KILLS // 2, f"seed {seed}: too few scalings ({generations}) to mean anything"
    finally:
        code = server.stop()
    assert code == 0, server.log_text()[-3000:]


def _write_until_stopped(url: str, run: int, acks: Path, stop: threading.Event) -> None:
    """Keyed events ``k<key> <n>`` until the server goes; a line in ``acks`` for each acknowledged."""
    with contextlib.suppress(seaway.SeawayError), seaway.connect(url, timeout_s=10, retry=_FEW_RETRIES) as sw, \
            acks.open("a") as out, sw.streams.get(STREAM).writer(f"run{run}", _FEW_WRITER_RETRIES) as writer:
        n = run * 10**6
        while not stop.is_set():
            futures = [(f"k{key} {n}", writer.write(f"k{key} {n}".encode(), f"k{key}")) for key in range(KEYS)]
            for line, future in futures:
                future.result(30)
                out.write(line + "\n")
                out.flush()
            n += 1


def _scale_until_stopped(url: str, run: int, stop: threading.Event) -> None:
    rng = random.Random(run)
    with contextlib.suppress(seaway.SeawayError), seaway.connect(url, timeout_s=10, retry=_FEW_RETRIES) as sw:
        stream = sw.streams.get(STREAM)
        while not stop.is_set():
            scale_once(stream, rng)
