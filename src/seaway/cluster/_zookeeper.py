"""A real ZooKeeper server, for tests and for ``seaway cluster up`` (a cluster on one machine): Debian's
package's server (``/usr/share/java/zookeeper.jar``, the ``zookeeper`` package, which the project's set-up
installs), started as a child process on a loopback port of its own with a data directory of its
own. Never the system service.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from seaway.errors import InvalidArgumentError, UnavailableError

JAR = Path(os.environ.get("SEAWAY_ZOOKEEPER_JAR", "/usr/share/java/zookeeper.jar"))
"""The server's jar (its manifest names the jars it needs beside it)."""
START_TIMEOUT_S = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def zookeeper_unavailable() -> str | None:
    """Why no ZooKeeper server can be started here (None: one can)."""
    if shutil.which("java") is None:
        return "java is not installed"
    if not JAR.exists():
        return f"{JAR} is missing: install Debian's zookeeper package (make test does)"
    return None


class ZooKeeperProcess:
    """A standalone ZooKeeper server on ``127.0.0.1:port`` (a free one when 0), keeping its data in
    ``data_dir``; started at once, stopped by :meth:`stop` (or as a context manager). Restarting it
    on the same directory keeps its znodes."""

    def __init__(self, data_dir: str | os.PathLike[str], *, port: int = 0, tick_ms: int = 200) -> None:
        why = zookeeper_unavailable()
        if why is not None:
            raise UnavailableError(f"cannot start ZooKeeper: {why}")
        if not 50 <= tick_ms <= 10_000:
            raise InvalidArgumentError(f"a tick is 50-10,000 ms, got {tick_ms}")
        self.data_dir = Path(data_dir)
        self.port = port or _free_port()
        self.tick_ms = tick_ms
        self._proc: subprocess.Popen[bytes] | None = None
        fd, name = tempfile.mkstemp(prefix="seaway-zookeeper-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        self.start()

    @property
    def hosts(self) -> str:
        """``host:port``, as ZooKeeper clients take it."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "zoo.cfg"
        # Loopback only; no admin web server; a short tick keeps session timeouts short in tests.
        config.write_text(f"tickTime={self.tick_ms}\ndataDir={self.data_dir / 'data'}\n"
                          f"clientPort={self.port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=200\n"
                          "admin.enableServer=false\n4lw.commands.whitelist=ruok,conf\n")
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                ["java", "-Xmx256m", "-cp", str(JAR), "-Dzookeeper.admin.enableServer=false",
                 "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers():
            if self._proc.poll() is not None:
                raise UnavailableError(f"ZooKeeper exited with {self._proc.returncode}:\n{self.log_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise UnavailableError(f"ZooKeeper did not answer within {START_TIMEOUT_S} s")
            time.sleep(0.1)

    def _answers(self) -> bool:
        """Whether this server answers on the port: another one there (the port taken between
        picking it free and binding it) answers too, so the data directory it reports is checked."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"conf")
                reply = b""
                while chunk := conn.recv(65536):
                    reply += chunk
        except OSError:
            return False
        data_dir = str(self.data_dir / "data").encode()
        return any(line.startswith(b"dataDir=") and line[len(b"dataDir="):].startswith(data_dir)
                   for line in reply.splitlines())

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server (``kill``: SIGKILL, as a crash)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> ZooKeeperProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
