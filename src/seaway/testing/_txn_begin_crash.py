"""The child side of the crash test of ``begin(logs=...)``: begin transactions that register their
log in the begin, write to it, and commit, abort or leave them, in a loop until killed.

Run as ``python -m seaway.testing._txn_begin_crash DATA_DIR ACK_FILE RUN``. ``THREADS`` threads
each loop: ``begin(logs=[the thread's log])``, then ``began ID`` is acknowledged (the begin
returned: it is durable with its log), a record tagged with the transaction's id is appended, and
it commits (most; ``committed ID`` once it returned), aborts (some; ``aborted ID``) or is left in
progress (a few, to time out). Every record's transaction was acknowledged as begun before it.
"""

from __future__ import annotations

import os
import random
import sys
import threading

import seaway
from seaway.testing._crash_child import run_threads

THREADS = 3
TIMEOUT_S = 2.0
CONFIG = seaway.SeawayConfig(retention=None, txn=seaway.TxnConfig(
    timeout_s=TIMEOUT_S, outcomes_max=1_000_000, tick_s=0.05, prune_interval_s=0.2, settle_s=0.5, save_edits=200))


def _work(sw: seaway.Seaway, fd: int, run: int, thread: int, lock: threading.Lock) -> None:
    rng = random.Random(run * THREADS + thread)
    log = sw.logs.get_or_create(f"begin-crash-{thread}")

    def ack(line: str) -> None:
        with lock:
            os.write(fd, line.encode() + b"\n")

    while True:
        tx = sw.txn.begin(logs=[log.id])
        ack(f"began {tx.id}")
        log.append(b"%d" % tx.id)
        action = rng.random()
        if action < 0.8:
            tx.commit()
            ack(f"committed {tx.id}")
        elif action < 0.95:
            tx.abort()
            ack(f"aborted {tx.id}")


def main(argv: list[str]) -> None:
    run_threads(argv, _work, THREADS, CONFIG)


if __name__ == "__main__":
    main(sys.argv[1:])
