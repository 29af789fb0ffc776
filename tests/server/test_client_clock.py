"""Control-plane times come from the server's clock, not the client's: a client whose clock is a
day ahead must not push a stream's time index (or anything stamped with time) into the future for
everyone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import seaway
from seaway._clock import SystemClock
from seaway.server import ServerProcess

DAY_MS = 86_400_000


def test_a_skewed_client_stamps_streams_and_scalings_with_the_servers_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ServerProcess(tmp_path / "data") as server:  # its own process: its clock is not skewed
        real = SystemClock.now_ms
        monkeypatch.setattr(SystemClock, "now_ms", lambda self: real(self) + DAY_MS)
        with seaway.connect(server.url) as sw:
            before_ms = time.time_ns() // 1_000_000
            sw.streams.create_scope("s")
            stream = sw.streams.create("s/x", segments=1)
            stream.split(stream.current_segments()[0].id, 2)
            stream.record_cut()
            after_ms = time.time_ns() // 1_000_000
            meta = stream.metadata
            stamped = {"created": meta.generation(0).created_ms, "scaled": meta.generation(1).created_ms,
                       "cut": meta.retention_set()[-1][0]}
    for what, at_ms in stamped.items():
        assert before_ms - 60_000 <= at_ms <= after_ms + 60_000, f"{what} stamped {(at_ms - after_ms) / 1000:.0f} s " \
            "after the server's time: the client's clock"
