"""A remote-only client does not load RocksDB or the embedded store, not even once it appends and reads.

Each check runs in a fresh interpreter: the test process itself has long loaded everything.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seaway.server import ServerProcess

# What a remote client must never load: the RocksDB binding and every module that opens or drives a store.
_EMBEDDED = ("rocksdict", "seaway._seaway", "seaway.logsdb._store", "seaway.logsdb._segment",
             "seaway.log._embedded", "seaway.log._logs", "seaway.log._epoch_store", "seaway.log._tail")

_PROBE = """
import sys

EMBEDDED = {embedded!r}


def loaded(step):
    found = sorted(m for m in EMBEDDED if m in sys.modules)
    print(step, ",".join(found) or "-", flush=True)


{body}
"""


def run_probe(body: str, *args: str) -> list[str]:
    """Run ``body`` in a fresh interpreter; return the lines it printed (``loaded`` prints one per step)."""
    code = _PROBE.format(embedded=_EMBEDDED, body=body)
    out = subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True,
                         timeout=120)  # not check=True: a failure shows the child's traceback
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("server") / "data")
    yield proc
    code = proc.stop()
    assert code == 0, f"the server exited with {code}:\n{proc.log_text()[-4000:]}"


def test_importing_the_client_or_the_package_loads_no_store() -> None:
    lines = run_probe("import seaway.client\nloaded('client')\nimport seaway\nloaded('seaway')\n"
                      "seaway.LogsDBConfig, seaway.Durability, seaway.connect\nloaded('shared names')\n")
    assert lines == ["client -", "seaway -", "shared names -"]


def test_a_remote_client_appends_reads_and_commits_without_loading_the_store(
        server: ServerProcess, tmp_path: Path) -> None:
    body = """
import seaway
from seaway.client import RemoteSeaway

with seaway.connect(sys.argv[1], timeout_s=30) as sw:
    assert isinstance(sw, RemoteSeaway)
    log = sw.logs.create("light")
    first = log.append(b"one")
    assert list(log.append_batch_async([b"two", b"three"]).result(30)) == [first + 1, first + 2]
    with log.writer(flush_interval_s=0.01) as writer:
        writer.write(b"four")
    records = [i.payload for i in log.read() if isinstance(i, seaway.Record)]
    assert records == [b"one", b"two", b"three", b"four"], records
    many = [i for i in sw.logs.read({"light": first}) if isinstance(i, seaway.Record)]
    assert len(many) == 4, many
    revision = sw.meta.batch().put("ns", b"k", b"v").commit()
    assert sw.meta.get("ns", b"k") == (b"v", revision)
    assert [g.name for g in sw.logs.groups()] == [] and sw.logs.partitions()
    loaded("remote")

# The probe can see a store being loaded: the embedded store loads it.
with seaway.open(sys.argv[2]) as local:
    local.logs.create("here").append(b"x")
loaded("embedded")
"""
    lines = run_probe(body, server.url, str(tmp_path / "local"))
    assert lines[0] == "remote -", server.log_text()[-4000:]
    assert lines[1] == "embedded " + ",".join(sorted(_EMBEDDED))
