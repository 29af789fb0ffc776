"""The child side of the Spark sink's crash test: a Spark driver running one streaming query.

Run as ``python -m seaway.testing._spark_child ADDRESS STREAM SINK_ID SOURCE_DIR CHECKPOINT
[FAULT]``. It reads the JSON files of ``SOURCE_DIR`` (``routing_key string, n long``, one file a
micro-batch) and writes each row, as a JSON object, to the transactional ``STREAM`` through the
seaway sink, with ``availableNow`` and the checkpoint at ``CHECKPOINT``; it exits 0 once every
file is written. ``FAULT`` (``<point>:<sink id>:<batch id>``, see the sink's ``FAULT_ENV``) makes
the sink SIGKILL this process group there: start the child in a session of its own.
"""

from __future__ import annotations

import os
import sys

from seaway.spark import FAULT_ENV, session

QUERY_WAIT_S = 120


def main(argv: list[str]) -> int:
    address, stream, sink_id, source, checkpoint, *fault = argv
    if fault:  # set before the JVM starts, so that its Python workers inherit it
        os.environ[FAULT_ENV] = f"{fault[0]}:{os.getpgid(0)}"
    spark = session("seaway-sink-crash")
    df = spark.readStream.schema("routing_key string, n long").option("maxFilesPerTrigger", 1).json(source)
    query = (df.writeStream.format("seaway").option("address", address).option("stream", stream)
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
