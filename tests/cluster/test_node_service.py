"""One node in this process, over a real ZooKeeper: what its gRPC service does under load."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from seaway.cluster import ClusterClient
from seaway.cluster._node import ClusterNode, NodeConfig
from seaway.errors import PreemptedError, TrimPastTailError, UnknownLogError
from seaway.log import Record
from seaway.testing import ZooKeeperProcess
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc

LOG = 7


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperProcess]:
    with ZooKeeperProcess(tmp_path_factory.mktemp("zk")) as zk:
        yield zk


def test_appends_that_wait_leave_the_node_threads_for_peers_and_readers(zookeeper: ZooKeeperProcess,
                                                                        tmp_path: Path) -> None:
    """Each append held one of the node's 16 service threads until it was acknowledged, so 16
    appends waiting (here: the log's second node is missing, so none can be) left no thread for a
    peer's messages (a recovery's seals, stores) nor for readers: the node stopped answering until
    the appends timed out. Appends beyond a share of the threads are now refused at once, retriable."""
    node = ClusterNode(NodeConfig(node_id=1, data_dir=tmp_path / "n1", cluster=f"zk://{zookeeper.hosts}/svc",
                                  append_timeout_s=20.0)).start()
    channel = grpc.insecure_channel(node.address)
    try:
        node.create_log(LOG, 2, (1, 2))  # node 2 never joins: no append can get its two copies
        stub = pb_grpc.SeawayClusterStub(channel)  # type: ignore[no-untyped-call]
        done = threading.Event()
        outcomes: list[grpc.StatusCode] = []

        def append() -> None:
            try:
                stub.Append(pb.AppendRequest(log_id=LOG, payload=b"x"), timeout=15.0)
            except grpc.RpcError as exc:
                outcomes.append(exc.code())
            if len(outcomes) >= 4:
                done.set()

        writers = [threading.Thread(target=append, daemon=True) for _ in range(20)]
        for writer in writers:
            writer.start()
        assert done.wait(10.0), "no append beyond the node's share was refused"
        reply = stub.Status(pb.StatusRequest(), timeout=3.0)  # a thread is free to answer
        assert reply.node == 1
        assert set(outcomes) == {grpc.StatusCode.UNAVAILABLE}
    finally:
        channel.close()
        node.stop()


def test_a_trim_past_the_released_tail_is_refused_and_later_appends_stay_readable(zookeeper: ZooKeeperProcess,
                                                                                   tmp_path: Path) -> None:
    """A trim was checked against the log's epoch only: a trim point past the tail of the current
    epoch was taken, and the appends acknowledged after it were dropped by every node (and read as
    TRIM): acknowledged records lost by a client's mistake."""
    node = ClusterNode(NodeConfig(node_id=1, data_dir=tmp_path / "n1", cluster=f"zk://{zookeeper.hosts}/trim"))
    node.start()
    try:
        with ClusterClient(f"seaway://{node.address}") as client:
            client.create_log(LOG, 1, (1,))
            first = client.append(LOG, b"a")
            with pytest.raises(TrimPastTailError):
                client.trim(LOG, first + 1000)
            later = [client.append(LOG, f"b{i}".encode()) for i in range(3)]
            items = list(client.read(LOG, 1, later[-1]))
            assert [i.payload for i in items if isinstance(i, Record)] == [b"a", b"b0", b"b1", b"b2"]
            client.trim(LOG, first)  # up to an acknowledged record: taken
            items = list(client.read(LOG, 1, later[-1]))
            assert [i.payload for i in items if isinstance(i, Record)] == [b"b0", b"b1", b"b2"]
    finally:
        node.stop()


def test_a_trim_reads_the_replica_on_the_node_loop_only(zookeeper: ZooKeeperProcess, tmp_path: Path) -> None:
    """The replica and its RocksDB are the loop's: a trim's check of the release point, made from
    a service thread, raced the loop's writes (rocksdict refuses a call made while another thread's
    call on the same database is in progress: "Already mutably borrowed"), and a node could die."""
    node = ClusterNode(NodeConfig(node_id=1, data_dir=tmp_path / "n1", cluster=f"zk://{zookeeper.hosts}/loop"))
    node.start()
    try:
        with ClusterClient(f"seaway://{node.address}") as client:
            client.create_log(LOG, 1, (1,))
            first = client.append(LOG, b"a")
            replica = node._replica
            assert replica is not None
            threads: list[str] = []
            released = replica.released

            def on_which_thread(log_id: int) -> int:
                threads.append(threading.current_thread().name)
                return released(log_id)

            replica.released = on_which_thread  # type: ignore[method-assign]
            client.trim(LOG, first)
            assert threads and set(threads) == {"seaway-node-loop"}, threads
    finally:
        node.stop()


def test_appends_to_logs_that_do_not_exist_leave_no_sequencer_behind(zookeeper: ZooKeeperProcess,
                                                                      tmp_path: Path) -> None:
    """An append to an unknown log left a failed sequencer in the node for good (its ticks ran
    forever), so a client appending to many wrong log ids grew the node without bound."""
    node = ClusterNode(NodeConfig(node_id=1, data_dir=tmp_path / "n1", cluster=f"zk://{zookeeper.hosts}/unknown"))
    node.start()
    try:
        for log_id in range(1000, 1100):
            with pytest.raises(UnknownLogError):
                node.append(log_id, b"x")
        assert node.status() == []
    finally:
        node.stop()


def test_a_node_set_change_that_loses_its_race_is_an_error(zookeeper: ZooKeeperProcess, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A reconfigure returned as soon as the node had started a sequencer for it, so one whose
    compare-and-set of the epoch record lost (another sequencer took an epoch first) reported
    success while the log kept its node set. It now returns once the new sequencer is active."""
    node = ClusterNode(NodeConfig(node_id=1, data_dir=tmp_path / "n1", cluster=f"zk://{zookeeper.hosts}/race"))
    node.start()
    try:
        node.create_log(LOG, 1, (1,))
        assert node._zk is not None
        monkeypatch.setattr(node._zk, "set_record", lambda *args: None)  # every compare-and-set loses
        with pytest.raises(PreemptedError):
            node.reconfigure(LOG, 1, (1,))
        monkeypatch.undo()
        node.reconfigure(LOG, 1, (1,))
        assert node.epoch_record(LOG)[0].epoch == 1
    finally:
        node.stop()
