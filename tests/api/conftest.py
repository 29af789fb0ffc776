"""One suite, every implementation of the API: the embedded store and the client against a server."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import seaway
from seaway.cluster import LocalCluster, zookeeper_unavailable
from seaway.notify import NotifyServiceConfig, TargetPolicy
from seaway.server import ServerProcess
from seaway.testing._split import split_store

_names = itertools.count()


class Api:
    """A store under test, and a fresh log name for each test (the remote server is shared)."""

    def __init__(self, sw: Any, kind: str, url: str = "", *, split: bool = False) -> None:
        self.sw = sw
        self.kind = kind
        """``embedded`` or ``remote``: how the test reaches the store."""
        self.sw_url = url
        """The server's address, for tests that open more connections (remote only)."""
        self.split = split
        """The store is split: its user logs live in a second store's logs (a control node's shape)."""

    def name(self, base: str = "log") -> str:
        return f"{base}-{next(_names)}"

    def number(self) -> int:
        return next(_names)


def file_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where notification file targets may write, embedded and in the server: every test's
    ``tmp_path`` is under it."""
    return tmp_path_factory.getbasetemp()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("server") / "data",
                         extra_args=("--notify-file-dir", str(file_dir(tmp_path_factory))))
    yield proc
    code = proc.stop()
    assert code == 0, f"the server exited with {code}:\n{proc.log_text()[-4000:]}"


@pytest.fixture(scope="session")
def split_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server over a split store (its user logs in a second store's logs, :mod:`seaway.testing._split`)."""
    where = tmp_path_factory.mktemp("split-server")
    proc = ServerProcess(where / "control", module="seaway.testing._split",
                         extra_args=("--user-logs-dir", str(where / "user"),
                                     "--notify-file-dir", str(file_dir(tmp_path_factory))))
    yield proc
    code = proc.stop()
    assert code == 0, f"the server exited with {code}:\n{proc.log_text()[-4000:]}"


@pytest.fixture(scope="session")
def cluster_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster (ZooKeeper and 3 node processes, R=2, node 1 its control node): ``seaway.connect``
    with its nodes' addresses reads and appends logs at the nodes, and sends the rest to node 1."""
    why = zookeeper_unavailable()
    if why is not None:
        pytest.fail(f"the cluster variant of the API suites needs ZooKeeper: {why}")
    with LocalCluster(tmp_path_factory.mktemp("api-cluster"), nodes=3, replication=2) as cluster:
        yield cluster


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``api`` is embedded and remote; in the modules that set ``SPLIT = True``, also a split store
    (a control node's shape: user logs in another store's logs), embedded and through a server,
    but for the tests the module names in ``SPLIT_EXCEPT`` (long ones that add nothing split)."""
    if "api" in metafunc.fixturenames:
        kinds = ["embedded", "remote"]
        if getattr(metafunc.module, "SPLIT", False) \
                and metafunc.function.__name__ not in getattr(metafunc.module, "SPLIT_EXCEPT", ()):
            kinds += ["split", "split-remote"]
        if getattr(metafunc.module, "CLUSTER", False) \
                and metafunc.function.__name__ not in getattr(metafunc.module, "CLUSTER_EXCEPT", ()):
            kinds += ["cluster"]
        metafunc.parametrize("api", kinds, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cluster variants share one pytest worker, and so one cluster (ZooKeeper and 3 nodes)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("api") == "cluster":
            item.add_marker(pytest.mark.xdist_group("cluster-api"))


@pytest.fixture
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    targets = TargetPolicy(file_dir=file_dir(request.getfixturevalue("tmp_path_factory")))
    config = seaway.SeawayConfig(notify=NotifyServiceConfig(targets=targets))
    if request.param == "embedded":
        with seaway.open(tmp_path / "data", config) as sw:
            yield Api(sw, "embedded")
    elif request.param == "cluster":
        cluster: LocalCluster = request.getfixturevalue("cluster_store")
        with seaway.connect(cluster.url, timeout_s=30) as sw:
            yield Api(sw, "remote", cluster.url, split=True)
    elif request.param == "split":
        with split_store(tmp_path / "control", tmp_path / "user", config) as sw:
            yield Api(sw, "embedded", split=True)
    else:
        split = request.param == "split-remote"
        server: ServerProcess = request.getfixturevalue("split_server" if split else "server")
        with seaway.connect(server.url, timeout_s=30) as sw:
            try:
                yield Api(sw, "remote", server.url, split=split)
            except BaseException:
                print(server.log_text()[-4000:])
                raise


class Refused(grpc.RpcError):
    """What gRPC raises when a call never reached the server (no channel could connect in time)."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "failed to connect to all addresses; connection attempt timed out"

    def trailing_metadata(self) -> tuple[()]:
        return ()
