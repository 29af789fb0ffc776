"""Disk use under retention when one log is kept forever and many others live briefly.

Two stores run the same permanent log through the same time partitions; one of them also holds
short-lived logs (a backlog of two minutes) written in every partition, half of their batches large
enough for the segment files. After their backlog has passed and retention has run, the figure is
the disk use of that store over the disk use of the store holding the permanent log alone: 1.0
means the short-lived logs left nothing behind, although the permanent log pins every partition.
Time is a fake clock: the partitions and the backlog pass without waiting.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway.testing import FakeClock


@dataclass(frozen=True)
class DiskBenchConfig:
    partitions: int = 6
    short_lived_per_partition: int = 40
    records_per_log: int = 40
    record_bytes: int = 1000
    permanent_records_per_partition: int = 100


def _disk_bytes(path: Path) -> tuple[int, int]:
    """Bytes the files under ``path`` occupy on disk (allocated blocks, so punched holes count 0):
    those holding data, and RocksDB's write-ahead log files, which it keeps to recycle them (their
    number is bounded, and their size by the memtables; nothing there is read once flushed)."""
    data = wal = 0
    for f in path.rglob("*"):
        if f.is_file():
            if f.suffix == ".log" and f.parent.name == "rocksdb":
                wal += f.stat().st_blocks * 512
            else:
                data += f.stat().st_blocks * 512
    return data, wal


def _run(path: Path, config: DiskBenchConfig, short_lived: bool) -> tuple[tuple[int, int], int]:
    """Disk bytes after retention (data, write-ahead log), and the bytes of short-lived records written."""
    clock = FakeClock()
    store_config = seaway.SeawayConfig(logs=seaway.LogStoreConfig(
        logsdb=seaway.LogsDBConfig(partition_duration_s=60)))
    written = 0
    with seaway.open(path, store_config, clock) as sw:
        permanent = sw.logs.create("permanent")
        record = b"p" * config.record_bytes
        for minute in range(config.partitions):
            permanent.append_batch([record] * config.permanent_records_per_partition)
            if short_lived:
                for k in range(config.short_lived_per_partition):
                    log = sw.logs.create(f"short-{minute}-{k}", backlog_s=120)
                    payloads = [bytes([k % 256]) * config.record_bytes] * config.records_per_log
                    if k % 2:
                        log.append_batch(payloads)  # one entry, in the segment file
                    else:
                        for payload in payloads:  # small entries, in RocksDB
                            log.append(payload)
                    written += len(payloads) * config.record_bytes
            clock.advance(61)
        clock.advance(300)
        permanent.append(record)  # the newest partition, which retention leaves be
        sw.logs.run_retention()
        sw.own_logs.flush()  # what is measured is what stays, not the write-ahead log RocksDB recycles
    return _disk_bytes(path), written


def run_disk_bench(config: DiskBenchConfig | None = None) -> dict[str, Any]:
    config = config or DiskBenchConfig()
    with tempfile.TemporaryDirectory(prefix="seaway-bench-disk-") as tmp:
        (alone, _), _ = _run(Path(tmp) / "alone", config, short_lived=False)
        (mixed, wal), written = _run(Path(tmp) / "mixed", config, short_lived=True)
    return {"disk_bytes_permanent_alone": alone, "disk_bytes_with_short_lived": mixed,
            "short_lived_bytes_written": written, "wal_bytes_kept_for_recycling": wal,
            "disk_use_ratio_short_lived": round(mixed / alone, 3)}
