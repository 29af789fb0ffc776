"""One suite, every implementation of the API: the embedded store and the client against a server."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import seaway
from seaway.notify import NotifyServiceConfig, TargetPolicy
from seaway.server import ServerProcess

_names = itertools.count()


class Api:
    """A store under test, and a fresh log name for each test (the remote server is shared)."""

    def __init__(self, sw: Any, kind: str, url: str = "") -> None:
        self.sw = sw
        self.kind = kind
        self.sw_url = url
        """The server's address, for tests that open more connections (remote only)."""

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


@pytest.fixture(params=["embedded", "remote"])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    if request.param == "embedded":
        targets = TargetPolicy(file_dir=file_dir(request.getfixturevalue("tmp_path_factory")))
        with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=NotifyServiceConfig(targets=targets))) as sw:
            yield Api(sw, "embedded")
    else:
        server: ServerProcess = request.getfixturevalue("server")
        with seaway.connect(server.url, timeout_s=30) as sw:
            try:
                yield Api(sw, "remote", server.url)
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
