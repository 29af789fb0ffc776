"""The child side of the transaction crash test: run transactions in a loop until killed.

Run as ``python -m seaway.testing._txn_crash DATA_DIR ACK_FILE RUN``. ``THREADS`` threads each
loop: begin, register the thread's log and write a record tagged with the transaction's id, stage
a metadata put of a key unique to it (``r<run>/t<thread>/<n>``, its id as the value), then commit
(most), abort (some) or leave it in progress (a few, to time out). Lines written to ``ACK_FILE``,
each whole in one write and only after the call named returned (or before, for ``*-called``):

- ``began ID``, ``registered ID``, ``commit-called ID KEY``, ``committed ID KEY``, ``abort-called ID``, ``aborted ID``.

Every so often a thread trims its log to its tail, so that aborted transactions' data goes and the
manager prunes them from the invalid list; saves happen every ``save_edits`` edits.
"""

from __future__ import annotations

import os
import random
import sys
import threading

import seaway
from seaway.testing._crash_child import run_threads

NAMESPACE = "crash"
THREADS = 3
TIMEOUT_S = 2.0
CONFIG = seaway.SeawayConfig(retention=None, txn=seaway.TxnConfig(
    timeout_s=TIMEOUT_S, outcomes_max=1_000_000, tick_s=0.05, prune_interval_s=0.2, settle_s=0.5, save_edits=200))
"""Outcomes kept far beyond what a test makes, so that every acknowledged one can be asked about."""


def key(run: int, thread: int, n: int) -> bytes:
    return b"r%04d/t%d/%06d" % (run, thread, n)


def _work(sw: seaway.Seaway, fd: int, run: int, thread: int, lock: threading.Lock) -> None:
    rng = random.Random(run * THREADS + thread)
    log = sw.logs.get_or_create(f"crash-{thread}")

    def ack(line: str) -> None:
        with lock:
            os.write(fd, line.encode() + b"\n")

    n = 0
    while True:
        tx = sw.txn.begin()
        ack(f"began {tx.id}")
        tx.register_logs([log.id])
        ack(f"registered {tx.id}")
        log.append(b"%d" % tx.id)
        k = key(run, thread, n)
        tx.stage_put(NAMESPACE, k, b"%d" % tx.id)
        action = rng.random()
        if action < 0.8:
            ack(f"commit-called {tx.id} {k.decode()}")
            tx.commit()
            ack(f"committed {tx.id} {k.decode()}")
        elif action < 0.95:
            ack(f"abort-called {tx.id}")
            tx.abort()
            ack(f"aborted {tx.id}")
        n += 1
        if n % 20 == 0:
            log.trim(log.tail_lsn())


def main(argv: list[str]) -> None:
    run_threads(argv, _work, THREADS, CONFIG)


if __name__ == "__main__":
    main(sys.argv[1:])
