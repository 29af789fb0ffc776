"""The Spark sources over a replicated cluster (ZooKeeper, 3 nodes, R=2, node 1 the control node):
``address`` names the nodes, and the source reads what ``seaway.connect`` with them serves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.cluster import LocalCluster, zookeeper_unavailable

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    why = zookeeper_unavailable()
    if why is not None:
        pytest.fail(f"the cluster tests need ZooKeeper: {why}")
    with LocalCluster(tmp_path_factory.mktemp("spark-cluster"), nodes=3, replication=2) as local:
        yield local


def _run(df: Any, checkpoint: Path) -> list[Any]:
    rows: list[Any] = []
    query = df.writeStream.foreachBatch(lambda batch, _id: rows.extend(batch.collect())).option(
        "checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(120), "the query did not end"
    finally:
        query.stop()
    return rows


def test_a_stream_and_a_queue_of_a_cluster_are_read_by_spark(spark: Any, cluster: LocalCluster,
                                                             tmp_path: Path) -> None:
    with seaway.connect(cluster.url, timeout_s=30) as sw:
        sw.streams.create_scope("t", exist_ok=True)
        stream = sw.streams.create("t/s", segments=2)
        with stream.writer() as writer:
            for n in range(30):
                writer.write(json.dumps({"n": n}).encode(), routing_key=f"k{n % 4}").result(timeout=30)
        sw.queues.create("jobs")
        sw.queues.create_group("jobs", "g", 2, "HASH", key="user")
        with sw.transaction() as tx:
            sw.queues.producer("jobs").enqueue_batch(tx, [json.dumps({"n": n}).encode() for n in range(20)],
                                                     [{"user": n % 3} for n in range(20)])

    events = spark.read.format("seaway").option("address", cluster.url).option("stream", "t/s").load().collect()
    assert sorted(json.loads(r.payload)["n"] for r in events) == list(range(30))
    streamed = _run(spark.readStream.format("seaway").option("address", cluster.url).option("stream", "t/s").load(),
                    tmp_path / "stream-ckpt")
    assert sorted(json.loads(r.payload)["n"] for r in streamed) == list(range(30))
    entries = _run(spark.readStream.format("seaway").option("address", cluster.url).option("queue", "jobs")
                   .option("group", "g").load(), tmp_path / "queue-ckpt")
    assert sorted(json.loads(r.payload)["n"] for r in entries) == list(range(20))  # each once
