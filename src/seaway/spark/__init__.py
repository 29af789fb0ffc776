"""Seaway's Spark data sources, on PySpark's Python Data Source API (``pip install 'seaway[spark]'``).

``spark.read.format("seaway")`` / ``spark.readStream.format("seaway")`` read a stream, a log or (streaming)
a queue as one of its consumer groups; ``df.write.format("seaway")`` / ``df.writeStream.format("seaway")``
write into a stream or a queue, exactly once. :func:`session` starts a local Spark session with the
source registered; on another session call ``spark.dataSource.register(SeawayDataSource)``.
The options are documented in the user guide (docs/spark.md). :func:`spark_sources` tells how far
each query reading a stream or a log has read, and its lag, without PySpark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seaway._lazy import lazy_names

if TYPE_CHECKING:
    from seaway.spark._datasource import SeawayDataSource
    from seaway.spark._options import Options
    from seaway.spark._session import session
    from seaway.spark._sources import SourceInfo, SparkLagCollector, spark_source, spark_sources

_LAZY = {
    "SeawayDataSource": "seaway.spark._datasource",
    "Options": "seaway.spark._options",
    "session": "seaway.spark._session",
    **dict.fromkeys(("SourceInfo", "SparkLagCollector", "spark_source", "spark_sources"), "seaway.spark._sources"),
}
"""Loaded on first use (PEP 562): the sources' lag (``spark_sources``) is read without PySpark."""

if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any name imported from here
    __getattr__, __dir__ = lazy_names(globals(), _LAZY)

__all__ = ["Options", "SeawayDataSource", "SourceInfo", "SparkLagCollector", "session", "spark_source", "spark_sources"]
