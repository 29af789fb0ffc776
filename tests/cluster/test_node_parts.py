"""A node's parts without a cluster: its RocksDB disk (what a batch sees before and after its sync,
what survives a reopen) and its wire codec (every message round-trips; hostile bytes are typed errors)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seaway.cluster._codec import from_msg, read_reply_from_msg, read_reply_to_msg, to_msg
from seaway.cluster._disk import RocksDisk
from seaway.errors import InvalidArgumentError
from seaway.log.replication import (
    Clean,
    Cleaned,
    Copy,
    Kind,
    LogCopies,
    ReadReply,
    Release,
    Seal,
    Sealed,
    Store,
    Stored,
    Trim,
)
from seaway.wire import cluster_pb2 as pb

LOG = 3


def lsn(epoch: int, esn: int) -> int:
    return epoch << 32 | esn


def test_a_batch_sees_its_own_copies_before_the_sync_and_a_reopen_sees_them_after(tmp_path: Path) -> None:
    disk = RocksDisk(tmp_path / "d")
    state = disk.log(LOG)
    state.put(Copy(lsn(1, 1), Kind.RECORD, b"a"))
    state.put(Copy(lsn(1, 2), Kind.RECORD, b"b"))
    state.seal = 2
    assert [c.payload for c in state.scan(0, 2**64 - 1, 10)] == [b"a", b"b"]  # before the flush: the overlay
    disk.flush()
    state.put(Copy(lsn(1, 3), Kind.HOLE))
    state.drop([lsn(1, 1)])
    assert [c.lsn for c in state.scan(0, 2**64 - 1, 10)] == [lsn(1, 2), lsn(1, 3)]
    disk.flush()
    disk.close()
    again = RocksDisk(tmp_path / "d")
    state = again.log(LOG)
    assert state.seal == 2
    assert [(c.lsn, c.kind) for c in state.scan(0, 2**64 - 1, 10)] == [(lsn(1, 2), Kind.RECORD), (lsn(1, 3), Kind.HOLE)]
    again.close()


def test_a_trim_to_the_last_lsn_drops_the_log_and_leaves_the_next_one(tmp_path: Path) -> None:
    """A trim (a peer's Trim message, or a deleted log's) up to LSN 2**64 - 1 made a key of the LSN
    after it, which does not fit: the error stopped the node's loop for good."""
    disk = RocksDisk(tmp_path / "d")
    disk.log(LOG).put(Copy(lsn(1, 1), Kind.RECORD, b"a"))
    disk.log(LOG + 1).put(Copy(lsn(1, 1), Kind.RECORD, b"b"))
    disk.flush()
    disk.log(LOG).drop_upto(2**64 - 1)
    disk.flush()
    assert disk.log(LOG).scan(0, 2**64 - 1, 10) == []
    assert [c.payload for c in disk.log(LOG + 1).scan(0, 2**64 - 1, 10)] == [b"b"]
    disk.close()


def test_an_unflushed_batch_is_gone_after_a_reopen(tmp_path: Path) -> None:
    disk = RocksDisk(tmp_path / "d")
    disk.log(LOG).put(Copy(lsn(1, 1), Kind.RECORD, b"a"))
    disk.log(LOG).seal = 5
    disk.close()  # no flush: like a crash before the sync
    again = RocksDisk(tmp_path / "d")
    assert again.log(LOG).scan(0, 2**64 - 1, 10) == [] and again.log(LOG).seal == 0
    again.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "drop", "drop_upto", "flush"]), st.integers(1, 40)), max_size=60),
       st.integers(1, 40), st.integers(1, 40), st.integers(1, 10))
def test_the_disk_scans_like_the_in_memory_state(tmp_path_factory: pytest.TempPathFactory,
                                                 ops: list[tuple[str, int]], lo: int, hi: int, limit: int) -> None:
    """Model-based: the RocksDB state with its overlay answers as the simulator's in-memory one."""
    disk = RocksDisk(tmp_path_factory.mktemp("d"))
    model = LogCopies()
    real = disk.log(LOG)
    for op, n in ops:
        if op == "put":
            copy = Copy(lsn(1, n), Kind.RECORD, str(n).encode())
            real.put(copy)
            model.put(copy)
        elif op == "drop" and model.get(lsn(1, n)) is not None:
            real.drop([lsn(1, n)])
            model.drop([lsn(1, n)])
        elif op == "drop_upto":
            real.drop_upto(lsn(1, n))
            model.drop_upto(lsn(1, n))
        elif op == "flush":
            disk.flush()
        assert real.get(lsn(1, n)) == model.get(lsn(1, n))
    assert real.scan(lsn(1, lo), lsn(1, hi), limit) == model.scan(lsn(1, lo), lsn(1, hi), limit)
    disk.close()


COPY = Copy(lsn(4, 7), Kind.BRIDGE, b"p", wave=3, recovery_epoch=5, timestamp_ms=99)


@pytest.mark.parametrize("message", [
    Store(LOG, COPY, lng=6), Stored(LOG, lsn(4, 7), 3, 5, 2, preempted_by=9), Seal(LOG, 6, 3),
    Sealed(LOG, 6, 2, ((4, 6), (5, 0)), (COPY,), 0), Clean(LOG, 6, 3), Cleaned(LOG, 6, 2), Release(LOG, lsn(6, 0)),
    Trim(LOG, lsn(2, 9)),
])
def test_every_message_round_trips(message: object) -> None:
    assert from_msg(pb.Message.FromString(to_msg(message).SerializeToString())) == message


def test_a_read_reply_round_trips() -> None:
    reply = ReadReply(LOG, 2, (COPY,), lsn(4, 8), lsn(1, 1))
    assert read_reply_from_msg(pb.ReadReply.FromString(read_reply_to_msg(reply).SerializeToString())) == reply


def test_a_message_without_a_body_or_of_an_unknown_kind_is_a_typed_error() -> None:
    with pytest.raises(InvalidArgumentError):
        from_msg(pb.Message())
    bad = pb.Message()
    bad.store.copy.kind = 7
    with pytest.raises(InvalidArgumentError):
        from_msg(bad)
    with pytest.raises(InvalidArgumentError):
        to_msg(object())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_hostile_bytes_decode_to_a_message_or_a_typed_error(raw: bytes) -> None:
    """What a node does with a Deliver body from anyone: a message of the protocol, or a clear error."""
    try:
        envelope = pb.Envelope.FromString(raw)
    except Exception:  # protobuf's own DecodeError: gRPC refuses the call before the node sees it
        return
    for msg in envelope.messages:
        try:
            decoded = from_msg(msg)
        except InvalidArgumentError:
            continue
        assert type(decoded).__name__ in {"Store", "Stored", "Seal", "Sealed", "Clean", "Cleaned", "Release", "Trim"}


def test_connecting_to_several_nodes_none_of_which_answers_is_a_typed_error() -> None:
    import seaway  # noqa: PLC0415
    from seaway.errors import UnavailableError  # noqa: PLC0415

    with socket.socket() as a, socket.socket() as b:  # two ports nothing listens on
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        url = f"seaway://127.0.0.1:{a.getsockname()[1]},127.0.0.1:{b.getsockname()[1]}"
        with pytest.raises(UnavailableError, match="no node"):
            seaway.connect(url, timeout_s=5)


@pytest.mark.slow
def test_an_append_that_cannot_be_stored_times_out_and_is_forgotten(tmp_path: Path) -> None:
    """A node keeps no append past its timeout (else stuck appends would fill its bound and then
    refuse every append for good)."""
    from seaway.cluster import ClusterNode, NodeConfig, ZooKeeperProcess  # noqa: PLC0415
    from seaway.errors import TimedOutError  # noqa: PLC0415

    with ZooKeeperProcess(tmp_path / "zk") as zk:
        url = f"zk://127.0.0.1:{zk.port}/t"
        node = ClusterNode(NodeConfig(1, tmp_path / "n1", url, append_timeout_s=0.3)).start()
        try:
            node.create_log(1, 2, (1, 2))  # node 2 never runs: no record can get its 2 copies
            with pytest.raises(TimedOutError):
                node.append(1, b"x", timeout_s=5.0)
            assert node._pending == {}
        finally:
            node.stop()


def test_a_node_beyond_loopback_needs_a_token_and_tls() -> None:
    from seaway.cluster import NodeConfig  # noqa: PLC0415

    zk, nowhere = "zk://127.0.0.1:2181/x", Path("/nonexistent")
    with pytest.raises(InvalidArgumentError, match="loopback"):
        NodeConfig(1, nowhere, zk, listen="0.0.0.0:7071")
    with pytest.raises(InvalidArgumentError, match="loopback"):
        NodeConfig(1, nowhere, zk, listen="0.0.0.0:7071", token="t")
    with pytest.raises(InvalidArgumentError, match="certificate and a key"):
        NodeConfig(1, nowhere, zk, listen="0.0.0.0:7071", token="t", tls_cert=nowhere)
    assert NodeConfig(1, nowhere, zk, listen="0.0.0.0:7071", token="t", tls_cert=nowhere, tls_key=nowhere).token
    assert NodeConfig(1, Path("/nonexistent"), "zk://127.0.0.1:2181/x", listen="[::1]:7071").listen == "[::1]:7071"


@pytest.mark.slow
def test_nodes_with_a_token_and_tls_serve_only_clients_that_have_both(tmp_path: Path) -> None:
    from seaway.cluster import ClusterClient, ClusterNode, NodeConfig, ZooKeeperProcess  # noqa: PLC0415
    from seaway.errors import AuthenticationError, UnavailableError  # noqa: PLC0415
    from seaway.log import Record  # noqa: PLC0415
    from tests.server.test_tls import _self_signed  # noqa: PLC0415

    cert, key, cert_pem = _self_signed(tmp_path)
    with ZooKeeperProcess(tmp_path / "zk") as zk:
        url = f"zk://127.0.0.1:{zk.port}/secure"
        nodes = [ClusterNode(NodeConfig(i, tmp_path / f"n{i}", url, token="s3cret", tls_cert=cert,
                                        tls_key=key)).start() for i in (1, 2)]
        try:
            deadline = time.monotonic() + 30  # each node learns of the other from ZooKeeper a moment after it joins
            while not all(len(n.members()) == 2 for n in nodes) and time.monotonic() < deadline:
                time.sleep(0.05)
            address = "seaways://" + ",".join(n.address for n in nodes)
            with ClusterClient(address, token="s3cret", tls_root_cert=cert_pem) as client:
                client.create_log(1, replication=2)  # each record needs the other node: node-to-node calls
                lsn = client.append(1, b"secret")    # carry the token over TLS too
                assert [i.payload for i in client.read(1, 1, lsn) if isinstance(i, Record)] == [b"secret"]
            with pytest.raises(AuthenticationError):
                ClusterClient(address, token="wrong", tls_root_cert=cert_pem)
            with pytest.raises(AuthenticationError):
                ClusterClient(address, tls_root_cert=cert_pem)
            with pytest.raises(UnavailableError):  # plain text to a TLS port
                ClusterClient(address.replace("seaways://", "seaway://"), token="s3cret")
        finally:
            for node in nodes:
                node.stop()


def test_a_node_refuses_peer_batches_past_its_inbox_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer (or a hostile client with the token) cannot grow a node's memory without bound: past
    its bound the loop's inbox refuses batches with OVERLOADED, and takes them again once drained."""
    from seaway.cluster import (  # noqa: PLC0415
        ClusterNode,
        NodeConfig,
        _node,
    )
    from seaway.errors import OverloadedError  # noqa: PLC0415

    monkeypatch.setattr(_node, "INBOX_MESSAGES_MAX", 10)
    node = ClusterNode(NodeConfig(1, tmp_path, "zk://127.0.0.1:1/x"))  # not started: nothing drains
    node.deliver(2, [Release(LOG, 1)] * 10)
    with pytest.raises(OverloadedError):
        node.deliver(2, [Release(LOG, 2)])
    _, _, messages = node._inbox.get_nowait()
    with node._inbox_lock:  # what the loop does when it takes the batch
        node._inbox_messages -= len(messages)
    node.deliver(2, [Release(LOG, 3)])
