"""The Spark sink across driver crashes: a streaming query whose driver is SIGKILLed in the middle
of a batch, then again right after the sink's commit and before Spark recorded it, restarted from
its checkpoint each time, writes every row exactly once (count and checksum), and leaves no
transaction staged."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import seaway
from seaway import TxnStatus
from seaway.server import ServerProcess
from seaway.spark._write import NAMESPACE
from tests.spark.test_write import make_stream, read_events, staged_notes

SINK = "crash-sink"
FILES = 4
ROWS = 50
RUN_WAIT_S = 240


def run_child(server: ServerProcess, stream: str, tmp_path: Path, fault: str | None) -> int:
    """One Spark driver, in a process group of its own (the fault hook kills that group)."""
    args = [sys.executable, "-m", "seaway.testing._spark_child", server.url, stream, SINK, str(tmp_path / "in"),
            str(tmp_path / "ckpt"), *([fault] if fault else [])]
    child = subprocess.run(args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=RUN_WAIT_S, check=False)
    if child.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"the driver failed ({child.returncode}): {child.stderr.decode()[-3000:]}")
    return child.returncode


def published(sw: Any) -> int | None:
    got = sw.meta.get(NAMESPACE, f"{SINK}/published".encode())
    return None if got is None else int(got.value)


def test_a_driver_killed_mid_batch_and_after_the_sinks_commit_publishes_each_row_once(
        server: ServerProcess, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for f in range(FILES):  # one file a micro-batch
        rows = [{"routing_key": f"k{i % 6}", "n": f * ROWS + i} for i in range(ROWS)]
        (source / f"{f}.json").write_text("\n".join(json.dumps(row) for row in rows))
    with seaway.connect(server.url) as sw:
        stream = make_stream(sw)

        # 1. Killed while batch 1's task had staged its rows: batch 0 is published, batch 1 is not.
        assert run_child(server, stream, tmp_path, f"write:{SINK}:1") == -signal.SIGKILL
        assert published(sw) == 0
        orphans = [int(key.rsplit(b"/", 1)[1]) for key in staged_notes(sw) if b"/staged/" in key]
        assert orphans and all(sw.txn.status(t) is TxnStatus.IN_PROGRESS for t in orphans)

        # 2. Restarted: batch 1 runs again and is published (the orphans aborted by that commit),
        # batch 2 is published, and the driver dies before Spark records batch 2.
        assert run_child(server, stream, tmp_path, f"commit:{SINK}:2") == -signal.SIGKILL
        assert published(sw) == 2
        assert all(sw.txn.status(t) is TxnStatus.ABORTED for t in orphans)

        # 3. Restarted: Spark runs batch 2 again, and the sink does nothing for it; then batch 3.
        assert run_child(server, stream, tmp_path, None) == 0
        assert published(sw) == FILES - 1
        events = [json.loads(e) for e in read_events(sw, stream, FILES * ROWS)]
        numbers = sorted(e["n"] for e in events)
        assert len(events) == FILES * ROWS and numbers == list(range(FILES * ROWS))  # each row once
        assert not [i for i in sw.txn.list() if i.status is TxnStatus.IN_PROGRESS]
        assert staged_notes(sw) == [f"{SINK}/published".encode()]
