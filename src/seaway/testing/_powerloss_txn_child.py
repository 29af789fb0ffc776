"""The child of the power-loss tests of transactions and queues (tests/powerloss): commits, aborts,
contended read-modify-write transactions, batches of task transactions committed as one with a
marker (the Spark sink's commit), and a queue's producer and consumer, through a
:class:`~seaway.testing.PowerLossFS` mount until the power is cut and the process killed,
reporting every acknowledgement on stdout the moment it returns.

A commit's metadata writes are applied without a sync of their own and rebuilt from the
transaction manager's write-ahead log after a crash: these runs are what shows that rebuild works.

Run as ``python -m seaway.testing._powerloss_txn_child DATA_DIR MODE RUN SEED`` (see :func:`main`);
the store is made first by :func:`create_store`.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable

import seaway
from seaway.testing._powerloss_child_kit import line_writer, parse_argv, take_syncs_away

NS = "powerloss-txn"
"""The metadata the transactions stage."""
LOG = "pltx"
"""The log the transactions write records to (tagged by their payload with the transaction id)."""
QUEUE = "plq"
GROUP = "g"
COUNTER = b"counter"
MODES = ("sync", "nowalsync")
INCREMENTERS = 2
"""Threads raising the counter by read-modify-write transactions that declare it as a conflict:
they contend, so a lost update (two commits from one value) would show."""


def config() -> seaway.SeawayConfig:
    """Saves of the manager's state every few dozen edits, so that the cuts land around them too
    (and around the trim of the write-ahead log behind each save); every outcome of the runs
    remembered, so that the checks can ask the status of any transaction the children began."""
    return seaway.SeawayConfig(txn=seaway.TxnConfig(save_edits=40, outcomes_max=1_000_000))


def create_store(data_dir: str | os.PathLike[str]) -> None:
    """The store the runs start from."""
    with seaway.open(data_dir, config()) as sw:
        sw.logs.create(LOG)
        sw.queues.create(QUEUE)
        sw.queues.create_group(QUEUE, GROUP, size=1, strategy="ROUND_ROBIN")


def entry_payload(run: int, txn_id: int, index: int) -> bytes:
    return b"q-%d-%d-%d" % (run, txn_id, index)


def seen_key(payload: bytes) -> bytes:
    """Staged by the consumer's transaction for each entry it processes, with the commit that
    acknowledges the entry: present iff the entry was processed."""
    return b"seen/" + payload


def marker_key(batch: int) -> bytes:
    return b"batch/%d" % batch


def main(argv: list[str]) -> None:
    """``DATA_DIR MODE RUN SEED``: until killed, write one line to stdout for each acknowledgement
    as soon as it returns, and one for each intent just before it is tried:

    - ``C TXID``: a transaction committed that staged ``NS/k/TXID = v/TXID`` and wrote a record;
    - ``X TXID``: a transaction aborted (by the handle, or by id) after staging and writing so;
    - ``I TXID PREV``: an increment committed: the counter went from PREV to PREV + 1, and
      ``NS/inc/TXID = PREV`` was staged with it;
    - ``b BATCH TXID...`` (intent), ``B BATCH`` (acknowledged): task transactions that each wrote a
      record, committed as one with the marker ``NS/batch/BATCH`` (a conflict key) by
      ``commit_all``;
    - ``Q TXID COUNT`` / ``Y TXID COUNT``: a producer's transaction that enqueued COUNT entries
      (:func:`entry_payload`) committed / aborted;
    - ``D TXID COUNT``: a consumer's transaction that processed COUNT entries committed;
    - ``DUP PAYLOAD``: the consumer was given an entry processed already (exactly-once broken).

    MODE ``sync``: the store as shipped; ``nowalsync``: ``LogsDB.sync_wal`` does nothing, to show
    that the checks see lost commits.
    """
    data_dir, mode, run, rng = parse_argv(argv, MODES)
    emit = line_writer()
    take_syncs_away(mode)
    with seaway.open(data_dir, config()) as sw:
        emit("ready")
        targets: list[Callable[[], None]] = [
            lambda: _commit_and_abort(sw, random.Random(rng.random()), emit),
            lambda: _batches(sw, run, random.Random(rng.random()), emit),
            lambda: _produce(sw, run, random.Random(rng.random()), emit),
            lambda: _consume(sw, random.Random(rng.random()), emit),
        ]
        targets += [lambda: _increment(sw, random.Random(rng.random()), emit)] * INCREMENTERS
        workers = [threading.Thread(target=_forever(target), daemon=True) for target in targets]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()  # never: the parent kills this process


def _forever(target: Callable[[], None]) -> Callable[[], None]:
    """A worker that dies of an error says so (on stderr, for the parent's report) and takes the
    process with it: a child silently missing a worker would check little."""
    def run() -> None:
        try:
            target()
        except BaseException:
            traceback.print_exc()
            os._exit(3)
    return run


def _commit_and_abort(sw: seaway.Seaway, rng: random.Random, emit: Callable[[str], None]) -> None:
    log = sw.logs.get(LOG)
    while True:
        tx = sw.transaction()
        tx.register_logs([log.id])
        log.append(b"t%d" % tx.id)
        tx.stage_put(NS, b"k/%d" % tx.id, b"v/%d" % tx.id)
        choice = rng.random()
        if choice < 0.7:
            tx.commit()
            emit(f"C {tx.id}")
        elif choice < 0.85:
            tx.abort()
            emit(f"X {tx.id}")
        else:
            sw.txn.abort(tx.id)  # by id, as another process would
            emit(f"X {tx.id}")
        time.sleep(rng.uniform(0, 0.003))


def _increment(sw: seaway.Seaway, rng: random.Random, emit: Callable[[str], None]) -> None:
    while True:
        tx = sw.transaction()
        tx.add_conflicts(COUNTER)
        got = sw.meta.get(NS, COUNTER)
        prev = 0 if got is None else int(got.value)
        tx.stage_put(NS, COUNTER, b"%d" % (prev + 1))
        tx.stage_put(NS, b"inc/%d" % tx.id, b"%d" % prev)
        try:
            tx.commit()
        except seaway.TransactionConflictError:
            continue
        emit(f"I {tx.id} {prev}")
        time.sleep(rng.uniform(0, 0.002))


def _batches(sw: seaway.Seaway, run: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    """The Spark sink's commit: task transactions write, then the driver commits them all with the
    batch's marker, as one."""
    log = sw.logs.get(LOG)
    batch = run * 1_000_000
    while True:
        driver = sw.txn.begin()
        tasks = [sw.txn.begin() for _ in range(rng.randint(1, 3))]
        for task in tasks:
            task.register_logs([log.id])
            log.append(b"t%d" % task.id)
        ids = [driver.id, *(task.id for task in tasks)]
        emit(f"b {batch} {' '.join(map(str, ids))}")
        sw.txn.commit_all(ids, conflicts=[marker_key(batch)], writes=[(NS, marker_key(batch), b"%d" % batch)])
        emit(f"B {batch}")
        batch += 1
        time.sleep(rng.uniform(0, 0.005))


def _produce(sw: seaway.Seaway, run: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    producer = sw.queues.producer(QUEUE)
    while True:
        tx = sw.transaction()
        count = rng.randint(1, 5)
        producer.enqueue_batch(tx, [entry_payload(run, tx.id, i) for i in range(count)])
        if rng.random() < 0.8:
            tx.commit()
            emit(f"Q {tx.id} {count}")
        else:
            tx.abort()
            emit(f"Y {tx.id} {count}")
        time.sleep(rng.uniform(0, 0.003))


def _consume(sw: seaway.Seaway, rng: random.Random, emit: Callable[[str], None]) -> None:
    with sw.queues.consumer(QUEUE, GROUP, 0) as consumer:
        while True:
            tx = sw.transaction()
            entries = consumer.dequeue(tx, entries_max=rng.randint(1, 10), timeout_s=0.05)
            for entry in entries:
                if sw.meta.get(NS, seen_key(entry.payload)) is not None:
                    emit(f"DUP {entry.payload.decode()}")
                tx.stage_put(NS, seen_key(entry.payload), b"1")
            if entries and rng.random() < 0.15:
                tx.abort()  # given back: delivered again, to this consumer
                continue
            tx.commit()
            if entries:
                emit(f"D {tx.id} {len(entries)}")


if __name__ == "__main__":
    main(sys.argv[1:])
