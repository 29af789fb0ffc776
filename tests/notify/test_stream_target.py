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


class Store:
    """An embedded store or a server's client (``sw``), closed and opened again by :meth:`reopen`."""

    def __init__(self, kind: str, path: Path) -> None:
        self._kind = kind
        self._path = path
        self._server: ServerProcess | None = None
        self.sw: Any = None
        self._open()

    def _open(self) -> None:
        if self._kind == "embedded":
            config = seaway.SeawayConfig(notify=NotifyServiceConfig(config_poll_s=0.1, idle_s=0.05))
            self.sw = seaway.Seaway(self._path, config)
            return
        if self._server is None:
            self._server = ServerProcess(self._path)
        else:
            self._server.restart()
        self.sw = seaway.connect(self._server.url)

    def close(self) -> None:
        self.sw.close()
        if self._server is not None:
            assert self._server.stop() == 0, self._server.log_text()[-3000:]

    def forget_log(self) -> None:
        if self._server is not None:
            self._server.log_path.unlink(missing_ok=True)

    def reopen(self) -> None:
        self.close()
        self._open()


@pytest.fixture(params=["embedded", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = Store(request.param, tmp_path / "data")
    yield opened
    opened.close()
    opened.forget_log()  # kept when something went wrong, for the report


def _changes(sw: Any, first: int, n: int) -> None:
    """Log-layer changes: on ``app.*`` logs (what the configuration selects) and on others."""
    for i in range(first, first + n):
        log = sw.logs.get_or_create(f"app.l{i}")
        sw.logs.get_or_create(f"other.l{i}")  # not selected: must not reach the feed
        log.append(b"x")
        log.append(b"y")
        log.trim(1)
    last = sw.logs.get(f"app.l{first + n - 1}")
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


def _selected(sw: Any, after: int) -> list[Any]:
    return [e for e in sw.ledger.read(after + 1, 1000) if e.resource.startswith("log/app.")]


def test_a_stream_target_feeds_the_selected_entries_in_ledger_order_with_stable_ids(store: Store) -> None:
    sw = store.sw
    sw.notify.set(NotifyConfig("feed", SeawayStream("feed/changes"), prefix="log/app."))
    start = sw.ledger.bounds()[1]
    _changes(sw, 0, 4)
    expected = _selected(sw, start)
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

    # Closed and opened again, the plugin goes on from its checkpoint: the feed holds each selected
    # entry once (a clean close leaves nothing in flight), the ids still the ledger's indexes.
    store.reopen()
    sw = store.sw
    _changes(sw, 10, 2)
    expected = _selected(sw, start)
    assert len(expected) == 4 * 2 + 2 + 2 * 2 + 2
    _wait_caught_up(sw, expected[-1].index)
    events = _read_feed(sw, "all", len(expected))
    assert [e["id"] for e in events] == [str(e.index) for e in expected]
    assert sw.notify.status()[0].counters["delivered"] == len(expected)
