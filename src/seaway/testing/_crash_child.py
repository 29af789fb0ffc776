"""What the crash tests' children share: ``ARGV = DATA_DIR ACK_FILE RUN``; open the store and run
``work(sw, fd, run, thread, lock)`` in ``threads`` threads until killed, acknowledging to the file."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import seaway

Work = Callable[[seaway.Seaway, int, int, int, threading.Lock], None]


def run_threads(argv: list[str], work: Work, threads: int, config: seaway.SeawayConfig | None = None) -> None:
    data_dir, ack_path, run = argv[0], argv[1], int(argv[2])
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    lock = threading.Lock()
    with seaway.open(data_dir, config) as sw:
        workers = [threading.Thread(target=work, args=(sw, fd, run, t, lock), daemon=True) for t in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
