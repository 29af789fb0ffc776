"""A remote begin's reply does not grow with the invalid list (review finding 25): with 300,000
aborted transactions listed (about 2.7 MB of ids, over the server's 2 MiB reply bound), remote
begins and snapshots work, carry the whole list, and once the client holds it each reply carries
only what changed since."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.client import RemoteSeaway
from seaway.server import Server, ServerConfig
from seaway.txn._state import Abort, Begin, Register

INVALID = 300_000


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(ServerConfig(data_dir=tmp_path, listen="127.0.0.1:0"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _list_aborted(server: Server, count: int) -> list[int]:
    """The state ``count`` aborted transactions that registered a log leave, made in a second
    (logging 900,000 edits one by one would take minutes)."""
    manager = server.store.txn_manager
    with manager._cond:
        first = manager.state.last_write_pointer + 1
        ids = list(range(first, first + count))
        for wp in ids:
            manager.state.apply(Begin(wp, 1, 10**12))
            manager.state.apply(Register(wp, (7,)))
            manager.state.apply(Abort(wp, 2))
    return ids


class _Replies:
    """Records the size of each reply the client receives, by method."""

    def __init__(self, sw: RemoteSeaway) -> None:
        self.sizes: list[tuple[str, int]] = []
        self._call = sw._call

        def call(method: str, request: Any, **kwargs: Any) -> Any:
            reply = self._call(method, request, **kwargs)
            self.sizes.append((method, reply.ByteSize()))
            return reply

        sw._call = call  # type: ignore[method-assign]


def test_remote_begins_work_past_the_reply_bound_and_then_carry_only_changes(server: Server) -> None:
    aborted = _list_aborted(server, INVALID)
    with seaway.connect(server.url) as sw:
        replies = _Replies(sw)
        first = sw.txn.begin()
        assert first.snapshot.invalid == tuple(aborted)
        assert not first.snapshot.visible(aborted[-1])
        methods = [method for method, _ in replies.sizes]
        assert methods[0] == "TxnBegin" and methods.count("TxnInvalid") >= INVALID // 65_536
        assert max(size for _, size in replies.sizes) < 1 << 20
        first.abort()

        log = sw.logs.create("data")
        more = []
        for _ in range(3):
            with pytest.raises(RuntimeError), sw.transaction() as tx:
                tx.register_logs([log.id])
                more.append(tx.id)
                raise RuntimeError("abort it")
        replies.sizes.clear()
        second = sw.txn.begin()
        assert second.snapshot.invalid == tuple(aborted + more)
        assert [method for method, _ in replies.sizes] == ["TxnBegin"]
        assert replies.sizes[0][1] < 1_000  # three new ids, not 300,003
        snapshot = sw.txn.snapshot()
        assert snapshot.invalid == second.snapshot.invalid and replies.sizes[-1][1] < 1_000
        second.commit()

        with sw.transaction() as tx:  # committed data next to all those aborted ids: visible
            tx.register_logs([log.id])
            committed = tx.id
        assert sw.txn.snapshot().visible(committed)
