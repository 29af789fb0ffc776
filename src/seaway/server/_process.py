"""A ``seaway serve`` child process on a free loopback port: for the demo, the benchmarks and tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seaway.errors import ServerRunningError, UnavailableError


class ServerProcess:
    """Start ``seaway serve`` over ``data_dir`` and wait until it listens.

    Its log (JSON lines) goes to :attr:`log_path`; :meth:`log_text` returns it for failure reports.
    ``module``: the module run (``python -m MODULE serve ...``), for a test's own entry point that
    builds the store otherwise and serves it the same way.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, token: str | None = None,
                 extra_args: tuple[str, ...] = (), start_timeout_s: float = 60.0, port: int = 0,
                 module: str = "seaway.cli") -> None:
        self.data_dir = Path(data_dir)
        self._module = module
        self.token = token
        self._extra = extra_args
        self._start_timeout_s = start_timeout_s
        fd, name = tempfile.mkstemp(prefix="seaway-server-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        self._proc: subprocess.Popen[str] | None = None
        self.port = port
        self.address = ""
        self.metrics_address: str | None = None
        self.console_url: str | None = None
        """The web console's URL, when ``extra_args`` start one (``--console-listen``)."""
        self.start()

    def start(self) -> None:
        args = [sys.executable, "-m", self._module, "serve", "--data-dir", str(self.data_dir),
                "--listen", f"127.0.0.1:{self.port}", *self._extra]
        env = dict(os.environ)
        if self.token:
            env["SEAWAY_TOKEN"] = self.token
        with self.log_path.open("a") as log:
            self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        deadline = time.monotonic() + self._start_timeout_s
        assert self._proc.stdout is not None
        while time.monotonic() < deadline:
            line = self._proc.stdout.readline()
            if line.startswith("metrics on "):
                self.metrics_address = line.split()[-1]
            if line.startswith("console on "):
                self.console_url = line.split()[-1]
            if line.startswith("listening on "):
                self.address = line.split()[-1]
                self.port = int(self.address.rpartition(":")[2])  # a restart comes back on the same port
                return
            if not line and self._proc.poll() is not None:
                break
        self.kill()
        raise UnavailableError(f"seaway serve did not start: {self.log_text()[-2000:]}")

    @property
    def url(self) -> str:
        return f"seaway://{self.address}"

    @property
    def pid(self) -> int:
        return self._proc.pid if self._proc is not None else -1

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait; returns the exit status."""
        if self._proc is None:
            return 0
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            code = self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        self._close()
        return code

    def restart(self) -> None:
        """Start again on the same port, after :meth:`stop` or :meth:`kill`."""
        if self._proc is not None:
            raise ServerRunningError("the server is still running: stop or kill it before restarting it")
        self.start()

    def kill(self) -> None:
        """SIGKILL: no chance to finish anything."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
        self._proc.wait()
        self._close()

    def _close(self) -> None:
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()
        self._proc = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        code = self.stop()
        if exc_type is None and code == 0:
            self.log_path.unlink(missing_ok=True)  # kept when something went wrong, for the report
