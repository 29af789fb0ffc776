"""Any client can write the metadata store: a stream record it garbled makes the stream's calls
raise typed errors (never a bare ValueError or KeyError), and other streams go on working."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import pytest

import seaway
from seaway import SeawayError
from seaway.streams._metadata import NAMESPACE


@pytest.mark.parametrize("seed", range(3))
def test_garbled_records_give_typed_errors(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    with seaway.open(tmp_path) as sw:
        sw.streams.create_scope("s")
        victim = sw.streams.create("s/victim", segments=2)
        other = sw.streams.create("s/other", segments=2)
        for _ in range(3):
            victim.split(victim.current_segments()[0].id)
        victim.record_cut()
        keys = [key for key, _ in sw.meta.scan(NAMESPACE, prefix=b"s/s/victim/", limit=1000)]
        assert len(keys) > 10
        for key in keys:
            found = sw.meta.get(NAMESPACE, key)
            assert found is not None
            garbage = rng.choice([b"", b"{", b"[]", b"null", b'{"g": "x"}', bytes(rng.randrange(256) for _ in range(9)),
                                  found.value[: len(found.value) // 2]])
            sw.meta.put(NAMESPACE, key, garbage)
            for call in (victim.describe, victim.current_segments, victim.history, victim.head, victim.tail,
                         lambda: victim.segments_at(0), lambda: victim.successors("0.0"),
                         lambda: victim.predecessors("1.2"), lambda: victim.split(victim.current_segments()[0].id)):
                with contextlib.suppress(SeawayError):
                    call()
            sw.meta.put(NAMESPACE, key, found.value)  # put back: one garbled record at a time
        assert len(other.current_segments()) == 2
        other.split(other.current_segments()[0].id)
