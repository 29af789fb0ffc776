"""A hostile client against a real server: what it is refused, and what the server refuses to do
insecurely (docs/security.md). Each test tries one rule and fails if the rule does not hold."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import grpc
import pytest

import seaway
from seaway import InvalidArgumentError
from seaway.server import Server, ServerConfig, ServerProcess, ServiceLimits
from seaway.wire import seaway_pb2

pb = seaway_pb2


def _metric(address: str | None, name: str) -> float:
    assert address is not None
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = [float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " ")]
    return values[0] if values else 0.0


# --- finding 19: the token before the body; calls bounded --------------------------------------------


def test_a_call_without_the_token_is_refused_before_its_body_is_decoded(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", token="s3cret", extra_args=("--metrics-listen", "0")) as server, \
            grpc.insecure_channel(server.address) as channel:
        create = channel.unary_unary("/seaway.v1.Seaway/CreateLog")
        for metadata in [(), (("authorization", "Bearer wrong"),)]:
            with pytest.raises(grpc.RpcError) as refused:
                create(b"\xff\xff not a message", timeout=10, metadata=metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
        with pytest.raises(grpc.RpcError) as stream_refused:
            list(channel.stream_stream("/seaway.v1.Seaway/ReadMany")(iter([b"\xff\xff"]), timeout=10))
        assert stream_refused.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
        # Never decoded: no body was counted as undecodable, three calls as unauthenticated.
        assert _metric(server.metrics_address, "seaway_undecodable_requests_total") == 0
        assert _metric(server.metrics_address, "seaway_unauthenticated_requests_total") == 3
        # Probes need no token; with it, the same garbage is a bad request.
        assert pb.HealthReply.FromString(channel.unary_unary("/seaway.v1.Seaway/Health")(b"", timeout=10)).status \
            == "SERVING"
        with pytest.raises(grpc.RpcError) as bad:
            create(b"\xff\xff not a message", timeout=10, metadata=(("authorization", "Bearer s3cret"),))
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_calls_in_progress_are_bounded(tmp_path: Path) -> None:
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", limits=ServiceLimits(calls_max=2)))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}", retry=seaway.RetryPolicy(attempts_max=1)) as sw:
            log = sw.logs.create("l")
            log.append(b"x")
            readers = [sw.logs.reader() for _ in range(2)]
            for r in readers:  # each holds a call open once it has read
                r.start_reading(log, 1, seaway.LSN_MAX)
                assert r.read(10, timeout_s=10)
            with grpc.insecure_channel(server.address) as channel, pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary("/seaway.v1.Seaway/ListLogs")(b"", timeout=10)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
            for r in readers:
                r.close()
    finally:
        server.stop()


# --- finding 20: no token in clear text beyond loopback ----------------------------------------------


def test_listening_beyond_loopback_with_a_token_needs_tls(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="needs TLS"):
        Server(ServerConfig(data_dir=tmp_path, listen="0.0.0.0:0", token="t"))
    with pytest.raises(InvalidArgumentError, match="needs a token"):
        Server(ServerConfig(data_dir=tmp_path, listen="0.0.0.0:0"))


# --- finding 25: metrics on loopback ---------------------------------------------------------------


def test_metrics_listen_on_loopback_unless_allowed_beyond(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="beyond loopback"):
        Server(ServerConfig(data_dir=tmp_path, metrics_listen="0.0.0.0:0"))
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", metrics_listen="0"))
    try:
        assert server.metrics_host == "127.0.0.1" and server.metrics_port
    finally:
        server.start()
        server.stop()
