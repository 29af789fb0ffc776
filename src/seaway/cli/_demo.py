"""``seaway demo``: the main job on the embedded default, printing what it does."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import seaway
from seaway.log import Gap, Record, lsn_str
from seaway.server import ServerProcess


def run_demo(data_dir: Path, say: Callable[[str], None] = print) -> dict[str, int]:
    """The demo on the embedded store in ``data_dir``."""
    with seaway.open(data_dir) as sw:
        say(f"opened the embedded store in {data_dir}")
        return demo_steps(sw, say)


def run_demo_remote(data_dir: Path, say: Callable[[str], None] = print) -> dict[str, int]:
    """The demo through the client, against a ``seaway serve`` process started on a free loopback port."""
    with ServerProcess(data_dir) as server, seaway.connect(server.url) as sw:
        say(f"started `seaway serve` (pid {server.pid}) on {server.url} over {data_dir}")
        counts = demo_steps(sw, say)
    say("stopped the server with SIGTERM: it finished what it had accepted and closed the store")
    return counts


def demo_steps(sw: Any, say: Callable[[str], None]) -> dict[str, int]:
    """Create (or reopen) a log, append single records and a batch, trim, find by time, read.

    ``sw`` is an embedded store or a client: they have the same API. Returns the counts it printed.
    Safe to run again on the same data: each run appends after what is there.
    """
    try:
        clicks = sw.logs.get("demo/clicks")
        say(f"reopened log {clicks.name!r} (id {clicks.id}); its tail is {lsn_str(clicks.tail_lsn())}")
    except seaway.UnknownLogError:
        clicks = sw.logs.create("demo/clicks", backlog_s=7 * 86400)
        say(f"created log {clicks.name!r} (id {clicks.id}, backlog 7 days)")
    started_ms = time.time_ns() // 1_000_000
    first = clicks.append(json.dumps({"user": 7, "page": "/home"}).encode())
    say(f"appended one record at {lsn_str(first)} (fsynced before it returned)")
    batch = [json.dumps({"user": u, "page": f"/item/{u}"}).encode() for u in range(100)]
    lsns = clicks.append_batch(batch)
    say(f"appended a batch of {len(lsns)} records at {lsn_str(lsns[0])}..{lsn_str(lsns[-1])}, atomically")
    with clicks.writer(flush_records_max=50) as writer:
        futures = [writer.write(f"event {i}".encode()) for i in range(120)]
    say(f"the batching writer stored 120 records in batches of up to 50, the last at "
        f"{lsn_str(futures[-1].result())}")
    clicks.trim(first)
    say(f"trimmed up to {lsn_str(first)}: readers now see a TRIM gap there")
    found = clicks.find_time(started_ms)
    say(f"find_time(start of this run) = {lsn_str(found)}")
    records = gaps = 0
    for item in clicks.read():
        if isinstance(item, Record):
            records += 1
        elif isinstance(item, Gap):
            gaps += 1
            say(f"  gap {item.type.value}: {lsn_str(item.lsn_lo)}..{lsn_str(item.lsn_hi)}")
    say(f"read {records} records and {gaps} gaps; the log holds {clicks.data_size()} bytes on disk")
    return {"records": records, "gaps": gaps}
