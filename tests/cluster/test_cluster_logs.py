"""``ClusterLogs``: the logs API (``LogsApi``) over a real cluster (ZooKeeper and 3 node processes, R=2,
one for the whole session), checked by the shared log-level tests of tests/api and by its own."""

from __future__ import annotations

import importlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from seaway.cluster import ClusterClient, ClusterLogs, LocalCluster, placement, zookeeper_unavailable
from seaway.errors import (
    InvalidArgumentError,
    LogDeletedError,
    LogExistsError,
    LogSealedError,
    PayloadTooLargeError,
    TailMismatchError,
    TrimPastTailError,
    UnknownLogError,
)
from seaway.log import LSN_MAX, Gap, GapType, LogsApi, Record
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc
from tests.api.conftest import Api

pytestmark = [pytest.mark.xdist_group("cluster-logs")]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    why = zookeeper_unavailable()
    if why is not None:
        pytest.fail(f"the cluster tests need ZooKeeper: {why}")
    with LocalCluster(tmp_path_factory.mktemp("cluster-logs"), nodes=3, replication=2) as local:
        yield local


@pytest.fixture(scope="session")
def cluster_logs(local_cluster: LocalCluster) -> Iterator[ClusterLogs]:
    with ClusterLogs(local_cluster.url, timeout_s=30.0, attempt_timeout_s=20.0) as logs:
        yield logs


class _Store:
    """What the shared tests use of a store: its ``logs``, and where a connection keeps per-log
    append state (a deleted log must leave none)."""

    def __init__(self, logs: ClusterLogs) -> None:
        self.logs = logs
        self._coalescers = logs._coalescers
        self._producers = logs._sequences


@pytest.fixture
def api(cluster_logs: ClusterLogs, local_cluster: LocalCluster) -> Api:
    return Api(_Store(cluster_logs), "cluster", local_cluster.url)


def _records(items: list[Any]) -> list[bytes]:
    return [i.payload for i in items if isinstance(i, Record)]


def test_it_is_a_logs_api(cluster_logs: ClusterLogs) -> None:
    def takes(logs: LogsApi) -> LogsApi:
        return logs
    assert takes(cluster_logs) is cluster_logs


def test_names_groups_and_attributes(api: Api) -> None:
    logs = api.sw.logs
    name = api.name("named")
    log = logs.create(name, backlog_s=60.0)
    assert log.name == name and log.id >= 1 and log.attributes.backlog_s == 60.0
    assert logs.get(name).id == log.id and logs.get(log.id).name == name
    with pytest.raises(LogExistsError):
        logs.create(name)
    group = api.name("group")
    base = 1_000_000 + 1000 * api.number()
    made = logs.create_group(group, base, base + 9, payload_bytes_max=1000)
    assert made.first_id == base
    with pytest.raises(LogExistsError):
        logs.create_group(api.name("overlap"), base + 5, base + 20)
    inside = logs.create(api.name("in-group"), group=group)
    assert base <= inside.id <= base + 9 and inside.attributes.payload_bytes_max == 1000
    assert inside.info.group == group
    assert any(g.name == group for g in logs.groups())
    assert {log.id, inside.id} <= {h.id for h in logs.list()}
    with pytest.raises(UnknownLogError):
        logs.create(api.name(), group=api.name("no-such-group"))
    with pytest.raises(InvalidArgumentError):
        logs.create("bad name with spaces")
    with pytest.raises(InvalidArgumentError, match="at most 1048576 bytes"):  # a node stores no larger record
        logs.create(api.name(), payload_bytes_max=2 << 20)
    with pytest.raises(PayloadTooLargeError):
        inside.append(b"x" * 1001)
    again = logs.get_or_create(name)
    assert again.id == log.id


def test_batches_take_consecutive_lsns_and_a_retried_batch_is_stored_once(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    first = log.append_batch([b"a", b"b", b"c"])
    assert len(first) == 3 and first.step == 1
    producer = b"p-%d" % api.number()
    once = log.append_batch([b"d", b"e"], producer_id=producer, sequence=7)
    twice = log.append_batch([b"d", b"e"], producer_id=producer, sequence=7)
    assert once == twice
    single = log.append(b"f")
    assert single == once[-1] + 1
    assert _records(list(log.read())) == [b"a", b"b", b"c", b"d", b"e", b"f"]
    with pytest.raises(TailMismatchError):
        log.append_batch([b"no"], if_tail=single - 1)
    assert log.append_batch([b"yes"], if_tail=single) == range(single + 1, single + 2)


def test_seal_and_delete_refuse_appends_as_one_node_does(api: Api) -> None:
    logs = api.sw.logs
    log = logs.create(api.name())
    lsns = log.append_batch([b"1", b"2"])
    assert log.final_lsn() is None
    final = log.seal()
    assert final == lsns[-1] == log.final_lsn() == log.tail_lsn()
    assert log.seal() == final
    with pytest.raises(LogSealedError):
        log.append(b"late")
    items = list(logs.read({log: 1}, until=LSN_MAX))
    assert _records(items) == [b"1", b"2"]
    assert isinstance(items[-1], Gap) and items[-1].type is GapType.SEALED and items[-1].lsn_lo == final + 1
    logs.delete(log)  # a sealed log is deleted too
    with pytest.raises(LogDeletedError):
        log.tail_lsn()
    with pytest.raises(LogDeletedError):
        logs.delete(log)
    doomed = logs.create(api.name())
    doomed.append(b"x")
    logs.delete(doomed)
    with pytest.raises(LogDeletedError):
        logs.get(doomed.id)
    with pytest.raises(UnknownLogError):
        logs.get(doomed.name)
    with pytest.raises((LogDeletedError, UnknownLogError)):
        doomed.append(b"y")
    reborn = logs.create(doomed.name)  # the name is free again, the id is not
    assert reborn.id != doomed.id


def test_retention_trims_what_is_older_than_the_backlog(api: Api) -> None:
    logs = api.sw.logs
    short = logs.create(api.name("short"), backlog_s=0.2)
    kept = logs.create(api.name("kept"))
    old = short.append_batch([b"old1", b"old2"])
    kept.append(b"kept")
    deadline = time.monotonic() + 0.25
    while time.monotonic() < deadline:  # retention judges by the records' age: let the first ones age
        time.sleep(0.05)
    young = short.append(b"young")
    trimmed = logs.run_retention()
    assert short.id in trimmed and kept.id not in trimmed
    assert short.trim_point() == young - 1 >= old[-1]
    assert _records(list(short.read())) == [b"young"] and _records(list(kept.read())) == [b"kept"]
    assert logs.partitions() == []


def test_a_batch_sent_twice_at_once_is_stored_once(cluster_logs: ClusterLogs) -> None:
    """The second copy of an idempotent batch arrives while the first is still being stored: both
    are answered with the same LSNs, and the records are there once."""
    log = cluster_logs.create(f"twice-{time.monotonic_ns()}")
    log.append(b"first")  # the log's sequencer is active: both copies go to it
    node = placement(log.id, sorted(cluster_logs.client.refresh_members()))[0]
    stub = cluster_logs.client.stub(node)
    assert stub is not None
    request = pb.AppendBatchRequest(log_id=log.id, payloads=[b"x" * 1000] * 500, producer_id=b"twice", sequence=3)
    calls = [stub.AppendBatch.future(request, timeout=20) for _ in range(2)]
    replies = [call.result() for call in calls]
    assert replies[0].first_lsn == replies[1].first_lsn and replies[0].count == 500
    assert len(_records(list(log.read()))) == 501


def test_a_sequence_reused_for_another_batch_is_refused(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    producer = b"p-%d" % api.number()
    first = log.append_batch([b"a", b"b"], producer_id=producer, sequence=0)
    with pytest.raises(InvalidArgumentError, match="sequence 0"):
        log.append_batch([b"a", b"b", b"c"], producer_id=producer, sequence=0)
    assert log.append_batch([b"a", b"b"], producer_id=producer, sequence=0) == first


def test_a_reader_is_bounded_in_bytes(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    log.append_batch([bytes([i]) * 1000 for i in range(20)])
    big = log.append(b"B" * 50_000)
    with api.sw.logs.reader(buffered_bytes_max=4000) as reader:
        reader.start_reading(log, 1, big)
        first: list[Any] = []
        while not any(isinstance(i, Record) for i in first):
            first += reader.read(100, timeout_s=10)
        assert 0 < sum(len(i.payload) for i in first if isinstance(i, Record)) <= 4000
        assert len(reader.read(100, timeout_s=10, bytes_max=2500)) == 2
        assert len(reader.read(100, timeout_s=10, bytes_max=1)) == 1  # at least one record, whatever its size
        rest = list(reader)
    assert _records(first + rest)[-1] == b"B" * 50_000 and len(_records(first + rest)) == 21 - 3


def test_a_seal_decides_every_append_this_connection_made_before_it(api: Api) -> None:
    """The seal went to the sequencer at once while the appends made before it waited their turn
    (one batch of a log in flight at a time), so it could overtake them and they were refused."""
    log = api.sw.logs.create(api.name())
    futures = [log.append_batch_async([b"%d" % i]) for i in range(100)]
    final = log.seal()
    lsns = [f.result(30)[0] for f in futures]
    assert lsns == sorted(lsns) and lsns[-1] == final


def test_trim_find_time_and_counts(api: Api) -> None:
    logs = api.sw.logs
    log = logs.create(api.name())
    before = int(time.time() * 1000)
    early = log.append_batch([b"a", b"b"])
    time.sleep(0.02)  # the records below must be stamped later than the first ones
    middle = int(time.time() * 1000)
    late = log.append_batch([b"c", b"d"])
    assert log.find_time(before - 1000) == early[0]
    assert log.find_time(middle) == late[0]
    assert log.find_time(int(time.time() * 1000) + 60_000) == log.tail_lsn() + 1
    assert logs.count_records({log.id: (1, None)}) == {log.id: 4}
    with pytest.raises(TrimPastTailError):
        log.trim(log.tail_lsn() + 1)
    log.trim(early[-1])
    assert log.trim_point() == early[-1]
    items = list(log.read())
    assert isinstance(items[0], Gap) and items[0].type is GapType.TRIM and _records(items) == [b"c", b"d"]
    assert logs.count_records({log.id: (1, None)}) == {log.id: 2}
    assert logs.bounds([log.id]) == {log.id: (late[-1], None, early[-1])}
    assert logs.append_counts([log.id]) == {log.id: (4, 4)}
    assert log.data_size() > 0


# --- the shared log-level tests of tests/api, run against the cluster ------------------------------

SHARED = ("test_shared", "test_append_counts_shared", "test_count_records_shared", "test_lifecycle_shared",
          "test_log_bounds_shared", "test_reader_shared", "test_single_appends")
"""The log-level shared suites (tests/api/test_writer_shared.py writes through streams: not here)."""


NOT_APPLICABLE = {
    "test_shared.test_partitions_and_retention": "a cluster's nodes keep no time partitions (docs/cluster.md)",
    "test_shared.test_a_producer_sequence_reused_for_a_batch_of_another_size_is_refused":
        "a connection sends one batch of a log at a time, so the third racing batch, queued behind the "
        "refused one of its producer, is failed unsent (the coalescer's rule); the refusal itself is "
        "test_a_sequence_reused_for_another_batch_is_refused here",
    "test_reader_shared.test_one_reader_over_a_thousand_logs": "1,000 ZooKeeper transactions and sequencer "
                                                                "activations: over a minute on two cores",
}
"""Shared tests that do not apply to a cluster, and why (docs/cluster.md says each difference)."""


def _shared_tests() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for module_name in SHARED:
        module = importlib.import_module(f"tests.api.{module_name}")
        for name, fn in vars(module).items():
            if name.startswith("test_") and callable(fn) and fn.__module__ == module.__name__ \
                    and f"{module_name}.{name}" not in NOT_APPLICABLE:
                found[f"test_{module_name.removeprefix('test_')}__{name.removeprefix('test_')}"] = fn
    return found


globals().update(_shared_tests())


NEW_METHODS = ("AppendBatch", "CreateNamedLog", "CreateGroup", "GetLog", "ListLogs", "ListGroups", "SealLog",
               "DeleteLog", "GetBounds", "AppendCounts")


def test_hostile_input_to_the_logs_api_gets_typed_errors_and_the_nodes_keep_serving(
        local_cluster: LocalCluster, cluster_logs: ClusterLogs) -> None:
    address = local_cluster.addresses[1]
    with grpc.insecure_channel(address) as channel:
        for method in NEW_METHODS:
            call = channel.unary_unary(f"/seaway.cluster.v1.SeawayCluster/{method}")
            for garbage in (b"\xff\xff\xff", b"\x0a\x05junk", bytes(range(40))):
                with pytest.raises(grpc.RpcError):
                    call(garbage, timeout=5)
        stub = pb_grpc.SeawayClusterStub(channel)  # type: ignore[no-untyped-call]
        refused: list[tuple[Any, Any, str]] = [
            (stub.AppendBatch, pb.AppendBatchRequest(log_id=1), "INVALID_ARGUMENT"),
            (stub.AppendBatch, pb.AppendBatchRequest(log_id=0, payloads=[b"x"]), "UNKNOWN_LOG"),
            (stub.AppendBatch, pb.AppendBatchRequest(log_id=2**64 - 1, payloads=[b"x"]), "UNKNOWN_LOG"),
            (stub.AppendBatch, pb.AppendBatchRequest(log_id=1, payloads=[b"x" * (2 << 20)]), "PAYLOAD_TOO_LARGE"),
            (stub.AppendBatch, pb.AppendBatchRequest(log_id=1, payloads=[b"x"], producer_id=b"p" * 65),
             "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name=""), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="../x"), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes="[1]"), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes="{bad"), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes='{"colour": 1}'), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes='{"backlog_s": -1}'), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes='{"durability": "maybe"}'),
             "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", attributes="{" + " " * 5000 + "}"), "INVALID_ARGUMENT"),
            (stub.CreateNamedLog, pb.LogConfig(name="ok", log_id=2**63), "INVALID_ARGUMENT"),
            (stub.CreateGroup, pb.GroupConfig(name="g", first_id=5, last_id=4), "INVALID_ARGUMENT"),
            (stub.CreateGroup, pb.GroupConfig(name="g", first_id=0, last_id=4), "INVALID_ARGUMENT"),
            (stub.GetLog, pb.LogLookup(log_id=2**64 - 1), "UNKNOWN_LOG"),
            (stub.GetLog, pb.LogLookup(name="x" * 300), "UNKNOWN_LOG"),
            (stub.SealLog, pb.LogRef(log_id=2**64 - 1), "UNKNOWN_LOG"),
            (stub.DeleteLog, pb.LogRef(log_id=0), "UNKNOWN_LOG"),
            (stub.GetBounds, pb.LogRef(log_id=2**62), "UNKNOWN_LOG"),
            (stub.AppendCounts, pb.LogIds(log_ids=list(range(20_001))), "INVALID_ARGUMENT"),
        ]
        for method, request, code in refused:
            with pytest.raises(grpc.RpcError) as caught:
                method(request, timeout=10)
            assert ("seaway-code", code) in (caught.value.trailing_metadata() or ()), (request, caught.value)
        assert stub.ListLogs(pb.ListLogsRequest(after_id=2**64 - 1, limit=0), timeout=5).logs == []
    log = cluster_logs.create(f"after-hostile-{time.monotonic_ns()}")
    assert log.append(b"still here") > 0


class _Model(RuleBasedStateMachine):
    """ClusterLogs against a reference: a list of (LSN, payload) and a trim point and final LSN."""

    logs: ClusterLogs

    def __init__(self) -> None:
        super().__init__()
        self.log = self.logs.create(f"model-{time.monotonic_ns()}")
        self.stored: list[tuple[int, bytes]] = []
        self.trim_point = 0
        self.final: int | None = None

    @property
    def tail(self) -> int:
        return self.stored[-1][0] if self.stored else 0

    @rule(payloads=st.lists(st.binary(max_size=20), min_size=1, max_size=5))
    def append_batch(self, payloads: list[bytes]) -> None:
        if self.final is not None:
            with pytest.raises(LogSealedError):
                self.log.append_batch(payloads)
            return
        lsns = self.log.append_batch(payloads)
        assert len(lsns) == len(payloads) and lsns[0] > self.tail
        self.stored += list(zip(lsns, payloads, strict=True))

    @rule(payload=st.binary(max_size=20))
    def append(self, payload: bytes) -> None:
        if self.final is not None:
            with pytest.raises(LogSealedError):
                self.log.append(payload)
            return
        lsn = self.log.append(payload)
        assert lsn > self.tail
        self.stored.append((lsn, payload))

    @rule(data=st.data())
    def trim(self, data: st.DataObject) -> None:
        if not self.stored:
            return
        lsn = data.draw(st.sampled_from([lsn for lsn, _ in self.stored]))
        self.log.trim(lsn)
        self.trim_point = max(self.trim_point, lsn)

    @rule(sealed=st.booleans())
    def seal(self, sealed: bool) -> None:
        if sealed and self.final is None and len(self.stored) > 3:
            self.final = self.log.seal()
            assert self.final == self.tail

    @invariant()
    def reads_and_bounds_agree(self) -> None:
        bounds = self.logs.bounds([self.log.id])[self.log.id]
        assert bounds == (self.tail, self.final, self.trim_point)
        items = list(self.log.read())
        assert [(i.lsn, i.payload) for i in items if isinstance(i, Record)] == \
            [(lsn, p) for lsn, p in self.stored if lsn > self.trim_point]
        assert all(i.type in (GapType.TRIM, GapType.BRIDGE) for i in items if isinstance(i, Gap))


def test_cluster_logs_behave_as_the_reference(cluster_logs: ClusterLogs) -> None:
    _Model.logs = cluster_logs
    run_state_machine_as_test(_Model, settings=settings(max_examples=4, stateful_step_count=10, deadline=None))


def test_appends_go_on_when_the_sequencer_node_is_killed(local_cluster: LocalCluster,
                                                         cluster_logs: ClusterLogs) -> None:
    """SIGKILL of the log's sequencer node: the next batch goes to the next node of the log's order,
    which takes a new epoch; every acknowledged batch is read back, with one BRIDGE between."""
    log = cluster_logs.create(f"failover-{time.monotonic_ns()}")
    before = log.append_batch([b"a1", b"a2", b"a3"])
    victim = placement(log.id, sorted(cluster_logs.client.refresh_members()))[0]
    local_cluster.kill(victim, signal.SIGKILL)
    try:
        after = log.append_batch([b"b1", b"b2"])
        assert after[0] >> 32 > before[0] >> 32  # a new epoch
        assert log.tail_lsn() == after[-1]
        items = list(log.read())
        assert _records(items) == [b"a1", b"a2", b"a3", b"b1", b"b2"]
        bridges = [i for i in items if isinstance(i, Gap) and i.type is GapType.BRIDGE and i.lsn_lo > before[-1]]
        assert len(bridges) == 1 and not [i for i in items if isinstance(i, Gap) and i.type is GapType.DATALOSS]
        assert log.seal() == after[-1]
    finally:
        local_cluster.restart(victim)
    deadline = time.monotonic() + 30
    while len(cluster_logs.client.refresh_members()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(cluster_logs.client.members) == 3


def test_a_tailing_reader_asks_an_idle_node_at_a_bounded_rate(cluster_logs: ClusterLogs,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each node answered at once with nothing new and was asked again at once: a reader tailing a
    quiet log sent reads as fast as the nodes answered (600 a second on loopback)."""
    log = cluster_logs.create(f"idle-{time.monotonic_ns()}")
    log.append(b"a")
    asked = [0]
    real = cluster_logs.client.stub

    class Counting:
        def __init__(self, stub: Any) -> None:
            self._stub = stub

        def __getattr__(self, name: str) -> Any:
            return getattr(self._stub, name)

        @property
        def Read(self) -> Any:  # the gRPC method's name
            read = self._stub.Read

            class Future:
                def future(self, *args: Any, **kwargs: Any) -> Any:
                    asked[0] += 1
                    return read.future(*args, **kwargs)
            return Future()

    monkeypatch.setattr(cluster_logs.client, "stub", lambda node: None if real(node) is None else Counting(real(node)))
    with cluster_logs.reader() as reader:
        reader.start_reading(log, 1, LSN_MAX)
        assert _records(reader.read(100, timeout_s=10)) == [b"a"]
        asked[0] = 0
        started = time.monotonic()
        assert reader.read(100, timeout_s=1.0) == []
        elapsed = time.monotonic() - started
    # Three nodes, each asked again IDLE_ASK_S after an empty answer: at most 150 a second.
    assert asked[0] <= 3 * (elapsed / 0.02 + 2), asked[0]


def test_a_tailing_cluster_client_read_asks_idle_nodes_at_a_bounded_rate(
        local_cluster: LocalCluster, cluster_logs: ClusterLogs, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ClusterClient.read`` asked each node again as soon as it answered, even with nothing new:
    a tailing read sent hundreds of reads a second to quiet nodes."""
    log = cluster_logs.create(f"idle-client-{time.monotonic_ns()}")
    lsn = log.append(b"a")
    with ClusterClient(local_cluster.url) as client:
        asked = [0]
        real = client._stub

        def counting(address: str) -> Any:
            asked[0] += 1
            return real(address)

        monkeypatch.setattr(client, "_stub", counting)
        items = client.read(log.id, lsn, idle_s=1.0)  # follows the tail; ends after 1 s without anything new
        started = time.monotonic()
        assert _records(list(items)) == [b"a"]
        elapsed = time.monotonic() - started
    assert asked[0] <= 3 * (elapsed / 0.02 + 2), asked[0]


def test_logs_started_and_stopped_from_another_thread_while_reading(cluster_logs: ClusterLogs) -> None:
    """The reader went over its logs while another thread added and removed some: the iteration
    failed (a dict changed size) or a log's state was lost."""
    logs = [cluster_logs.create(f"churn-{i}-{time.monotonic_ns()}") for i in range(4)]
    for log in logs:
        log.append(b"x")
    stop = threading.Event()
    errors: list[BaseException] = []
    with cluster_logs.reader() as reader:
        for log in logs[:2]:
            reader.start_reading(log, 1, LSN_MAX)

        def churn() -> None:
            try:
                while not stop.is_set():
                    for log in logs[2:]:
                        reader.start_reading(log, 1, LSN_MAX)
                    for log in logs[2:]:
                        reader.stop_reading(log)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=churn)
        thread.start()
        try:
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline and not errors:
                reader.read(100, timeout_s=0.01)
        finally:
            stop.set()
            thread.join(10)
    assert not errors, errors
