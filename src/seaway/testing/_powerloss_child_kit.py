"""What the power-loss children share: their command line, their report lines, and the syncs a
negative-control mode takes away."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Sequence

from seaway.logsdb import LogsDB


def parse_argv(argv: Sequence[str], modes: Sequence[str]) -> tuple[str, str, int, random.Random]:
    """``DATA_DIR MODE RUN SEED``: the data directory, the mode (one of ``modes``), the run, and a
    random generator of its own for the run."""
    data_dir, mode, run, seed = argv[0], argv[1], int(argv[2]), int(argv[3])
    if mode not in modes:
        raise SystemExit(f"unknown mode {mode!r}: one of {', '.join(modes)}")
    return data_dir, mode, run, random.Random(seed * 1_000_003 + run)


def line_writer() -> Callable[[str], None]:
    """Write one line to stdout at once, whole, from any thread (the parent reads each as an
    acknowledgement the moment it returned)."""
    lock = threading.Lock()

    def emit(line: str) -> None:
        with lock:
            os.write(1, line.encode() + b"\n")

    return emit


def take_syncs_away(mode: str) -> None:
    """Take away, in this process, the sync that ``mode`` names: ``nosegmentsync``, Python's
    ``os.fsync`` and ``os.fdatasync``; ``nowalsync``, ``LogsDB.sync_wal``; ``nokvsync``,
    ``LogsDB._kv_sync``. Any other mode takes nothing away."""
    def no_fsync(fd: object) -> None:
        return None

    def no_wal_sync(self: LogsDB) -> None:
        return None

    def no_kv_sync(self: LogsDB, applied: int) -> None:
        return None

    if mode == "nosegmentsync":
        os.fsync = no_fsync
        os.fdatasync = no_fsync
    elif mode == "nowalsync":
        LogsDB.sync_wal = no_wal_sync  # type: ignore[method-assign,assignment]
    elif mode == "nokvsync":
        LogsDB._kv_sync = no_kv_sync  # type: ignore[method-assign,assignment]
