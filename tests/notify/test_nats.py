"""The NATS target against a real ``nats-server`` (Debian's, installed by the Makefile), started
here on a free port: refused while the broker is down (counted, retried), everything delivered in
order with stable ids once it is up, and JetStream's acknowledgement and deduplication."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from seaway.ledger import QueueCreated
from seaway.notify import Nats, NotifyConfig, Plugin, make_sender
from tests.notify.fakes import Checkpoints, Clock, FakeLedger
from tests.notify.real_ledger import HARD, assert_partition, at_limit, covered_by, open_store


def _free_port() -> int:
    """A port free now, below the kernel's ephemeral range: the broker binds it later, and a port the
    kernel hands out (to another test's server, or to any outgoing connection) could be taken by then."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10_000, max(low, 10_001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")


class NatsServer:
    def __init__(self, port: int, store_dir: Path) -> None:
        binary = shutil.which("nats-server")
        if binary is None:
            raise AssertionError("nats-server is not installed: `make .venv/.installed` installs it (apt-get)")
        self.url = f"nats://127.0.0.1:{port}"
        self._proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store_dir)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self._proc.poll() is not None:
                    break
                time.sleep(0.05)  # polling a port another process opens: nothing to wait on
        self.stop()
        raise AssertionError(f"nats-server did not start: {self._proc.stderr.read() if self._proc.stderr else ''}")

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)
        if self._proc.stderr is not None:
            self._proc.stderr.close()


@pytest.fixture
def port() -> int:
    return _free_port()


@pytest.fixture
def broker(port: int, tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(port, tmp_path / "js")
    yield server
    server.stop()


class Subscriber:
    """A NATS subscription on its own loop, read after the fact."""

    def __init__(self, url: str, subject: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.got: list[Any] = []

        async def start() -> Any:
            nc = await nats.connect(url)

            async def on(msg: Any) -> None:
                self.got.append(msg)

            await nc.subscribe(subject, cb=on)
            await nc.flush()
            return nc

        self.nc = self.loop.run_until_complete(start())

    def drain(self, count: int) -> list[Any]:
        async def wait() -> None:
            for _ in range(200):
                if len(self.got) >= count:
                    return
                await asyncio.sleep(0.01)

        self.loop.run_until_complete(wait())
        return self.got

    def close(self) -> None:
        self.loop.run_until_complete(self.nc.close())
        self.loop.close()


def test_a_refusing_broker_is_counted_and_retried_then_everything_arrives_in_order(port: int, tmp_path: Path) -> None:
    ledger, checkpoints, clock = FakeLedger(), Checkpoints(), Clock()
    target = Nats(f"nats://127.0.0.1:{port}", subject="seaway.test", timeout_s=2.0)
    config = NotifyConfig("n", target, format="cloudevents-binary")
    plugin = Plugin(config, make_sender(target), ledger, checkpoints, clock)
    for n in range(5):
        ledger.append(QueueCreated(f"q{n}"))
    wait_s = plugin.step()  # nothing listens on the port: refused
    assert plugin.counters["failed"] == 1 and plugin.position == 0 and wait_s > 0
    broker = NatsServer(port, tmp_path / "js")
    try:
        sub = Subscriber(broker.url, "seaway.test.>")
        clock.now_s += wait_s
        plugin.step()
        got = sub.drain(5)
        sub.close()
    finally:
        plugin.close()
        broker.stop()
    assert [m.headers["ce-id"] for m in got] == ["1", "2", "3", "4", "5"]
    assert [m.headers["Nats-Msg-Id"] for m in got] == ["1", "2", "3", "4", "5"]
    assert {m.subject for m in got} == {"seaway.test.queue.created"}
    assert json.loads(got[2].data)["change"] == {"queue": "q2"}
    assert plugin.position == 5 and plugin.counters["delivered"] == 5


def test_jetstream_acknowledges_and_deduplicates_on_the_message_id(broker: NatsServer) -> None:
    loop = asyncio.new_event_loop()

    async def make_stream() -> Any:
        nc = await nats.connect(broker.url)
        await nc.jetstream().add_stream(name="CHANGES", subjects=["seaway.js.>"])
        return nc

    nc = loop.run_until_complete(make_stream())
    target = Nats(broker.url, subject="seaway.js", jetstream=True, timeout_s=5.0)
    ledger, checkpoints, clock = FakeLedger(), Checkpoints(), Clock()
    for n in range(3):
        ledger.append(QueueCreated(f"q{n}"))
    first = Plugin(NotifyConfig("j", target), make_sender(target), ledger, checkpoints, clock)
    first.position = 0  # deliver from the start
    first.step()
    first.close()
    # A plugin that restarts from an older checkpoint re-sends: JetStream drops the duplicates.
    again = Plugin(NotifyConfig("j", target), make_sender(target), ledger, Checkpoints(), clock)
    again.position = 0
    again.step()
    again.close()

    async def count() -> int:
        info = await nc.jetstream().stream_info("CHANGES")
        await nc.close()
        return int(info.state.messages)

    assert loop.run_until_complete(count()) == 3
    loop.close()
    assert first.counters["delivered"] == 3 and again.counters["delivered"] == 3


def test_a_plugin_over_the_real_ledger_publishes_entries_at_the_size_limit_and_a_hard_prune(
        broker: NatsServer, tmp_path: Path) -> None:
    target = Nats(broker.url, subject="seaway.real", timeout_s=5.0)
    config = NotifyConfig("n", target, format="cloudevents-binary")
    sub = Subscriber(broker.url, "seaway.real.>")
    with open_store(tmp_path / "data", hard=HARD) as sw:
        sw.notify.set(config)
        plugin = Plugin(config, make_sender(target), sw.ledger, sw.notify, Clock(),
                        config_version=sw.notify.versions()["n"][0])
        start = plugin.position
        big = [at_limit(f"web/s{i}") for i in range(3)]
        for change in big:
            sw.ledger.append(change)
        plugin.step()
        for n in range(2 * HARD):  # passes the hard bound: entries the plugin has not read are dropped
            sw.ledger.append(QueueCreated(f"q{n}"))
        plugin.step()
        plugin.close()
        tail, head = sw.ledger.bounds()
        saved = sw.notify.checkpoint("n")
    got = sub.drain(4 + 1 + head - tail + 1)
    sub.close()
    assert_partition(covered_by([m.headers["Nats-Msg-Id"] for m in got]), start, head)
    assert all(c.config.encode() in m.data for c, m in zip(big, got[1:4], strict=True))
    assert saved is not None and saved.index == head and saved.counters["missed"] == tail - 1 - (start + 4)
