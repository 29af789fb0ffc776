"""Event writers over an embedded store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import BufferFullError, ClosedError, InvalidArgumentError, PayloadTooLargeError
from seaway._errors import LogSealedError, StreamSealedError, TimedOutError, UnavailableError
from seaway.streams import EventWriter, Stream, WriterConfig
from tests.streams.writer_check import Flaky, Gate, Wrapped, run_writers_under_scaling, segment_events


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[Any]:
    with seaway.open(tmp_path / "data") as store:
        yield store


def make_stream(sw: Any, segments: int = 2) -> Stream:
    sw.streams.create_scope("s")
    stream: Stream = sw.streams.create("s/events", segments=segments)
    return stream


def test_writes_are_acknowledged_where_they_are_stored(sw: Any) -> None:
    stream = make_stream(sw)
    with stream.writer("w") as writer:
        acks = [writer.write(f"e{i}".encode(), "key").result(10) for i in range(5)]
        batch = writer.write_batch([b"x", b"y", b"z"], "other").result(10)
        spread = [writer.write(b"free").result(10) for _ in range(20)]
    assert len({a.segment for a in acks}) == 1
    assert [a.lsn for a in acks] == sorted(a.lsn for a in acks)
    assert len(batch.lsns) == 3
    stored = {(s, lsn): p for s, lsn, p in segment_events(sw, stream)}
    assert [stored[(a.segment, a.lsn)] for a in acks] == [f"e{i}".encode() for i in range(5)]
    assert [stored[(batch.segment, lsn)] for lsn in batch.lsns] == [b"x", b"y", b"z"]
    assert len({a.segment for a in spread}) == 2, "events without a key go to every segment"


def test_per_key_order_across_scalings_by_another_thread(sw: Any) -> None:
    run_writers_under_scaling(sw, make_stream(sw), writers=4, events_each=300, scalings=8)


def test_events_in_flight_when_a_segment_is_sealed_go_to_its_successors_in_order(sw: Any) -> None:
    stream = make_stream(sw, segments=1)
    gate = Gate(sw.logs)
    writer = EventWriter(stream, gate, "w")
    gate.close()  # appends wait: the split seals the segment under them
    futures = [writer.write(f"{i}".encode(), "key") for i in range(20)]
    stream.split(stream.current_segments()[0].id)
    gate.open()
    acks = [f.result(10) for f in futures]
    writer.close()
    assert {a.segment for a in acks} != {stream.metadata.generation(0).segments[0].id}
    events = [int(p) for _, _, p in segment_events(sw, stream)]
    assert events == list(range(20))


def test_a_batch_sent_again_is_stored_once(sw: Any) -> None:
    stream = make_stream(sw, segments=1)
    flaky = Flaky(sw.logs, lose_answers=3)
    with EventWriter(stream, flaky, "w", WriterConfig(retry_backoff_s=0.001)) as writer:
        acks = [writer.write(f"{i}".encode(), "k").result(10) for i in range(6)]
    assert flaky.lost == 3
    assert [int(p) for _, _, p in segment_events(sw, stream)] == list(range(6))
    assert [a.lsn for a in acks] == sorted({a.lsn for a in acks})


def test_writes_fail_after_retries_run_out(sw: Any) -> None:
    stream = make_stream(sw, segments=1)
    flaky = Flaky(sw.logs, lose_answers=100)
    config = WriterConfig(retries_max=2, retry_backoff_s=0.001)
    with EventWriter(stream, flaky, "w", config) as writer, pytest.raises(TimedOutError):
        writer.write(b"e", "k").result(10)
    assert flaky.lost == 3
    assert [p for _, _, p in segment_events(sw, stream)] == [b"e"], "stored once, though never acknowledged"


def test_a_sealed_stream_takes_no_writes(sw: Any) -> None:
    stream = make_stream(sw)
    writer = stream.writer()
    writer.write(b"before", "k").result(10)
    stream.seal()
    with pytest.raises(StreamSealedError):
        writer.write(b"after", "k").result(10)
    with pytest.raises(StreamSealedError):
        writer.write(b"later", "k")
    writer.close()
    with pytest.raises(StreamSealedError):
        stream.writer().write(b"new writer")
    assert [p for _, _, p in segment_events(sw, stream)] == [b"before"]


def test_losing_the_store_while_rerouting_fails_the_writes_with_its_error(sw: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that cannot look up successors (the server went away) fails what it holds and every
    later write with that error; its thread ends without an unhandled exception."""
    stream = make_stream(sw, segments=1)
    writer = stream.writer()
    writer.write(b"before", "k").result(10)

    def gone() -> list[Any]:
        raise UnavailableError("the server went away")

    segment = stream.current_segments()[0].id
    monkeypatch.setattr(writer._stream, "current_segments", gone)
    stream.split(segment)  # seals the writer's segment
    with pytest.raises(UnavailableError):
        writer.write(b"after", "k").result(10)
    with pytest.raises(UnavailableError):
        writer.write(b"later", "k")
    writer.close()
    assert [p for _, _, p in segment_events(sw, stream)] == [b"before"]


def test_limits(sw: Any) -> None:
    stream = make_stream(sw, segments=1)
    gate = Gate(sw.logs)
    gate.close()
    config = WriterConfig(event_bytes_max=10, events_in_flight_max=3, room_wait_s=0.01)
    with EventWriter(stream, gate, "w", config) as writer:
        with pytest.raises(PayloadTooLargeError):
            writer.write(b"x" * 11)
        with pytest.raises(InvalidArgumentError):
            writer.write_batch([])
        with pytest.raises(InvalidArgumentError):
            writer.write("text")  # type: ignore[arg-type]
        first = writer.write_batch([b"a", b"b"], "k")
        with pytest.raises(BufferFullError):
            writer.write_batch([b"c", b"d"], "k")
        with pytest.raises(TimedOutError):
            writer.flush(0.01)
        gate.open()
        assert len(first.result(10).lsns) == 2
        writer.write_batch([b"c", b"d"], "k").result(10)
    with pytest.raises(ClosedError):
        writer.write(b"closed")
    with pytest.raises(InvalidArgumentError):
        stream.writer("no spaces")
    assert [p for _, _, p in segment_events(sw, stream)] == [b"a", b"b", b"c", b"d"]


@pytest.mark.parametrize("bound", ["events", "bytes"])
def test_joined_appends_are_bounded_and_never_split_a_write(sw: Any, bound: str) -> None:
    stream = make_stream(sw, segments=1)
    gate = Gate(sw.logs)
    gate.close()
    limits = {"append_events_max": 5} if bound == "events" else {"append_bytes_max": 5 * 10}
    config = WriterConfig(appends_in_flight_max=1, **limits)
    sizes = [1, 2, 2, 3, 1, 4, 7, 1]
    writes = [[f"{n}-{i}".encode().ljust(10, b".") for i in range(size)] for n, size in enumerate(sizes)]
    with EventWriter(stream, gate, "w", config) as writer:
        futures = [writer.write_batch(events, "k") for events in writes]
        gate.open()
        acks = [f.result(10) for f in futures]
    # Whole writes, up to 5 events (50 bytes) an append; the write of 7 goes alone.
    assert [n for _, n in gate.sent] == [1, 4, 4, 4, 7, 1]
    stored = {lsn: p for _, lsn, p in segment_events(sw, stream)}
    assert [[stored[lsn] for lsn in a.lsns] for a in acks] == writes


def test_joined_appends_refused_by_a_sealed_segment_are_split_between_its_successors(sw: Any) -> None:
    stream = make_stream(sw, segments=1)
    sealed = stream.current_segments()[0]
    gate = Gate(sw.logs)
    gate.close()
    keys = [f"key{k}" for k in range(10)]
    with EventWriter(stream, gate, "w", WriterConfig(appends_in_flight_max=2)) as writer:
        futures = {(key, i): writer.write(f"{key}:{i:03d}".encode(), key) for i in range(6) for key in keys}
        assert [n for _, n in gate.sent] == [1, 1]
        successors = stream.split(sealed.id).segments
        gate.open()  # the two appends are refused (sealed); all 60 writes go to the successors
        acks = {k: f.result(10) for k, f in futures.items()}
    to_successors = gate.sent[2:]
    logs = {s.log_id: s.id for s in successors}
    assert sorted(logs[log_id] for log_id, _ in to_successors) == sorted(s.id for s in successors), \
        "one joined append to each successor"
    assert sum(n for _, n in to_successors) == 60
    events = segment_events(sw, stream)
    where = {p: (s, lsn) for s, lsn, p in events}
    for (key, i), ack in acks.items():
        assert where[f"{key}:{i:03d}".encode()] == (ack.segment, ack.lsn)
        assert ack.segment != sealed.id
    for key in keys:
        assert len({acks[(key, i)].segment for i in range(6)}) == 1
        assert [int(p.partition(b":")[2]) for _, _, p in events if p.startswith(f"{key}:".encode())] == list(range(6))
    assert len({a.segment for a in acks.values()}) == 2, "the keys spread over both successors"


@pytest.mark.parametrize("field", [{"appends_in_flight_max": 0}, {"appends_in_flight_max": 65},
                                   {"append_events_max": 100_001}, {"append_bytes_max": (32 << 20) + 1},
                                   {"append_bytes_max": True}])
def test_join_bounds_are_checked(field: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError, match=next(iter(field))):
        WriterConfig(**field)


class LoseFirstAnswer(Wrapped):
    """The first append is stored, but its answer (a timeout) comes only once ``release`` is set;
    ``answers`` holds what each append was answered."""

    def __init__(self, logs: Any) -> None:
        super().__init__(logs)
        self.release = threading.Event()
        self.answers: list[Future[range]] = []

    def append(self, log: Any, payloads: tuple[bytes, ...], **marks: Any) -> Future[range]:
        stored = super().append(log, payloads, **marks)
        self.answers.append(stored)
        if len(self.answers) > 1:
            return stored
        stored.result(10)
        lost: Future[range] = Future()

        def answer_late() -> None:
            self.release.wait(10)
            lost.set_exception(TimedOutError("the answer was lost"))

        threading.Thread(target=answer_late, daemon=True).start()
        return lost


def test_an_append_whose_answer_was_lost_is_not_sent_to_the_successors_when_its_segment_is_sealed(sw: Any) -> None:
    """Found by the fault suite (tests/faults, seed 2 through a server): an append stored with its
    answer lost, then the segment sealed by a scaling, and a later append refused as sealed before
    the lost answer came. The writer moved both to the successor: the first was stored twice. Whether
    an append with an unknown outcome was stored is asked of the sealed log first (a retry is answered
    even there)."""
    stream = make_stream(sw, segments=1)
    lose = LoseFirstAnswer(sw.logs)
    writer = EventWriter(stream, lose, "w", WriterConfig(retry_backoff_s=0.001))
    first = writer.write(b"0", "k")
    stream.split(stream.current_segments()[0].id)  # seals the segment that stored "0"
    second = writer.write(b"1", "k")
    assert isinstance(lose.answers[1].exception(10), LogSealedError)
    lose.release.set()  # the lost answer comes after the refusal
    acks = [first.result(10), second.result(10)]
    writer.close()
    stored = segment_events(sw, stream)
    assert [p for _, _, p in stored] == [b"0", b"1"], "an event whose answer was lost was stored twice"
    assert [(a.segment, a.lsn) for a in acks] == [(s, lsn) for s, lsn, _ in stored]
