"""A Spark query reading a stream with a ``sourceId`` shows how far it has read and its lag (the
events written after its committed offset), through the Python API, the command and the server's
Prometheus gauges, without PySpark in the process that asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.server import ServerProcess
from seaway.spark import spark_source, spark_sources

ROOT = Path(__file__).resolve().parents[2]


def test_a_queries_lag_is_what_was_written_after_its_committed_offset(spark: Any, tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0")) as server:
        _check(spark, server, tmp_path)


def _check(spark: Any, server: ServerProcess, tmp_path: Path) -> None:
    with seaway.connect(server.url) as sw:
        sw.streams.create_scope("web")
        stream = sw.streams.create("web/clicks", segments=2)
        with stream.writer() as writer:
            for i in range(30):
                writer.write(f"e{i}".encode(), routing_key=f"k{i % 7}")

        def run() -> None:  # one run of the query over what is there now, from its checkpoint
            query = (spark.readStream.format("seaway").option("address", server.url).option("stream", "web/clicks")
                     .option("sourceId", "clicks-to-parquet").load()
                     .writeStream.format("parquet").option("path", str(tmp_path / "out"))
                     .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
            assert query.awaitTermination(120), "the query did not end"

        run()
        # Spark reports a batch done to its source when it plans the next one: the first batch
        # counts in the lag until the query reads again.
        first = spark_source(sw, "clicks-to-parquet")
        assert not first.committed and first.lag == 30, first
        with stream.writer() as writer:
            for i in range(12):
                writer.write(f"late{i}".encode(), routing_key=f"k{i % 7}")
        run()
        second = spark_source(sw, "clicks-to-parquet")
        assert second.committed and second.lag == 12, second  # the first batch done, the second not yet reported
        assert spark.read.parquet(str(tmp_path / "out")).count() == 42
        stream.split(stream.current_segments()[0].id)  # segments the query has not reached count too
        with stream.writer() as writer:
            for i in range(5):
                writer.write(f"after-split{i}".encode(), routing_key=f"k{i % 7}")
        info = spark_source(sw, "clicks-to-parquet")
        assert info.committed and info.kind == "stream" and info.name == "web/clicks"
        assert info.lag == 12 + 5 and sum(info.lags.values()) == 17 and len(info.lags) >= 3, info
        assert [s.source_id for s in spark_sources(sw)] == ["clicks-to-parquet"]
        with pytest.raises(seaway.errors.UnknownSparkSourceError):
            spark_source(sw, "nobody")

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    shown = subprocess.run([sys.executable, "-m", "seaway.cli", "spark", "sources", "--address", server.url,
                            "--json"], capture_output=True, text=True, env=env, check=False)
    assert shown.returncode == 0, shown.stderr
    assert [(s["source_id"], s["lag"]) for s in json.loads(shown.stdout)] == [("clicks-to-parquet", 17)]
    absent = subprocess.run([sys.executable, "-m", "seaway.cli", "spark", "source", "nobody", "--address", server.url],
                            capture_output=True, text=True, env=env, check=False)
    assert absent.returncode == 3 and "no Spark source 'nobody'" in absent.stderr
    probe = subprocess.run([sys.executable, "-c", "import sys, seaway.spark as s; s.spark_sources; "
                            "print('pyspark' in sys.modules)"], capture_output=True, text=True, env=env, check=True)
    assert probe.stdout.strip() == "False"
    with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as response:
        scraped = response.read().decode()
    assert 'seaway_spark_source_lag{source="clicks-to-parquet"} 17.0' in scraped.splitlines()
