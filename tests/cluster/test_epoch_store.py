"""The epoch store's contract, against both stores: the embedded one (RocksDB) and ZooKeeper's (a
real server started for the run). Epochs change only by compare-and-set, several at once all or
none; racing clients never take the same epoch; a restart of ZooKeeper keeps them; a log store
whose epochs are in ZooKeeper takes a new epoch at every reopening."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seaway import UnavailableError, epoch_of
from seaway.errors import CorruptionError, InvalidArgumentError, StorageError
from seaway.log import EmbeddedLogStore, RocksDBEpochStore, ZooKeeperEpochStore, bump_epoch
from seaway.testing import ZooKeeperProcess

WAIT_S = 30.0


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperProcess]:
    with ZooKeeperProcess(tmp_path_factory.mktemp("zk")) as zk:
        yield zk


@pytest.fixture(params=["rocksdb", "zookeeper"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of stores over one place: clients of one cluster, or openings of one directory."""
    opened: list[Any] = []

    def make() -> Any:
        if request.param == "rocksdb":
            if opened:  # one opening of a directory at a time
                return opened[0]
            store: Any = RocksDBEpochStore(tmp_path / "epochs")
        else:
            zk: ZooKeeperProcess = request.getfixturevalue("zookeeper")
            store = ZooKeeperEpochStore(zk.hosts, f"/t{abs(hash(tmp_path.name))}")
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_epochs_change_only_by_compare_and_set(stores: Any) -> None:
    store = stores()
    assert store.get(7) == 0
    assert not store.compare_and_set(7, 1, 2)
    assert store.compare_and_set(7, 0, 1) and store.get(7) == 1
    assert not store.compare_and_set(7, 0, 5) and store.get(7) == 1
    assert store.compare_and_set(7, 1, 3) and store.get(7) == 3


def test_several_epochs_change_together_or_not_at_all(stores: Any) -> None:
    store = stores()
    assert store.compare_and_set(1, 0, 4)
    assert not store.compare_and_set_many({1: (3, 5), 2: (0, 1)})  # one is not as expected
    assert store.get(1) == 4 and store.get(2) == 0
    assert store.compare_and_set_many({1: (4, 5), 2: (0, 1), 3: (0, 9)})
    assert (store.get(1), store.get(2), store.get(3)) == (5, 1, 9)
    assert store.compare_and_set_many({})


def test_racing_clients_never_take_the_same_epoch(stores: Any) -> None:
    clients = [stores() for _ in range(4)]
    taken: list[int] = []
    lock = threading.Lock()

    def bump(store: Any) -> None:
        for _ in range(10):
            epoch = bump_epoch(store, 42, attempts_max=200)
            with lock:
                taken.append(epoch)

    threads = [threading.Thread(target=bump, args=(c,)) for c in clients for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(taken) == list(range(1, 81))
    assert clients[0].get(42) == 80


def test_zookeeper_keeps_the_epochs_across_its_restart(tmp_path: Path) -> None:
    zk = ZooKeeperProcess(tmp_path / "zk")
    try:
        store = ZooKeeperEpochStore(zk.hosts, "/restart")
        assert store.compare_and_set_many({1: (0, 3), 2: (0, 8)})
        store.close()
        zk.stop(kill=True)  # as a crash
        zk.start()
        again = ZooKeeperEpochStore(zk.hosts, "/restart")
        assert (again.get(1), again.get(2)) == (3, 8)
        again.close()
    finally:
        zk.stop()


def test_a_log_store_over_zookeeper_takes_a_new_epoch_at_every_opening(tmp_path: Path,
                                                                        zookeeper: ZooKeeperProcess) -> None:
    epochs = []
    for _ in range(3):
        store = EmbeddedLogStore(tmp_path / "logs", epoch_store=ZooKeeperEpochStore(zookeeper.hosts, "/logs"))
        try:
            epochs.append(epoch_of(store.append_async(5, (b"x",)).result(WAIT_S)[0]))
        finally:
            store.close()
    assert epochs[0] < epochs[1] < epochs[2]


def test_bad_input_and_an_unreachable_zookeeper_get_typed_errors(zookeeper: ZooKeeperProcess) -> None:
    with pytest.raises(InvalidArgumentError):
        ZooKeeperEpochStore(zookeeper.hosts, "no-slash")
    for root in ("/a/../b", "/a/.", "/a\x00b"):  # ZooKeeper's path rules (kazoo raised ValueError)
        with pytest.raises(InvalidArgumentError):
            ZooKeeperEpochStore(zookeeper.hosts, root)
    store = ZooKeeperEpochStore(zookeeper.hosts, "/bad")
    try:
        with pytest.raises(InvalidArgumentError):
            store.compare_and_set(-1, 0, 1)
        with pytest.raises(InvalidArgumentError):
            store.compare_and_set(1, 0, -5)
    finally:
        store.close()
    with pytest.raises(UnavailableError):
        ZooKeeperEpochStore("127.0.0.1:1", "/x", timeout_s=1.0)


def test_a_second_server_on_a_taken_port_does_not_pass_for_started(zookeeper: ZooKeeperProcess,
                                                                     tmp_path: Path) -> None:
    """A port picked free can be taken by another server before ours binds it (another test run on
    the machine): the other one answering ``ruok`` passed for ours, and the tests then ran against
    another server's data. Ours must be the one answering, or the start fails."""
    with pytest.raises(UnavailableError):
        other = ZooKeeperProcess(tmp_path / "other", port=zookeeper.port)
        other.stop()


def test_an_epoch_znode_that_is_not_an_epoch_is_a_typed_error(zookeeper: ZooKeeperProcess) -> None:
    """A znode under the epochs' path holding something else (written by hand or by another
    program) is reported as corruption, not a ValueError from deep inside the store."""
    store = ZooKeeperEpochStore(zookeeper.hosts, "/garbage")
    try:
        store._zk.create("/garbage/epochs/7", b"\xffnot a number")
        store._zk.create("/garbage/epochs/8", b"-3")
        for log_id in (7, 8):
            with pytest.raises(CorruptionError):
                store.get(log_id)
            with pytest.raises(CorruptionError):
                store.compare_and_set(log_id, 0, 1)
    finally:
        store.close()


def test_a_store_whose_root_cannot_be_made_fails_typed_and_leaves_no_client_running(
        zookeeper: ZooKeeperProcess) -> None:
    """The root's path refused (here: its parent read-only): the store's client was closed
    without being stopped, which kazoo refuses (a bare Exception raised instead of the store's
    error) and which left its connection threads running, reconnecting for ever."""
    read_only = pytest.importorskip("kazoo.security").READ_ACL_UNSAFE
    admin = ZooKeeperEpochStore(zookeeper.hosts, "/admin")
    try:
        admin._zk.create("/locked", b"", acl=read_only)
        before = threading.active_count()
        with pytest.raises(StorageError):
            ZooKeeperEpochStore(zookeeper.hosts, "/locked/cluster", timeout_s=5.0)
        assert threading.active_count() == before, [t.name for t in threading.enumerate()]
    finally:
        admin.close()
