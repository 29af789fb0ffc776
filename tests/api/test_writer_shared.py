"""Event writers, embedded and through a server."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from seaway import PayloadTooLargeError
from seaway._errors import StreamSealedError, TimedOutError
from seaway.streams import EventWriter, Stream, WriterConfig
from tests.api.conftest import Api
from tests.streams.writer_check import Flaky, Gate, run_writers_under_scaling, segment_events


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


def test_writes_waiting_for_a_segment_are_joined_into_one_append(api: Api) -> None:
    stream = make_stream(api, segments=1)
    gate = Gate(api.sw.logs)
    gate.close()  # the first appends are held: the writes made meanwhile wait in the writer
    with EventWriter(stream, gate, "w", WriterConfig(appends_in_flight_max=2)) as writer:
        futures = [writer.write(f"{i}".encode(), f"k{i % 3}") for i in range(40)]
        futures.append(writer.write_batch([b"40", b"41", b"42"], "k"))
        assert [n for _, n in gate.sent] == [1, 1], "two appends in flight, the other writes wait"
        gate.open()
        acks = [f.result(30) for f in futures]
    assert [n for _, n in gate.sent] == [1, 1, 41], "what waited went out as one append when one was answered"
    stored = {lsn: p for _, lsn, p in segment_events(api.sw, stream)}
    assert [stored[lsn] for a in acks for lsn in a.lsns] == [str(i).encode() for i in range(43)]
    assert [len(a.lsns) for a in acks] == [1] * 40 + [3]
    assert [lsn for a in acks for lsn in a.lsns] == sorted(stored), "each write has its own slice of the LSNs"


class LoseJoinedAnswers(Gate):
    """A gate that stores the first ``lose`` appends of more than one record but loses their answers."""

    def __init__(self, logs: Any, lose: int) -> None:
        super().__init__(logs)
        self.lose = lose

    def append(self, log: Any, payloads: tuple[bytes, ...], **marks: Any) -> Future[range]:
        stored = super().append(log, payloads, **marks)
        if len(payloads) == 1 or self.lose == 0:
            return stored
        self.lose -= 1
        stored.result(30)
        lost: Future[range] = Future()
        lost.set_exception(TimedOutError("the answer was lost"))
        return lost


def test_a_joined_append_sent_again_is_stored_once(api: Api) -> None:
    stream = make_stream(api, segments=1)
    gate = LoseJoinedAnswers(api.sw.logs, lose=2)
    gate.close()
    with EventWriter(stream, gate, "w", WriterConfig(appends_in_flight_max=2, retry_backoff_s=0.001)) as writer:
        futures = [writer.write(f"{i}".encode(), "k") for i in range(10)]
        gate.open()
        acks = [f.result(30) for f in futures]
    assert [n for _, n in gate.sent] == [1, 1, 8, 8, 8], "the joined append sent twice more, whole"
    stored = segment_events(api.sw, stream)
    assert [int(p) for _, _, p in stored] == list(range(10)), "stored once"
    assert [a.lsn for a in acks] == [lsn for _, lsn, _ in stored]
