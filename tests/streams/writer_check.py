"""Writes events with several writer threads while another thread scales the stream, then reads
every segment log back: shared by the embedded tests and the shared API suite."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from seaway._errors import TimedOutError
from seaway.log import Record
from seaway.streams import Stream, WriteAck, WriterConfig


def segment_events(sw: Any, stream: Stream) -> list[tuple[int, int, bytes]]:
    """Every event of the stream as (segment id, LSN, payload), segments in order of generation."""
    meta = stream.metadata
    current = meta.current()[0].generation
    segments = list(meta.generation(0).segments)
    for delta in meta.deltas(0, current):
        segments.extend(delta.created)
    out = []
    for segment in sorted(segments, key=lambda s: (s.generation, s.number)):
        tail = sw.logs.get(segment.log_id).tail_lsn()
        if tail == 0:
            continue
        for item in sw.logs.get(segment.log_id).read(1, tail):
            if isinstance(item, Record):
                out.append((segment.id, item.lsn, item.payload))
    return out


def run_writers_under_scaling(sw: Any, stream: Stream, writers: int = 4, events_each: int = 300,
                              scalings: int = 8, seed: int = 0, config: WriterConfig | None = None) -> None:
    rng = random.Random(seed)
    done = threading.Event()
    acks: dict[bytes, Future[WriteAck]] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with stream.writer(f"w{n}", config) as writer:
                for i in range(events_each):
                    key = f"k{(n * 7 + i) % 5}-{n}"
                    event = f"{key}:{i:06d}".encode()
                    future = writer.write(event, key) if i % 10 else writer.write_batch([event], key)
                    with lock:
                        acks[event] = future
                writer.flush(60)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def scale() -> None:
        try:
            for _ in range(scalings):
                current = sorted(stream.current_segments(), key=lambda s: s.key_lo)
                if len(current) > 1 and rng.random() < 0.4:
                    i = rng.randrange(len(current) - 1)
                    stream.merge([current[i].id, current[i + 1].id])
                else:
                    stream.split(rng.choice(current).id)
                if done.wait(0.02):
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    scaler = threading.Thread(target=scale)
    for t in [*threads, scaler]:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    scaler.join(60)
    assert not errors, errors
    assert stream.describe().generation >= 1, "no scaling happened while writing"

    stored = segment_events(sw, stream)
    payloads = [p for _, _, p in stored]
    assert len(payloads) == len(set(payloads)), "an event was stored twice"
    where = {p: (s, lsn) for s, lsn, p in stored}
    assert len(acks) == writers * events_each
    for event, future in acks.items():  # every acknowledged event is there, where its ack says
        ack = future.result(0)
        assert where[event] == (ack.segment, ack.lsn), event
    by_key: dict[str, list[int]] = defaultdict(list)
    for payload in payloads:
        key, _, i = payload.decode().partition(":")
        by_key[key].append(int(i))
    for key, seen in by_key.items():
        assert seen == sorted(seen), f"key {key}: events out of order: {seen}"


# --- fakes of the log layer around the real one ---------------------------------------------------


class Wrapped:
    """``sw.logs`` whose handles' appends go through ``append``; ``sent`` notes each append made
    through a handle, as (log id, records), in the order made."""

    def __init__(self, logs: Any) -> None:
        self.logs = logs
        self.sent: list[tuple[int, int]] = []

    def get(self, name_or_id: str | int) -> Any:
        return Handle(self, self.logs.get(name_or_id))

    def append(self, log: Any, payloads: tuple[bytes, ...], **marks: Any) -> Future[range]:
        result: Future[range] = log.append_batch_async(payloads, **marks)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.logs, name)


class Handle:
    def __init__(self, owner: Wrapped, log: Any) -> None:
        self.owner, self.log = owner, log

    @property
    def id(self) -> int:
        return int(self.log.id)

    def append_batch_async(self, payloads: Iterable[bytes], **marks: Any) -> Future[range]:
        batch = tuple(payloads)
        self.owner.sent.append((self.id, len(batch)))
        return self.owner.append(self.log, batch, **marks)


class Gate(Wrapped):
    """While closed, appends are held; opening it sends them to the log in the order made."""

    def __init__(self, logs: Any) -> None:
        super().__init__(logs)
        self.lock = threading.Lock()
        self.held: list[tuple[Any, tuple[bytes, ...], dict[str, Any], Future[range]]] | None = None

    def close(self) -> None:
        with self.lock:
            self.held = []

    def open(self) -> None:
        with self.lock:
            held, self.held = self.held or [], None
            for log, payloads, marks, out in held:
                inner = super().append(log, payloads, **marks)
                inner.add_done_callback(lambda f, out=out: copy(f, out))  # type: ignore[misc]

    def append(self, log: Any, payloads: tuple[bytes, ...], **marks: Any) -> Future[range]:
        with self.lock:
            if self.held is None:
                return super().append(log, payloads, **marks)
            out: Future[range] = Future()
            self.held.append((log, payloads, marks, out))
            return out


def copy(source: Future[range], target: Future[range]) -> None:
    exc = source.exception()
    if exc is not None:
        target.set_exception(exc)
    else:
        target.set_result(source.result())


class Flaky(Wrapped):
    """The first ``lose_answers`` appends are stored, but their answers are lost (a timeout)."""

    def __init__(self, logs: Any, lose_answers: int) -> None:
        super().__init__(logs)
        self.left = lose_answers
        self.lost = 0

    def append(self, log: Any, payloads: tuple[bytes, ...], **marks: Any) -> Future[range]:
        stored = super().append(log, payloads, **marks)
        if self.left <= 0:
            return stored
        self.left -= 1
        self.lost += 1
        stored.result(10)
        out: Future[range] = Future()
        out.set_exception(TimedOutError("the answer was lost"))
        return out
