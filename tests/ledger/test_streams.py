"""Every committed change of scopes, streams and reader groups writes exactly one ledger entry, with
its typed fields, in the batch that makes it; a refused change writes none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import SeawayConfig
from seaway._errors import (
    InvalidArgumentError,
    InvalidStreamCutError,
    ReaderGroupExistsError,
    ScaleConflictError,
    ScopeExistsError,
    ScopeNotEmptyError,
    StreamExistsError,
    StreamNotSealedError,
    UnknownReaderGroupError,
)
from seaway.ledger import (
    ReaderGroupCreated,
    ReaderGroupDeleted,
    ReaderGroupReset,
    RetentionApplied,
    ScopeCreated,
    ScopeDeleted,
    StreamCreated,
    StreamDeleted,
    StreamScaled,
    StreamSealed,
    StreamTruncated,
    StreamUpdated,
    decode_change,
)
from seaway.streams import FixedSegments, RetentionByTime, StreamCut
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.streams._names import segment_str
from seaway.streams._retention import RetentionConfig
from seaway.testing import FakeClock
from tests.ledger.helpers import changes, head


@pytest.fixture
def sw(tmp_path: Path, clock: FakeClock) -> Iterator[seaway.Seaway]:
    config = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None),
                          retention=RetentionConfig(interval_s=None, cut_interval_s=60))  # passes by hand
    with seaway.Seaway(tmp_path / "data", config, clock=clock) as store:
        yield store


def test_scopes_created_and_deleted_and_refusals_record_nothing(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("a")
    mark = head(sw)
    with pytest.raises(ScopeExistsError):
        sw.streams.create_scope("a")
    sw.streams.create_scope("a", exist_ok=True)
    assert changes(sw, mark) == []
    sw.streams.create("a/x")
    mark = head(sw)
    with pytest.raises(ScopeNotEmptyError):
        sw.streams.delete_scope("a")
    assert changes(sw, mark) == []
    sw.streams.get("a/x").seal()
    sw.streams.get("a/x").delete()
    mark = head(sw)
    sw.streams.delete_scope("a")
    assert changes(sw, mark) == [ScopeDeleted("a")]
    assert changes(sw)[0] == ScopeCreated("a")


def test_a_stream_created_records_its_segments_and_configuration(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    mark = head(sw)
    stream = sw.streams.create("s/x", segments=3, retention=RetentionByTime(min_s=60))
    (created,) = changes(sw, mark)
    assert isinstance(created, StreamCreated)
    assert created == StreamCreated("s/x", 3, created.config)
    assert created.resource() == "stream/s/x"
    config = json.loads(created.config)
    assert config["retention"] == {"type": "RetentionByTime", "min_s": 60, "max_s": None}
    assert config["scaling"]["type"] == "FixedSegments"
    mark = head(sw)
    with pytest.raises(StreamExistsError):
        sw.streams.create("s/x")
    assert changes(sw, mark) == []
    stream.update(scaling=FixedSegments(3), clear_retention=True)
    (updated,) = changes(sw, mark)
    assert isinstance(updated, StreamUpdated) and updated.stream == "s/x"
    assert json.loads(updated.config)["retention"] is None


def test_a_scaling_records_the_segments_it_sealed_and_created_once(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/x", segments=2)
    mark = head(sw)
    stream.split("0.0", 3)
    assert changes(sw, mark) == [StreamScaled("s/x", 1, 1, 3)]
    assert [segment_str(s.id) for s in stream.history(0, 1)[0].created] == ["1.2", "1.3", "1.4"]
    mark = head(sw)
    stream.merge(["1.3", "1.4"])
    assert changes(sw, mark) == [StreamScaled("s/x", 2, 2, 1)]
    mark = head(sw)
    with pytest.raises(ScaleConflictError):  # no longer current: refused, nothing recorded
        stream.split("0.0")
    sw.streams.recover()
    assert changes(sw, mark) == []


def test_seal_and_delete_are_recorded_once_each(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/x")
    mark = head(sw)
    with pytest.raises(StreamNotSealedError):
        stream.delete()
    assert changes(sw, mark) == []
    stream.seal()
    stream.seal()  # idempotent: no second change
    assert changes(sw, mark) == [StreamSealed("s/x")]
    mark = head(sw)
    stream.delete()
    sw.streams.recover()
    assert changes(sw, mark) == [StreamDeleted("s/x")]


def test_a_manual_truncation_records_its_cut_and_a_retention_pass_records_its_policy(
        sw: seaway.Seaway, clock: FakeClock) -> None:
    sw.streams.create_scope("s")
    policy = RetentionByTime(min_s=60)
    stream = sw.streams.create("s/x", retention=policy)
    (segment,) = stream.current_segments()
    sw.logs.get(segment.log_id).append_batch([b"e"] * 4)
    cut = StreamCut("s/x", {segment.id: 3})
    mark = head(sw)
    stream.truncate(cut)
    stream.truncate(cut)  # the same cut again: a no-op
    assert changes(sw, mark) == [StreamTruncated("s/x", 1, 0)]
    assert stream.head() == cut  # the entry names the cut's size; the head is the cut
    mark = head(sw)
    with pytest.raises(InvalidStreamCutError):  # below the head: refused
        stream.truncate(StreamCut("s/x", {segment.id: 2}))
    assert changes(sw, mark) == []

    assert sw.retention is not None
    sw.retention.run_once()  # records the tail as a cut (not a change of the ledger's)
    sw.logs.get(segment.log_id).append_batch([b"f"] * 2)
    clock.advance(120)
    mark = head(sw)
    done = sw.retention.run_once()
    assert len(done) == 1
    (applied,) = changes(sw, mark)
    assert isinstance(applied, RetentionApplied)
    assert applied == RetentionApplied("s/x", 1, 0, applied.policy)
    assert stream.head() == done[0].cut
    assert json.loads(applied.policy) == {"type": "RetentionByTime", "min_s": 60, "max_s": None}
    mark = head(sw)
    assert sw.retention.run_once() == []  # nothing more to truncate: nothing recorded
    assert changes(sw, mark) == []


def test_reader_groups_created_and_deleted(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    sw.streams.create("s/x")
    mark = head(sw)
    sw.streams.create_reader_group("g", "s/x")
    with pytest.raises(ReaderGroupExistsError):
        sw.streams.create_reader_group("g", "s/x")
    assert changes(sw, mark) == [ReaderGroupCreated("g", "s/x")]
    mark = head(sw)
    sw.streams.delete_reader_group("g")
    with pytest.raises(UnknownReaderGroupError):
        sw.streams.delete_reader_group("g")
    assert changes(sw, mark) == [ReaderGroupDeleted("g")]


def test_a_reader_group_reset_is_recorded(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    sw.streams.create("s/x", segments=3)
    group = sw.streams.create_reader_group("g", "s/x")
    mark = head(sw)
    group.reset("tail")
    with pytest.raises(InvalidArgumentError):
        group.reset("nowhere")
    assert changes(sw, mark) == [ReaderGroupReset("g", 3)]


def test_stream_entries_of_the_earlier_form_are_read_in_this_one() -> None:
    old = [({"op": "stream.created", "f": {"stream": "s/x", "segments": ["0.0", "0.1"], "config": "{}"}},
            StreamCreated("s/x", 2, "{}")),
           ({"op": "stream.scaled", "f": {"stream": "s/x", "generation": 2, "sealed": ["1.0"],
                                          "created": ["2.3", "2.4", "2.5"]}}, StreamScaled("s/x", 2, 1, 3)),
           ({"op": "stream.truncated", "f": {"stream": "s/x", "cut": StreamCut("s/x", {0: 3, 1: 1}).to_json()}},
            StreamTruncated("s/x", 2, 0)),
           ({"op": "stream.retention_applied", "f": {"stream": "s/x", "cut": StreamCut("s/x", {0: 3}).to_json(),
                                                     "policy": "{}"}}, RetentionApplied("s/x", 1, 0, "{}"))]
    for body, change in old:
        assert decode_change(json.dumps(body).encode()) == change
