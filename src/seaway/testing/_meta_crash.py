"""The child side of the metadata crash test: commit batches in a loop until killed.

Run as ``python -m seaway.testing._meta_crash DATA_DIR ACK_FILE RUN``. Two threads commit batches
(so that batches share syncs); each batch puts ``KEYS_PER_BATCH`` keys ``r<run>/t<thread>/b<batch>/<i>``,
raises its thread's counter by compare-and-set, and puts and then range-deletes scratch keys. A line
``RUN THREAD BATCH REVISION`` is written to ``ACK_FILE`` only after the commit returned.
"""

from __future__ import annotations

import os
import sys
import threading

import seaway
from seaway.testing._crash_child import run_threads

NAMESPACE = "crash"
KEYS_PER_BATCH = 10
THREADS = 2


def batch_key(run: int, thread: int, batch: int, index: int) -> bytes:
    return b"r%06d/t%d/b%06d/%02d" % (run, thread, batch, index)


def batch_value(run: int, thread: int, batch: int, index: int) -> bytes:
    return b"value of %s" % batch_key(run, thread, batch, index) * (1 + index % 3)


def counter_key(thread: int) -> bytes:
    return b"counter/t%d" % thread


def _work(sw: seaway.Seaway, fd: int, run: int, thread: int, lock: threading.Lock) -> None:
    batch = 0
    while True:
        got = sw.meta.get(NAMESPACE, counter_key(thread))
        count = int(got.value) if got else 0
        b = sw.meta.batch().expect_version(NAMESPACE, counter_key(thread), got.version if got else 0)
        for i in range(KEYS_PER_BATCH):
            b.put(NAMESPACE, batch_key(run, thread, batch, i), batch_value(run, thread, batch, i))
            b.put(NAMESPACE, b"scratch/t%d/%02d" % (thread, i), b"x" * 100)
        b.put(NAMESPACE, counter_key(thread), b"%d" % (count + 1))
        b.delete_prefix(NAMESPACE, b"scratch/t%d/" % thread)
        revision = b.commit()
        with lock:
            os.write(fd, f"{run} {thread} {batch} {revision}\n".encode())
        batch += 1


def main(argv: list[str]) -> None:
    run_threads(argv, _work, THREADS)


if __name__ == "__main__":
    main(sys.argv[1:])
