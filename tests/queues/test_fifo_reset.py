"""A FIFO group's reset racing its consumers' claims, fault by fault: a claim made after the reset
read the claims but before it committed, a claim whose pointer was read after the reset applied,
and a reset interrupted between its transaction's staging and its commit."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import TxnConfig
from seaway.queues import Consumer, Position
from seaway.queues._records import NAMESPACE, Claim, claim_key, claims_prefix


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as store:
        yield store


def _fifo(sw: seaway.Seaway, count: int, size: int = 2) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", size, "FIFO")
    for i in range(count):  # a chunk each: a claim takes whole chunks
        with sw.transaction() as tx:
            sw.queues.producer("q").enqueue(tx, b"%d" % i)


def _all(sw: seaway.Seaway, *consumers: Consumer) -> list[bytes]:
    """Every entry the consumers still get, each transaction committed."""
    got: list[bytes] = []
    for _ in range(20):
        taken = 0
        for consumer in consumers:
            with sw.transaction() as tx:
                batch = consumer.dequeue(tx, 2)
            got.extend(e.payload for e in batch)
            taken += len(batch)
        if not taken:
            break
    return got


def _reset_whose_commit_fails(sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset to the tail whose transaction's commit is refused (StorageError, then undone)."""

    def refused(*args: Any, **kwargs: Any) -> None:
        raise seaway.StorageError("injected: the reset's commit failed")

    monkeypatch.setattr(seaway.Transaction, "commit", refused)
    with pytest.raises(seaway.StorageError):
        sw.queues.reset_group("q", "g", "tail")
    monkeypatch.undo()


def test_no_claim_is_made_while_a_reset_is_staged(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    _fifo(sw, 6)
    first, second = sw.queues.consumer("q", "g", 0), sw.queues.consumer("q", "g", 1)
    with sw.transaction() as tx:
        assert [e.payload for e in first.dequeue(tx, 2)] == [b"0", b"1"]
    late = sw.transaction()
    staged = sw.queues._stage_reset

    def stage_then_claim(*args: Any, **kwargs: Any) -> None:
        staged(*args, **kwargs)  # the reset has read the claims: a consumer tries to claim
        assert second.dequeue(late, 2) == []  # fenced until the reset's transaction ends
        assert second.blocked_by is None

    monkeypatch.setattr(sw.queues, "_stage_reset", stage_then_claim)
    info = sw.queues.reset_group("q", "g", "head")
    monkeypatch.undo()
    assert info.lag == 6 == sw.queues.describe_group("q", "g").lag
    late.abort()
    assert sorted(_all(sw, second, first)) == [b"%d" % i for i in range(6)]
    assert sw.queues.describe_group("q", "g").lag == 0


def test_a_claim_whose_pointer_was_read_after_the_reset_applied_claims_nothing(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    _fifo(sw, 4)
    consumer = sw.queues.consumer("q", "g", 0)
    with sw.transaction() as tx:
        assert [e.payload for e in consumer.dequeue(tx, 4)] == [b"0", b"1", b"2", b"3"]
    pointer = sw.queues.claim_pointer
    fired: list[object] = []

    def reset_first(*args: Any) -> tuple[int, int]:
        if not fired:  # the reset lands after the consumer read the reset count, before it claims
            fired.append(None)
            fired.append(sw.queues.reset_group("q", "g", "head"))
        return pointer(*args)

    monkeypatch.setattr(sw.queues, "claim_pointer", reset_first)
    tx = sw.transaction()
    assert consumer.dequeue(tx, 4) == []  # a claim under the old round would be lost on abort
    tx.abort()
    monkeypatch.undo()
    assert isinstance(fired[1], seaway.queues.GroupInfo) and fired[1].lag == 4
    assert _all(sw, consumer) == [b"0", b"1", b"2", b"3"]


def test_a_reset_whose_commit_failed_changes_nothing(sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    _fifo(sw, 4)
    consumer = sw.queues.consumer("q", "g", 0)
    held = sw.transaction()
    assert [e.payload for e in consumer.dequeue(held, 2)] == [b"0", b"1"]

    _reset_whose_commit_fails(sw, monkeypatch)
    held.commit()  # the claim was not touched
    assert sw.queues.describe_group("q", "g").lag == 2
    assert _all(sw, consumer) == [b"2", b"3"]


def test_resets_to_the_tail_racing_consumers_and_a_producer_never_deliver_twice(sw: seaway.Seaway) -> None:
    """Two consumer threads claim and commit while a producer enqueues and resets to the tail
    land among them: a reset never makes an entry delivered twice, and everything enqueued after
    the last one is delivered."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 2, "FIFO")
    delivered: list[bytes] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def consume(consumer: Consumer) -> None:
        try:
            while not stop.is_set():
                tx = sw.transaction()
                try:
                    got = consumer.dequeue(tx, 3, 0.02)
                    tx.commit()
                except seaway.TransactionConflictError:
                    continue  # a reset committed first: nothing of it was processed
                with lock:
                    delivered.extend(e.payload for e in got)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    consumers = [sw.queues.consumer("q", "g", c) for c in (0, 1)]
    threads = [threading.Thread(target=consume, args=(c,)) for c in consumers]
    for thread in threads:
        thread.start()
    producer = sw.queues.producer("q")
    sent = 0
    for round_ in range(12):
        for _ in range(5):
            with sw.transaction() as tx:
                producer.enqueue_batch(tx, [b"%d" % (sent + i) for i in range(2)])
            sent += 2
        if round_ < 11:
            sw.queues.reset_group("q", "g", "tail")
    last = sent - 10  # the entries enqueued after the last reset
    for _ in range(500):
        with lock:
            if {int(p) for p in delivered} >= set(range(last, sent)):
                break
        stop.wait(0.02)
    stop.set()
    for thread in threads:
        thread.join(30)
    for consumer in consumers:
        consumer.close()
    assert not errors, errors
    numbers = [int(p) for p in delivered]
    assert len(numbers) == len(set(numbers)), "an entry was delivered twice"
    assert set(range(last, sent)) <= set(numbers)
    info = sw.queues.describe_group("q", "g")
    assert info.lag == 0
    # Eviction drops what earlier rounds left (a claim a consumer made as a reset committed).
    sw.queues.meta.batch().put(NAMESPACE, claim_key("q", "g", 1, 0, 3), Claim(1, Position(1, 0)).encode()).commit()
    sw.queues.meta.batch().put(NAMESPACE, claim_key("q", "g", 1, 1), Claim(1, Position(1, 0)).encode()).commit()
    sw.queues.evict_claimed("q", "g", 1, info.partitions[0].log_id)
    left = [key for key, _ in sw.queues.meta.scan(NAMESPACE, prefix=b"cl/q/g/")]
    assert all(key.startswith(claims_prefix("q", "g", 1, 11)) for key in left), left


def test_a_claim_made_while_a_reset_to_tail_is_staged_does_not_deliver_twice(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    """The claim made while the reset is staged is of the round the reset ends, but the consumer
    transaction that made it still delivers from it and, committed, nothing conflicted with it:
    an entry enqueued after the reset's position (a reset to "tail") was delivered by it and then
    again by the new round. Exactly once: one of the two commits fails."""
    _fifo(sw, 0)
    first, second = sw.queues.consumer("q", "g", 0), sw.queues.consumer("q", "g", 1)
    late: list[seaway.Transaction] = []
    late_got: list[bytes] = []
    staged = sw.queues._stage_reset

    def stage_then_claim(*args: Any, **kwargs: Any) -> None:
        staged(*args, **kwargs)  # the reset's position is taken: an entry comes, a consumer claims it
        with sw.transaction() as tx:
            sw.queues.producer("q").enqueue(tx, b"new")
        late.append(sw.transaction())  # begun before the reset commits
        late_got.extend(e.payload for e in second.dequeue(late[0], 5))

    monkeypatch.setattr(sw.queues, "_stage_reset", stage_then_claim)
    sw.queues.reset_group("q", "g", "tail")
    monkeypatch.undo()
    assert late_got == []  # the reset fenced the claims while it was staged
    try:
        late[0].commit()
        committed = late_got
    except seaway.TransactionConflictError:
        committed = []
    delivered = committed + _all(sw, second, first)
    assert delivered.count(b"new") == 1, delivered


def test_an_eviction_racing_a_reset_to_head_does_not_wedge_the_group(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    _fifo(sw, 6, size=1)
    consumer = sw.queues.consumer("q", "g", 0)
    with sw.transaction() as tx:
        assert [e.payload for e in consumer.dequeue(tx, 4)] == [b"0", b"1", b"2", b"3"]
    record = sw.queues.group_record("q", "g")[0]
    pointer = sw.queues.claim_pointer
    fired: list[object] = []

    def read_then_reset(*args: Any) -> tuple[int, int]:
        found = pointer(*args)
        if not fired:  # the eviction has read the pointer: a reset to the head commits now
            fired.append(True)
            sw.queues.reset_group("q", "g", "head")
        return found

    monkeypatch.setattr(sw.queues, "claim_pointer", read_then_reset)
    sw.queues.evict_claimed("q", "g", record.current.generation, record.current.logs[0])
    monkeypatch.undo()
    assert fired
    with sw.transaction() as tx:  # from what is left after the eviction
        got = [e.payload for e in consumer.dequeue(tx, 10)]
    assert got and got[-1] == b"5", got


def test_a_reset_that_failed_leaves_a_fence_the_consumers_clear(sw: seaway.Seaway,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset whose transaction did not commit (here: its commit refused) leaves its mark on the
    reset count; once its transaction ended, a consumer finds the mark void, clears it and claims."""
    _fifo(sw, 3)
    consumer = sw.queues.consumer("q", "g", 0)

    _reset_whose_commit_fails(sw, monkeypatch)
    assert sw.queues.reset_state("q", "g")[2] is not None  # the fence is left
    assert _all(sw, consumer) == [b"0", b"1", b"2"]  # the reset aborted: its fence is void
    assert sw.queues.reset_state("q", "g")[2] is None


def test_a_partition_trim_racing_a_reset_to_head_does_not_wedge_the_group(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same race on a partitioned group: a consumer's trim, by the position it committed, lands
    after a reset to the head moved that position back below it. The consumers and the group's lag
    go on from what is left; the entries trimmed were acknowledged."""
    from seaway.queues._cursor import Cursor  # noqa: PLC0415

    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    for i in range(6):
        with sw.transaction() as tx:
            sw.queues.producer("q").enqueue(tx, b"%d" % i)
    held: list[Cursor] = []
    monkeypatch.setattr(Cursor, "trim", lambda self: held.append(self))  # noqa: PLW0108 - late: held
    consumer = sw.queues.consumer("q", "g", 0)
    with sw.transaction() as tx:
        assert [e.payload for e in consumer.dequeue(tx, 4)] == [b"0", b"1", b"2", b"3"]
    monkeypatch.undo()
    assert held
    sw.queues.reset_group("q", "g", "head")  # the position back to the oldest entry kept: the first
    held[-1].trim()  # the late trim, by the position committed before the reset
    assert sw.queues.describe_group("q", "g").lag == 2  # the entries left, not an error
    fresh = sw.queues.consumer("q", "g", 0)
    with sw.transaction() as tx:
        assert [e.payload for e in fresh.dequeue(tx, 10)] == [b"4", b"5"]
    with sw.transaction() as tx:  # the first consumer too, after its reset is noticed
        assert [e.payload for e in consumer.dequeue(tx, 10)] == []
