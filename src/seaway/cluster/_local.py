"""A cluster on this machine: a ZooKeeper of its own and N node processes (``seaway serve --cluster``)
on free loopback ports, each with a data directory under one directory. ``seaway cluster up`` runs
one until stopped; the tests and ``seaway bench cluster`` kill, pause and restart its nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc

from seaway.cluster._client import MEMBERS_REFRESH_S
from seaway.cluster._zk import ZooKeeperCluster
from seaway.cluster._zookeeper import ZooKeeperProcess
from seaway.errors import InvalidArgumentError, UnavailableError
from seaway.log.replication import NODES_MAX, REPLICATION_MAX
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc

START_TIMEOUT_S = 60.0
ROOT = "/seaway"


class LocalCluster:
    def __init__(self, data_dir: str | os.PathLike[str], nodes: int = 3, replication: int = 2, *,
                 zk_session_s: float = 6.0, control: bool = True) -> None:
        """``control``: node 1 is also the control node (serving the whole Seaway API: what
        ``seaway.connect(cluster.url)`` needs); without it only the logs are served."""
        if not 1 <= nodes <= NODES_MAX:
            raise InvalidArgumentError(f"a local cluster has 1 to {NODES_MAX} nodes, got {nodes}")
        if not 1 <= replication <= min(nodes, REPLICATION_MAX):
            raise InvalidArgumentError(f"replication must be in [1, {min(nodes, REPLICATION_MAX)}], got {replication}")
        self.data_dir = Path(data_dir)
        self.count = nodes
        self.replication = replication
        self.zk_session_s = zk_session_s
        self.zk: ZooKeeperProcess | None = None
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.addresses: dict[int, str] = {}
        self.paused: set[int] = set()
        self.control = control
        self.control_address: str | None = None
        """Where node 1 serves the Seaway API as the control node (once started with ``control``)."""

    @property
    def zk_url(self) -> str:
        assert self.zk is not None
        return f"zk://127.0.0.1:{self.zk.port}{ROOT}"

    @property
    def url(self) -> str:
        """``seaway://...`` of every node started (live or not)."""
        return "seaway://" + ",".join(self.addresses[n] for n in sorted(self.addresses))

    def start(self) -> LocalCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.zk = ZooKeeperProcess(self.data_dir / "zookeeper")
        try:
            config = ZooKeeperCluster(self.zk_url)
            try:
                config.set_default_replication(self.replication)
            finally:
                config.close()
            for node in range(1, self.count + 1):
                self.start_node(node)
            self.wait_converged()
        except BaseException:
            self.stop()
            raise
        return self

    def start_node(self, node: int) -> str:
        """Start node ``node`` (again, on its own data directory, on the port it had if it had one)."""
        listen = self.addresses.get(node, "127.0.0.1:0")
        command = [sys.executable, "-m", "seaway.cli", "serve", "--cluster", self.zk_url, "--node-id", str(node),
                   "--data-dir", str(self.data_dir / f"node-{node}"), "--listen", listen,
                   "--zk-session-s", str(self.zk_session_s)]
        if self.control and node == 1:
            command += ["--control-listen", self.control_address or "127.0.0.1:0"]
        log = open(self.data_dir / f"node-{node}.log", "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        log.close()
        self.procs[node] = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            line = proc.stdout.readline()
            if line:
                with contextlib.suppress(ValueError):
                    doc = json.loads(line)
                    if doc.get("event") == "listening":
                        self.addresses[node] = str(doc["address"])
                        if doc.get("control"):
                            self.control_address = str(doc["control"])
                        proc.stdout.close()
                        return self.addresses[node]
            elif proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.data_dir / f"node-{node}.log").read_text(errors="replace")[-2000:]
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.stdout.close()
                proc.wait(30)
                raise UnavailableError(f"node {node} did not start (exit {proc.returncode}): {tail}")

    def wait_converged(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until every live node sees every live node as a member (each learns of the others from
        ZooKeeper about a second after they join), and then for as long as a client may keep a
        reading of the members: every client then places each log's sequencer on the same node."""
        deadline = time.monotonic() + timeout_s
        alive = set(self.alive())
        while True:
            views = []
            for node in sorted(alive):
                with contextlib.suppress(grpc.RpcError), grpc.insecure_channel(self.addresses[node]) as channel:
                    reply = pb_grpc.SeawayClusterStub(channel).Status(  # type: ignore[no-untyped-call]
                        pb.StatusRequest(members_only=True), timeout=5.0)
                    views.append({m.node for m in reply.members})
            if len(views) == len(alive) and all(view >= alive for view in views):
                break
            if time.monotonic() > deadline:
                raise UnavailableError(f"the nodes' views of the membership did not converge: {views}")
            time.sleep(0.1)
        time.sleep(MEMBERS_REFRESH_S)

    def kill(self, node: int, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[node]
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        if sig == signal.SIGSTOP:
            self.paused.add(node)
        elif sig == signal.SIGCONT:
            self.paused.discard(node)
        elif sig in (signal.SIGKILL, signal.SIGTERM):
            self.paused.discard(node)
            proc.wait(30)

    def restart(self, node: int) -> str:
        if self.procs[node].poll() is None:
            self.kill(node)
        return self.start_node(node)

    def alive(self) -> list[int]:
        return [n for n, p in sorted(self.procs.items()) if p.poll() is None and n not in self.paused]

    def stop(self) -> None:
        for node, proc in self.procs.items():
            if node in self.paused:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.paused.clear()
        if self.zk is not None:
            self.zk.stop()
            self.zk = None

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
