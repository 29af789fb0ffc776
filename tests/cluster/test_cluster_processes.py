"""A real cluster on loopback: ZooKeeper and five node processes (R=3), killed with SIGKILL, paused with
SIGSTOP and restarted, while clients append and read. Each scenario runs ten times in a loop."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from seaway.cluster import ClusterClient, LocalCluster, placement, zookeeper_unavailable
from seaway.errors import SeawayError
from seaway.log import Gap, GapType, ReadItem, Record
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster-processes")]

ROUNDS = 10


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    why = zookeeper_unavailable()
    if why is not None:
        pytest.fail(f"the cluster tests need ZooKeeper: {why}")
    with LocalCluster(tmp_path_factory.mktemp("cluster"), nodes=5, replication=3, zk_session_s=4.0) as local:
        yield local


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[ClusterClient]:
    for node in range(1, 6):  # every node up and answering before each test
        if node in cluster.paused:
            cluster.kill(node, signal.SIGCONT)
        if cluster.procs[node].poll() is not None:
            cluster.start_node(node)
    with ClusterClient(cluster.url, timeout_s=30.0) as c:
        _wait_members(c, 5)
        yield c


def _wait_members(client: ClusterClient, count: int) -> None:
    for _ in range(200):
        if len(client.refresh_members()) == count:
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"members: {client.members}")


_next_log = iter(range(100, 10_000))


def _new_log(client: ClusterClient) -> int:
    log_id = next(_next_log)
    client.create_log(log_id, replication=3)
    return log_id


class _Restarts:
    """Restarts a killed node in the background while the next round runs (at most one at a time:
    with the next victim, two of five nodes are down at most, and an f-majority of 3 is up)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster
        self._thread: threading.Thread | None = None
        self._node = 0

    def later(self, node: int) -> None:
        self.finish()
        self._node = node
        self._thread = threading.Thread(target=self._cluster.restart, args=(node,))
        self._thread.start()

    def settle(self, node: int) -> None:
        """Before ``node`` is killed: a node still starting may already answer (and sequence) before
        it says it listens, and killing it then would fail its restart."""
        if node == self._node:
            self.finish()

    def finish(self) -> None:
        if self._thread is not None:
            self._thread.join(120)
            self._thread = None
            self._node = 0

    def __enter__(self) -> _Restarts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()  # also when a round failed: no restart is left running into the fixture's teardown


def _sequencer_node(client: ClusterClient, log_id: int) -> int:
    """The node whose sequencer of the log is active in the newest epoch (as the nodes say)."""
    active = [(s.epoch, reply.node) for reply in client.status() for s in reply.sequencers
              if s.log_id == log_id and s.state == "active"]
    return max(active)[1] if active else placement(log_id, sorted(client.refresh_members()))[0]


def _read_all(client: ClusterClient, log_id: int, until: int) -> list[ReadItem]:
    return list(client.read(log_id, 1, until))


def _check(items: list[ReadItem], acked: dict[int, bytes]) -> None:
    got = {i.lsn: i.payload for i in items if isinstance(i, Record)}
    for lsn, payload in acked.items():
        assert got.get(lsn) == payload, f"acknowledged {lsn:#x} read as {got.get(lsn)!r}"
    assert not [i for i in items if isinstance(i, Gap) and i.type is GapType.DATALOSS]


def test_killing_the_sequencer_node_loses_no_acknowledged_record(cluster: LocalCluster, client: ClusterClient) -> None:
    log_id = _new_log(client)
    acked: dict[int, bytes] = {}
    with _Restarts(cluster) as restarts:
        for round_ in range(ROUNDS):
            for i in range(5):
                payload = f"r{round_}-{i}".encode()
                acked[client.append(log_id, payload)] = payload
            victim = _sequencer_node(client, log_id)
            restarts.settle(victim)
            cluster.kill(victim)  # SIGKILL: its sequencer dies with appends acknowledged and released
            payload = f"r{round_}-after".encode()
            acked[client.append(log_id, payload)] = payload  # the next node takes over
            restarts.later(victim)
    items = _read_all(client, log_id, max(acked))
    _check(items, acked)
    epochs = sorted({lsn >> 32 for lsn in acked})
    assert len(epochs) >= ROUNDS + 1  # a new epoch at each kill
    bridges = [g for g in items if isinstance(g, Gap) and g.type is GapType.BRIDGE]
    assert len(bridges) == len(epochs)  # one before the first epoch and one at the end of each epoch left
    again = _read_all(client, log_id, max(acked))
    assert again == items  # every reader sees the same records and gaps


def test_appends_in_flight_at_a_kill_are_all_or_nothing_for_every_reader(cluster: LocalCluster,
                                                                          client: ClusterClient) -> None:
    """Records that were being stored when the sequencer died (on fewer than R nodes) come out as a
    record or a HOLE, the same for every reader, never DATALOSS."""
    log_id = _new_log(client)
    acked: dict[int, bytes] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        with ClusterClient(cluster.url, timeout_s=30.0) as own:
            k = 0
            while not stop.is_set():
                payload = f"w{n}-{k}".encode()
                k += 1
                try:
                    lsn = own.append(log_id, payload)
                except SeawayError:
                    continue
                with lock:
                    acked[lsn] = payload

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    restarts = _Restarts(cluster)
    try:
        for round_ in range(ROUNDS):
            while True:  # 20 more acknowledged since the last kill
                with lock:
                    if len(acked) >= 20 * (round_ + 1):
                        break
                threading.Event().wait(0.01)
            victim = _sequencer_node(client, log_id)
            restarts.settle(victim)
            cluster.kill(victim)
            restarts.later(victim)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        restarts.finish()
    last = max(acked)
    first = _read_all(client, log_id, last)
    _check(first, acked)
    with ClusterClient(cluster.url) as other:
        assert _read_all(other, log_id, last) == first


def test_a_paused_old_sequencer_acknowledges_nothing_after_the_seal(cluster: LocalCluster,
                                                                    client: ClusterClient) -> None:
    client.attempt_timeout_s = 0.5  # how long a silent node is waited for before the next one takes over
    for _ in range(ROUNDS):
        _wait_members(client, 5)  # the node paused last round is back in the membership
        log_id = _new_log(client)
        first = client.append(log_id, b"before")
        victim = _sequencer_node(client, log_id)
        cluster.kill(victim, signal.SIGSTOP)  # cut off: alive in ZooKeeper, answering nothing
        late: list[object] = []

        def stuck_append(victim: int = victim, log_id: int = log_id, late: list[object] = late) -> None:
            """A client cut off with the paused node: its append waits there."""
            with grpc.insecure_channel(cluster.addresses[victim]) as channel:
                stub = pb_grpc.SeawayClusterStub(channel)  # type: ignore[no-untyped-call]
                try:
                    late.append(stub.Append(pb.AppendRequest(log_id=log_id, payload=b"late"), timeout=30).lsn)
                except grpc.RpcError as exc:
                    late.append(exc)

        thread = threading.Thread(target=stuck_append)
        thread.start()
        after = client.append(log_id, b"after")  # the client moves on: a new epoch, the old one sealed
        assert after >> 32 > first >> 32
        cluster.kill(victim, signal.SIGCONT)
        thread.join(60)
        assert late, "the cut-off append never ended"
        if isinstance(late[0], int):  # refused by the seal in its old epoch; any LSN it got is in a new epoch
            assert late[0] >> 32 > after >> 32
        items = _read_all(client, log_id, max([after] + [x for x in late if isinstance(x, int)]))
        payloads = [i.payload for i in items if isinstance(i, Record)]
        assert payloads[:2] == [b"before", b"after"]
        assert payloads.count(b"late") == (1 if isinstance(late[0], int) else 0)


def test_a_reader_below_an_f_majority_waits_without_false_dataloss(cluster: LocalCluster,
                                                                   client: ClusterClient) -> None:
    log_id = _new_log(client)
    acked = {client.append(log_id, f"p{i}".encode()): f"p{i}".encode() for i in range(30)}
    down = [n for n in range(1, 6)][:3]  # three of five down: two answer, below the f-majority of 3
    for node in down:
        cluster.kill(node, signal.SIGSTOP)
    try:
        for _ in range(ROUNDS):
            items = list(client.read(log_id, 1, max(acked), idle_s=0.3))
            assert not [i for i in items if isinstance(i, Gap) and i.type is GapType.DATALOSS]
            assert len([i for i in items if isinstance(i, Record)]) < len(acked)  # it stopped and waited
    finally:
        for node in down:
            cluster.kill(node, signal.SIGCONT)
    _check(_read_all(client, log_id, max(acked)), acked)


def test_racing_sequencers_leave_every_reader_one_sequence(cluster: LocalCluster, client: ClusterClient) -> None:
    log_id = _new_log(client)
    acked: dict[int, bytes] = {}
    nodes = sorted(client.members)
    for round_ in range(ROUNDS):  # clients that disagree on the sequencer's node: each preempts the other
        for node in (nodes[round_ % 5], nodes[(round_ + 2) % 5]):
            with ClusterClient(f"seaway://{cluster.addresses[node]}", timeout_s=30.0) as direct:
                direct._members = {node: cluster.addresses[node]}
                payload = f"n{node}-{round_}".encode()
                acked[direct.append(log_id, payload)] = payload
    items = _read_all(client, log_id, max(acked))
    _check(items, acked)
    with ClusterClient(cluster.url) as other:
        assert _read_all(other, log_id, max(acked)) == items


def test_a_tailing_reader_sees_the_same_sequence_across_failovers(cluster: LocalCluster,
                                                                  client: ClusterClient) -> None:
    log_id = _new_log(client)
    acked: dict[int, bytes] = {}
    seen: list[ReadItem] = []
    done = threading.Event()

    def tail() -> None:
        with ClusterClient(cluster.url) as reader:
            for item in reader.read(log_id, 1, idle_s=15.0):  # it ends 15 s after the last record at most
                seen.append(item)
                if done.is_set() and isinstance(item, Record) and item.lsn >= max(acked):
                    return

    thread = threading.Thread(target=tail)
    thread.start()
    with _Restarts(cluster) as restarts:
        for round_ in range(ROUNDS):
            for i in range(3):
                payload = f"t{round_}-{i}".encode()
                acked[client.append(log_id, payload)] = payload
            victim = _sequencer_node(client, log_id)
            restarts.settle(victim)
            cluster.kill(victim)
            payload = f"t{round_}-x".encode()
            acked[client.append(log_id, payload)] = payload
            restarts.later(victim)
    done.set()
    thread.join(60)
    final = _read_all(client, log_id, max(acked))
    assert seen == final[:len(seen)] and len(seen) == len(final)
    _check(final, acked)


def test_an_unknown_log_is_a_typed_error(client: ClusterClient) -> None:
    from seaway.errors import UnknownLogError  # noqa: PLC0415

    with pytest.raises(UnknownLogError):
        client.append(999_999, b"x")
    with pytest.raises(UnknownLogError):
        client.epoch_record(999_999)


def test_the_cluster_command_answers(cluster: LocalCluster, tmp_path: Path) -> None:
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    def seaway(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "seaway.cli", "cluster", *args, "--connect", cluster.url],
                              capture_output=True, text=True, timeout=120, check=True)
        return done.stdout

    seaway("create-log", "9001", "--replication", "3")
    assert seaway("append", "9001", "one", "two").splitlines() == ["e1n1", "e1n2"]
    assert "e1n2\ttwo" in seaway("read", "9001", "--until", str(1 << 32 | 2))
    status = json.loads(seaway("status", "--json"))
    assert len(status["nodes"]) == 5 and all(n["healthy"] for n in status["nodes"])
    log = next(entry for entry in status["logs"] if entry["log_id"] == 9001)
    assert log["node_sets"][0]["replication"] == 3


def test_a_hostile_client_gets_errors_and_the_node_keeps_serving(cluster: LocalCluster, client: ClusterClient) -> None:
    address = cluster.addresses[1]
    with grpc.insecure_channel(address) as channel:
        for method in ("Deliver", "Append", "Read", "CreateLog", "Trim"):
            call = channel.unary_unary(f"/seaway.cluster.v1.SeawayCluster/{method}")
            for garbage in (b"\xff\xff\xff", b"\x0a\x05junk", bytes(range(40))):
                with pytest.raises(grpc.RpcError):
                    call(garbage, timeout=5)
        stub = pb_grpc.SeawayClusterStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as refused:  # a message for another cluster
            stub.Deliver(pb.Envelope(sender=2, cluster="/elsewhere", messages=[pb.Message()]), timeout=5)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as empty:  # a message of this cluster without a body
            stub.Deliver(pb.Envelope(sender=2, cluster="/seaway", messages=[pb.Message()]), timeout=5)
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as big:
            stub.Append(pb.AppendRequest(log_id=1, payload=b"x" * (2 << 20)), timeout=5)
        assert ("seaway-code", "PAYLOAD_TOO_LARGE") in big.value.trailing_metadata()
    log_id = _new_log(client)
    assert client.append(log_id, b"still here") >> 32 >= 1


def test_a_reader_crosses_a_node_set_change(cluster: LocalCluster, client: ClusterClient) -> None:
    for round_ in range(ROUNDS):
        _wait_members(client, 5)  # nodes paused last round may have been out of the membership a while
        log_id = _new_log(client)
        assert client.epoch_record(log_id).history[0].nodes == (1, 2, 3, 4, 5)
        acked = {client.append(log_id, f"a{i}".encode()): f"a{i}".encode() for i in range(5)}
        client.reconfigure(log_id, (3, 4, 5), replication=3)
        acked.update({client.append(log_id, f"b{i}".encode()): f"b{i}".encode() for i in range(5)})
        record = client.epoch_record(log_id)
        assert record.node_set(record.epoch).nodes == (3, 4, 5) and len(record.history) == 2
        paused = (1, 2) if round_ % 2 else ()  # the old set's f-majority (3 of 5) is still there
        for node in paused:
            cluster.kill(node, signal.SIGSTOP)
        try:
            items = _read_all(client, log_id, max(acked))
        finally:
            for node in paused:
                cluster.kill(node, signal.SIGCONT)
        _check(items, acked)
        assert [i.payload for i in items if isinstance(i, Record)] == [*acked.values()]


def test_a_trimmed_log_reads_as_on_one_node(cluster: LocalCluster, client: ClusterClient) -> None:
    log_id = _new_log(client)
    lsns = [client.append(log_id, f"p{i}".encode()) for i in range(20)]
    client.trim(log_id, lsns[9])
    victim = 1
    cluster.restart(victim)  # the trim point is kept across a restart
    _wait_members(client, 5)
    for _ in range(ROUNDS):
        items = _read_all(client, log_id, lsns[-1])
        assert isinstance(items[0], Gap) and items[0].type is GapType.TRIM and items[0].lsn_hi >= lsns[9]
        assert [i.payload for i in items if isinstance(i, Record)] == [f"p{i}".encode() for i in range(10, 20)]


def test_a_record_left_on_fewer_than_r_nodes_reads_the_same_for_every_reader_when_its_holders_return(
        cluster: LocalCluster, client: ClusterClient) -> None:
    """A record never acknowledged (three of five nodes paused while it is stored), then its sequencer
    killed and another holder paused while the rest recover, then every node back: the recovery kept
    it (a paused node took the old sequencer's store when it resumed, before the seal) or ended the
    epoch before it (the holders purge it when they return); either way every reader reads the same,
    and none sees DATALOSS."""
    client.attempt_timeout_s = 1.0
    with _Restarts(cluster) as restarts:
        for round_ in range(ROUNDS):
            restarts.finish()  # every node is paused or killed below: none may be starting
            _wait_members(client, 5)
            log_id = _new_log(client)
            kept = client.append(log_id, b"kept")
            seq = _sequencer_node(client, log_id)
            holder = next(n for n in range(1, 6) if n != seq)
            others = [n for n in range(1, 6) if n not in (seq, holder)]
            for node in others:
                cluster.kill(node, signal.SIGSTOP)
            with grpc.insecure_channel(cluster.addresses[seq]) as channel:
                stub = pb_grpc.SeawayClusterStub(channel)  # type: ignore[no-untyped-call]
                with pytest.raises(grpc.RpcError):  # stored on the sequencer's node and the holder at most
                    stub.Append(pb.AppendRequest(log_id=log_id, payload=f"orphan{round_}".encode()), timeout=0.5)
            cluster.kill(seq)
            cluster.kill(holder, signal.SIGSTOP)
            for node in others:
                cluster.kill(node, signal.SIGCONT)
            after = client.append(log_id, b"after")  # a node of the three recovers without either holder
            cluster.kill(holder, signal.SIGCONT)  # it purges on the next release
            restarts.later(seq)  # so does the killed sequencer's node, with its copy
            reads = [_read_all(client, log_id, after) for _ in range(2)]
            with ClusterClient(cluster.url) as other:
                reads.append(_read_all(other, log_id, after))
            assert reads[0] == reads[1] == reads[2]
            payloads = [i.payload for i in reads[0] if isinstance(i, Record)]
            # "after" may be there twice: an attempt timed out on a loaded machine is sent again (an
            # append without a producer id is at least once)
            orphan = f"orphan{round_}".encode()
            assert payloads[0] == b"kept" and payloads[-1] == b"after", payloads
            rest = payloads[2:-1] if payloads[1:2] == [orphan] else payloads[1:-1]
            assert all(p == b"after" for p in rest), payloads
            assert kept >> 32 < after >> 32
            assert not [i for i in reads[0] if isinstance(i, Gap) and i.type is GapType.DATALOSS]
