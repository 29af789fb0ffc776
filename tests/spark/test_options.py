"""The data source's options: the connection, the target, and clear errors for the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from seaway import InvalidArgumentError, UnavailableError
from seaway.server import ADDRESS_FILE, ServerProcess, local_address
from seaway.spark import Options


def test_an_address_and_one_target() -> None:
    opts = Options.parse({"Address": "seaway://127.0.0.1:7070", "STREAM": "web/access", "maxEvents": "10"},
                         known=["maxEvents"])
    assert (opts.address, opts.target_kind, opts.target) == ("seaway://127.0.0.1:7070", "stream", "web/access")
    assert opts.get_int("maxevents", None) == 10


@pytest.mark.parametrize("options, message", [
    ({"address": "seaway://h:1"}, "exactly one of the options stream, log and queue"),
    ({"address": "seaway://h:1", "stream": "a/b", "queue": "q"}, "exactly one"),
    ({"stream": "a/b"}, "give the option address"),
    ({"address": "seaway://h:1", "data_dir": "/x", "stream": "a/b"}, "not both"),
    ({"address": "seaway://h:1", "stream": "a/b", "startingOfset": "x"}, "unknown option(s) startingofset"),
])
def test_bad_options_are_refused_by_name(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Options.parse(options)


def test_options_spark_adds_are_accepted() -> None:
    opts = Options.parse({"address": "seaway://h:1", "queue": "q", "queryName": "parse",
                          "checkpointLocation": "/tmp/c", "path": ""})
    assert opts.target == "q"


def test_typed_values() -> None:
    opts = Options.parse({"address": "seaway://h:1", "log": "l", "n": "x", "b": "maybe", "f": "-1"},
                         known=["n", "b", "f"])
    with pytest.raises(InvalidArgumentError, match="option n must be an integer"):
        opts.get_int("n", 0)
    with pytest.raises(InvalidArgumentError, match="option b must be true or false"):
        opts.get_bool("b", False)
    with pytest.raises(InvalidArgumentError, match=r"option f must be in \[0.0"):
        opts.get_float("f", 1.0)
    assert opts.get_int("absent", 7) == 7


def test_a_data_dir_is_found_through_its_running_server(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="no server is serving"):
        Options.parse({"data_dir": str(tmp_path), "stream": "a/b"})
    with ServerProcess(tmp_path) as server:
        assert local_address(tmp_path) == server.url
        assert Options.parse({"data_dir": str(tmp_path), "stream": "a/b"}).address == server.url
    assert not (tmp_path / ADDRESS_FILE).exists()  # removed when the server stopped


def test_the_data_source_does_not_load_the_server_or_the_embedded_store() -> None:
    """Spark starts a fresh Python process for each streaming query's source (and the daemons of
    its writers): the data source loads the client only, not the server package and the embedded
    store it imports (a tenth of a second or more in each such process). A ``data_dir`` option
    loads the server package when it is given."""
    code = ("import sys\n"
            "import seaway.spark._datasource\n"
            "print(sorted(m for m in ('seaway.server', 'seaway._seaway') if m in sys.modules))\n")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"
