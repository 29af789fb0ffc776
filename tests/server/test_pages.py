"""Lists through a server come in pages bounded by bytes, and the client joins them: the same
answers as the embedded store's, whatever the server's reply bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import InvalidArgumentError
from seaway.client import RemoteSeaway
from seaway.server import Server, ServerConfig, ServiceLimits
from seaway.server._pages import ITEMS_MAX
from seaway.txn import TransactionManager, TxnStatus
from seaway.txn._state import Abort, Begin, Register
from seaway.wire import seaway_pb2 as pb

REPLY_BYTES_MAX = 300


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    limits = ServiceLimits(read_message_bytes_max=REPLY_BYTES_MAX)
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0", limits=limits))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _pages(sw: RemoteSeaway, method: str) -> list[object]:
    """The raw replies of a list call, page after page, each within the server's bound."""
    replies = []
    request = pb.PageRequest()
    while True:
        reply = getattr(sw._stub, method)(request, timeout=10)
        replies.append(reply)
        if not reply.HasField("next"):
            return replies
        request = pb.PageRequest(after=reply.next)


def test_lists_come_in_pages_and_are_joined(server: Server) -> None:
    store = server.store
    with seaway.connect(f"seaway://{server.address}") as sw:
        for i in range(12):
            sw.logs.create_group(f"group-with-a-longer-name-{i:02d}", 1000 + 10 * i, 1009 + 10 * i, backlog_s=60.0 + i)
        # Ids of 9 bytes on the wire: the partition that holds them all takes several replies.
        logs = [sw.logs.create(f"log-with-a-longer-name-{i:03d}", log_id=2**60 + i) for i in range(60)]
        for log in logs:
            log.append(b"x")  # every log in the newest partition: its log ids take several pages
        transactions = [sw.txn.begin() for _ in range(24)]
        for txn in transactions[::3]:  # aborted with a log registered: invalid, listed after those in progress
            txn.register_logs([logs[0].id])
            txn.abort()

        assert [log.info for log in sw.logs.list()] == [log.info for log in store.logs.list()]
        assert sw.logs.groups() == store.logs.groups()
        assert sw.logs.partitions() == store.logs.partitions()
        assert {log.id for log in logs} <= set(sw.logs.partitions()[-1].log_ids)
        assert sw.txn.list() == store.txn.list()
        assert {t.status for t in sw.txn.list()} == {seaway.TxnStatus.IN_PROGRESS, seaway.TxnStatus.ABORTED}

        for method, field in (("ListLogs", "logs"), ("ListGroups", "groups"), ("ListPartitions", "partitions"),
                              ("TxnList", "transactions")):
            replies = _pages(sw, method)
            assert len(replies) > 1, method
            for reply in replies:
                items = getattr(reply, field)
                # Within the bound, or one item alone: what a reply holds never grows with the store.
                assert reply.ByteSize() <= REPLY_BYTES_MAX + 64 or len(items) == 1, (method, reply.ByteSize())
        pieces = [p for reply in _pages(sw, "ListPartitions") for p in reply.partitions]
        assert len(pieces) > len(store.logs.partitions())  # the partition's 60 logs went in pieces


def test_a_page_asked_after_a_bad_key_is_refused(server: Server) -> None:
    with seaway.connect(f"seaway://{server.address}") as sw, pytest.raises(InvalidArgumentError, match="after"):
        sw._call("ListLogs", pb.PageRequest(after=b"\x01"))


def test_a_scan_stops_at_the_reply_bound_and_the_client_scans_on(server: Server) -> None:
    with seaway.connect(f"seaway://{server.address}") as sw:
        batch = sw.meta.batch()
        for i in range(50):
            batch.put("pages", b"k%03d" % i, b"v" * 40)
        batch.commit()
        first = sw._call("MetaScan", pb.MetaScanRequest(namespace="pages", limit=50))
        assert first.more and 0 < len(first.entries) < 50
        assert [k for k, _ in sw.meta.scan("pages", limit=50)] == [b"k%03d" % i for i in range(50)]
        assert [k for k, _ in sw.meta.scan("pages", start=b"k010", limit=7)] == [b"k%03d" % i for i in range(10, 17)]
        assert [k for k, _ in sw.meta.scan("pages", end=b"k020", limit=50)] == [b"k%03d" % i for i in range(20)]


def test_calls_about_many_logs_are_sent_in_parts_whose_replies_fit(server: Server) -> None:
    # A reply to 100,000 logs (the most a call may name) would pass the 2 MiB a reply may carry:
    # ~46 bytes a log's bounds. The client asks in parts whose replies fit, and joins them.
    with seaway.connect(f"seaway://{server.address}") as sw:
        logs = [sw.logs.create(f"counted-{i}") for i in range(3)]
        for log in logs:
            log.append(b"x")
        ids = [log.id for log in logs] + list(range(10_000, 10_000 + 99_997))
        sent: list[tuple[str, int]] = []
        call = sw._call

        def counting(method: str, request: object, **kwargs: bool) -> object:
            sent.append((method, len(request.log_ids)))  # type: ignore[attr-defined]
            return call(method, request, **kwargs)

        sw._call = counting  # type: ignore[method-assign]
        bounds = sw.logs.bounds(ids)
        counts = sw.logs.append_counts(ids)
        assert sorted(bounds) == [log.id for log in logs] and all(b.tail_lsn > 0 for b in bounds.values())
        assert len(counts) == len(ids) and [counts[log.id].records for log in logs] == [1, 1, 1]
        assert {method for method, _ in sent} == {"GetLogBounds", "AppendCounts"}
        assert sum(n for _, n in sent) == 2 * len(ids) and max(n for _, n in sent) <= 20_000


def test_a_list_of_100k_transactions_is_read_through_a_server(tmp_path: Path) -> None:
    """At ``in_progress_max`` (100,000 transactions, half of them invalid), ``sw.txn.list()`` is read
    in pages of at most ITEMS_MAX each, and a page asked for with a limit holds no more."""
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0"))
    server.start()
    try:
        manager = server.store.txn.api
        assert isinstance(manager, TransactionManager)
        with manager._cond:  # the state as 100,000 begins and registers leave it, made in a second
            wp = manager.state.last_write_pointer
            for i in range(100_000):
                wp += 1
                manager.state.apply(Begin(wp, 1, 10**12))
                manager.state.apply(Register(wp, (7,)))
                if i % 2:
                    manager.state.apply(Abort(wp, 2))
        with seaway.connect(f"seaway://{server.address}") as sw:
            whole = sw.txn.list()
            assert whole == server.store.txn.list()
            assert len(whole) == 100_000 and len({info.id for info in whole}) == 100_000
            assert [info.status for info in whole[49_999:50_001]] == [TxnStatus.IN_PROGRESS, TxnStatus.ABORTED]
            assert sw.txn.list(after=whole[49_999], limit=3) == whole[50_000:50_003]
            replies = _pages(sw, "TxnList")
            assert len(replies) >= 100_000 // ITEMS_MAX
            assert all(len(reply.transactions) <= ITEMS_MAX for reply in replies)  # type: ignore[attr-defined]
    finally:
        server.stop()
