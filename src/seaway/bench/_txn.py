"""``seaway bench txn``: transactions and metadata puts from many clients through one server, against
the disk's own rate of small synced writes, all measured in the same run.

``clients`` client threads (32 by default), spread over ``processes`` processes (4), each with a
connection of its own per process, to a server started for the run:

- ``txn``: each transaction begins, writes one metadata key (its own, declared as a conflict key) and
  commits; the figure is transactions committed per second (``txn_per_s_<clients>``);
- ``meta``: single-key metadata puts (``meta_puts_per_s_<clients>``).

The physical reference, ``disk_syncs_per_s``: 100-byte writes each followed by ``fdatasync``, one after
the other, in a file beside the server's data. ``commits_per_sync`` is the transactions of the best
``txn`` round over the syncs of the server's write-ahead log meanwhile (read from its /metrics): how
many commits and begins share one sync. Targets (issue: the control plane at the data plane's speed):
10,000 transactions and 10,000 puts a second. Each kind runs ``rounds`` times, alternating which goes
first; the best of each counts. The same workload runs embedded (threads of this process) for
comparison.

Worker processes run ``python -m seaway.bench._txn_worker KIND URL COUNT NAMESPACE THREADS``; each
connects, makes one call of its kind per thread as a warm-up, prints ``ready``, waits for a line on
its standard input, then prints one JSON line with what it measured.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import urllib.request
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
TXN_PER_S_TARGET = 10_000
META_PUTS_PER_S_TARGET = 10_000
DISK_PROBE_S = 1.0


@dataclass(frozen=True)
class TxnBenchConfig:
    clients: int = 32
    """Client threads in all (remote: spread over ``processes``; embedded: threads of one process)."""
    processes: int = 4
    ops: int = 200
    """Transactions (or puts) each client thread makes in a round."""
    rounds: int = 2
    address: str | None = None
    """Use this server instead of starting one (then ``commits_per_sync`` is not measured)."""


def run_ops(kind: str, sw: Any, count: int, namespace: str, threads: int = 1) -> dict[str, float]:
    """``count`` operations of ``kind`` from each of ``threads`` threads, one after the other in each;
    the wall-clock times they started and ended (comparable across processes)."""
    done: list[int] = []
    gate = threading.Barrier(threads)

    def client() -> None:
        key = b"k%d-%d" % (os.getpid(), threading.get_ident())
        conflict = namespace.encode() + b"/" + key
        gate.wait()
        if kind == "txn":
            for n in range(count):
                tx = sw.txn.begin()
                tx.stage_put(namespace, key, b"%d" % n)
                tx.add_conflicts(conflict)
                tx.commit()
        else:
            for n in range(count):
                sw.meta.put(namespace, key, b"%d" % n)
        done.append(count)

    started = time.time()
    pool = [threading.Thread(target=client) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    if len(done) != threads:
        raise RuntimeError("a benchmark client thread failed")
    return {"started": started, "ended": time.time(), "ops": sum(done)}


def warm_up(kind: str, sw: Any, namespace: str, threads: int = 1) -> None:
    run_ops(kind, sw, 1, namespace, threads)


def _rate(results: list[dict[str, float]]) -> float:
    elapsed = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return sum(r["ops"] for r in results) / elapsed


def _spread(config: TxnBenchConfig) -> list[int]:
    """Client threads per process."""
    processes = min(config.processes, config.clients)
    return [config.clients // processes + (1 if p < config.clients % processes else 0) for p in range(processes)]


def _remote_round(url: str, kind: str, config: TxnBenchConfig) -> tuple[float, int, float | None]:
    """Ops per second of ``kind``, the ops made, and the CPU share stolen meanwhile (%)."""
    namespace = f"bench-txn-{time.time_ns()}"
    python = [sys.executable, "-m", "seaway.bench._txn_worker"]
    procs = [workers.start([*python, kind, url, str(config.ops), namespace, str(threads)])
             for threads in _spread(config)]
    with workers.killed_at_exit(procs):
        workers.await_ready(procs)  # every worker connected and warm before the clock starts
        before = cpu_jiffies()
        workers.go(procs)
        results = [workers.result(proc, WORKER_WAIT_S) for proc in procs]
        stolen = steal_pct(before, cpu_jiffies())
    return _rate(results), int(sum(r["ops"] for r in results)), stolen


def disk_syncs_per_s(directory: Path, seconds: float = DISK_PROBE_S) -> float:
    """Small synced writes a second, one after the other, in a file in ``directory``."""
    path = directory / "bench-disk-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            count += 1
        return count / elapsed
    finally:
        os.close(fd)
        path.unlink()


def _syncs(metrics_address: str | None) -> int | None:
    """The server's write-ahead log syncs so far, from its /metrics (None without it)."""
    if metrics_address is None:
        return None
    with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("seaway_disk_syncs_total "):
                return int(float(line.split()[1]))
    return None


def run_txn_bench(config: TxnBenchConfig) -> dict[str, Any]:
    steal: list[float | None] = []
    best = dict.fromkeys(KINDS, 0.0)
    commits_per_sync: float | None = None
    with Progress(3 * config.rounds + 1, "bench txn") as progress, \
            tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp:
        disk = disk_syncs_per_s(Path(tmp))
        progress.advance(label="the disk's synced writes")
        server = None if config.address else ServerProcess(Path(tmp) / "server",
                                                           extra_args=("--metrics-listen", "127.0.0.1:0"))
        try:
            url = config.address or (server.url if server else "")
            metrics = server.metrics_address if server else None
            for round_ in range(config.rounds):
                for kind in KINDS if round_ % 2 == 0 else KINDS[::-1]:
                    before = _syncs(metrics)
                    rate, ops, stolen = _remote_round(url, kind, config)
                    after = _syncs(metrics)
                    steal.append(stolen)
                    if rate > best[kind]:
                        best[kind] = rate
                        if kind == "txn" and before is not None and after is not None and after > before:
                            commits_per_sync = ops / (after - before)
                    progress.advance(label=f"remote, {kind}, round {round_ + 1}")
        finally:
            if server is not None:
                server.stop()
        embedded = dict.fromkeys(KINDS, 0.0)
        with seaway.open(Path(tmp) / "embedded") as sw:
            for round_ in range(config.rounds):
                for kind in KINDS if round_ % 2 == 0 else KINDS[::-1]:
                    namespace = f"bench-txn-{time.time_ns()}"
                    warm_up(kind, sw, namespace)
                    embedded[kind] = max(embedded[kind], _rate([run_ops(kind, sw, config.ops, namespace,
                                                                        config.clients)]))
                progress.advance(label=f"embedded, round {round_ + 1}")
    known_steal = [s for s in steal if s is not None]
    n = config.clients
    return {
        "benchmark": "txn",
        "server": config.address or "started for this run",
        "clients": n,
        "processes": len(_spread(config)),
        "ops_per_client": config.ops,
        "rounds": config.rounds,
        f"txn_per_s_{n}": round(best["txn"], 1),
        f"meta_puts_per_s_{n}": round(best["meta"], 1),
        "txn_per_s_target": TXN_PER_S_TARGET,
        "meta_puts_per_s_target": META_PUTS_PER_S_TARGET,
        "disk_syncs_per_s": round(disk, 1),
        "commits_per_sync": None if commits_per_sync is None else round(commits_per_sync, 2),
        f"txn_per_s_{n}_embedded": round(embedded["txn"], 1),
        f"meta_puts_per_s_{n}_embedded": round(embedded["meta"], 1),
        "steal_pct_max": max(known_steal) if known_steal else None,
        "machine": machine(),
    }
