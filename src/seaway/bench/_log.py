"""``seaway bench log``: the embedded log against raw RocksDB, measured in the same run.

Both sides write the same batches (1 KB records, 500 to a batch, an fsync per batch) and then read
everything back in order. The figures that matter are the ratios: this machine is shared and noisy,
so a time on its own says little.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

import seaway
from seaway._progress import Progress
from seaway.log import Record


@dataclass(frozen=True)
class LogBenchConfig:
    batches: int = 200
    batch_records: int = 500
    record_bytes: int = 1024
    rounds: int = 3


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def cpu_jiffies() -> tuple[int, int] | None:
    """(stolen, all) CPU time of the machine so far, from ``/proc/stat``; None where there is none.
    On a shared virtual machine, time stolen by other guests makes figures swing from run to run."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def process_cpu_s(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` used so far, in seconds, from
    ``/proc/<pid>/stat``; None where there is none (another system, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
        fields = raw[raw.rindex(")") + 2:].split()  # after the command's name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def steal_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the machine's CPU time stolen between two :func:`cpu_jiffies` samples, in %."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round(100 * (after[0] - before[0]) / (after[1] - before[1]), 1)


def _batches(config: LogBenchConfig) -> list[list[bytes]]:
    """Distinct, incompressible-enough payloads, made before any clock starts."""
    seed = os.urandom(config.record_bytes)
    out = []
    for b in range(config.batches):
        prefix = b.to_bytes(4, "big")
        out.append([prefix + i.to_bytes(4, "big") + seed[8:] for i in range(config.batch_records)])
    return out


def _raw_rocksdb(path: Path, batches: list[list[bytes]]) -> tuple[float, float, int]:
    """Append each batch as one fsynced write batch of one key per record, then scan them all."""
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    db = Rdict(str(path), opts)
    sync = WriteOptions()
    sync.sync = True
    try:
        key = 0
        start = time.perf_counter()
        for batch in batches:
            wb = WriteBatch(raw_mode=True)
            for payload in batch:
                key += 1
                wb.put(key.to_bytes(16, "big"), payload)
            db.write(wb, sync)
        append_s = time.perf_counter() - start
        start = time.perf_counter()
        count = 0
        for _key, _value in db.items(read_opt=ReadOptions()):
            count += 1
        read_s = time.perf_counter() - start
    finally:
        db.close()
    return append_s, read_s, count


def _seaway(path: Path, batches: list[list[bytes]]) -> tuple[float, float, int]:
    """Append each batch with ``append_batch`` (default durability), then read the log to its tail."""
    with seaway.open(path) as sw:
        log = sw.logs.create("bench")
        start = time.perf_counter()
        for batch in batches:
            log.append_batch(batch)
        append_s = time.perf_counter() - start
        start = time.perf_counter()
        count = 0
        reader = sw.logs.reader()
        reader.start_reading(log, seaway.OLDEST, log.tail_lsn())
        while items := reader.read():
            count += sum(1 for item in items if type(item) is Record)
        read_s = time.perf_counter() - start
    return append_s, read_s, count


def run_log_bench(config: LogBenchConfig) -> dict[str, Any]:
    """Run both sides ``config.rounds`` times, alternating which goes first, and keep each side's
    best time: on a shared machine the best run is the one least disturbed by others."""
    batches = _batches(config)
    records = config.batches * config.batch_records
    raw_runs: list[tuple[float, float, int]] = []
    sea_runs: list[tuple[float, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, \
            Progress(2 * config.rounds, "bench log") as progress:
        for round_ in range(config.rounds):
            sides = [(_raw_rocksdb, raw_runs), (_seaway, sea_runs)]
            for run, runs in sides if round_ % 2 == 0 else reversed(sides):
                path = Path(tmp) / f"{run.__name__}-{round_}"
                runs.append(run(path, batches))
                shutil.rmtree(path)
                progress.advance(label=f"round {round_ + 1}: {run.__name__.strip('_')} done")
    for _, _, count in raw_runs + sea_runs:
        if count != records:
            raise RuntimeError(f"benchmark read back {count} records, expected {records}")
    raw_append_s, raw_read_s = min(r[0] for r in raw_runs), min(r[1] for r in raw_runs)
    sea_append_s, sea_read_s = min(r[0] for r in sea_runs), min(r[1] for r in sea_runs)
    return {
        "benchmark": "log",
        "records": records,
        "record_bytes": config.record_bytes,
        "batch_records": config.batch_records,
        "rounds": config.rounds,
        "durability": "sync (fsync per batch)",
        "append_per_s": round(records / sea_append_s),
        "read_per_s": round(records / sea_read_s),
        "raw_append_per_s": round(records / raw_append_s),
        "raw_read_per_s": round(records / raw_read_s),
        "append_ratio": round(raw_append_s / sea_append_s, 3),
        "read_ratio": round(raw_read_s / sea_read_s, 3),
        "targets": {"append_ratio": 0.7, "read_ratio": 0.6},
        "machine": machine(),
    }
