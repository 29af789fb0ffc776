"""The Spark examples of docs/spark.md run as printed, against a server that holds what they read
(the address they print is the server's; relative paths are under the test's directory, since
Spark's workers resolve them where the shared session started). Each streaming query an example
starts processes what is there, and its output is checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import seaway
from seaway.server import ServerProcess
from tests.test_docs_examples import python_blocks, uses_spark

ADDRESS = "seaway://127.0.0.1:7070"


def _examples() -> list[str]:
    blocks = [block for block in python_blocks("docs/spark.md") if uses_spark(block)]
    assert len(blocks) == 3 and all(ADDRESS in block for block in blocks), "docs/spark.md's Spark examples changed"
    return blocks


def _run(example: str, scope: dict[str, Any], server: ServerProcess, tmp_path: Path) -> Any:
    code = example.replace(ADDRESS, server.url)
    code = re.sub(r'"(out|ckpt)/', lambda m: f'"{tmp_path}/{m.group(1)}/', code)
    exec(compile(code, "docs/spark.md", "exec"), scope)
    return scope["query"]


def test_the_spark_examples_of_the_docs_run(spark: Any, server: ServerProcess, tmp_path: Path) -> None:
    reading, queue_source, writing = _examples()
    with seaway.connect(server.url) as sw:
        sw.streams.create_scope("web")
        with sw.streams.create("web/access", segments=2).writer() as writer:
            for i in range(40):
                writer.write(f"GET /item/{i}".encode(), routing_key=f"u{i % 5}")
        sw.queues.create("clicks")
        sw.queues.create_group("clicks", "spark-per-user", 2, "ROUND_ROBIN")
        with sw.transaction() as tx:
            sw.queues.producer("clicks").enqueue_batch(tx, [f"click {i}".encode() for i in range(30)])
        sw.streams.create_scope("shop")
        sw.streams.create("shop/orders", segments=1, transactional=True)

        scope: dict[str, Any] = {}
        query = _run(reading, scope, server, tmp_path)
        try:
            assert scope["df"].count() == 40
            query.processAllAvailable()
        finally:
            query.stop()
        assert spark.read.parquet(str(tmp_path / "out")).count() == 40

        scope = {}
        query = _run(queue_source, scope, server, tmp_path)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        rows = spark.read.parquet(str(tmp_path / "out" / "clicks")).collect()
        assert sorted(bytes(r.payload) for r in rows) == sorted(f"click {i}".encode() for i in range(30))

        # "df" in the prose: the user's streaming DataFrame; here the access stream again.
        df = spark.readStream.format("seaway").option("address", server.url).option("stream", "web/access").load()
        scope = {"df": df.select("payload")}
        code = writing.replace(ADDRESS, server.url).replace('"ckpt/', f'"{tmp_path}/ckpt/')
        query = eval(compile(code.strip(), "docs/spark.md", "eval"), scope)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        orders = sw.streams.get("shop/orders")
        group = sw.streams.create_reader_group("check-orders", orders)
        with group.reader("r") as reader:
            orders.seal()
            assert sorted(event.payload for event in reader) == sorted(f"GET /item/{i}".encode() for i in range(40))
