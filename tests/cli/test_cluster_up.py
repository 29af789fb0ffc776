"""``seaway cluster up``: ZooKeeper and the nodes start, answer, and stop cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster-processes")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def test_cluster_up_starts_a_cluster_that_answers_and_stops_it_on_sigterm(tmp_path: Path) -> None:
    up = subprocess.Popen([sys.executable, "-m", "seaway.cli", "cluster", "up", "--nodes", "3", "--replication", "2",
                           "--data-dir", str(tmp_path / "c")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    try:
        assert up.stdout is not None
        line = up.stdout.readline()
        started = json.loads(line)
        assert started["event"] == "up" and len(started["nodes"]) == 3, line
        url = started["cluster"]
        status = subprocess.run([sys.executable, "-m", "seaway.cli", "cluster", "status", "--json", "--connect", url],
                                capture_output=True, text=True, timeout=120, check=True)
        nodes = json.loads(status.stdout)["nodes"]
        assert [n["node"] for n in nodes] == [1, 2, 3] and all(n["healthy"] for n in nodes)
        made = subprocess.run([sys.executable, "-m", "seaway.cli", "cluster", "create-log", "1", "--json",
                               "--connect", url], capture_output=True, text=True, timeout=120, check=True)
        assert json.loads(made.stdout)["history"][0][2] == 2  # the replication cluster up was given
        assert started["control"]  # node 1 serves the whole API: the store's commands take the nodes' addresses

        def command(*words: str) -> str:
            return subprocess.run([sys.executable, "-m", "seaway.cli", *words, "--address", url],
                                  capture_output=True, text=True, timeout=120, check=True).stdout

        command("queue", "create", "jobs")
        command("queue", "group", "create", "jobs", "workers", "--size", "1")
        command("queue", "enqueue", "jobs", "a", "b")
        got = json.loads(command("queue", "dequeue", "jobs", "workers", "0", "--timeout-s", "5", "--json"))["entries"]
        assert [entry["payload"] for entry in got] == ["a", "b"], got
        children = [int(p) for p in subprocess.run(["pgrep", "-P", str(up.pid)], capture_output=True,
                                                   text=True, check=False).stdout.split()]
        assert len(children) >= 4  # ZooKeeper and three nodes
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=60)
        assert up.returncode == 0 and json.loads(out.splitlines()[-1]) == {"event": "stopped"}
        assert not [pid for pid in children if _alive(pid)]
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
