"""Records of the ``notify`` namespace that cannot be read (any client can write the namespace):
each stops only its own plugin, with an ERROR log line and an ``error`` in ``notify status``; the
watcher, the other plugins and configuration changes go on."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import seaway
from seaway._errors import CorruptionError, PermissionDeniedError
from seaway.notify import (
    Checkpoint,
    NotifyConfig,
    NotifyService,
    PluginObserver,
    PluginStatus,
    SeawayStream,
)
from seaway.server import ServerProcess

WAIT_S = 30.0


def _status(sw: seaway.Seaway) -> dict[str, PluginStatus]:
    return {s.name: s for s in sw.notify.status()}


def _wait_until(done: Callable[[], bool], what: str, log: Callable[[], str] = str) -> None:
    """The plugins run in the store's process (here a server's): look at their status, bounded."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"{what} not within {WAIT_S} s\n{log()[-4000:]}"
        time.sleep(0.05)


@pytest.mark.parametrize("raw", [b"\x00 not json", b"[]", b'{"index": -1}', b'{"index": "7"}', b'{"index": true}',
                                 b'{"index": 3, "counters": {"delivered": "x"}}', b'{"index": 3, "counters": []}',
                                 b'{"index": 3, "time_ms": null}'])
def test_a_malformed_checkpoint_is_a_corruption_error_naming_what_it_is(raw: bytes) -> None:
    with pytest.raises(CorruptionError, match="checkpoint"):
        Checkpoint.from_bytes(raw)


def test_a_checkpoint_reads_back_what_was_saved() -> None:
    saved = Checkpoint(12, {"delivered": 3, "missed": 1}, 1_700_000_000_000)
    assert Checkpoint.from_bytes(saved.to_bytes()) == saved


def test_a_garbage_checkpoint_stops_only_its_plugin_through_a_server(tmp_path: Path) -> None:
    """A server's clients may not write its namespaces; a local user with the data directory can
    (while the server is down): the server then runs every other plugin and says what is wrong."""
    data = tmp_path / "data"
    with ServerProcess(data) as server, seaway.connect(server.url) as sw:
        sw.notify.set(NotifyConfig("bad", SeawayStream("feeds/bad"), events=("queue.deleted",)))
        sw.notify.set(NotifyConfig("later", SeawayStream("feeds/later"), events=("queue.created",)))
        with pytest.raises(PermissionDeniedError):
            sw.meta.batch().put("notify", b"checkpoint/bad", b"\x00 not a checkpoint").commit()
    with seaway.open(data, seaway.SeawayConfig(notify=None)) as local:
        local.meta.batch().put("notify", b"checkpoint/bad", b"\x00 not a checkpoint").commit()
    with ServerProcess(data) as server, seaway.connect(server.url) as sw:
        sw.queues.create("q1")
        _wait_until(lambda: _status(sw)["later"].counters["delivered"] >= 1, "the later plugin's delivery",
                    server.log_text)
        bad = _status(sw)["bad"]
        assert bad.error is not None and "checkpoint" in bad.error and bad.position is None
        assert _status(sw)["later"].error is None
        _wait_until(lambda: "its checkpoint is unreadable" in server.log_text(), "the error logged",
                    server.log_text)
        assert "JSONDecodeError" not in server.log_text()
        sw.notify.delete("bad")  # the way out: delete it, and set it again if wanted (from the head)
        sw.notify.set(NotifyConfig("bad", SeawayStream("feeds/bad"), events=("queue.deleted",)))
        assert _status(sw)["bad"].error is None


def test_a_garbage_configuration_record_leaves_the_others_usable(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=None)) as sw:
        delivered: queue.Queue[str] = queue.Queue()

        class Told(PluginObserver):
            def delivered(self, name: str, latency_s: float) -> None:
                delivered.put(name)

        service = NotifyService(sw.notify, sw.ledger, streams=sw.streams, observer=Told())
        try:
            sw.meta.put("notify", b"config/junk", b"{nope")
            sw.meta.put("notify", b"config/other",
                        NotifyConfig("elsewhere", SeawayStream("feeds/x")).to_json().encode())
            sw.meta.put("notify", b"config/\xff", b"{}")
            good = NotifyConfig("good", SeawayStream("feeds/good"), events=("queue.created",))
            sw.notify.set(good)
            assert sw.notify.list() == [good] and list(sw.notify.versions()) == ["good"]
            assert set(sw.notify.unreadable()) == {"junk", "other", "\ufffd"}
            with pytest.raises(CorruptionError, match="junk"):
                sw.notify.get("junk")
            service.refresh()  # what the watcher does at each look: it must not raise
            assert list(service.plugins()) == ["good"]
            assert set(service.not_started()) == {"junk", "other", "\ufffd"}
            sw.queues.create("q1")
            assert delivered.get(timeout=WAIT_S) == "good"
            status = _status(sw)
            assert "configuration" in (status["junk"].error or "") and status["junk"].target == "?"
            assert "elsewhere" in (status["other"].error or "")
            assert len([s for s in status.values() if s.error is not None]) == 3
            sw.notify.delete("junk")  # the way out
            service.refresh()
            assert "junk" not in _status(sw) and "junk" not in service.not_started()
        finally:
            service.close()
