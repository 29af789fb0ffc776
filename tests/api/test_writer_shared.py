"""Event writers, embedded and through a server."""

from __future__ import annotations

import pytest

from seaway import PayloadTooLargeError
from seaway._errors import StreamSealedError
from seaway.streams import EventWriter, Stream, WriterConfig
from tests.api.conftest import Api
from tests.streams.writer_check import Flaky, run_writers_under_scaling, segment_events


def make_stream(api: Api, segments: int = 2) -> Stream:
    scope = api.name("scope")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/events", segments=segments)
    return stream


def test_per_key_order_across_scalings(api: Api) -> None:
    run_writers_under_scaling(api.sw, make_stream(api), writers=4, events_each=200, scalings=6, seed=api.number())


def test_sealed_stream_and_limits(api: Api) -> None:
    stream = make_stream(api)
    with stream.writer("w", WriterConfig(event_bytes_max=100)) as writer:
        with pytest.raises(PayloadTooLargeError):
            writer.write(b"x" * 101, "k")
        ack = writer.write_batch([b"a", b"b"], "k").result(30)
        assert len(ack.lsns) == 2
        stream.seal()
        with pytest.raises(StreamSealedError):
            writer.write(b"after", "k").result(30)
        with pytest.raises(StreamSealedError):
            writer.write(b"later", "k")
    assert [p for _, _, p in segment_events(api.sw, stream)] == [b"a", b"b"]


def test_a_batch_sent_again_is_stored_once(api: Api) -> None:
    stream = make_stream(api, segments=1)
    flaky = Flaky(api.sw.logs, lose_answers=2)
    with EventWriter(stream, flaky, "w", WriterConfig(retry_backoff_s=0.001)) as writer:
        acks = [writer.write(f"{i}".encode(), "k").result(30) for i in range(4)]
    assert flaky.lost == 2
    assert [int(p) for _, _, p in segment_events(api.sw, stream)] == list(range(4))
    assert len({a.lsn for a in acks}) == 4
