"""``ClusterLogs``: the logs API (``LogsApi``) over a real cluster (ZooKeeper and 3 node processes, R=2,
one for the whole session), checked by the shared log-level tests of tests/api and by its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from seaway.cluster import ClusterLogs, LocalCluster, zookeeper_unavailable
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
    with ClusterLogs(local_cluster.url, timeout_s=30.0, attempt_timeout_s=5.0) as logs:
        yield logs


class _Store:
    """What the shared tests use of a store: its ``logs``."""

    def __init__(self, logs: ClusterLogs) -> None:
        self.logs = logs


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
