"""``seaway bench notify``: what change notifications cost the control plane, and how soon they arrive.

The ledger's entries are always written (each is part of its change's atomic write); what this
measures is the cost of *delivering* them. A mix of control-plane operations (per cycle: create a
stream, split its segment, truncate it at its tail, resize a consumer group) runs through a server
started for the run (or ``--address``), from one client, in rounds that alternate:

- ``off``: no notification configuration (the server's plugins are idle);
- ``on``: two plugins configured and delivering, in the server's process, while the operations run:
  one to a webhook (an HTTP server this command runs) and one to NATS (a ``nats-server`` it starts on
  a free port, read by a subscriber here).

Each side runs ``rounds`` times; the best rate of each counts. ``slowdown`` is the rate off over the
rate on, minus 1 (target: at most 0.10). An ``on`` round is timed over the operations only; before
the next round, the plugins catch up with the ledger (and after an ``on`` round the
configurations are deleted and their plugins left time to stop).

Latency: a paced run of the same mix with both plugins on; for each entry received, the time from
the entry's commit (its ``time_ms``, written by the server on this machine) to its receipt at the
webhook server and at the NATS subscriber; p50 and p99 over ``latency_entries`` entries at least.

Two configurations that could both match an entry are refused (as S3 does), so the two targets
split the entries between them by event type: the webhook gets log creations and stream, scope
and queue changes; NATS gets the rest (log seals, trims and removals, ...). Each target's
latency is over the entries it got.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import seaway
from seaway._progress import Progress
from seaway.bench._log import machine
from seaway.errors import InvalidArgumentError, SeawayError
from seaway.ledger import CHANGES
from seaway.notify import Nats, NotifyConfig, Webhook
from seaway.server import ServerProcess

WEBHOOK_CONFIG = "bench-webhook"
NATS_CONFIG = "bench-nats"
NATS_SUBJECT = "seaway.bench"
WEBHOOK_KINDS = ("stream", "scope", "queue", "consumer_group", "reader_group")
"""Kinds of operation the webhook gets (with ``log.created``); NATS gets every other operation."""
CATCH_UP_S = 120.0
"""The longest the plugins may take to deliver what a round wrote."""
STOP_WAIT_S = 3.0
"""Time left for the server's watcher (``config_poll_s``, 2 s) to stop deleted plugins."""
NATS_START_S = 20.0
RECEIPTS_MAX = 1_000_000
"""Receipts kept by each receiver; a run past it is refused (it would not fit anyway)."""


@dataclass(frozen=True)
class NotifyBenchConfig:
    cycles: int = 150
    """Cycles of the mix (4 operations each) per round."""
    rounds: int = 3
    """Rounds of each side (off, on), alternating; the best counts."""
    latency_entries: int = 300
    """Entries each target must receive in the paced latency run (at least)."""
    paced_ops_per_s: float = 20.0
    """The latency run's rate of operations."""
    address: str | None = None
    """Use this server instead of starting one (it must reach this machine's webhook port)."""


def _split_events() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Disjoint event lists for the webhook and NATS that together hold every operation."""
    webhook = tuple(sorted(op for op in CHANGES if op == "log.created" or op.partition(".")[0] in WEBHOOK_KINDS))
    return webhook, tuple(sorted(op for op in CHANGES if op not in webhook))


# --- receivers --------------------------------------------------------------------------------------


class _Receipts:
    """(receipt time s, ledger index, entry time_ms) of each message received, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._got: list[tuple[float, int, int]] = []

    def add(self, body: bytes) -> None:
        now = time.time()
        data = json.loads(body)  # binary-mode CloudEvents: the body is the event's data
        with self._lock:
            if len(self._got) < RECEIPTS_MAX:
                self._got.append((now, int(data["index"]), int(data["time_ms"])))

    def take(self) -> list[tuple[float, int, int]]:
        with self._lock:
            got, self._got = self._got, []
            return got


class _WebhookServer:
    """An HTTP server on a free local port that acknowledges every POST and records it."""

    def __init__(self) -> None:
        self.receipts = _Receipts()
        receipts = self.receipts

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept-alive connections, as a web server's

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receipts.add(body)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass  # one line per request on stderr would drown the figures

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-webhook", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _nats_server() -> Iterator[str]:
    """A ``nats-server`` on a free local port for the block; its URL."""
    binary = shutil.which("nats-server") or ("/usr/sbin/nats-server" if Path("/usr/sbin/nats-server").exists()
                                             else None)
    if binary is None:
        raise InvalidArgumentError("seaway bench notify needs nats-server (Debian's package nats-server)")
    port = _free_port()
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + NATS_START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nats-server did not start") from None
                time.sleep(0.05)  # another process opens the port: nothing to wait on but polling
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


class _NatsSubscriber:
    """A subscription to ``NATS_SUBJECT.>`` on an event loop of its own thread."""

    def __init__(self, url: str) -> None:
        import nats  # noqa: PLC0415 - loaded only when this benchmark runs

        self.receipts = _Receipts()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bench-nats", daemon=True)
        self._thread.start()

        async def start() -> Any:
            nc = await nats.connect(url)

            async def on(msg: Any) -> None:
                self.receipts.add(msg.data)

            await nc.subscribe(f"{NATS_SUBJECT}.>", cb=on)
            await nc.flush()
            return nc

        self._nc = asyncio.run_coroutine_threadsafe(start(), self._loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._nc.close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


# --- the mix ----------------------------------------------------------------------------------------


class _Mix:
    """Cycles of create, split, truncate and resize; each round in a scope and queue of its own."""

    def __init__(self, sw: Any, tag: str) -> None:
        self._sw = sw
        self._scope = f"nb{tag}"
        self._queue = f"nbq{tag}"
        self._size = 1
        sw.streams.create_scope(self._scope)
        sw.queues.create(self._queue)
        sw.queues.create_group(self._queue, "g", 1)
        self._n = 0

    def cycle(self) -> int:
        """One cycle; the operations it made."""
        stream = self._sw.streams.create(f"{self._scope}/s{self._n}")
        self._n += 1
        stream.split(stream.current_segments()[0].id)
        stream.truncate(stream.tail())
        self._size = 3 - self._size  # 1, 2, 1, ...
        self._sw.queues.resize_group(self._queue, "g", self._size, wait_s=None)
        return 4


def _configure(sw: Any, webhook_url: str, nats_url: str) -> None:
    webhook_events, nats_events = _split_events()
    sw.notify.set(NotifyConfig(WEBHOOK_CONFIG, Webhook(webhook_url, timeout_s=5.0), format="cloudevents-binary",
                               events=webhook_events))
    sw.notify.set(NotifyConfig(NATS_CONFIG, Nats(nats_url, subject=NATS_SUBJECT, timeout_s=5.0),
                               format="cloudevents-binary", events=nats_events))


def _unconfigure(sw: Any) -> None:
    for name in (WEBHOOK_CONFIG, NATS_CONFIG):
        if any(c.name == name for c in sw.notify.list()):
            sw.notify.delete(name)
    time.sleep(STOP_WAIT_S)  # the server's watcher stops the plugins within its poll


def _caught_up(sw: Any) -> None:
    """Wait until both plugins' positions reach the ledger's head as it is now."""
    head = sw.ledger.bounds()[1]
    deadline = time.monotonic() + CATCH_UP_S
    while True:
        positions = {s.name: s.position for s in sw.notify.status()}
        if all((positions.get(n) or 0) >= head for n in (WEBHOOK_CONFIG, NATS_CONFIG)):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the notification plugins did not catch up with the ledger: {positions}, head {head}")
        time.sleep(0.05)  # the plugins run in the server: polling their checkpoints is all there is


def _timed_round(sw: Any, tag: str, cycles: int) -> float:
    mix = _Mix(sw, tag)
    mix.cycle()  # warm-up: the first of anything in a round is not what is measured
    ops = 0
    started = time.perf_counter()
    for _ in range(cycles):
        ops += mix.cycle()
    return ops / (time.perf_counter() - started)


def _percentile_ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def _latencies_s(receipts: list[tuple[float, int, int]], since_index: int) -> list[float]:
    return [max(0.0, t - time_ms / 1000) for t, index, time_ms in receipts if index > since_index]


def run_notify_bench(config: NotifyBenchConfig) -> dict[str, Any]:
    if config.cycles < 1 or config.rounds < 1 or config.latency_entries < 1 or not config.paced_ops_per_s > 0:
        raise InvalidArgumentError("--cycles, --rounds, --latency-entries and --paced-ops-per-s must be positive")
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, _nats_server() as nats_url:
        webhook = _WebhookServer()
        subscriber = _NatsSubscriber(nats_url)
        try:
            if config.address:
                with seaway.connect(config.address) as sw:
                    figures = _run(sw, config, webhook, subscriber, nats_url)
                where = config.address
            else:
                # The bench's receiver listens on loopback: a webhook reaches it only where allowed.
                local = ("--notify-private-addresses",)
                with ServerProcess(Path(tmp) / "server", extra_args=local) as server, seaway.connect(server.url) as sw:
                    figures = _run(sw, config, webhook, subscriber, nats_url)
                where = f"{server.url} (started for this run)"
        finally:
            subscriber.close()
            webhook.close()
    return {"benchmark": "notify", "server": where, **figures, "machine": machine()}


def _run(sw: Any, config: NotifyBenchConfig, webhook: _WebhookServer, subscriber: _NatsSubscriber,
         nats_url: str) -> dict[str, Any]:
    run_tag = f"{time.time_ns() % 10**12}"
    best = {"off": 0.0, "on": 0.0}
    _unconfigure_quietly(sw)
    with Progress(2 * config.rounds + 1, "bench notify") as progress:
        for round_ in range(config.rounds):
            for side in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                if side == "on":
                    _configure(sw, webhook.url, nats_url)
                    _caught_up_after_start(sw)
                rate = _timed_round(sw, f"{run_tag}{side}{round_}", config.cycles)
                best[side] = max(best[side], rate)
                if side == "on":
                    _caught_up(sw)
                    _unconfigure(sw)
                progress.advance(label=f"{side}, round {round_ + 1}")
        latency = _latency_run(sw, config, webhook, subscriber, nats_url, f"{run_tag}lat")
        progress.advance(label="latency")
    webhook.receipts.take()
    subscriber.receipts.take()
    return {
        "cycles_per_round": config.cycles,
        "ops_per_cycle": 4,
        "rounds": config.rounds,
        "ops_per_s_off": round(best["off"], 1),
        "ops_per_s_on": round(best["on"], 1),
        "slowdown": round(best["off"] / best["on"] - 1, 3),
        **latency,
    }


def _unconfigure_quietly(sw: Any) -> None:
    """Leave no bench configuration behind from an earlier, interrupted run against the same server."""
    try:
        if any(c.name in (WEBHOOK_CONFIG, NATS_CONFIG) for c in sw.notify.list()):
            _unconfigure(sw)
    except SeawayError:
        pass  # nothing to clean: the run itself will say what is wrong


def _caught_up_after_start(sw: Any) -> None:
    """The server's watcher starts the plugins within its poll: wait until both have saved a
    position at or past one operation made now (so the round runs with them delivering)."""
    sw.streams.create_scope(f"nbw{time.time_ns() % 10**12}")  # an entry for the webhook's plugin
    sw.logs.create(f"nbw{time.time_ns() % 10**12}").seal()  # and one for NATS's (log.sealed)
    _caught_up(sw)


def _latency_run(sw: Any, config: NotifyBenchConfig, webhook: _WebhookServer, subscriber: _NatsSubscriber,
                 nats_url: str, tag: str) -> dict[str, Any]:
    _configure(sw, webhook.url, nats_url)
    _caught_up_after_start(sw)
    since = sw.ledger.bounds()[1]
    webhook.receipts.take()
    subscriber.receipts.take()
    mix = _Mix(sw, tag)
    interval_s = 4 / config.paced_ops_per_s
    got: dict[str, list[float]] = {"webhook": [], "nats": []}
    next_s = time.monotonic()
    deadline = next_s + CATCH_UP_S * 5
    while min(len(v) for v in got.values()) < config.latency_entries:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the latency run did not get {config.latency_entries} entries to each target")
        mix.cycle()
        next_s += interval_s
        time.sleep(max(0.0, next_s - time.monotonic()))  # pacing: the latency of a loaded plugin is another figure
        got["webhook"] += _latencies_s(webhook.receipts.take(), since)
        got["nats"] += _latencies_s(subscriber.receipts.take(), since)
    _caught_up(sw)
    got["webhook"] += _latencies_s(webhook.receipts.take(), since)
    got["nats"] += _latencies_s(subscriber.receipts.take(), since)
    _unconfigure(sw)
    return {
        "latency_paced_ops_per_s": config.paced_ops_per_s,
        "webhook_entries": len(got["webhook"]),
        "nats_entries": len(got["nats"]),
        "webhook_latency_p50_ms": _percentile_ms(got["webhook"], 0.50),
        "webhook_latency_p99_ms": _percentile_ms(got["webhook"], 0.99),
        "nats_latency_p50_ms": _percentile_ms(got["nats"], 0.50),
        "nats_latency_p99_ms": _percentile_ms(got["nats"], 0.99),
        "latency_mean_ms": round(statistics.fmean(got["webhook"] + got["nats"]) * 1000, 1),
    }


def add_notify_bench_parser(kinds: Any) -> None:
    parser = kinds.add_parser("notify", help="control-plane operations/s with notifications off and on, and the "
                                             "latency from commit to webhook and NATS receipt")
    parser.add_argument("--cycles", type=int, default=150,
                        help="cycles of create, split, truncate, resize per round (default 150)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side; the best counts (default 3)")
    parser.add_argument("--latency-entries", type=int, default=300,
                        help="entries each target receives in the latency run, at least (default 300)")
    parser.add_argument("--paced-ops-per-s", type=float, default=20.0, help="the latency run's rate (default 20)")
    parser.add_argument("--address", help="use this server (seaway://host:port) instead of starting one")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def run_notify_bench_command(args: Any) -> dict[str, Any]:
    return run_notify_bench(NotifyBenchConfig(cycles=args.cycles, rounds=args.rounds,
                                              latency_entries=args.latency_entries,
                                              paced_ops_per_s=args.paced_ops_per_s, address=args.address))

