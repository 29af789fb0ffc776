"""``seaway.connect("seaway://h1,h2,h3")``: the whole API over a cluster (ZooKeeper and 3 node
processes, R=2; node 1 also the control node). Logs are read and appended at the nodes; metadata,
transactions, the ledger and notifications at the control node, which is one per cluster and whose
absence is a clear, typed error while the logs go on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.cluster import ClusterLogs, LocalCluster, zookeeper_unavailable
from seaway.errors import ControlNodeUnavailableError, UnavailableError
from seaway.log import Record


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    why = zookeeper_unavailable()
    if why is not None:
        pytest.fail(f"the cluster tests need ZooKeeper: {why}")
    with LocalCluster(tmp_path_factory.mktemp("control"), nodes=3, replication=2) as local:
        yield local


def test_streams_queues_and_transactions_over_a_cluster(cluster: LocalCluster) -> None:
    assert cluster.control_address is not None
    with seaway.connect(cluster.url, timeout_s=30) as sw:
        assert isinstance(sw.logs, ClusterLogs)  # the logs at the nodes, not through the control node
        sw.streams.create_scope("s")
        events = sw.streams.get_or_create("s/events", segments=2)
        with events.writer("w") as writer:
            for i in range(20):
                writer.write(f"e{i}".encode(), routing_key=f"k{i % 3}")
            writer.flush()
        got: list[bytes] = []
        with sw.streams.get_or_create_reader_group("rg", events).reader("r1") as reader:
            for _ in range(100):
                event = reader.read_next(timeout_s=0.5)
                if event is not None:
                    got.append(event.payload)
                if len(got) >= 20:
                    break
        assert sorted(got) == sorted(f"e{i}".encode() for i in range(20))

        sw.queues.create("jobs")
        sw.queues.create_group("jobs", "workers", 2, "ROUND_ROBIN")
        with sw.transaction() as tx:
            sw.queues.producer("jobs").enqueue_batch(tx, [b"a", b"b", b"c", b"d"])
        delivered: list[bytes] = []
        for _ in range(20):
            for consumer_id in (0, 1):
                with sw.transaction() as tx:
                    delivered += [e.payload for e in
                                  sw.queues.consumer("jobs", "workers", consumer_id).dequeue(tx, 10, timeout_s=0.5)]
            if len(delivered) >= 4:
                break
        assert sorted(delivered) == [b"a", b"b", b"c", b"d"]

        # The stream's segments are logs of the cluster: another client of the nodes reads them.
        with ClusterLogs(cluster.url) as logs:
            names = {log.name for log in logs.list()}
        assert any("events" in name for name in names), names
        assert sw.ledger.read(0, 1000)  # the control node's ledger recorded the changes


def test_a_second_control_node_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "seaway.cli", "serve", "--cluster", cluster.zk_url, "--node-id", "9",
         "--data-dir", str(tmp_path / "n9"), "--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0"],
        check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "node 1" in proc.stderr and "control node" in proc.stderr, proc.stderr[-2000:]


def test_the_control_node_down_is_a_typed_error_and_the_logs_go_on(cluster: LocalCluster) -> None:
    with seaway.connect(cluster.url, timeout_s=5) as sw:
        log = sw.logs.get_or_create("plain")
        first = log.append(b"before")
        cluster.kill(1)
        try:
            with pytest.raises(ControlNodeUnavailableError, match="control node 1"):
                sw.meta.get("app", b"k")
            later = log.append(b"after")  # node 1 was a node of the log's set, or its sequencer: others go on
            assert later > first
            payloads = [i.payload for i in sw.logs.read({log.id: 1}, later) if isinstance(i, Record)]
            assert payloads == [b"before", b"after"]
            # A new connection (the node's ZooKeeper session may not have expired yet: it is still named)
            with pytest.raises(ControlNodeUnavailableError), seaway.connect(cluster.url, timeout_s=5) as again:
                again.meta.get("app", b"k")
        finally:
            cluster.restart(1)
    with seaway.connect(cluster.url, timeout_s=30) as sw:  # back, on the same data directory
        assert sw.meta.get("app", b"k") is None
        assert isinstance(seaway.errors.ControlNodeUnavailableError("x"), UnavailableError)
