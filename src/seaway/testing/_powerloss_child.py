"""The child side of the power-loss tests (tests/powerloss): append records and commit metadata
batches through a :class:`~seaway.testing.PowerLossFS` mount until the power is cut and the
process killed, reporting every acknowledgement on stdout the moment it returns.

Run as ``python -m seaway.testing._powerloss_child DATA_DIR MODE RUN SEED`` (see :func:`main`).
What it writes names itself (:func:`payload`, :func:`meta_key`, :func:`meta_value`), so the parent
can check every byte of what it finds after the cut.
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

import seaway
from seaway.logsdb import LogsDB
from seaway.testing._powerloss_child_kit import line_writer, parse_argv, take_syncs_away

SMALL_BYTES = 100
LARGE_BYTES = 200_000  # well over LogsDBConfig.segment_min_bytes: stored in a segment file
META_LARGE_KEYS = 32
META_LARGE_BYTES = 16_000  # a batch of 512 KB: one write-ahead log record over many of its blocks
PARTITION_BYTES_MAX = 2 << 20
LOG_SYNC = "powerloss"
LOG_ASYNC = "powerloss-async"
META_NS = "powerloss"
META_THREADS = 2
COUNTER = b"counter"  # every batch raises it by compare-and-set: the two threads contend for it


# --- What the child writes, so the parent can check it byte for byte -----------------------------


def payload(run: int, batch: int, index: int, size: int) -> bytes:
    """A record that names itself: a header, then bytes derived from it."""
    header = f"{run}:{batch}:{index}:{size};".encode()
    filler = hashlib.sha256(header).digest()
    return (header + filler * (size // len(filler) + 1))[:size]


def payload_is_whole(data: bytes) -> bool:
    """Whether a record read back is one the child wrote, unchanged (acknowledged or not)."""
    header, sep, _ = data[:64].partition(b";")
    try:
        run, batch, index, size = map(int, header.split(b":"))
    except ValueError:
        return False
    return bool(sep) and data == payload(run, batch, index, size)


def meta_key(run: int, thread: int, batch: int, count: int, index: int) -> bytes:
    """Key ``index`` of the ``count`` that batch ``batch`` of a thread puts: a batch found in the
    store says how many keys it must have."""
    return b"r%d/t%d/b%d/n%d/%d" % (run, thread, batch, count, index)


META_KEY = re.compile(rb"r(\d+)/t(\d+)/b(\d+)/n(\d+)/(\d+)")


def meta_value(key: bytes, size: int) -> bytes:
    """A value that names its key and its size, then bytes derived from them."""
    header = key + b"=%d;" % size
    filler = hashlib.sha256(header).digest()
    return (header + filler * (size // len(filler) + 1))[:max(size, len(header))]


def meta_value_is_whole(key: bytes, value: bytes) -> bool:
    size, sep, _ = value[len(key) + 1:len(key) + 16].partition(b";")
    return value.startswith(key + b"=") and bool(sep) and size.isdigit() and value == meta_value(key, int(size))


def scratch_key(thread: int, index: int) -> bytes:
    return b"scratch/t%d/%d" % (thread, index)


# --- The child: writes until killed -------------------------------------------------------------


MODES = ("sync", "async", "nosegmentsync", "nowalsync", "nokvsync")


def main(argv: list[str]) -> None:
    """``DATA_DIR MODE RUN SEED``: append and commit metadata batches until killed, writing
    one line to stdout for each acknowledgement as soon as it returns:

    - ``A RUN BATCH FIRST_LSN COUNT SIZE``: a batch of COUNT records of SIZE bytes, acknowledged;
    - ``K RUN THREAD BATCH COUNT SIZE REVISION``: a metadata batch putting COUNT keys of SIZE bytes
      (``meta_key``), committed at REVISION;
    - ``F RUN THREAD BATCH``: a metadata batch refused (``ConditionFailedError``): nothing applied.

    MODE ``sync``: the store as shipped. The others take a sync away, to show that the checks see
    it: ``async``, the log is created with ``Durability.ASYNC`` (acknowledged before any sync);
    ``nosegmentsync``, Python's ``os.fsync`` and ``os.fdatasync`` do nothing (the segment files'
    syncs; RocksDB's, made from C++, still happen); ``nowalsync``, ``LogsDB.sync_wal`` does nothing
    (RocksDB's write-ahead log is never synced); ``nokvsync``, the metadata store's group commit
    does nothing (no appends run: their syncs would cover the batches).
    """
    data_dir, mode, run, rng = parse_argv(argv, MODES)
    emit = line_writer()
    take_syncs_away(mode)
    with seaway.open(data_dir, config()) as sw:
        name = LOG_ASYNC if mode == "async" else LOG_SYNC
        try:
            log = sw.logs.get(name)
        except seaway.UnknownLogError:
            durability = seaway.Durability.ASYNC if mode == "async" else seaway.Durability.SYNC
            log = sw.logs.create(name, durability=durability)
        emit("ready")
        workers: list[threading.Thread] = []
        if mode != "nokvsync":
            workers.append(threading.Thread(target=_append, args=(log, run, random.Random(rng.random()), emit)))
        if mode in ("sync", "nowalsync", "nokvsync"):
            workers += [threading.Thread(target=_commit_meta, args=(sw, run, t, random.Random(rng.random()), emit))
                        for t in range(META_THREADS)]
        if mode == "sync":
            workers.append(threading.Thread(target=_flush, args=(sw._store.logsdb, random.Random(rng.random()))))
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()  # never: the parent kills this process


def _append(log: seaway.Log, run: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    def reporter(batch: int, count: int, size: int) -> Callable[[Future[range]], None]:
        def report(future: Future[range]) -> None:
            if future.exception() is None:
                emit(f"A {run} {batch} {future.result()[0]} {count} {size}")
        return report

    batch = 0
    while True:
        # One to three batches in flight, so the cut can fall between their writes and syncs;
        # each reported the moment it is acknowledged.
        in_flight: list[Future[range]] = []
        for _ in range(rng.randint(1, 3)):
            large = rng.random() < 0.15
            size = LARGE_BYTES if large else SMALL_BYTES
            count = rng.randint(1, 2) if large else rng.randint(1, 8)
            future = log.append_batch_async([payload(run, batch, i, size) for i in range(count)])
            future.add_done_callback(reporter(batch, count, size))
            in_flight.append(future)
            batch += 1
        for future in in_flight:
            future.result()  # after the cut, raises: this thread ends, and the parent kills the rest
        time.sleep(rng.uniform(0, 0.004))  # bounds the bytes a run writes, and so the checks' reads


def _commit_meta(sw: seaway.Seaway, run: int, thread: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    """Metadata batches, small and large, each raising the shared counter by compare-and-set (so
    some are refused), putting scratch keys and deleting them again with a range delete."""
    batch = 0
    while True:
        large = rng.random() < 0.15
        count, size = (META_LARGE_KEYS, META_LARGE_BYTES) if large else (rng.randint(1, 8), SMALL_BYTES)
        got = sw.meta.get(META_NS, COUNTER)
        b = sw.meta.batch().expect_version(META_NS, COUNTER, got.version if got else 0)
        for i in range(count):
            key = meta_key(run, thread, batch, count, i)
            b.put(META_NS, key, meta_value(key, size))
            b.put(META_NS, scratch_key(thread, i), b"x" * 50)
        b.put(META_NS, COUNTER, b"%d" % (int(got.value) + 1 if got else 1))
        b.delete_prefix(META_NS, b"scratch/t%d/" % thread)
        try:
            revision = b.commit()  # after the cut, raises StorageError: this thread ends
        except seaway.ConditionFailedError:
            emit(f"F {run} {thread} {batch}")
        else:
            emit(f"K {run} {thread} {batch} {count} {size} {revision}")
        batch += 1
        time.sleep(rng.uniform(0, 0.004))


def config() -> seaway.SeawayConfig:
    """Small partitions, so that the runs create column families and segment files now and then."""
    logsdb = seaway.LogsDBConfig(partition_bytes_max=PARTITION_BYTES_MAX)
    return seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=logsdb))


def _flush(logsdb: LogsDB, rng: random.Random) -> None:
    """Memtable flushes, as RocksDB makes once they fill (64 MB, more than a run writes): new SST
    files, a new write-ahead log, MANIFEST updates, old logs recycled."""
    while True:
        time.sleep(rng.uniform(0.05, 0.4))
        logsdb.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
