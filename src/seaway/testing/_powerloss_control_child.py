"""The child of the power-loss tests of control-plane changes (tests/powerloss): appends, trims,
seals, retention's partition drops and ledger entries of their own, through a
:class:`~seaway.testing.PowerLossFS` mount until the power is cut and the process killed, reporting
every acknowledgement on stdout the moment it returns; a reader reports every ledger entry it sees.

Run as ``python -m seaway.testing._powerloss_control_child DATA_DIR MODE RUN SEED`` (see :func:`main`);
the store is made first by :func:`create_store`.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import zlib
from collections.abc import Callable

import seaway
from seaway.ledger import LedgerEntry, ScopeCreated, encode_change
from seaway.testing._powerloss_child import LARGE_BYTES, SMALL_BYTES, payload
from seaway.testing._powerloss_child_kit import line_writer, parse_argv, take_syncs_away

TRIMMED_LOGS = 3
"""Logs ``ctl-0``..: appended to and trimmed, so that retention drops their old partitions."""
SEALED_LOGS = 150
"""Logs ``seal-000``..: each appended to a little, sealed and trimmed whole, one after the other
over the runs."""
PARTITION_BYTES_MAX = 256 << 10  # a partition every few large records: retention has some to drop
MODES = ("sync", "nowalsync")
META_NS = "powerloss-control"
"""The metadata batches' namespace: key the scope whose entry the batch records."""


def trimmed_log(index: int) -> str:
    return f"ctl-{index}"


def sealed_log(index: int) -> str:
    return f"seal-{index:03d}"


def scope_name(run: int, index: int, *, in_batch: bool) -> str:
    """The scope named by the ``index``-th ledger entry the child writes in ``run``: on its own
    (``pl-``), or in a metadata batch (``pm-``)."""
    return f"{'pm' if in_batch else 'pl'}-{run}-{index}"


def entry_digest(entry: LedgerEntry) -> int:
    """What identifies an entry's content: its time and its change."""
    return zlib.crc32(b"%d;" % entry.time_ms + encode_change(entry.change))


def config() -> seaway.SeawayConfig:
    logsdb = seaway.LogsDBConfig(partition_bytes_max=PARTITION_BYTES_MAX)
    return seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=logsdb))


def create_store(data_dir: str | os.PathLike[str]) -> None:
    """The store the runs start from, with every log they use."""
    with seaway.open(data_dir, config()) as sw:
        for i in range(TRIMMED_LOGS):
            sw.logs.create(trimmed_log(i))
        for i in range(SEALED_LOGS):
            sw.logs.create(sealed_log(i))


def main(argv: list[str]) -> None:
    """``DATA_DIR MODE RUN SEED``: until killed, write one line to stdout for each acknowledgement
    as soon as it returns (LSNs in decimal):

    - ``A LOG BATCH FIRST_LSN COUNT SIZE``: a batch of COUNT records (``payload(RUN, BATCH, i, SIZE)``);
    - ``T LOG LSN``: the log trimmed to LSN;
    - ``S LOG FINAL_LSN``: the log sealed;
    - ``R PID``: retention dropped the partition;
    - ``L INDEX SCOPE``: a ledger entry written on its own (a :class:`ScopeCreated`) at INDEX;
    - ``M REVISION SCOPE``: a metadata batch putting key SCOPE in ``META_NS`` and recording its
      entry, committed at REVISION;
    - ``E INDEX DIGEST OPERATION``: the reader saw this entry (:func:`entry_digest`).

    MODE ``sync``: the store as shipped; ``nowalsync``: ``LogsDB.sync_wal`` does nothing, to show
    that the checks see it (every acknowledged trim, seal and ledger entry is at risk); small
    records only, no retention and no flushes (RocksDB can sync its log itself around those).
    """
    data_dir, mode, run, rng = parse_argv(argv, MODES)
    emit = line_writer()
    take_syncs_away(mode)
    with seaway.open(data_dir, config()) as sw:
        emit("ready")
        large = mode == "sync"
        targets: list[Callable[[], None]] = [
            lambda: _append_and_trim(sw, run, random.Random(rng.random()), emit, large),
            lambda: _seal(sw, run, random.Random(rng.random()), emit),
            lambda: _ledger_append(sw, run, random.Random(rng.random()), emit),
            lambda: _ledger_read(sw, emit),
        ]
        if mode == "sync":
            # Not without the sync: around column families created and dropped and memtables
            # flushed, RocksDB can sync its write-ahead log itself (a run with them lost nothing).
            targets.append(lambda: _retention(sw, random.Random(rng.random()), emit))
            targets.append(lambda: _flush(sw, random.Random(rng.random())))
        workers = [threading.Thread(target=target) for target in targets]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()  # never: the parent kills this process


def _append_and_trim(sw: seaway.Seaway, run: int, rng: random.Random, emit: Callable[[str], None],
                     large_too: bool) -> None:
    """Batches to the trimmed logs, small and (``large_too``) large, and now and then a trim of one
    of them to somewhere in what it has acknowledged: old partitions come to hold trimmed records
    only."""
    logs = [sw.logs.get(trimmed_log(i)) for i in range(TRIMMED_LOGS)]
    acked: dict[str, list[int]] = {log.name: [] for log in logs}  # the last LSN of each batch acknowledged
    batch = 0
    while True:
        log = rng.choice(logs)
        large = large_too and rng.random() < 0.2
        size = LARGE_BYTES if large else SMALL_BYTES
        count = 1 if large else rng.randint(1, 8)
        lsns = log.append_batch([payload(run, batch, i, size) for i in range(count)])
        emit(f"A {log.name} {batch} {lsns[0]} {count} {size}")
        acked[log.name].append(lsns[-1])
        batch += 1
        if rng.random() < 0.25:
            name = rng.choice(list(acked))
            if acked[name]:
                lsn = rng.choice(acked[name][-4:])
                target = sw.logs.get(name)
                if lsn > target.trim_point():
                    target.trim(lsn)
                    emit(f"T {name} {lsn}")
        time.sleep(rng.uniform(0, 0.004))


def _seal(sw: seaway.Seaway, run: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    """The next unsealed log: a few records, then sealed, then trimmed whole (so that retention
    can drop its partitions: the oldest partition still needed stops the drops behind it)."""
    batch = 1_000_000  # apart from _append_and_trim's batch numbers
    for i in range(SEALED_LOGS):
        log = sw.logs.get(sealed_log(i))
        final = log.final_lsn()
        if final is None:
            count = rng.randint(1, 4)
            lsns = log.append_batch([payload(run, batch, j, SMALL_BYTES) for j in range(count)])
            emit(f"A {log.name} {batch} {lsns[0]} {count} {SMALL_BYTES}")
            batch += 1
            time.sleep(rng.uniform(0, 0.05))
            final = log.seal()
            emit(f"S {log.name} {final}")
            time.sleep(rng.uniform(0, 0.05))
        if final > log.trim_point():  # this run's seal, or one whose trim a cut took
            log.trim(final)
            emit(f"T {log.name} {final}")
            time.sleep(rng.uniform(0.02, 0.1))
    raise SystemExit("every log is sealed: raise SEALED_LOGS")


def _retention(sw: seaway.Seaway, rng: random.Random, emit: Callable[[str], None]) -> None:
    while True:
        for pid in sw.logs.run_retention():
            emit(f"R {pid}")
        time.sleep(rng.uniform(0.01, 0.06))


def _ledger_append(sw: seaway.Seaway, run: int, rng: random.Random, emit: Callable[[str], None]) -> None:
    """Ledger entries on their own, and in metadata batches (the entry in the batch's write)."""
    index = 0
    while True:
        in_batch = rng.random() < 0.5
        scope = scope_name(run, index, in_batch=in_batch)
        if not in_batch:
            emit(f"L {sw.ledger.append(ScopeCreated(scope))} {scope}")
        else:
            revision = sw.meta.batch().put(META_NS, scope.encode(), b"%d" % run).record(ScopeCreated(scope)).commit()
            emit(f"M {revision} {scope}")
        index += 1
        time.sleep(rng.uniform(0, 0.03))


def _ledger_read(sw: seaway.Seaway, emit: Callable[[str], None]) -> None:
    """A reader polling the ledger, as a notification plugin does: what it saw it may have acted
    on, so it must still be there, the same, after any power loss."""
    _, head = sw.ledger.bounds()
    index = head + 1
    while True:
        for entry in sw.ledger.read(index, 1000):
            emit(f"E {entry.index} {entry_digest(entry)} {entry.operation}")
            index = entry.index + 1
        time.sleep(0.002)


def _flush(sw: seaway.Seaway, rng: random.Random) -> None:
    while True:
        time.sleep(rng.uniform(0.05, 0.4))
        sw.own_logs.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
