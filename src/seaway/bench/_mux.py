"""Part of ``seaway bench logs``: one remote reader over 1,000 logs against one remote reader over one
log holding the same bytes, through a server process started for it.

Both sides get the same batches (``batch_records`` records of ``record_bytes``): all in one log, or
dealt in turn to 1,000 logs. Catch-up: the server is restarted once everything is written (so no
side reads from its cache of recent entries), then one reader reads every log from its start to its
tail. Tailing: one reader tails every log while a thread of this process appends the same bytes
again; the rate counts from the first append to the last record received. Each side runs
``rounds`` times, alternating; the best counts. Readers hand out record runs, as bulk consumers do.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway.log import LSN_MAX, Durability, RecordRun
from seaway.server import ServerProcess


@dataclass(frozen=True)
class MuxBenchConfig:
    logs: int = 1_000
    total_bytes: int = 128 << 20
    """Payload bytes written to each side for the catch-up read, and again for the tailing read."""
    record_bytes: int = 1024
    batch_records: int = 32
    in_flight_batches: int = 64
    rounds: int = 2


def _append(logs: Sequence[Any], config: MuxBenchConfig) -> int:
    """Append ``total_bytes`` in batches dealt to ``logs`` in turn; the records appended."""
    payload = b"x" * config.record_bytes
    batches = max(1, config.total_bytes // (config.record_bytes * config.batch_records))
    pending: deque[Future[range]] = deque()
    for n in range(batches):
        pending.append(logs[n % len(logs)].append_batch_async([payload] * config.batch_records))
        if len(pending) >= config.in_flight_batches:
            pending.popleft().result(120)
    for future in pending:
        future.result(120)
    return batches * config.batch_records


def _drain(reader: Any, records: int | None) -> int:
    """Read until ``records`` records arrived (None: until every log is done); the records read."""
    got = 0
    while records is None or got < records:
        items = reader.read(2000, timeout_s=60)
        if not items:
            if records is None and reader.done:
                return got
            raise RuntimeError(f"the reader starved after {got} records")
        got += sum(len(i.payloads) for i in items if type(i) is RecordRun)
    return got


def _catch_up(sw: Any, logs: Sequence[Any], tails: dict[int, int]) -> float:
    """Records per second reading every log from its start to ``tails``."""
    start = time.perf_counter()
    with sw.logs.reader(runs=True) as reader:
        for log in logs:
            reader.start_reading(log, 1, tails[log.id])
        records = _drain(reader, None)
    return records / (time.perf_counter() - start)


def _tailing(sw: Any, logs: Sequence[Any], config: MuxBenchConfig) -> float:
    """Records per second tailing ``logs`` while a thread appends ``total_bytes`` to them."""
    tails = {log.id: log.tail_lsn() for log in logs}
    with sw.logs.reader(runs=True) as reader:
        for log in logs:
            reader.start_reading(log, tails[log.id] + 1, LSN_MAX)
        reader.read(1, timeout_s=0.5)  # the stream is open and the starts are in (nothing to read yet)
        expected = max(1, config.total_bytes // (config.record_bytes * config.batch_records)) * config.batch_records
        errors: list[BaseException] = []

        def produce() -> None:
            try:
                _append(logs, config)
            except BaseException as exc:  # raised below: a figure from a failed run would be a lie
                errors.append(exc)

        producer = threading.Thread(target=produce, name="bench-producer")
        start = time.perf_counter()
        producer.start()
        try:
            records = _drain(reader, expected)
        finally:
            producer.join()
        if errors:
            raise errors[0]
        return records / (time.perf_counter() - start)


def run_mux_bench(config: MuxBenchConfig) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp:
        server = ServerProcess(Path(tmp) / "data")
        try:
            with seaway.connect(server.url, timeout_s=120) as sw:
                sides = {1: [sw.logs.create("mux-one", durability=Durability.ASYNC)],
                         config.logs: [sw.logs.create(f"mux-{i}", durability=Durability.ASYNC)
                                       for i in range(config.logs)]}
                for logs in sides.values():
                    _append(logs, config)
            server.stop()
            server.restart()  # reads start from the disk on both sides, not from the recent-entry cache
            catch_up: dict[int, float] = {}
            tailing: dict[int, float] = {}
            with seaway.connect(server.url, timeout_s=120) as sw:
                sides = {count: [sw.logs.get(log.id) for log in logs] for count, logs in sides.items()}
                tails = {log.id: log.tail_lsn() for logs in sides.values() for log in logs}
                for _ in range(config.rounds):
                    for count, logs in sides.items():
                        catch_up[count] = max(catch_up.get(count, 0.0), _catch_up(sw, logs, tails))
                for _ in range(config.rounds):
                    for count, logs in sides.items():
                        tailing[count] = max(tailing.get(count, 0.0), _tailing(sw, logs, config))
        finally:
            server.stop()
    many = config.logs
    mb = config.record_bytes / 1e6
    return {
        "mux_logs": many,
        "mux_bytes_per_side": config.total_bytes,
        "mux_record_bytes": config.record_bytes,
        "catchup_records_per_s_1_log": round(catch_up[1]),
        f"catchup_records_per_s_{many}_logs": round(catch_up[many]),
        "catchup_mb_per_s_1_log": round(catch_up[1] * mb, 1),
        f"catchup_mb_per_s_{many}_logs": round(catch_up[many] * mb, 1),
        "multiplexed_read_ratio": round(catch_up[many] / catch_up[1], 3),
        "tailing_records_per_s_1_log": round(tailing[1]),
        f"tailing_records_per_s_{many}_logs": round(tailing[many]),
        "multiplexed_tailing_ratio": round(tailing[many] / tailing[1], 3),
    }
