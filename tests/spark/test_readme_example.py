"""The README's Spark example runs as written, against a server over its ``./data``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import seaway
from seaway.server import ServerProcess

ROOT = Path(__file__).resolve().parent.parent.parent


def _spark_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [b for b in blocks if "seaway.spark.session()" in b]
    assert len(found) == 1, "the README has one Spark example"
    return found[0]


def test_the_readme_spark_example_runs(spark: Any, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server, seaway.connect(server.url) as sw:
        sw.streams.create_scope("web")
        access = sw.streams.create("web/access", segments=2)
        pages = [f"/item/{i % 7}" for i in range(60)]
        with access.writer() as writer:
            for i, page in enumerate(pages):
                writer.write(f'10.0.0.{i} - u{i} [23/Nov/2026:10:00:00 +0000] "GET {page} HTTP/1.1" 200 512'.encode(),
                             routing_key=f"u{i}")
        sw.queues.create("pageviews")
        sw.queues.create_group("pageviews", "per-page", 1, "HASH", key="page")
        # Relative paths are resolved by Spark's workers, in the directory the session started in.
        example = _spark_example().replace('"./', f'"{tmp_path}/')
        scope: dict[str, Any] = {}
        try:
            exec(compile(example, "README.md", "exec"), scope)
            scope["query"].processAllAvailable()
        finally:
            if "query" in scope:
                scope["query"].stop()
        consumer = sw.queues.consumer("pageviews", "per-page", 0)
        tx = sw.transaction()
        entries = consumer.dequeue(tx, entries_max=1000, timeout_s=1.0)
        tx.commit()
        consumer.close()
        assert sorted(e.payload for e in entries) == sorted(f'{{"page":"{p}"}}'.encode() for p in pages)
