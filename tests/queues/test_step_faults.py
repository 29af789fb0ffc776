"""Faults of the appends inside a queue producer's commit step (``seaway.testing.AppendFaults``, on
the embedded store, which is also what a server runs): a data or pointer batch refused at once, or
refused after it was sent, or stored with its reply lost. The step commits nothing; the transaction
fails with the append's (retriable) error and is aborted; whatever of it was stored is never
delivered; the caller's next transaction commits, and each group gets its entries once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import TxnStatus
from seaway.testing import AppendFaults

WAIT_S = 30.0


def _entries(prefix: bytes) -> tuple[list[bytes], list[dict[str, int]]]:
    return [b"%s%d" % (prefix, i) for i in range(10)], [{"k": i} for i in range(10)]


def _delivered(sw: seaway.Seaway, group: str, size: int) -> Counter[bytes]:
    got: Counter[bytes] = Counter()
    for c in range(size):
        with sw.queues.consumer("q", group, c) as consumer, sw.transaction() as tx:
            got.update(e.payload for e in consumer.dequeue(tx, 100, 0.2))
    return got


@pytest.mark.parametrize("which", ["data", "pointers"])
@pytest.mark.parametrize("fault", ["refuse", "refuse_later", "lose_reply"])
def test_a_failed_append_of_the_commit_step_fails_the_transaction_and_the_next_one_commits(
        tmp_path: Path, fault: str, which: str) -> None:
    with seaway.open(tmp_path / "d") as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "h", 2, "HASH", key="k")
        sw.queues.create_group("q", "r", 1, "ROUND_ROBIN")
        data_log = sw.queues.data_log("q")
        assert data_log is not None
        partitions = {p.log_id for g in ("h", "r") for p in sw.queues.describe_group("q", g).partitions}
        producer = sw.queues.producer("q")
        options: dict[str, Any] = {fault: 1.0}
        with AppendFaults(seed=1, limit=1, logs={data_log} if which == "data" else partitions,
                          **options).applied(sw) as faults:
            tx = sw.transaction()
            producer.enqueue_batch(tx, *_entries(b"a"))
            with pytest.raises(seaway.SeawayError) as caught:
                tx.commit()
            assert caught.value.retriable and len(faults.injected) == 1, (caught.value, faults.injected)
            assert sw.txn.status(tx.id) is TxnStatus.ABORTED
            with sw.transaction() as again:  # the caller runs it again
                producer.enqueue_batch(again, *_entries(b"b"))
        expected = Counter(_entries(b"b")[0])
        assert _delivered(sw, "h", 2) == expected
        assert _delivered(sw, "r", 1) == expected
