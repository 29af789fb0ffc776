"""The console as an operator starts it: beside a server (``seaway serve --console-listen``) and
over a data directory (``seaway console --data-dir``), as child processes."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import seaway
from seaway.cli._store import EXIT_FAILED, EXIT_USAGE
from seaway.console import Console, ConsoleConfig
from seaway.server import ServerProcess
from tests.console.conftest import BEARER, TOKEN
from tests.server.test_tls import _self_signed

pytestmark = pytest.mark.slow  # starts servers and commands as child processes


def test_seaway_serve_console_listen_serves_the_console_behind_the_servers_token(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", token=TOKEN, extra_args=("--console-listen", "127.0.0.1:0")) as server:
        assert server.console_url is not None, server.log_text()
        base = server.console_url.rstrip("/")
        assert httpx.get(base + "/api/health", timeout=30).status_code == 401
        assert httpx.get(base + "/", timeout=30).status_code == 401
        with seaway.connect(server.url, token=TOKEN) as client:
            client.streams.create_scope("ops")
            client.streams.create("ops/s", segments=3)
        health = httpx.get(base + "/api/health", headers=BEARER, timeout=30).json()
        assert health["status"] == "SERVING" and health["where"].startswith("server ")
        assert health["server"]["requests"] >= 2 and health["server"]["refused for the token"] == 0
        streams = httpx.get(base + "/api/streams", headers=BEARER, timeout=30).json()
        assert [(s["stream"], s["segments"]) for s in streams] == [("ops/s", 3)]
        code = server.stop()
    assert code == 0, server.log_text()
    # The console stopped with the server: nothing listens there any more.
    try:
        httpx.get(base + "/api/health", headers=BEARER, timeout=5)
        still_listening = True
    except httpx.TransportError:
        still_listening = False
    assert not still_listening


def test_seaway_console_serves_a_data_directory_until_sigterm(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data") as sw:
        sw.queues.create("jobs")
        sw.queues.create_group("jobs", "workers", 2, "ROUND_ROBIN")
    env = {**os.environ, "SEAWAY_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "seaway.cli", "console", "--data-dir", str(tmp_path / "data"),
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("console on http://127.0.0.1:"), line + (proc.stderr.read() if proc.stderr else "")
        base = line.split()[-1].rstrip("/")
        assert httpx.get(base + "/api/groups", timeout=30).status_code == 401
        groups = httpx.get(base + "/api/groups", headers=BEARER, timeout=30).json()
        assert [(g["queue"], g["group"]) for g in groups["consumer_groups"]] == [("jobs", "workers")]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_seaway_console_refuses_a_directory_that_is_not_a_store(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "seaway.cli", "console", "--data-dir", str(tmp_path / "nope"),
                           "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == EXIT_USAGE and "no Seaway data directory" in done.stderr
    assert not (tmp_path / "nope").exists()


def test_seaway_console_reads_a_server_as_its_client_with_the_token(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", token=TOKEN) as server:
        with seaway.connect(server.url, token=TOKEN) as client:
            client.streams.create_scope("ops")
        env = {**os.environ, "SEAWAY_TOKEN": TOKEN}
        proc = subprocess.Popen([sys.executable, "-m", "seaway.cli", "console", "--address", server.url,
                                 "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("console on "), line + (proc.stderr.read() if proc.stderr else "")
            base = line.split()[-1].rstrip("/")
            health = httpx.get(base + "/api/health", headers=BEARER, timeout=30).json()
            assert health["status"] == "SERVING" and health["where"] == f"client of {server.url}"
            assert health["counts"]["scopes"] == 1
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def test_seaway_serve_refuses_a_console_address_already_taken_and_says_so(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "seaway.cli", "serve", "--data-dir", str(tmp_path / "data"),
                               "--listen", "127.0.0.1:0", "--console-listen", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "listening on" not in done.stdout
    assert not (tmp_path / "data").exists()  # refused before anything is created


def test_beside_a_tls_server_the_console_serves_https_with_its_certificate_and_a_secure_cookie(
        tmp_path: Path) -> None:
    cert, key, _ = _self_signed(tmp_path)
    extra = ("--tls-cert", str(cert), "--tls-key", str(key), "--console-listen", "127.0.0.1:0")
    with ServerProcess(tmp_path / "data", token=TOKEN, extra_args=extra) as server:
        assert server.console_url is not None and server.console_url.startswith("https://127.0.0.1:")
        with httpx.Client(base_url=server.console_url, verify=ssl.create_default_context(cafile=str(cert)),
                          timeout=30) as browser:
            assert browser.get("/api/health").status_code == 401
            assert browser.get("/api/health", headers=BEARER).json()["status"] == "SERVING"
            logged_in = browser.post("/login", data={"token": TOKEN, "next": "/"})
            assert logged_in.status_code == 303 and "Secure" in logged_in.headers["set-cookie"]
        with pytest.raises(httpx.TransportError):  # plain HTTP to the TLS port
            httpx.get(server.console_url.replace("https://", "http://") + "api/health", headers=BEARER, timeout=5)


def test_a_console_over_a_client_answers_503_while_the_server_is_away_and_recovers(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", token=TOKEN)
    try:
        retry = seaway.RetryPolicy(attempts_max=1)
        with seaway.connect(server.url, token=TOKEN, timeout_s=3, retry=retry) as client, \
                Console(client, ConsoleConfig(listen="127.0.0.1:0", token=TOKEN, lag_sample_interval_s=3600)) \
                as console:
            assert httpx.get(console.url + "api/streams", headers=BEARER, timeout=30).json() == []
            server.stop()
            away = httpx.get(console.url + "api/streams", headers=BEARER, timeout=30)
            assert away.status_code == 503 and away.json()["retriable"] is True
            console.sampler.sample()
            assert console.sampler.last_error is not None
            assert httpx.get(console.url + "api/health", headers=BEARER, timeout=30).status_code == 503
            server.restart()
            # The client reconnects on its own (its channel's backoff is at most a second): the next
            # answers after that are whole again.
            deadline = time.monotonic() + 30
            back = httpx.get(console.url + "api/streams", headers=BEARER, timeout=30)
            while back.status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.1)  # a page asks again at its next refresh; bounded
                back = httpx.get(console.url + "api/streams", headers=BEARER, timeout=30)
            assert back.status_code == 200 and back.json() == []
    finally:
        server.stop()
