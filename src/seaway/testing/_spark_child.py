"""The child side of the Spark crash tests: a Spark driver running one streaming query into a
transactional stream through the seaway sink, to be SIGKILLed (with its JVM) and restarted.

Run as ``python -m seaway.testing._spark_child ADDRESS STREAM SINK_ID CHECKPOINT SOURCE [FAULT]``,
in a session of its own (a fault kills the process group). ``SOURCE`` is ``files:DIR`` (the JSON
files of ``DIR``, ``routing_key string, n long``, one file a micro-batch), ``queue:QUEUE:GROUP``
(the queue read as that consumer group, a few entries a micro-batch; each entry's payload is a JSON
object of the same two fields), or both joined by ``+`` (one query over their union: each batch
takes from both). Each row is written as a JSON object, with its routing key. The query runs with
``availableNow`` from the checkpoint at ``CHECKPOINT`` and the child exits 0 once it ended.
``FAULT`` is ``<point>:<batch id>`` (see :mod:`seaway.testing._spark_faults`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import functions

from seaway.spark import session
from seaway.testing._spark_faults import FAULT_ENV, FaultySeawayDataSource, fault_value

QUERY_WAIT_S = 120
QUEUE_ENTRIES_PER_TRIGGER = 20
SCHEMA = "routing_key string, n long"


def _source(spark: Any, address: str, source: str) -> Any:
    kind, _, what = source.partition(":")
    if kind == "files":
        return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(what)
    queue, group = what.split(":")
    entries = (spark.readStream.format("seaway").option("address", address).option("queue", queue)
               .option("group", group).option("maxEntriesPerTrigger", QUEUE_ENTRIES_PER_TRIGGER).load())
    return entries.select(functions.from_json(functions.col("payload").cast("string"), SCHEMA).alias("row")).select(
        "row.*")


def main(argv: list[str]) -> int:
    address, stream, sink_id, checkpoint, source, *fault = argv
    if fault:  # set before the JVM starts, so that its Python workers inherit it
        point, batch_id = fault[0].split(":")
        os.environ[FAULT_ENV] = fault_value(point, int(batch_id), os.getpgid(0))
    spark = session("seaway-crash")
    spark.dataSource.register(FaultySeawayDataSource)
    first, *others = (_source(spark, address, part) for part in source.split("+"))
    df = first
    for other in others:
        df = df.unionByName(other)
    query = (df.writeStream.format("seaway_faults").option("address", address).option("stream", stream)
             .option("sinkId", sink_id).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        if not query.awaitTermination(QUERY_WAIT_S):
            print("the query did not end in time", file=sys.stderr)
            return 2
        return 0 if query.exception() is None else 1
    finally:
        query.stop()
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
