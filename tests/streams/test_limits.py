"""Streams at their documented maxima: a stream of ``SEGMENTS_MAX`` segments is created, scaled
and truncated, each change recorded in the ledger (whose entries are at most 64 KiB); a truncation
with more work left than one metadata value holds is recorded and finished."""

from __future__ import annotations

import json
from pathlib import Path

import seaway
from seaway import SeawayConfig
from seaway.ledger import StreamCreated, StreamScaled, StreamTruncated
from seaway.log import LSN_OLDEST
from seaway.streams import StreamCut
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.streams._config import SEGMENTS_MAX
from seaway.streams._metadata import NAMESPACE, PENDING_CHUNK_STEPS, Truncation
from seaway.testing import FakeClock
from tests.ledger.helpers import changes, head

CONFIG = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None), retention=None)


def test_a_stream_of_the_most_segments_is_created_scaled_and_truncated_and_each_change_recorded(
        tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        mark = head(sw)
        stream = sw.streams.create("s/x", segments=SEGMENTS_MAX)
        [created] = changes(sw, mark)
        assert isinstance(created, StreamCreated) and created.segment_count == SEGMENTS_MAX
        segments = stream.current_segments()
        assert len(segments) == SEGMENTS_MAX
        sw.logs.get(segments[0].log_id).append_batch([b"a", b"b"])

        mark = head(sw)
        cut = StreamCut("s/x", {s.id: (LSN_OLDEST + 1 if s is segments[0] else LSN_OLDEST) for s in segments})
        stream.truncate(cut)
        assert stream.head() == cut
        assert changes(sw, mark) == [StreamTruncated("s/x", SEGMENTS_MAX, 0)]
        assert sw.logs.get(segments[0].log_id).trim_point() == LSN_OLDEST

        mark = head(sw)
        generation = stream.merge([segments[0].id, segments[1].id])
        assert changes(sw, mark) == [StreamScaled("s/x", 1, 2, 1)]
        assert [s.id for s in stream.history(0, 1)[0].created] == [s.id for s in generation.segments
                                                                   if s.generation == 1]


def test_a_truncation_with_more_work_than_one_metadata_value_holds_is_made_and_finished(tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        victims = [sw.logs.create(f"victim-{n}").id for n in range(3)]
        meta = stream.metadata
        record = Truncation(tuple((s, LSN_OLDEST) for s in stream.current_segments()), 0, 1, True)
        # Log ids that were never made stand for segments deleted already: deleting them again is
        # a step done. 16 bytes a step: three records' worth, past the store's 1 MiB a value.
        steps = [(2**62 + n, 0) for n in range(2 * PENDING_CHUNK_STEPS + 10)] + [(v, 0) for v in victims]
        meta.truncation_batch(sw.meta.batch(), record, steps).commit()
        assert len(sw.meta.scan(NAMESPACE, prefix=meta.key(meta.pending_key(1)), limit=10)) == 3
        sw.streams.controller.recover_stream(meta)  # what a process finds and finishes when it starts
        truncation = meta.truncation()
        assert truncation is not None and not truncation.pending
        assert sw.meta.scan(NAMESPACE, prefix=meta.key("tpend/"), limit=10) == []
        assert not any(log.id in victims for log in sw.logs.list())


def test_a_truncation_record_of_the_earlier_form_is_read_and_its_work_finished(tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=1)
        (segment,) = stream.current_segments()
        victim = sw.logs.create("victim").id
        meta = stream.metadata
        old = {"cut": [[segment.to_json(), LSN_OLDEST]], "size": 7, "delete": [victim], "trim": []}
        sw.meta.batch().put(NAMESPACE, meta.key("trunc"), json.dumps(old).encode()).commit()
        truncation = meta.truncation()
        assert truncation is not None and truncation.pending and truncation.size == 7
        sw.streams.controller.recover_stream(meta)
        assert all(log.id != victim for log in sw.logs.list())
        done = meta.truncation()
        assert done is not None and not done.pending and done.positions == {segment.id: LSN_OLDEST}
