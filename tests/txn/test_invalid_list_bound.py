"""The invalid list is bounded by what is aborted now, not by history: aborted transactions that
wrote to an idle queue group and to a transactional stream with no retention (logs nobody trims)
leave it once settled, listed as aborted in their logs instead, and what they wrote stays
invisible to every reader. Embedded and through a server (in this process, to drive its manager's
pruning pass)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.queues import Position
from seaway.server import Server, ServerConfig
from seaway.streams import ReaderConfig
from seaway.txn import TransactionManager, TxnConfig

ABORTED = 2_000
WORKERS = 4
ABORTED_TIMEOUT_S = 1.0
"""The aborted transactions' timeout: each settles once its expiry passed (settle_s is 0 here)."""
CONFIG = seaway.SeawayConfig(txn=TxnConfig(settle_s=0, prune_interval_s=3600), retention=None)
QUICK = ReaderConfig(sync_interval_s=0.05, txn_poll_s_max=0.02)
WAIT_S = 60.0
"""A bound for a stalled test, not a timing."""


@pytest.fixture(params=["embedded", "remote"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, TransactionManager]]:
    if request.param == "embedded":
        with seaway.open(tmp_path / "data", CONFIG) as sw:
            manager = sw.txn.api
            assert isinstance(manager, TransactionManager)
            yield sw, manager
        return
    server = Server(ServerConfig(data_dir=tmp_path / "server", listen="127.0.0.1:0", shutdown_grace_s=5,
                                 store=CONFIG))
    server.start()
    try:
        manager = server.store.txn.api
        assert isinstance(manager, TransactionManager)
        with seaway.connect(f"seaway://{server.address}", timeout_s=30) as sw:
            yield sw, manager
    finally:
        server.stop()


def _prune_until_empty(sw: Any, manager: TransactionManager) -> int:
    """Run the pruning pass until the invalid list is empty (each aborted transaction settles
    once its expiry passed); return how many left it."""
    pruned = 0
    deadline = time.monotonic() + WAIT_S
    pause = threading.Event()
    while time.monotonic() < deadline:
        pruned += manager.run_pruning()
        if not sw.txn.snapshot().invalid:
            break
        pause.wait(0.1)  # until the last expiry passes
    return pruned


def test_aborted_writes_to_logs_nobody_trims_leave_the_invalid_list_and_stay_invisible(
        store: tuple[Any, TransactionManager]) -> None:
    sw, manager = store
    sw.queues.create("q")
    sw.queues.create_group("q", "idle", 2, "HASH", key="user")  # nobody reads it until the end
    sw.queues.create_group("q", "live", 1, "ROUND_ROBIN")
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/results", segments=1, transactional=True)  # no retention
    producer = sw.queues.producer("q")
    reader = sw.streams.create_reader_group("g", stream).reader("r", QUICK)
    live = sw.queues.consumer("q", "live", 0)
    committed: list[bytes] = []

    def commit(payload: bytes) -> None:
        with sw.transaction() as done:
            producer.enqueue(done, payload, {"user": len(committed) % 4})
            writer.write(payload, "k", txn=done).result(10)
        committed.append(payload)

    def abort_some(worker: int) -> None:  # several at once: their syncs are shared
        mine = sw.queues.producer("q")
        with stream.writer() as own:
            for i in range(worker, ABORTED, WORKERS):
                tx = sw.txn.begin(timeout_s=ABORTED_TIMEOUT_S)
                payload = b"aborted-%d" % i
                mine.enqueue(tx, payload, {"user": i % 4})
                mine.flush(tx)
                own.write(payload, "k", txn=tx).result(10)
                tx.abort()

    with stream.writer() as writer:
        commit(b"committed-first")
        event = reader.read_next(WAIT_S)  # a reader that judged records before any pruning, and goes on after
        assert event is not None
        seen_early = [event.payload]
        workers = [threading.Thread(target=abort_some, args=(w,)) for w in range(WORKERS)]
        for thread in workers:
            thread.start()
        while any(thread.is_alive() for thread in workers):
            commit(b"committed-%d" % len(committed))  # among the aborted ones
            workers[0].join(0.5)
        for thread in workers:
            thread.join()
        commit(b"committed-last")
    assert len(sw.txn.snapshot().invalid) == ABORTED

    assert _prune_until_empty(sw, manager) == ABORTED
    assert sw.txn.snapshot().invalid == () and sw.txn.list() == []

    # Every reader sees the committed entries and events only, in order.
    rest = []
    while len(seen_early) + len(rest) < len(committed):
        event = reader.read_next(WAIT_S)
        assert event is not None, f"{len(rest)} events after the first"
        rest.append(event.payload)
    assert reader.read_next(0.2) is None
    reader.close()
    assert seen_early + rest == committed
    late_reader = sw.streams.create_reader_group("g2", stream).reader("r", QUICK)
    fresh = []
    while (event := late_reader.read_next(2.0)) is not None:
        fresh.append(event.payload)
    late_reader.close()
    assert fresh == committed

    delivered = []
    deadline = time.monotonic() + WAIT_S
    while len(delivered) < len(committed) and time.monotonic() < deadline:
        with sw.transaction() as tx:
            delivered.extend(e.payload for e in live.dequeue(tx, 500, 0.5))
    with sw.transaction() as tx:
        delivered.extend(e.payload for e in live.dequeue(tx, 500, 0.5))
    assert delivered == committed

    by_range = []
    for partition in range(2):
        got = sw.queues.read_committed("q", "idle", 1, partition, Position(1, 0), entries_max=1000)
        assert not got.blocked
        by_range.extend(e.payload for e in got.entries)
    assert sorted(by_range) == sorted(committed)
    idle = [sw.queues.consumer("q", "idle", c) for c in range(2)]
    dequeued = []
    deadline = time.monotonic() + WAIT_S
    while len(dequeued) < len(committed) and time.monotonic() < deadline:
        for consumer in idle:
            with sw.transaction() as tx:
                dequeued.extend(e.payload for e in consumer.dequeue(tx, 1000, 0.5))
    for consumer in idle:  # once more: nothing else comes
        with sw.transaction() as tx:
            dequeued.extend(e.payload for e in consumer.dequeue(tx, 1000, 0.5))
    assert sorted(dequeued) == sorted(committed)
