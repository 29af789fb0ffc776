"""``seaway spark``: how far each Spark query reading a stream or a log has read, and its lag.

``sources`` lists the sources queries recorded under their ``sourceId`` (the option), each with the
offset it last committed and the records after it; ``source ID`` shows one, per segment or log. A
query reading a queue is one of its consumer groups: ``seaway queue group describe`` shows its lag.
No Spark is started: what is shown is in Seaway's metadata.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from seaway.cli._store import open_store, out, text_of


def add_spark_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``spark sources|source`` to ``commands`` (the top-level subparsers)."""
    spark = commands.add_parser("spark", help="Spark queries reading streams and logs: how far, and their lag",
                                description="A query's source is named by its sourceId option.")
    ops = spark.add_subparsers(dest="op", required=True, metavar="OPERATION")
    listing = ops.add_parser("sources", parents=[common], help="every source a query recorded, with its lag")
    listing.add_argument("--limit", type=int, default=1000, help="print at most this many (default 1000)")
    ops.add_parser("source", parents=[common], help="one source: its committed offset and lag per segment or log") \
        .add_argument("id", help="the query's sourceId")


def run_spark(args: argparse.Namespace) -> None:
    """Carry out ``args.op``; failures are raised (as :class:`SeawayError`) for the caller to print."""
    from seaway.spark import spark_source, spark_sources  # noqa: PLC0415 - no PySpark: read from metadata

    with open_store(args, writes=False) as sw:
        if args.op == "sources":
            found = spark_sources(sw, args.limit)
            if args.json:
                print(json.dumps([source.to_json() for source in found]))
            for source in found if not args.json else ():
                print(f"{text_of(source.source_id)}  {source.kind} {text_of(source.name)}  lag {source.lag}"
                      f"{'' if source.committed else '  (nothing committed yet: from its start)'}")
        else:
            source = spark_source(sw, args.id)
            lags = ", ".join(f"{text_of(part)}: {lag}" for part, lag in source.lags.items())
            out(args, source.to_json(), f"{text_of(source.source_id)}  {source.kind} {text_of(source.name)}  "
                                        f"lag {source.lag} ({lags})")
