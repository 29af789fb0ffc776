"""The child side of the queue crash tests: exactly-once processors and producers, through a server,
that keep going across failures (a killed server) and are themselves killed at random points.

``python -m seaway.testing._queue_crash process URL IN OUT CONSUMER``: consumer ``CONSUMER`` of the
input queue's group ``w`` dequeues up to ``BATCH`` entries in a transaction, enqueues each to the
output queue, and commits; on any failure it aborts what it can and starts again from its committed
position. It exits once a dequeue finds nothing and the metadata key ``crash/done`` exists.

``python -m seaway.testing._queue_crash produce URL IN FIRST COUNT``: enqueues entries
``FIRST..FIRST+COUNT-1`` (the number as the payload, keyed by ``number % 13``) in transactions of
``BATCH``; a commit whose outcome is unknown (the server died) is resolved by asking the
transaction's status once the server is back, so no entry is sent twice or lost.

``python -m seaway.testing._queue_crash produce-marked URL IN FIRST TRANSACTIONS``: enqueues
entries from ``FIRST`` on in ``TRANSACTIONS`` transactions of ``BATCH``, each of which also stages
the metadata key ``produced/<first number>`` (namespace ``crash``, the count as its value): the
key is there exactly when the transaction committed, so a test that kills this process at any
moment knows which entries must be delivered. A failed transaction's numbers are not used again.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import seaway
from seaway.errors import ConsumerOutsideGroupError, SeawayError
from seaway.txn import TxnStatus

BATCH = 5
TIMEOUT_S = 1.0
GROUP = "w"
DONE = (b"done", "crash")


def _status(sw: Any, txn_id: int) -> TxnStatus:
    """The transaction's status, asked until the server answers."""
    while True:
        try:
            status: TxnStatus = sw.txn.status(txn_id)
            return status
        except SeawayError:
            time.sleep(0.1)


def _abort(sw: Any, tx: Any) -> None:
    with contextlib.suppress(SeawayError):
        tx.abort()


def process(sw: Any, source: str, sink: str, consumer_id: int) -> None:
    output = sw.queues.producer(sink)
    consumer = None
    while True:
        tx = None
        try:
            if consumer is None:
                consumer = sw.queues.consumer(source, GROUP, consumer_id)
            tx = sw.transaction(timeout_s=TIMEOUT_S)
            entries = consumer.dequeue(tx, BATCH, 0.2)
            if not entries:
                tx.abort()
                if sw.meta.get(DONE[1], DONE[0]) is not None:
                    return
                continue
            output.enqueue_batch(tx, [e.payload for e in entries], [{"k": int(e.payload) % 13} for e in entries])
            tx.commit()
        except ConsumerOutsideGroupError:  # the group was resized below this id: wait for another
            if tx is not None:
                _abort(sw, tx)
            with contextlib.suppress(SeawayError):
                if sw.meta.get(DONE[1], DONE[0]) is not None:
                    return
            time.sleep(0.05)
        except SeawayError:
            if tx is not None:
                _abort(sw, tx)
            if consumer is not None:
                consumer.close()
            consumer = None  # back to the committed position, whatever became of that transaction
            time.sleep(0.05)


def produce(sw: Any, queue: str, first: int, count: int) -> None:
    producer = sw.queues.producer(queue)
    n = first
    while n < first + count:
        numbers = list(range(n, min(n + BATCH, first + count)))
        tx = None
        try:
            tx = sw.transaction(timeout_s=TIMEOUT_S * 5)
            producer.enqueue_batch(tx, [b"%d" % i for i in numbers], [{"k": i % 13} for i in numbers])
            tx.commit()
            n = numbers[-1] + 1
        except SeawayError:
            if tx is None:
                time.sleep(0.1)
                continue
            status = _status(sw, tx.id)
            if status is TxnStatus.COMMITTED:
                n = numbers[-1] + 1
            elif status is TxnStatus.IN_PROGRESS:
                _abort(sw, tx)
            time.sleep(0.05)


PRODUCED_PREFIX = b"produced/"


def produce_marked(sw: Any, queue: str, first: int, transactions: int) -> None:
    producer = sw.queues.producer(queue)
    for t in range(transactions):
        numbers = list(range(first + t * BATCH, first + (t + 1) * BATCH))
        tx = None
        try:
            tx = sw.transaction(timeout_s=TIMEOUT_S * 5)
            producer.enqueue_batch(tx, [b"%d" % i for i in numbers], [{"k": i % 13} for i in numbers])
            tx.stage_put(DONE[1], PRODUCED_PREFIX + b"%d" % numbers[0], b"%d" % len(numbers))
            tx.commit()
        except SeawayError:
            if tx is not None:
                _abort(sw, tx)
            time.sleep(0.05)


def main(argv: list[str]) -> None:
    role, url = argv[0], argv[1]
    retry = seaway.RetryPolicy(attempts_max=50, backoff_s=0.05, backoff_max_s=0.5)
    with seaway.connect(url, timeout_s=10, retry=retry) as sw:
        if role == "process":
            process(sw, argv[2], argv[3], int(argv[4]))
        elif role == "produce-marked":
            produce_marked(sw, argv[2], int(argv[3]), int(argv[4]))
        else:
            produce(sw, argv[2], int(argv[3]), int(argv[4]))


if __name__ == "__main__":
    main(sys.argv[1:])
