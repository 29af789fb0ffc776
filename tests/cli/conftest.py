"""Fixtures of the command's tests: the command run in this process, and a server to point it at."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import seaway
from seaway.cli import main
from seaway.cli._main import exit_status
from seaway.server import ServerProcess

_names = itertools.count()


def status_of(code: str) -> int:
    """The exit status the command gives for an error of this code."""
    cls = seaway.error_class(code)
    return exit_status(cls.__new__(cls))


class Ran(NamedTuple):
    status: int
    out: str
    err: str


Cli = Callable[..., Ran]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``cli("log", "info", ...)``: run the command in this process; its status and what it printed."""
    capsys.readouterr()

    def run(*argv: str) -> Ran:
        status = main(list(argv))
        captured = capsys.readouterr()
        return Ran(status, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-server") / "data")
    yield proc
    code = proc.stop()
    assert code == 0, f"the server exited with {code}:\n{proc.log_text()[-4000:]}"


class Where:
    """A store the command is pointed at (``args``), and the same store through the API (:meth:`open`)."""

    def __init__(self, args: tuple[str, str]) -> None:
        self.args = args
        n = next(_names)
        self.ns = f"ns-{n}"  # names of its own: the server is shared
        self.log = f"log-{n}"

    def open(self) -> Any:
        flag, target = self.args
        return seaway.open(target) if flag == "--data-dir" else seaway.connect(target)


@pytest.fixture(params=["data-dir", "server"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Where]:
    """Each test twice: with ``--data-dir``, and with ``--address`` of the shared server."""
    if request.param == "data-dir":
        yield Where(("--data-dir", str(tmp_path / "data")))
    else:
        server: ServerProcess = request.getfixturevalue("server")
        try:
            yield Where(("--address", server.url))
        except BaseException:
            print(server.log_text()[-4000:])
            raise
