"""``seaway bench txn``: the transaction manager alone, against metadata puts in the same run.

Three client processes, each with a connection of its own to a server started for the run, begin
and commit empty transactions one after the other (a begin and a commit are each a round trip and
a synced append to the manager's log, which concurrent ones share). The reference, measured in the
same run by the same processes: single-key metadata puts, each also a round trip and a synced
write. The figure that matters is the ratio of the two rates (pairs over puts): a pair costs two
such calls, so about 0.5 means the manager costs no more than the metadata store it is built beside.
The same runs embedded, from three threads of one process. Each side runs ``rounds`` times,
alternating which goes first; the best of each counts.

Worker processes run ``python -m seaway.bench._txn_worker KIND URL COUNT NAMESPACE``; each
connects, makes one call of its kind as a warm-up, prints ``ready``, waits for a line on its
standard input, then prints one JSON line with what it measured.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._progress import Progress
from seaway.bench import _workers as workers
from seaway.bench._log import cpu_jiffies, machine, steal_pct
from seaway.server import ServerProcess

KINDS = ("txn", "meta")
WORKER_WAIT_S = 600.0


@dataclass(frozen=True)
class TxnBenchConfig:
    clients: int = 3
    """Client processes (remote) and threads (embedded)."""
    pairs: int = 1_000
    """Begin+commit pairs each client makes in a round; as many metadata puts for the reference."""
    rounds: int = 2
    address: str | None = None
    """Use this server instead of starting one."""


def run_ops(kind: str, sw: Any, count: int, namespace: str) -> dict[str, float]:
    """``count`` begin+commit pairs (``txn``) or single-key metadata puts (``meta``), one after the
    other; the wall-clock times they started and ended (comparable across processes)."""
    key = b"k%d" % threading.get_ident()
    started = time.time()
    if kind == "txn":
        for _ in range(count):
            sw.txn.begin().commit()
    else:
        for n in range(count):
            sw.meta.put(namespace, key, b"%d" % n)
    return {"started": started, "ended": time.time(), "ops": count}


def warm_up(kind: str, sw: Any, namespace: str) -> None:
    run_ops(kind, sw, 1, namespace)


def _rate(results: list[dict[str, float]]) -> float:
    elapsed = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return sum(r["ops"] for r in results) / elapsed


def _remote_round(url: str, kind: str, config: TxnBenchConfig) -> tuple[float, float | None]:
    """Ops per second of ``kind`` from ``config.clients`` processes, and the CPU share stolen (%)."""
    namespace = f"bench-txn-{time.time_ns()}"
    python = [sys.executable, "-m", "seaway.bench._txn_worker"]
    procs = [workers.start([*python, kind, url, str(config.pairs), namespace]) for _ in range(config.clients)]
    with workers.killed_at_exit(procs):
        workers.await_ready(procs)  # every worker connected and warm before the clock starts
        before = cpu_jiffies()
        workers.go(procs)
        results = [workers.result(proc, WORKER_WAIT_S) for proc in procs]
        stolen = steal_pct(before, cpu_jiffies())
    return _rate(results), stolen


def _embedded_round(sw: Any, kind: str, config: TxnBenchConfig) -> float:
    namespace = f"bench-txn-{time.time_ns()}"
    warm_up(kind, sw, namespace)
    results: list[dict[str, float]] = []
    start = threading.Barrier(config.clients)

    def client() -> None:
        start.wait()
        results.append(run_ops(kind, sw, config.pairs, namespace))

    threads = [threading.Thread(target=client) for _ in range(config.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(results) != config.clients:
        raise RuntimeError("an embedded benchmark thread failed")
    return _rate(results)


def _rounds(measure: Callable[[str], float], config: TxnBenchConfig, progress: Progress,
            mode: str) -> dict[str, float]:
    """The best rate of each kind over the rounds, the kinds alternating which goes first."""
    best = dict.fromkeys(KINDS, 0.0)
    for round_ in range(config.rounds):
        for kind in KINDS if round_ % 2 == 0 else KINDS[::-1]:
            best[kind] = max(best[kind], measure(kind))
            progress.advance(label=f"{mode}, {kind}, round {round_ + 1}")
    return best


def run_txn_bench(config: TxnBenchConfig) -> dict[str, Any]:
    steal: list[float | None] = []

    def remote(url: str) -> Callable[[str], float]:
        def measure(kind: str) -> float:
            rate, stolen = _remote_round(url, kind, config)
            steal.append(stolen)
            return rate
        return measure

    with Progress(4 * config.rounds, "bench txn") as progress, \
            tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp:
        if config.address:
            remote_best = _rounds(remote(config.address), config, progress, "remote")
            where = config.address
        else:
            with ServerProcess(Path(tmp) / "server") as server:
                remote_best = _rounds(remote(server.url), config, progress, "remote")
                where = f"{server.url} (started for this run)"
        with seaway.open(Path(tmp) / "embedded") as sw:
            embedded_best = _rounds(lambda kind: _embedded_round(sw, kind, config), config, progress, "embedded")
    known_steal = [s for s in steal if s is not None]
    return {
        "benchmark": "txn",
        "server": where,
        "clients": config.clients,
        "pairs_per_client": config.pairs,
        "rounds": config.rounds,
        "txn_pairs_per_s_remote": round(remote_best["txn"], 1),
        "meta_puts_per_s_remote": round(remote_best["meta"], 1),
        "txn_pair_ratio_remote": round(remote_best["txn"] / remote_best["meta"], 3),
        "txn_pairs_per_s_embedded": round(embedded_best["txn"], 1),
        "meta_puts_per_s_embedded": round(embedded_best["meta"], 1),
        "txn_pair_ratio_embedded": round(embedded_best["txn"] / embedded_best["meta"], 3),
        "steal_pct_max": max(known_steal) if known_steal else None,
        "machine": machine(),
    }
