"""The producer's side, embedded: where entries are placed, what a failed send does to the
transaction, and which groups a send reaches.

Each test here reproduced a finding of the 2026-11-26 review on the code before its fix (numbers
in the test names' docstrings).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import TxnConfig
from seaway._errors import MissingHashKeyError
from seaway.queues import Consumer, Entry
from seaway.queues._producer import FLUSH_BYTES
from seaway.queues._records import ENTRY_BYTES_MAX, hash_key


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as store:
        yield store


def drain(sw: seaway.Seaway, consumer: Consumer) -> list[Entry]:
    got: list[Entry] = []
    while True:
        with sw.transaction() as tx:
            batch = consumer.dequeue(tx, 1000)
        if not batch:
            return got
        got.extend(batch)


def test_hash_values_are_the_on_disk_format() -> None:
    """Finding 44: BLAKE2b-8, big-endian, of the UTF-8 bytes (an int's decimal form). Golden
    values computed once, outside the code under test: a change of the hash moves every stored key."""
    assert hash_key(b"") == 16476032584258269876
    assert hash_key("user-7") == hash_key(b"user-7") == 4526733352288874649
    assert hash_key("ключ") == 5536099946253895712
    assert hash_key(42) == hash_key("42") == 6319743179241711738
    assert hash_key(b"\x00\xff") == 12738201167342902500
    with pytest.raises(seaway.InvalidArgumentError):
        hash_key(True)


def test_a_reused_keys_mapping_places_each_entry_by_its_value_at_enqueue(sw: seaway.Seaway) -> None:
    """Finding 3: the producer kept a reference to the caller's mapping and read it at flush."""
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 4, "HASH", key="user")
    producer = sw.queues.producer("q")
    users = [f"user-{i}" for i in range(8)]
    keys: dict[str, object] = {}
    with sw.transaction() as tx:
        for user in users:
            keys["user"] = user  # one mapping, changed between enqueues
            producer.enqueue(tx, user.encode(), keys)
    for c in range(4):
        got = [e.payload.decode() for e in drain(sw, sw.queues.consumer("q", "h", c))]
        assert got == [u for u in users if hash_key(u) % 4 == c]


def test_a_failed_flush_aborts_the_transaction(sw: seaway.Seaway) -> None:
    """Finding 4: flush() took the entries out of the buffer, raised, and the commit then
    succeeded without them."""
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="user")
    sw.queues.create_group("q", "f", 1, "FIFO")
    producer = sw.queues.producer("q")
    tx = sw.transaction()
    producer.enqueue(tx, b"kept?", {"user": 1})
    producer.enqueue(tx, b"no key", {"page": 1})
    with pytest.raises(MissingHashKeyError):
        producer.flush(tx)
    with pytest.raises(MissingHashKeyError):  # the caller carries on regardless: refused
        producer.enqueue(tx, b"after", {"user": 2})
    with pytest.raises(MissingHashKeyError):
        tx.commit()
    assert tx.status is seaway.TxnStatus.ABORTED
    assert drain(sw, sw.queues.consumer("q", "f", 0)) == []


def test_a_failed_early_send_aborts_the_transaction(sw: seaway.Seaway) -> None:
    """Finding 4, the automatic send at FLUSH_BYTES."""
    sw.queues.create("q")
    sw.queues.create_group("q", "h", 2, "HASH", key="user")
    sw.queues.create_group("q", "f", 1, "FIFO")
    producer = sw.queues.producer("q")
    tx = sw.transaction()
    producer.enqueue(tx, b"no key", {"page": 1})
    big = b"x" * ENTRY_BYTES_MAX
    with pytest.raises(MissingHashKeyError):
        for _ in range(FLUSH_BYTES // len(big) + 1):
            producer.enqueue(tx, big, {"user": 1})
    with pytest.raises(MissingHashKeyError):
        tx.commit()
    assert tx.status is seaway.TxnStatus.ABORTED
    with sw.transaction() as check:
        assert sw.queues.consumer("q", "f", 0).dequeue(check, 10) == []


def test_a_group_created_before_a_send_gets_its_entries(sw: seaway.Seaway) -> None:
    """Finding 5: the producer went on for a second with the groups it had read."""
    sw.queues.create("q")
    sw.queues.create_group("q", "old", 1, "FIFO")
    producer = sw.queues.producer("q")
    with sw.transaction() as tx:
        producer.enqueue(tx, b"before")
    sw.queues.create_group("q", "new", 1, "FIFO")
    with sw.transaction() as tx:
        producer.enqueue(tx, b"after")
    assert [e.payload for e in drain(sw, sw.queues.consumer("q", "new", 0))] == [b"after"]
    assert [e.payload for e in drain(sw, sw.queues.consumer("q", "old", 0))] == [b"before", b"after"]


@pytest.mark.parametrize("size", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("per_tx", [1, 2, 3, 7, 10])
def test_round_robin_spreads_within_one_of_even(sw: seaway.Seaway, size: int, per_tx: int) -> None:
    """Finding 7: write pointers are multiples of 10**6, so (write pointer + counter) % size sent
    every single-entry transaction to consumer 0 of a group whose size divides 10**6; and a test
    with 10 entries per transaction could not see it (finding 38)."""
    sw.queues.create("q")
    sw.queues.create_group("q", "rr", size, "ROUND_ROBIN")
    producer = sw.queues.producer("q")
    enqueued = 0
    for _ in range(6):
        with sw.transaction() as tx:
            producer.enqueue_batch(tx, [b"%d" % (enqueued + i) for i in range(per_tx)])
        enqueued += per_tx
        counts = Counter({c: 0 for c in range(size)})
        for c in range(size):
            counts[c] += len(sw.queues.read_committed("q", "rr", 1, c, seaway.queues.Position(1, 0),
                                                      entries_max=10_000).entries)
        assert max(counts.values()) - min(counts.values()) <= 1, (enqueued, counts)
    got = [e for c in range(size) for e in drain(sw, sw.queues.consumer("q", "rr", c))]
    assert sorted(int(e.payload) for e in got) == list(range(enqueued))
