"""Per-key order and exactly-once reading through a server: four writers, each with several writes of
each of its keys in flight at once, and a reader group of three readers, each in its own connection,
while the stream scales ten times (five by hand, five by the auto-scaler's decisions)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import ByEventRate, ScaleConflictError
from seaway.server import ServerProcess
from seaway.streams._autoscale import AutoScaleConfig
from seaway.streams._autoscaling import AutoScaling, AutoScalingConfig
from seaway.testing import FakeClock

WRITERS, KEYS_PER_WRITER, EVENTS_PER_KEY_MIN, READERS = 4, 8, 50, 3
ROUNDS_IN_FLIGHT = 8
"""Writes of each key a writer has in flight at most."""


@pytest.mark.slow
def test_each_event_is_read_once_and_in_key_order_while_the_stream_scales(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    try:
        with seaway.connect(server.url, timeout_s=30) as admin:
            admin.streams.create_scope("o")
            stream = admin.streams.create("o/events", scaling=ByEventRate(1, factor=2, min_segments=2))
            group = admin.streams.create_reader_group("all", stream)
            written: dict[str, list[int]] = defaultdict(list)
            read: dict[str, list[int]] = defaultdict(list)
            errors: list[BaseException] = []
            overlapped = [0]  # writes made while the key's previous one was not acknowledged yet
            lock = threading.Lock()
            writers_done = threading.Event()
            scaled = threading.Event()  # the writers write until the ten scalings are done

            def write(w: int) -> None:
                try:
                    with seaway.connect(server.url, timeout_s=30) as sw, \
                            sw.streams.get("o/events").writer(f"w{w}") as writer:
                        # Up to ROUNDS_IN_FLIGHT writes of each key are in flight at once: a writer
                        # that reordered them (a retry landing after a later write) would show.
                        in_flight: deque[tuple[str, int, Any]] = deque()
                        last: dict[str, Any] = {}

                        def settle(keep: int) -> None:
                            while len(in_flight) > keep:
                                key, seq, future = in_flight.popleft()
                                future.result(60)
                                with lock:
                                    written[key].append(seq)

                        n = 0
                        while n < EVENTS_PER_KEY_MIN or not scaled.is_set():
                            for k in range(KEYS_PER_WRITER):
                                key = f"w{w}k{k}"
                                before = last.get(key)
                                last[key] = writer.write(f"{key} {n}".encode(), key)
                                in_flight.append((key, n, last[key]))
                                if before is not None and not before.done():
                                    with lock:
                                        overlapped[0] += 1
                            n += 1
                            settle(KEYS_PER_WRITER * (ROUNDS_IN_FLIGHT - 1))
                        settle(0)
                except BaseException as exc:
                    errors.append(exc)

            def read_events(r: int) -> None:
                try:
                    with seaway.connect(server.url, timeout_s=30) as sw, \
                            sw.streams.reader_group("all").reader(f"r{r}") as reader:
                        deadline = time.monotonic() + 240
                        while time.monotonic() < deadline:
                            event = reader.read_next(0.2)
                            if event is None:
                                with lock:
                                    if writers_done.is_set() and sum(map(len, read.values())) >= sum(
                                            map(len, written.values())):
                                        return
                                continue
                            key, seq = event.payload.decode().split()
                            with lock:
                                read[key].append(int(seq))
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
            threads += [threading.Thread(target=read_events, args=(r,)) for r in range(READERS)]
            for thread in threads:
                thread.start()

            # Five scalings by hand, five by the auto-scaler (its clock is the test's: one pass a
            # fake minute, over the server's append counts).
            clock = FakeClock(start_ms=int(time.time() * 1000))  # segments are stamped by the real clock
            policy = AutoScaleConfig(split_triggers=((30.0, 1.0),), merge_windows_s=(30.0,), cooldown_s=30.0)
            auto = AutoScaling(admin.streams.controller, clock, AutoScalingConfig(interval_s=None, policy=policy))
            manual = automatic = 0
            deadline = time.monotonic() + 180
            while (manual < 5 or automatic < 5) and time.monotonic() < deadline:
                if manual < 5:
                    current = stream.current_segments()
                    try:
                        if manual % 2 == 0:
                            stream.split(current[0].id)
                        else:
                            stream.merge([current[0].id, current[1].id])
                        manual += 1
                    except ScaleConflictError:
                        pass
                if automatic < 5:
                    clock.advance(60)
                    automatic += len(auto.run_once())
                time.sleep(0.2)
            scaled.set()
            for thread in threads[:WRITERS]:
                thread.join(240)
            writers_done.set()
            for thread in threads[WRITERS:]:
                thread.join(240)
            assert not errors, errors[:3]
            assert manual == 5 and automatic >= 5, (manual, automatic)
            total = sum(map(len, written.values()))
            assert overlapped[0] > total // 4, f"{overlapped[0]} of {total} writes overlapped their key's previous one"
            assert all("target" in d.reason for d in stream.history() if d.reason != "manual")
            assert len(written) == WRITERS * KEYS_PER_WRITER
            for key, seqs in written.items():
                assert seqs == list(range(len(seqs))) and len(seqs) >= EVENTS_PER_KEY_MIN
                assert read[key] == seqs, f"{key}: read {read[key][:20]}..."
            assert len(group.describe().readers) == 0
    finally:
        code = server.stop()
    assert code == 0, server.log_text()[-3000:]
