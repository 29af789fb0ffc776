"""What a server shows peers before any token: the standard ``grpc.health.v1`` service that ordinary
probes use, and a log that a peer sending undecodable metadata cannot flood."""

from __future__ import annotations

import logging
import os
import signal
import socket
import struct
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc  # type: ignore[import-untyped]

import seaway
from seaway import StorageError
from seaway.server import Server, ServerConfig, ServerProcess
from seaway.server._metrics import Metrics
from seaway.server._server import _grpc_log_filters
from seaway.testing import failing_wal_syncs

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICES = ("", "seaway.v1.Seaway")  # what grpc_health_probe and Kubernetes ask for


def _check(stub: Any, service: str) -> int:
    reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    return int(reply.status)


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[Server]:
    """A server in this process, so a test can reach its store; it looks at the store every 10 ms."""
    server = Server(ServerConfig(data_dir=tmp_path / "data", listen="127.0.0.1:0", health_interval_s=0.01,
                                 health_watchers_max=2, shutdown_grace_s=5))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_probes_see_serving_then_not_serving_when_the_server_stops(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            assert [_check(stub, s) for s in SERVICES] == [SERVING, SERVING]
            with pytest.raises(grpc.RpcError) as unknown:
                _check(stub, "no.such.Service")
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
            watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
            assert next(watch).status == SERVING
            os.kill(server.pid, signal.SIGTERM)  # what an orchestrator does; the watcher hears it first
            assert next(watch).status == NOT_SERVING
            watch.cancel()
        assert server.stop() == 0, server.log_text()[-3000:]
    except BaseException:
        print(server.log_text()[-4000:])
        server.kill()
        raise


def test_not_serving_while_the_store_takes_no_writes(in_process: Server) -> None:
    with grpc.insecure_channel(in_process.address) as channel, \
            seaway.connect(f"seaway://{in_process.address}", retry=seaway.RetryPolicy(attempts_max=1)) as sw:
        stub = health_pb2_grpc.HealthStub(channel)
        watch = stub.Watch(health_pb2.HealthCheckRequest(service="seaway.v1.Seaway"), timeout=60)
        assert next(watch).status == SERVING
        log = sw.logs.create("l")
        with failing_wal_syncs(in_process.store._store.logsdb), pytest.raises(StorageError):
            log.append(b"lost")
        assert in_process.store.write_failure is not None
        assert next(watch).status == NOT_SERVING  # told by the server's own look at the store
        assert [_check(stub, s) for s in SERVICES] == [NOT_SERVING, NOT_SERVING]
        assert sw.health() == "NOT_SERVING"  # the same rule as Seaway's own Health
        watch.cancel()


def test_health_watchers_are_bounded(in_process: Server) -> None:
    with grpc.insecure_channel(in_process.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watches = [stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60) for _ in range(2)]
        assert [next(w).status for w in watches] == [SERVING, SERVING]
        with pytest.raises(grpc.RpcError) as refused:
            next(stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _check(stub, "") == SERVING  # a Check is never refused
        watches[0].cancel()
        deadline = time.monotonic() + 30  # the server hears of the cancel on its own time
        while True:
            try:
                again = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
                assert next(again).status == SERVING
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, "a cancelled watcher still counts"
        again.cancel()
        watches[1].cancel()


# --- metadata that is not UTF-8 ---------------------------------------------------------------------


def _hpack_int(n: int) -> bytes:
    """An HPACK integer with a 7-bit prefix (and no Huffman flag)."""
    if n < 127:
        return bytes([n])
    out, n = [127], n - 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes([*out, n])


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _raw_request(address: str, metadata: list[tuple[bytes, bytes]]) -> bytes:
    """One ListLogs call over a fresh HTTP/2 connection, its headers written by hand: grpc's own
    client refuses to send a header value that is not printable ASCII."""
    headers = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/seaway.v1.Seaway/ListLogs"),
               (b":authority", address.encode()), (b"content-type", b"application/grpc"), (b"te", b"trailers"),
               *metadata]
    block = b"".join(b"\x00" + _hpack_int(len(k)) + k + _hpack_int(len(v)) + v for k, v in headers)
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(4, 0, 0, b"")  # preface, SETTINGS
                     + _frame(1, 4, 1, block)  # HEADERS, END_HEADERS
                     + _frame(0, 1, 1, b"\x00\x00\x00\x00\x00"))  # DATA: an empty message, END_STREAM
        answer = b""
        while b"grpc-status" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


def _metric(address: str, name: str) -> float:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))


@pytest.mark.slow
def test_metadata_that_is_not_utf8_is_counted_not_logged_each_time(tmp_path: Path) -> None:
    requests = 60
    server = ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0"))
    try:
        assert server.metrics_address is not None
        assert _raw_request(server.address, [(b"x-fine", b"ascii")]).count(b"grpc-status") == 1  # the client works
        assert _metric(server.metrics_address, "seaway_undecodable_metadata_total") == 0
        for n in range(requests):
            bad = [(b"x-name", b"caf\xe9"), (b"authorization", b"Bearer \xff\xfe"), (b"x-key\xff", b"v")][n % 3]
            assert b"grpc-status" in _raw_request(server.address, [bad])  # answered all the same
        assert _metric(server.metrics_address, "seaway_undecodable_metadata_total") >= requests
        with seaway.connect(server.url) as sw:
            assert sw.health() == "SERVING"
        assert server.stop() == 0
        log = server.log_text()
        assert log.count("metadata that is not UTF-8") == 1, log[-3000:]
        assert "Invalid encoding" not in log and "Traceback" not in log, log[-3000:]
    except BaseException:
        print(server.log_text()[-4000:])
        server.kill()
        raise


def test_grpc_errors_are_throttled_to_one_line_an_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    metrics = Metrics()
    cygrpc = dict(_grpc_log_filters(metrics, clock=lambda: now[0]))["grpc._cython.cygrpc"]  # no waiting a minute
    undecodable = logging.LogRecord("grpc._cython.cygrpc", logging.ERROR, "x", 1, "Invalid encoding on %s",
                                    (b"caf\xe9",), None)
    other = logging.LogRecord("grpc._cython.cygrpc", logging.ERROR, "x", 1, "something else", None, None)
    with caplog.at_level(logging.WARNING, logger="seaway.server"):
        passed = [cygrpc.filter(undecodable) for _ in range(100)]
        now[0] += 59.9
        passed.append(cygrpc.filter(undecodable))
        assert len(caplog.records) == 1
        now[0] += 0.2
        passed.append(cygrpc.filter(undecodable))
        assert len(caplog.records) == 2
    assert not any(passed)  # grpc's own lines never pass: they may quote what the client sent
    assert cygrpc.filter(other)  # anything else grpc logs goes through
    assert metrics.registry.get_sample_value("seaway_undecodable_metadata_total") == 102
    assert metrics.registry.get_sample_value("seaway_undecodable_requests_total") == 0
