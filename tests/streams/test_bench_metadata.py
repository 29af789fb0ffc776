"""The benchmark's history builder writes exactly the records that real scalings write.

The same planned history is made twice from the same start: once by real scalings (the
controller's five steps, with new logs and events in them), once by :class:`HistoryBuilder`
(many generations per staged batch) with logs made and sealed as the controller does. Every
record of the stream must be the same, byte for byte. With a chunk of 8 generations instead of
1,000, the history crosses chunk boundaries of the time index and of the deltas.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import seaway
from seaway.bench._metadata import HistoryBuilder, HistoryClock, Step, plan_history, real_log, real_seal
from seaway.streams import Segment, Stream, _metadata
from seaway.streams._controller import SEGMENT_LOG_IDS, StreamController
from seaway.streams._metadata import NAMESPACE, stream_prefix

GENERATIONS = 30
START_MS = 1_700_000_000_000


def _fill(sw: seaway.Seaway, segment: Segment) -> None:
    """Events in a new segment, a number and size of its own, so that sealed sizes differ."""
    sw.logs.get(segment.log_id).append_batch([b"e" * (10 + segment.number)] * (1 + segment.number % 3))


def _records(sw: seaway.Seaway) -> dict[bytes, bytes]:
    """The stream's records; the configuration record without its uid (random, made at creation),
    which no query reads."""
    records = {key: found.value for key, found in sw.meta.scan_all(NAMESPACE, prefix=stream_prefix("s", "x"))}
    conf = json.loads(records[b"s/s/x/conf"])
    assert len(conf.pop("uid")) == 12
    records[b"s/s/x/conf"] = json.dumps(conf).encode()
    return records


@pytest.fixture(autouse=True)
def _sequential_log_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller gives a new segment log a random id; the builder makes its logs as
    ``get_or_create`` does (the group's next id): here the controller counts up too, so that both
    histories name the same ids."""
    taken: dict[int, int] = {}

    def next_id(controller: StreamController) -> int:
        taken[id(controller)] = taken.get(id(controller), SEGMENT_LOG_IDS[0] - 1) + 1
        return taken[id(controller)]

    monkeypatch.setattr(StreamController, "_new_log_id", next_id)


def _start(path: Path) -> tuple[seaway.Seaway, Stream, HistoryClock]:
    clock = HistoryClock(START_MS)
    sw = seaway.Seaway(path, clock=clock)
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/x", segments=3)
    for segment in stream.current_segments():
        _fill(sw, segment)
    return sw, stream, clock


def _plan(stream: Stream) -> list[Step]:
    current, next_number, _ = stream.metadata.current()
    steps, _ = plan_history(current, next_number, GENERATIONS, random.Random(3), step_ms=(0, 3))
    return steps


@pytest.mark.parametrize("chunk", [8, _metadata.CHUNK_GENERATIONS])
def test_the_builder_writes_the_records_real_scalings_write(tmp_path: Path, chunk: int,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_metadata, "CHUNK_GENERATIONS", chunk)
    real_sw, real_stream, clock = _start(tmp_path / "real")
    built_sw, built_stream, _ = _start(tmp_path / "built")
    with real_sw, built_sw:
        steps = _plan(real_stream)
        assert steps == _plan(built_stream)
        assert {len(s.sealed) for s in steps} == {1, 2}  # splits and merges
        for step in steps:
            clock.set_ms(step.time_ms)
            made = real_stream.scale(list(step.sealed), list(step.ranges))
            for segment in made.segments:
                if segment.generation == made.generation:
                    _fill(real_sw, segment)
        make_log = real_log(built_sw, built_stream)

        def make_and_fill(segment: Segment) -> int:
            log_id = make_log(segment)
            _fill(built_sw, Segment(segment.number, segment.generation, segment.created_ms, segment.key_lo,
                                    segment.key_hi, log_id))
            return log_id

        builder = HistoryBuilder(built_stream, make_and_fill, real_seal(built_sw), staged_ops_max=25)
        for step in steps:
            builder.scale(step)
        builder.flush()

        real, built = _records(real_sw), _records(built_sw)
        assert real == built
        assert len([k for k in real if b"/gen/" in k]) == GENERATIONS + 1
        leaves = [k for k in real if b"/tleaf/" in k]
        assert len(leaves) == GENERATIONS // chunk + 1
        assert any(b"/sizes/" in k for k in real)
        # The queries answer alike, of course; one of each kind as a smoke check.
        t = steps[GENERATIONS // 2].time_ms
        assert built_stream.segments_at(t) == real_stream.segments_at(t)
        assert built_stream.size_until(built_stream.tail()) == real_stream.size_until(real_stream.tail()) > 0
