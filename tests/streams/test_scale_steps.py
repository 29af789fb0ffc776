"""A scaling stopped after any of its steps (as a crash would stop it) is finished by whoever comes
next, re-running steps as needed, to the same result as one never stopped; finishing it again
changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import seaway
from seaway.testing import FakeClock


class Stop(Exception):
    """Where the test stops a scaling."""


def _outcome(sw: seaway.Seaway, stream: seaway.Stream) -> tuple[object, ...]:
    """What a finished scaling leaves, without the ids of logs (they differ between two stores)."""
    info = stream.describe()
    history = stream.history()
    current = {s.id for s in info.segments}
    every = [*stream.metadata.generation(0).segments, *(c for d in history for c in d.created)]
    sealed = [(s.id, sw.logs.get(s.log_id).final_lsn() is not None) for s in every]
    sizes = stream.metadata.sealed_ends(s for d in history for s in d.sealed)
    return (info.generation, info.scaling_under_way, [(s.id, s.key_lo, s.key_hi) for s in info.segments],
            [(d.generation, d.sealed, [(c.id, c.key_lo, c.key_hi) for c in d.created]) for d in history],
            [(i, closed, i not in current) for i, closed in sealed], sorted(sizes.items()),
            stream.metadata.sealed_sum(info.generation))


def _scale(tmp_path: Path, name: str, stop_after: int | None) -> tuple[object, ...]:
    clock = FakeClock()
    with seaway.Seaway(tmp_path / name, clock=clock) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        first = stream.current_segments()[0]
        sw.logs.get(first.log_id).append_batch([b"event"] * 5)

        def stop(step: int) -> None:
            if step == stop_after:
                raise Stop(step)

        sw.streams.controller.after_step = stop
        if stop_after is None:
            stream.split(first.id, 3)
        else:
            with pytest.raises(Stop):
                stream.split(first.id, 3)
            sw.streams.controller.after_step = None
            assert stream.describe().scaling_under_way == (stop_after < 5)
    with seaway.Seaway(tmp_path / name, clock=clock) as sw:  # opening finishes it
        stream = sw.streams.get("s/x")
        outcome = _outcome(sw, stream)
        revision = sw.meta.revision
        sw.streams.recover()  # again: nothing left to do, nothing written
        assert sw.meta.revision == revision
        assert _outcome(sw, stream) == outcome
        return outcome


@pytest.mark.parametrize("stop_after", [1, 2, 3, 4, 5])
def test_a_scaling_stopped_after_any_step_ends_as_one_never_stopped(tmp_path: Path, stop_after: int) -> None:
    expected = _scale(tmp_path, "whole", None)
    assert _scale(tmp_path, "stopped", stop_after) == expected
    generation, under_way, segments, history, sealed, sizes, total = expected
    assert generation == 1 and not under_way and len(segments) == 4 and len(history) == 1
    assert [s for s in sealed if s[1] != s[2]] == []  # exactly the segments no longer current are sealed
    assert len(sizes) == 1 and sizes[0][1][0] > 0 and total == sizes[0][1][0]


def test_size_until_a_whole_generation_before_its_sizes_are_recorded(tmp_path: Path) -> None:
    """A cut of a generation whose scaling stopped before recording sizes (step 5) counts what was
    recorded up to then, as a walk of the deltas would, not the missing running total (zero)."""
    with seaway.Seaway(tmp_path, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        first, second = stream.current_segments()
        sw.logs.get(first.log_id).append_batch([b"event"] * 5)
        stream.split(first.id, 2)
        recorded = sw.logs.get(first.log_id).data_size()
        assert recorded > 0

        def stop(step: int) -> None:
            if step == 4:
                raise Stop(step)

        sw.streams.controller.after_step = stop
        with pytest.raises(Stop):
            stream.split(second.id, 2)
        sw.streams.controller.after_step = None
        assert stream.describe().scaling_under_way
        assert stream.size_until(stream.tail()) == recorded
