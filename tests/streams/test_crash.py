"""Streams under SIGKILL: a process killed at any step of a scaling has it finished on the next
open; every acknowledged event is there exactly once; each routing key's events are in order."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

import seaway
from seaway.log import Record
from seaway.streams import key_position
from seaway.testing._stream_crash import KEYS, STREAM
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_STREAM_CRASH_KILLS", "20"))


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
