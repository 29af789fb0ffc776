"""Per-key order and exactly-once reading through a server: four writers and a reader group of three
readers, each in its own connection, while the stream scales ten times (five by hand, five by the
auto-scaler's decisions)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import seaway
from seaway import ByEventRate, ScaleConflictError
from seaway.server import ServerProcess
from seaway.streams._autoscale import AutoScaleConfig
from seaway.streams._autoscaling import AutoScaling, AutoScalingConfig
from seaway.testing import FakeClock

WRITERS, KEYS_PER_WRITER, EVENTS_PER_KEY_MIN, READERS = 4, 8, 50, 3


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
            lock = threading.Lock()
            writers_done = threading.Event()
            scaled = threading.Event()  # the writers write until the ten scalings are done

            def write(w: int) -> None:
                try:
                    with seaway.connect(server.url, timeout_s=30) as sw, \
                            sw.streams.get("o/events").writer(f"w{w}") as writer:
                        n = 0
                        while n < EVENTS_PER_KEY_MIN or not scaled.is_set():
                            futures = [(f"w{w}k{k}", n, writer.write(f"w{w}k{k} {n}".encode(), f"w{w}k{k}"))
                                       for k in range(KEYS_PER_WRITER)]
                            for key, seq, future in futures:
                                future.result(60)
                                with lock:
                                    written[key].append(seq)
                            n += 1
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
            assert all("target" in d.reason for d in stream.history() if d.reason != "manual")
            assert len(written) == WRITERS * KEYS_PER_WRITER
            for key, seqs in written.items():
                assert seqs == list(range(len(seqs))) and len(seqs) >= EVENTS_PER_KEY_MIN
                assert read[key] == seqs, f"{key}: read {read[key][:20]}..."
            assert len(group.describe().readers) == 0
    finally:
        code = server.stop()
    assert code == 0, server.log_text()[-3000:]
