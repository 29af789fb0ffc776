"""The server process: graceful stop, tokens, limits, metrics, health, the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import grpc
import pytest

import seaway
from seaway import (
    AuthenticationError,
    InvalidArgumentError,
    OverloadedError,
    PayloadTooLargeError,
    Record,
    SeawayError,
    StorageError,
    UnavailableError,
)
from seaway.server import Server, ServerConfig, ServerProcess, ServiceLimits
from seaway.testing import failing_wal_syncs
from seaway.wire import seaway_pb2, seaway_pb2_grpc


def payloads(items: list[object]) -> list[bytes]:
    return [i.payload for i in items if isinstance(i, Record)]


@pytest.mark.slow
def test_sigterm_finishes_in_flight_appends_and_loses_nothing(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    acked: list[tuple[range, list[bytes]]] = []
    failures: list[BaseException] = []
    with seaway.connect(server.url, retry=seaway.RetryPolicy(attempts_max=1)) as sw:
        log = sw.logs.create("l")

        def produce() -> None:
            n = 0
            while True:
                batch = [f"{n}/{i}".encode() * 20 for i in range(50)]
                futures: list[tuple[Future[range], list[bytes]]] = []
                for _ in range(4):
                    futures.append((log.append_batch_async(batch), batch))
                    n += 1
                for future, sent in futures:
                    try:
                        acked.append((future.result(30), sent))
                    except SeawayError as exc:
                        failures.append(exc)
                        return

        thread = threading.Thread(target=produce)
        thread.start()
        while len(acked) < 20:
            time.sleep(0.01)
        code = server.stop()
        thread.join(30)
    assert code == 0, server.log_text()[-3000:]
    assert failures and all(isinstance(f, SeawayError) for f in failures)  # typed, not a hang or a crash
    server.restart()
    try:
        with seaway.connect(server.url) as sw:
            by_lsn = {r.lsn: r.payload for r in sw.logs.get("l").read() if isinstance(r, Record)}
        for lsns, sent in acked:
            assert [by_lsn.get(lsn) for lsn in lsns] == sent
        assert '"msg": "stopping"' in server.log_text()
    finally:
        server.stop()


def test_token_is_required_and_refusals_are_logged(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", token="s3cret") as server:
        with seaway.connect(server.url) as anonymous, pytest.raises(AuthenticationError):
            anonymous.logs.create("x")
        with seaway.connect(server.url, token="wrong") as wrong:
            for _ in range(50):  # a client repeating its mistake is counted, and logged once a minute
                with pytest.raises(AuthenticationError):
                    wrong.logs.list()
        with seaway.connect(server.url, token="s3cret") as sw:
            assert sw.logs.create("x").append(b"ok") > 0
        assert server.log_text().count("refused requests without the right token") == 1


def test_listening_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="token"):
        Server(ServerConfig(data_dir=tmp_path, listen="0.0.0.0:0"))


def test_limits_per_connection_and_request_size(tmp_path: Path) -> None:
    limits = ServiceLimits(request_bytes_max=1 << 20, read_streams_per_connection_max=2)
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", limits=limits))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}", retry=seaway.RetryPolicy(attempts_max=1)) as sw:
            log = sw.logs.create("l")
            log.append(b"kept")
            with pytest.raises(PayloadTooLargeError):
                log.append_batch([b"x" * 1000] * 2000)  # 2 MB in one request
            readers = [sw.logs.reader() for _ in range(3)]
            for r in readers[:2]:
                r.start_reading(log, 1, seaway.LSN_MAX)
                assert payloads(r.read(10, timeout_s=10)) == [b"kept"]
            readers[2].start_reading(log, 1, seaway.LSN_MAX)
            with pytest.raises(OverloadedError):
                readers[2].read(10, timeout_s=10)
            for r in readers:
                r.close()
            assert payloads(list(log.read())) == [b"kept"]
    finally:
        server.stop()


def test_health_and_metrics(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0")) as server:
        with seaway.connect(server.url) as sw:
            assert sw.health() == "SERVING"
            log = sw.logs.create("m")
            log.append_batch([b"x" * 100] * 7)
            assert len(list(log.read())) >= 7
            with pytest.raises(seaway.UnknownLogError):
                sw.logs.get("nope")
        assert server.metrics_address is not None
        with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as response:
            text = response.read().decode()
        values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
                  if line and not line.startswith("#")}
        assert values["seaway_appended_records_total"] == 7
        assert values["seaway_appended_bytes_total"] == 700
        assert values["seaway_read_records_total"] >= 7
        assert values['seaway_errors_total{code="UNKNOWN_LOG",method="GetLog"}'] == 1
        assert values["seaway_append_seconds_count"] == 1


def test_unreachable_server_is_a_transport_error() -> None:
    with seaway.connect("seaway://127.0.0.1:1", retry=seaway.RetryPolicy(attempts_max=2, backoff_s=0.01),
                        timeout_s=5) as sw, pytest.raises(UnavailableError):
        sw.logs.list()
    with pytest.raises(InvalidArgumentError):
        seaway.connect("http://localhost:1")


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seaway.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)


def test_log_commands_against_a_server(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        where = ("--address", server.url)
        assert _cli("log", "create-group", "g", "100", "199", "--backlog-s", "60", *where).returncode == 0
        grouped = _cli("log", "create", "in-group", "--group", "g", *where, "--json")
        assert json.loads(grouped.stdout)["log_id"] == 100, grouped.stderr
        assert _cli("log", "create", "cli", *where).returncode == 0
        appended = _cli("log", "append", "cli", "one", "two", *where, "--json")
        assert appended.returncode == 0, appended.stderr
        first = json.loads(appended.stdout)["first_lsn"]
        assert _cli("log", "append", "cli", *where, stdin="three\nfour\n").returncode == 0
        tail = _cli("log", "tail", "cli", *where, "--json")
        items = [json.loads(line) for line in tail.stdout.splitlines()]
        assert [i["payload"] for i in items if "payload" in i] == ["one", "two", "three", "four"]
        assert _cli("log", "trim", "cli", str(first), *where).returncode == 0
        info = {row["name"]: row for row in json.loads(_cli("log", "info", *where, "--json").stdout)}
        assert info["cli"]["trim_point"] == first and info["in-group"]["group"] == "g"
        assert info["in-group"]["backlog_s"] == 60
        found = json.loads(_cli("log", "find-time", "cli", "0", *where, "--json").stdout)
        assert found["lsn"] == first + 1
        missing = _cli("log", "append", "nope", "x", *where)
        assert missing.returncode == 3  # absent
        assert missing.stderr.count("\n") == 1 and "UNKNOWN_LOG" in missing.stderr
    down = _cli("log", "info", "--address", server.url)
    assert down.returncode == 4 and "UNAVAILABLE" in down.stderr  # no server to talk to


@pytest.mark.slow
def test_a_client_killed_mid_batch_leaves_nothing_half_visible(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        with seaway.connect(server.url) as sw:
            sw.logs.create("big")
        script = ("import seaway, sys\n"
                  "log = seaway.connect(sys.argv[1]).logs.get('big')\n"
                  "log.tail_lsn()\n"
                  "print('ready', flush=True)\n"
                  "n = 0\n"
                  "while True:\n"
                  "    log.append_batch([n.to_bytes(4, 'big') * 2500] * 2000)\n"  # 20 MB a batch
                  "    print(n, flush=True)\n"
                  "    n += 1\n")
        # Kills at moments counted from the child's first call (a loaded machine can take seconds to start
        # it), then one after a batch got through, so that the check below always has something to check.
        for delay, after_a_batch in ((0.3, False), (0.6, False), (0.9, False), (1.2, False), (0.2, True)):
            child = subprocess.Popen([sys.executable, "-c", script, server.url], stdout=subprocess.PIPE, text=True)
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            if after_a_batch:
                assert child.stdout.readline().strip() == "0"
            time.sleep(delay)
            child.kill()
            child.wait(30)
            child.stdout.close()
        with seaway.connect(server.url) as sw:
            records = [i for i in sw.logs.get("big").read() if isinstance(i, Record)]
        assert records, "no batch got through: the kills proved nothing"
        assert len(records) % 2000 == 0  # whole batches only
        for start in range(0, len(records), 2000):
            assert len({r.payload for r in records[start:start + 2000]}) == 1


def test_the_server_runs_retention_on_its_own(tmp_path: Path) -> None:
    store = seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=seaway.LogsDBConfig(partition_duration_s=0.2)))
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", store=store, retention_interval_s=0.1))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}") as sw:
            log = sw.logs.create("short", backlog_s=0.5)
            old = log.append(b"old")
            time.sleep(0.3)
            log.append(b"new")  # lands in a newer time partition
            deadline = time.monotonic() + 20
            while log.trim_point() < old and time.monotonic() < deadline:
                time.sleep(0.05)
            assert log.trim_point() >= old, "retention never dropped the expired partition"
            items = list(log.read())
            assert items[0].type is seaway.GapType.TRIM  # type: ignore[union-attr]
            assert payloads(items) == [b"new"]
    finally:
        server.stop()


def test_a_tailing_reader_is_told_when_the_server_stops(tmp_path: Path) -> None:
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", shutdown_grace_s=5))
    server.start()
    with seaway.connect(f"seaway://{server.address}") as sw:
        log = sw.logs.create("t")
        log.append(b"one")
        reader = sw.logs.reader()
        reader.start_reading(log, 1, seaway.LSN_MAX)
        assert payloads(reader.read(10, timeout_s=10)) == [b"one"]
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        with pytest.raises(SeawayError) as raised:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                reader.read(10, timeout_s=1)
        assert raised.value.retriable  # not the end of the log: a transport condition, try again
        stopper.join(30)


@pytest.mark.slow
def test_a_tailing_reader_rides_out_a_server_restart(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data")
    patient = seaway.RetryPolicy(attempts_max=100, backoff_s=0.05, backoff_max_s=0.25)
    try:
        with seaway.connect(server.url, retry=patient) as sw:
            log = sw.logs.create("t")
            log.append_batch([b"a", b"b"])
            with sw.logs.reader() as reader:
                reader.start_reading(log, 1, seaway.LSN_MAX)
                seen = payloads(reader.read(10, timeout_s=10))
                server.kill()
                server.restart()  # same port
                log.append_batch([b"c", b"d"])
                deadline = time.monotonic() + 30
                while len(seen) < 4 and time.monotonic() < deadline:
                    seen += payloads(reader.read(10, timeout_s=1))
            assert seen == [b"a", b"b", b"c", b"d"]  # nothing skipped, nothing twice
    finally:
        server.stop()


def test_append_many_answers_each_batch_on_its_own(tmp_path: Path) -> None:
    pb = seaway_pb2
    limits = ServiceLimits(append_batches_per_call_max=8)
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", limits=limits))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}") as sw, grpc.insecure_channel(server.address) as channel:
            log = sw.logs.create("a")
            small = sw.logs.create("small", payload_bytes_max=10)
            stub = seaway_pb2_grpc.SeawayStub(channel)  # type: ignore[no-untyped-call]
            batches = [pb.AppendRequest(log_id=log.id, payloads=[b"1", b"2"]),
                       pb.AppendRequest(log_id=987654321, payloads=[b"lost"]),
                       pb.AppendRequest(log_id=small.id, payloads=[b"x" * 100]),
                       pb.AppendRequest(log_id=log.id, payloads=[b"3"]),
                       pb.AppendRequest(log_id=log.id, payloads=[]),
                       pb.AppendRequest(log_id=log.id, payloads=[b"4"], producer_id=b"p", sequence=0),
                       pb.AppendRequest(log_id=log.id, payloads=[b"4"], producer_id=b"p", sequence=0)]
            reply = stub.AppendMany(pb.AppendManyRequest(batches=batches), timeout=30)
            outcome = [r.error.code if r.HasField("error") else (r.appended.first_lsn, r.appended.count)
                       for r in reply.results]
            assert outcome[1:3] == ["UNKNOWN_LOG", "PAYLOAD_TOO_LARGE"]
            assert outcome[4] == "INVALID_ARGUMENT"
            assert all(r.error.message for r in reply.results if r.HasField("error"))
            assert reply.results[2].error.retriable is False
            first, third, fourth, again = outcome[0], outcome[3], outcome[5], outcome[6]
            assert isinstance(first, tuple) and isinstance(third, tuple) and isinstance(fourth, tuple)
            assert first[1] == 2 and third[1] == 1 and again == fourth  # stored once, same LSNs
            assert first[0] < third[0] < fourth[0]  # in the order of the request
            assert payloads(list(log.read())) == [b"1", b"2", b"3", b"4"]
            assert payloads(list(small.read())) == []
            with pytest.raises(grpc.RpcError) as refused:
                stub.AppendMany(pb.AppendManyRequest(batches=[batches[0]] * 9), timeout=30)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
            assert payloads(list(log.read())) == [b"1", b"2", b"3", b"4"]
        errors = server.metrics.errors
        assert errors.labels(method="AppendMany", code="UNKNOWN_LOG")._value.get() == 1
        assert errors.labels(method="AppendMany", code="INVALID_ARGUMENT")._value.get() == 2
    finally:
        server.stop()


def test_a_failed_disk_sync_fails_appends_and_makes_the_server_unhealthy(tmp_path: Path) -> None:
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0"))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}", retry=seaway.RetryPolicy(attempts_max=1)) as sw:
            log = sw.logs.create("l")
            log.append(b"kept")
            with failing_wal_syncs(server.store._store.logsdb), pytest.raises(StorageError, match="injected"):
                log.append(b"lost")
            assert "injected" in (server.store.write_failure or "")
            with pytest.raises(StorageError, match="reopen"):
                log.append(b"refused")
            assert sw.health() == "NOT_SERVING"
            assert payloads(list(log.read())) == [b"kept"]
    finally:
        server.stop()
    with seaway.open(tmp_path) as store:
        assert store.write_failure is None
        assert payloads(list(store.logs.get("l").read()))[0] == b"kept"


def test_lag_gauges(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0")) as server:
        with seaway.connect(server.url) as sw:
            sw.streams.create_scope("m")
            stream = sw.streams.create("m/s", segments=1)
            with stream.writer() as writer:
                for i in range(3):
                    writer.write(b"%d" % i, "k").result(10)
            sw.streams.create_reader_group("rg", stream)
            sw.queues.create("q")
            sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
            with sw.transaction() as tx:
                sw.queues.producer("q").enqueue_batch(tx, [b"a", b"b", b"c", b"d"])
        assert server.metrics_address is not None
        with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as response:
            text = response.read().decode()
        values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line and not line.startswith("#")}
        assert values['seaway_reader_group_lag{group="rg"}'] == 3
        assert values['seaway_consumer_group_lag{group="g",queue="q"}'] == 4
        assert values['seaway_consumer_group_partition_lag{generation="1",group="g",partition="0",queue="q"}'] == 2


def test_transaction_waits_held_at_once_are_bounded(tmp_path: Path) -> None:
    """A ``TxnWaitEnded`` long poll holds a server thread: the server holds at most
    ``txn_waits_max`` at once (and ``txn_waits_per_connection_max`` per connection) and refuses one
    more at once with the retriable OVERLOADED; one held is woken by the end it waits for."""
    limits = ServiceLimits(txn_waits_max=1, txn_waits_per_connection_max=1)
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", limits=limits))
    server.start()
    manager = server.store.txn.api
    held = threading.Event()
    wait_ended = manager.wait_ended

    def counted(ids: Any, timeout_s: float) -> list[int]:
        held.set()  # the server took its slot before it waits
        return wait_ended(ids, timeout_s)

    manager.wait_ended = counted  # type: ignore[method-assign]
    once = seaway.RetryPolicy(attempts_max=1)
    url = f"seaway://{server.address}"
    try:
        with seaway.connect(url, retry=once) as a, seaway.connect(url, retry=once) as b:
            tx = a.transaction()
            waiter = threading.Thread(target=lambda: a.txn.wait_ended([tx.id], 60.0))
            waiter.start()
            assert held.wait(10)
            for handle in (a, b):
                with pytest.raises(OverloadedError):
                    handle.txn.wait_ended([tx.id], 60.0)
            tx.commit()
            waiter.join(10)
            assert not waiter.is_alive()
            assert b.txn.wait_ended([tx.id], 60.0) == [tx.id]  # the slot was given back
    finally:
        server.stop()
