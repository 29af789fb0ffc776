"""The Seaway-stream target: a plugin writes the entries its configuration selects as events of a
stream of the same store, which any reader reads back in ledger order, each with its index as id;
embedded, and in a server's process for its clients."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.notify import NotifyConfig, NotifyServiceConfig, SeawayStream
from seaway.server import ServerProcess


@pytest.fixture(params=["embedded", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "embedded":
        config = seaway.SeawayConfig(notify=NotifyServiceConfig(config_poll_s=0.1, idle_s=0.05))
        with seaway.Seaway(tmp_path / "data", config) as sw:
            yield sw
    else:
        with ServerProcess(tmp_path / "data") as server, seaway.connect(server.url) as sw:
            yield sw


def _changes(sw: Any, n: int) -> None:
    """Log-layer changes: on ``app.*`` logs (what the configuration selects) and on others."""
    for i in range(n):
        log = sw.logs.get_or_create(f"app.l{i}")
        sw.logs.get_or_create(f"other.l{i}")  # not selected: must not reach the feed
        log.append(b"x")
        log.append(b"y")
        log.trim(1)
    last = sw.logs.get(f"app.l{n - 1}")
    last.seal()
    sw.logs.delete(last)


def _read_feed(sw: Any, group: str, count: int, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Read ``count`` events of ``feed/changes`` (waiting for the plugin to write them), then check
    that nothing more comes."""
    sw.streams.create_reader_group(group, "feed/changes")
    events: list[dict[str, Any]] = []
    with sw.streams.reader_group(group).reader("r") as reader:
        deadline = time.monotonic() + timeout_s
        while len(events) < count and time.monotonic() < deadline:
            event = reader.read_next(0.5)
            if event is not None:
                events.append(json.loads(event.payload))
        extra = reader.read_next(1.0)
        assert extra is None, f"more events than the ledger selects: {extra}"
    return events


def _wait_caught_up(sw: Any, index: int, timeout_s: float = 30.0) -> None:
    """Until the plugin's checkpoint is at ``index`` (it has written everything up to it)."""
    deadline = time.monotonic() + timeout_s
    while (sw.notify.status()[0].position or 0) < index:
        assert time.monotonic() < deadline, f"the plugin is stuck: {sw.notify.status()}"
        time.sleep(0.05)


def test_a_stream_target_feeds_the_selected_entries_in_ledger_order_with_stable_ids(store: Any) -> None:
    sw = store
    sw.notify.set(NotifyConfig("feed", SeawayStream("feed/changes"), prefix="log/app."))
    start = sw.ledger.bounds()[1]
    _changes(sw, 4)
    expected = [e for e in sw.ledger.read(start + 1, 1000) if e.resource.startswith("log/app.")]
    assert len(expected) == 4 * 2 + 2  # four creations and trims, a seal, a removal
    _wait_caught_up(sw, expected[-1].index)
    events = _read_feed(sw, "check", len(expected))
    # One segment (the default): the feed's order is the order the plugin wrote, the ledger's.
    assert [e["id"] for e in events] == [str(e.index) for e in expected]
    assert [e["subject"] for e in events] == [e.resource for e in expected]
    assert [e["type"] for e in events] == [f"io.seaway.{e.operation}" for e in expected]
    assert all(e["data"]["index"] == int(e["id"]) for e in events)
    # The plugin's checkpoint is past every entry it wrote.
    (status,) = sw.notify.status()
    assert status.name == "feed" and status.position is not None and status.position >= expected[-1].index
    assert status.counters["delivered"] == len(expected)
