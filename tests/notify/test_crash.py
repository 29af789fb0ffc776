"""A server SIGKILLed in the middle of deliveries (at least 20 times; ``SEAWAY_CRASH_KILLS`` for
more) loses no notification, and repeats only what it had in flight.

A client makes control-plane changes (log creations and trims) continuously while the server that
runs the notification plugin is killed at random moments and restarted on the same port; the plugin
posts each change to a webhook receiver this test runs. Once the plugin caught up after the last
restart: every ledger entry the configuration selects (among them every change acknowledged to the
client) was received at least once, with its ledger index as id; a receipt seen twice is the same
index with the same body (a re-send, never a different change under an old id); each resource's
first receipts are in ledger order; and the plugin missed and dropped nothing. Set
``SEAWAY_CRASH_SEED`` to replay a failing run; the seed is in every failure message.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway._errors import SeawayError
from seaway.notify import DeliveryRetry, NotifyConfig, Webhook
from seaway.server import ServerProcess

pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("SEAWAY_CRASH_KILLS", "20"))
PREFIX = "log/crash."
RECEIVER_DELAY_S = 0.02


@dataclass
class Receipts:
    """What the receiver was posted, in arrival order: (id header, body)."""

    got: list[tuple[str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Receiver(BaseHTTPRequestHandler):
    receipts = Receipts()

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        if len(body) < length:
            return  # the sender died mid-request: a torn POST is not a receipt (no answer goes back)
        with self.receipts.lock:
            self.receipts.got.append((self.headers["X-Seaway-Id"], body))
        # A slow target: deliveries take most of the plugin's time, so kills land mid-delivery
        # (after the receipt, before the acknowledgement) rather than between them.
        time.sleep(RECEIVER_DELAY_S)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receipts]]:
    receipts = Receipts()
    handler = type("Handler", (_Receiver,), {"receipts": receipts})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False  # server_close() joins the handlers: no socket outlives the test
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", receipts
    server.shutdown()
    server.server_close()


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("SEAWAY_CRASH_SEED", random.randrange(1 << 30)))


@dataclass
class Acked:
    """The changes whose calls returned to the client: created log names, (name, trim point)s."""

    created: list[str] = field(default_factory=list)
    trimmed: list[tuple[str, int]] = field(default_factory=list)


def _make_changes(url: str, stop: threading.Event, acked: Acked) -> None:
    """Create and trim logs ``crash.<i>`` until ``stop``; a step that fails (the server died) is
    done again from its start (creation is get-or-create; a trim to a new point is a new change)."""
    retry = seaway.RetryPolicy(attempts_max=3, backoff_s=0.05, backoff_max_s=0.2)
    with seaway.connect(url, timeout_s=5, retry=retry) as sw:
        i = 0
        while not stop.is_set():
            name = f"crash.{i}"
            try:
                log = sw.logs.get_or_create(name)
                acked.created.append(name)
                lsn = log.append(b"x")
                log.trim(lsn)
                acked.trimmed.append((name, lsn))
                i += 1
            except SeawayError:
                time.sleep(0.05)


def _wait_caught_up(url: str, seed: int) -> tuple[list[Any], Any]:
    """The selected entries of the ledger, once the plugin's checkpoint is past all of them; and the
    plugin's status then."""
    with seaway.connect(url, timeout_s=10) as sw:
        entries: list[Any] = []
        index = 1
        while batch := sw.ledger.read(index, 1000):
            entries += [e for e in batch if e.resource.startswith(PREFIX)]
            index = batch[-1].index + 1
        assert entries, f"seed {seed}: no change reached the ledger"
        assert sw.ledger.bounds()[0] == 1, f"seed {seed}: the ledger was pruned during the test"
        deadline = time.monotonic() + 30
        while True:
            (status,) = sw.notify.status()
            if status.position is not None and status.position >= entries[-1].index:
                return entries, status
            assert time.monotonic() < deadline, f"seed {seed}: the plugin never caught up: {status}"
            time.sleep(0.1)


def test_killed_server_loses_no_notification_and_repeats_only_resends(
        tmp_path: Path, receiver: tuple[str, Receipts], seed: int) -> None:
    rng = random.Random(seed)
    url, receipts = receiver
    retry = DeliveryRetry(backoff_initial_s=0.05, backoff_max_s=0.2)
    acked = Acked()
    stop = threading.Event()
    with ServerProcess(tmp_path / "data", extra_args=("--notify-private-addresses",)) as server:
        with seaway.connect(server.url) as sw:
            sw.notify.set(NotifyConfig("crash", Webhook(url, timeout_s=5), prefix=PREFIX, retry=retry))
        client = threading.Thread(target=_make_changes, args=(server.url, stop, acked), daemon=True)
        client.start()
        try:
            for _ in range(KILLS):
                time.sleep(rng.uniform(0.05, 0.35))  # a restart takes ~1 s: 20 kills in ~30 s
                server.kill()
                server.restart()
            after = len(acked.trimmed)  # a few changes after the last restart too
            deadline = time.monotonic() + 30
            while len(acked.trimmed) < after + 3:
                assert time.monotonic() < deadline, f"seed {seed}: no change made after the last restart"
                time.sleep(0.01)  # polling what the client thread has done (it appends to a list)
            stop.set()
            client.join(30)
            assert not client.is_alive(), f"seed {seed}: the client is stuck"
            entries, status = _wait_caught_up(server.url, seed)
        except BaseException:
            print(server.log_text()[-4000:])
            raise
        finally:
            stop.set()

    with receipts.lock:
        got = list(receipts.got)
    by_index = {e.index: e for e in entries}
    # Every acknowledged change is in the ledger (a creation; a trim to its point).
    changes = {(e.operation, e.change.name, getattr(e.change, "trim_point", None)) for e in entries}
    assert acked.created and acked.trimmed, f"seed {seed}: the client made no change"
    lost = [n for n in acked.created if ("log.created", n, None) not in changes]
    lost += [f"{n}@{lsn}" for n, lsn in acked.trimmed if ("log.trimmed", n, lsn) not in changes]
    assert not lost, f"seed {seed}: acknowledged changes not in the ledger: {lost[:10]}"

    # Received ids are ledger indexes of selected entries; a repeat is the same index, same body.
    first: dict[int, bytes] = {}
    order: dict[str, list[int]] = {}
    for ident, body in got:
        event = json.loads(body)
        assert ident == event["id"] and ident.isdigit(), f"seed {seed}: id {ident!r} is not a ledger index"
        index = int(ident)
        entry = by_index.get(index)
        assert entry is not None, f"seed {seed}: received {index}, not a selected entry of the ledger"
        assert (event["subject"], event["type"], event["data"]["index"]) == \
            (entry.resource, f"io.seaway.{entry.operation}", index), f"seed {seed}: {index} says another change"
        if index in first:
            assert body == first[index], f"seed {seed}: {index} received twice with different content"
            continue
        first[index] = body
        order.setdefault(entry.resource, []).append(index)
    missing = sorted(set(by_index) - set(first))
    assert not missing, f"seed {seed}: {len(missing)} entries never received, first {missing[:10]}"
    for resource, indexes in order.items():
        assert indexes == sorted(indexes), f"seed {seed}: {resource} received out of ledger order: {indexes}"
    assert status.counters["missed"] == 0 and status.counters["dropped"] == 0, f"seed {seed}: {status}"
    print(f"seed {seed}: {KILLS} kills, {len(entries)} entries, {len(got) - len(first)} re-sends")
