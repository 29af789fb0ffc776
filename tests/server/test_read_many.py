"""``ReadMany`` on the wire: grants bound what the server sends, a failed read leaves the stream going,
a malformed control fails it, and what the server holds for readers is bounded in bytes."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import seaway
from seaway import OverloadedError, Record
from seaway.server import Server, ServerConfig, ServerProcess, ServiceLimits
from seaway.wire import error_from_status, seaway_pb2, seaway_pb2_grpc

pb = seaway_pb2


class _Stream:
    """A raw ``ReadMany`` call: controls sent as given, replies taken one by one."""

    def __init__(self, address: str) -> None:
        self._channel = grpc.insecure_channel(address)
        self._controls: queue.SimpleQueue[pb.ReadControls | None] = queue.SimpleQueue()
        stub = seaway_pb2_grpc.SeawayStub(self._channel)  # type: ignore[no-untyped-call]
        self.call: Any = stub.ReadMany(self._iter(), timeout=60)

    def _iter(self) -> Iterator[pb.ReadControls]:
        while (msg := self._controls.get()) is not None:
            yield msg

    def send(self, **control: Any) -> None:
        self._controls.put(pb.ReadControls(controls=[pb.ReadControl(**control)]))

    def next(self) -> pb.ReadReply:
        reply: pb.ReadReply = next(self.call)
        return reply

    def close(self) -> None:
        self._controls.put(None)
        self.call.cancel()
        self._channel.close()


def _records(reply: pb.ReadReply) -> list[bytes]:
    return [p for part in reply.logs for run in part.runs for p in run.records.payloads]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0",
                                 limits=ServiceLimits(read_bytes_max=5 << 20)))
    server.start()
    yield server
    server.stop()


def test_the_server_sends_only_what_was_granted(server: Server) -> None:
    with seaway.connect(f"seaway://{server.address}") as sw:
        log = sw.logs.create("l")
        lsns = log.append_batch([bytes([i]) * 1000 for i in range(10)])
    stream = _Stream(server.address)

    def probe(tag: int) -> None:
        """Replies keep their order: had the server sent more records, they would come before this."""
        stream.send(start=pb.ReadStart(log_id=10**12, tag=tag))
        assert [(p.log_id, p.tag, p.error.code) for p in stream.next().logs] == [(10**12, tag, "UNKNOWN_LOG")]

    try:
        stream.send(start=pb.ReadStart(log_id=log.id, lsn_from=lsns[0], lsn_until=lsns[-1], tag=7))
        stream.send(grant=pb.ReadGrant(items=3, bytes=3000))
        got: list[bytes] = []
        while len(got) < 3:
            reply = stream.next()
            assert all(part.tag == 7 and not part.ended for part in reply.logs)
            got += _records(reply)
        probe(8)
        # 2,500 bytes take two records and, what is left being still positive, one more.
        stream.send(grant=pb.ReadGrant(items=100, bytes=2500))
        while len(got) < 6:
            got += _records(stream.next())
        probe(9)
        assert len(got) == 6
        stream.send(grant=pb.ReadGrant(bytes=10**6))  # -500 + 10**6 left: the rest
        ended = False
        while not ended:
            reply = stream.next()
            got += _records(reply)
            ended = any(part.ended for part in reply.logs)
        assert got == [bytes([i]) * 1000 for i in range(10)]
    finally:
        stream.close()


def test_a_malformed_control_fails_the_stream(server: Server) -> None:
    stream = _Stream(server.address)
    try:
        stream.send()  # neither a start, a stop nor a grant
        with pytest.raises(grpc.RpcError) as raised:
            stream.next()
        call: Any = raised.value
        assert error_from_status(call.code(), call.details(), call.trailing_metadata()).code == "INVALID_ARGUMENT"
    finally:
        stream.close()


def test_streams_are_refused_once_their_bytes_would_pass_the_servers_bound(server: Server) -> None:
    # read_bytes_max 5 MB, a stream takes 2 MB: two streams fit, a third does not.
    with seaway.connect(f"seaway://{server.address}", retry=seaway.RetryPolicy(attempts_max=1)) as sw:
        log = sw.logs.create("l")
        log.append(b"x")
        readers = [sw.logs.reader() for _ in range(3)]
        try:
            for reader in readers[:2]:
                reader.start_reading(log)
                assert [i.payload for i in reader.read(10, timeout_s=10) if isinstance(i, Record)] == [b"x"]
            readers[2].start_reading(log)
            with pytest.raises(OverloadedError):
                readers[2].read(10, timeout_s=10)
            readers[0].close()  # its bytes go back to the server's pool
            deadline = time.monotonic() + 10
            while True:
                third = sw.logs.reader()
                third.start_reading(log)
                try:
                    assert [i.payload for i in third.read(10, timeout_s=10) if isinstance(i, Record)] == [b"x"]
                    break
                except OverloadedError:  # the server hears of the cancel a moment later
                    assert time.monotonic() < deadline
                finally:
                    third.close()
        finally:
            for reader in readers:
                reader.close()


def _wait_granted_all_received(reader: Any, timeout_s: float) -> bool:
    """Wait until ``reader`` (a remote reader) has received all it granted its server and grants no
    more: the server then reads nothing more for it (it reads ahead within the grants, in the call
    that makes a reply) and has nothing of it in flight. A reply's receipt and the grant that
    follows it happen together under the reader's lock, which then wakes its waiters."""

    def idle() -> bool:
        stream = reader._stream
        return stream is not None and (stream.bytes_out <= 0 or stream.items_out <= 0)

    with reader._cv:
        return bool(reader._cv.wait_for(idle, timeout_s))


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
def test_readers_that_stop_reading_cost_the_server_little_memory(tmp_path: Path) -> None:
    """With 1 MB records, five remote readers that read one record and stop used to make the server
    read ahead 2,000 records each (here, the whole 60 MB log: measured, 106 MB more); now a stream
    holds about 2 MB there (measured, 36 MB more with the transport's buffers)."""
    with ServerProcess(tmp_path / "data") as server, seaway.connect(server.url) as sw:
        log = sw.logs.create("big", payload_bytes_max=1 << 20)
        for _ in range(15):
            log.append_batch([b"m" * (1 << 20)] * 4)
        before = _rss_bytes(server.pid)
        readers = [sw.logs.reader(runs=True) for _ in range(5)]
        try:
            for reader in readers:
                reader.start_reading(log)
                assert reader.read(1, timeout_s=30)
            # The server has read ahead as far as it ever will once every grant has come back filled.
            for reader in readers:
                assert _wait_granted_all_received(reader, 60), "the server did not send all the reader granted"
            grown = _rss_bytes(server.pid) - before
        finally:
            for reader in readers:
                reader.close()
        assert grown < 64 << 20, f"the server grew by {grown >> 20} MB for five stalled readers"
