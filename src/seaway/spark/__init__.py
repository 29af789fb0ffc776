"""Seaway's Spark data sources, on PySpark's Python Data Source API (``pip install 'seaway[spark]'``).

``spark.read.format("seaway")`` / ``spark.readStream.format("seaway")`` read a stream, a log or (streaming)
a queue as one of its consumer groups; ``df.write.format("seaway")`` / ``df.writeStream.format("seaway")``
write into a stream or a queue, exactly once. :func:`session` starts a local Spark session with the
source registered; on another session call ``spark.dataSource.register(SeawayDataSource)``.
The options are documented in the user guide (docs/spark.md).
"""

from __future__ import annotations

from seaway.spark._datasource import SeawayDataSource
from seaway.spark._options import Options
from seaway.spark._session import session

__all__ = ["Options", "SeawayDataSource", "session"]
