"""Writes events with several writer threads while another thread scales the stream, then reads
every segment log back: shared by the embedded tests and the shared API suite."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from concurrent.futures import Future
from typing import Any

from seaway.log import Record
from seaway.streams import Stream, WriteAck


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
                              scalings: int = 8, seed: int = 0) -> None:
    rng = random.Random(seed)
    done = threading.Event()
    acks: dict[bytes, Future[WriteAck]] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with stream.writer(f"w{n}") as writer:
                for i in range(events_each):
                    key = f"k{(n * 7 + i) % 5}-{n}"
                    event = f"{key}:{i:06d}".encode()
                    future = writer.write(event, key) if i % 10 else writer.write_batch([event], key)
                    with lock:
                        acks[event] = future
                writer.flush(60)
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
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
        except BaseException as exc:  # noqa: BLE001
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
