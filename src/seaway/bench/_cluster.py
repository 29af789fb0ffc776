"""``seaway bench cluster``: a replicated log through 3 nodes at R=2 next to one server, measured in the
same run, and the write disruption when the sequencer's node is killed.

- **Appends**: ``clients`` threads each append 100-byte records one at a time (each durable before
  the next: on R nodes in the cluster, synced on the server) for ``seconds``, through the cluster
  (a ZooKeeper and 3 node processes started for the run) and through one ``seaway serve``.
- **Reads**: the whole log read back from LSN 1, through the cluster and through the server.
- **Failover**: a writer appends without pause; the sequencer's node is killed (SIGKILL) ``kills``
  times; each time, the time from the kill to the first append acknowledged in the new epoch.
  Every acknowledged record is then read back: ``acked_lost`` counts those missing (must be 0).

On a 2-core machine the ratio shows what the protocol costs (a sequencer and R copies, each a
gRPC hop and a sync), not scale-out: every node shares the same cores and disk.
"""

from __future__ import annotations

import signal
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway.bench._log import machine
from seaway.cluster import ClusterClient, LocalCluster
from seaway.log import Record
from seaway.server import ServerProcess

FAILOVER_P50_TARGET_S = 1.0
FAILOVER_MAX_TARGET_S = 3.0


@dataclass(frozen=True)
class ClusterBenchConfig:
    clients: int = 8
    seconds: float = 5.0
    kills: int = 10
    record_bytes: int = 100


def _appends(append: Any, clients: int, seconds: float, payload: bytes) -> tuple[int, float]:
    """Appends acknowledged by ``clients`` threads in ``seconds``, and the time they took."""
    counts = [0] * clients
    stop = threading.Event()

    def run(i: int) -> None:
        do = append(i)
        while not stop.is_set():
            do(payload)
            counts[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts), time.perf_counter() - start


def _sequencer_node(client: ClusterClient, log_id: int) -> int | None:
    active = [(s.epoch, reply.node) for reply in client.status() for s in reply.sequencers
              if s.log_id == log_id and s.state == "active"]
    return max(active)[1] if active else None


def run_cluster_bench(config: ClusterBenchConfig) -> dict[str, Any]:
    payload = b"x" * config.record_bytes
    out: dict[str, Any] = {"nodes": 3, "replication": 2, "clients": config.clients, "seconds": config.seconds,
                           "record_bytes": config.record_bytes, "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="seaway-bench-cluster-") as tmp:
        with ServerProcess(Path(tmp) / "single") as server:
            stores = [seaway.connect(server.url) for _ in range(config.clients)]
            try:
                log = stores[0].logs.create("bench")
                logs = [s.logs.get("bench") for s in stores]
                done, took = _appends(lambda i: logs[i].append, config.clients, config.seconds, payload)
                out["append_per_s_single"] = round(done / took)
                start = time.perf_counter()
                read = sum(1 for item in log.read() if isinstance(item, Record))
                out["read_per_s_single"] = round(read / (time.perf_counter() - start))
            finally:
                for store in stores:
                    store.close()
        with LocalCluster(Path(tmp) / "cluster", nodes=3, replication=2, zk_session_s=6.0) as cluster:
            clients = [ClusterClient(cluster.url) for _ in range(config.clients)]
            try:
                clients[0].create_log(1, replication=2)
                done, took = _appends(lambda i: lambda p: clients[i].append(1, p), config.clients, config.seconds,
                                      payload)
                out["append_per_s_cluster"] = round(done / took)
                start = time.perf_counter()
                read = sum(1 for item in clients[0].read(1, 1, _last(clients[0], 1)) if isinstance(item, Record))
                out["read_per_s_cluster"] = round(read / (time.perf_counter() - start))
                out.update(_failover(cluster, clients[0], config.kills, payload))
            finally:
                for client in clients:
                    client.close()
    out["append_ratio"] = round(out["append_per_s_cluster"] / out["append_per_s_single"], 3)
    out["read_ratio"] = round(out["read_per_s_cluster"] / out["read_per_s_single"], 3)
    out["failover_p50_target_s"] = FAILOVER_P50_TARGET_S
    out["failover_max_target_s"] = FAILOVER_MAX_TARGET_S
    return out


def _last(client: ClusterClient, log_id: int) -> int:
    """The log's last acknowledged LSN, as its sequencer's node says."""
    return int(max(s.last_known_good for reply in client.status() for s in reply.sequencers if s.log_id == log_id))


def _failover(cluster: LocalCluster, client: ClusterClient, kills: int, payload: bytes) -> dict[str, Any]:
    client.create_log(2, replication=2)
    acked: dict[int, bytes] = {}
    times: list[float] = []
    n = 0
    for _ in range(kills):
        for _ in range(20):
            n += 1
            data = payload + str(n).encode()
            acked[client.append(2, data)] = data
        victim = _sequencer_node(client, 2)
        assert victim is not None
        old_epoch = max(acked) >> 32
        killed = time.perf_counter()
        cluster.kill(victim, signal.SIGKILL)
        while True:  # append until one is acknowledged in a new epoch
            n += 1
            data = payload + str(n).encode()
            lsn = client.append(2, data)
            acked[lsn] = data
            if lsn >> 32 > old_epoch:
                times.append(time.perf_counter() - killed)
                break
        cluster.restart(victim)
        for _ in range(100):
            if len(client.refresh_members()) == 3:
                break
            time.sleep(0.05)
    got = {item.lsn: item.payload for item in client.read(2, 1, max(acked)) if isinstance(item, Record)}
    lost = sum(1 for lsn, data in acked.items() if got.get(lsn) != data)
    return {"kills": kills, "failover_p50_s": round(statistics.median(times), 3),
            "failover_max_s": round(max(times), 3), "failover_s": [round(t, 3) for t in times], "acked": len(acked),
            "acked_lost": lost}
