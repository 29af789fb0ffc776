"""A process that talks to a server keeps starting children by fork and exec (PySpark starts its
JVM that way): with gRPC's fork support on, grpcio 1.80 and later may kill such a child before its
exec while a channel is busy (grpc/grpc#43055); ``import seaway`` turns fork support off.

The check runs in a fresh interpreter (the test process's gRPC started long ago)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seaway.server import ServerProcess

CHILDREN = 400

_PROBE = """
import os, subprocess, sys, threading
import seaway

with seaway.connect(sys.argv[1]) as sw:
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            sw.meta.get("probe", b"k")

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        codes = [subprocess.Popen(["true"], preexec_fn=lambda: None, stderr=subprocess.DEVNULL).wait()
                 for _ in range(int(sys.argv[2]))]
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(os.environ["GRPC_ENABLE_FORK_SUPPORT"], sum(c != 0 for c in codes))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(Path(tmp_path_factory.mktemp("fork")) / "data") as started:
        yield started


def test_children_started_while_a_channel_is_busy_all_reach_their_exec(server: ServerProcess) -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, server.url, str(CHILDREN)], check=False,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["false", "0"], f"children that died before their exec: {out.stdout}"
