"""How far each Spark query reading a stream or a log has read, and what it has left (its lag):
from what the source records in Seaway's metadata under its ``sourceId`` (see docs/spark.md). No
PySpark here: an operator's command and the server's gauges read it without starting Spark. A
query reading a queue is its consumer group: its lag is the group's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from seaway import Store
from seaway.errors import (
    InvalidArgumentError,
    SeawayError,
    UnknownLogError,
    UnknownScopeError,
    UnknownSparkSourceError,
    UnknownStreamError,
)
from seaway.streams import StreamCut, parse_segment, segment_str

META_NAMESPACE = "spark"
"""Where the source keeps what it persists in Seaway's metadata store (keyed by ``sourceId``)."""
SOURCES_MAX = 10_000
"""Sources one listing returns, at most."""
_PREFIX = b"source/"
GAUGE_SOURCES_MAX = 100
"""Sources given a lag series in Prometheus (the first by id)."""

log = logging.getLogger("seaway.spark")


@dataclass(frozen=True)
class SourceInfo:
    """A Spark source (a query's ``readStream`` of a stream or a log, with a ``sourceId``)."""

    source_id: str
    kind: str
    """``stream`` or ``log``."""
    name: str
    offset: dict[str, Any]
    """The last offset the query committed (after a micro-batch), or where it starts if it has not
    committed one yet (see :attr:`committed`)."""
    committed: bool
    lags: dict[str, int] = field(default_factory=dict)
    """Segment id (``"1.4"``) or log name -> records after :attr:`offset`: what the query has left."""
    lag: int = 0
    """The sum of :attr:`lags`."""

    def to_json(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "kind": self.kind, "name": self.name, "committed": self.committed,
                "offset": self.offset, "lag": self.lag, "lags": self.lags}


def spark_sources(sw: Store, limit: int = 1000) -> list[SourceInfo]:
    """The Spark sources recorded in ``sw`` (those with a ``sourceId``), by id, at most ``limit``;
    each with its lag. One whose stream or log is gone is left out."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= SOURCES_MAX:
        raise InvalidArgumentError(f"limit is in [1, {SOURCES_MAX}], got {limit!r}")
    ids: list[str] = []
    for key, _ in sw.meta.scan(META_NAMESPACE, prefix=_PREFIX, limit=3 * limit):
        source_id = key[len(_PREFIX):].rpartition(b"/")[0].decode()
        if not ids or ids[-1] != source_id:
            ids.append(source_id)
    out = []
    for source_id in ids[:limit]:
        try:
            out.append(spark_source(sw, source_id))
        except (UnknownLogError, UnknownStreamError, UnknownScopeError):  # what it read was deleted
            continue
    return out


def spark_source(sw: Store, source_id: str) -> SourceInfo:
    """One Spark source, by its ``sourceId``, with its lag. :class:`UnknownSparkSourceError` if no
    query recorded that source; :class:`UnknownStreamError` or :class:`UnknownLogError` if what it
    reads is gone."""
    committed = sw.meta.get(META_NAMESPACE, _PREFIX + source_id.encode() + b"/committed")
    found = committed or sw.meta.get(META_NAMESPACE, _PREFIX + source_id.encode() + b"/start")
    if found is None:
        raise UnknownSparkSourceError(f"no Spark source {source_id!r} is recorded (a query with the option "
                                      "sourceId records it)")
    try:
        offset: dict[str, Any] = json.loads(found.value)
        kind = "stream" if "stream" in offset else "log"
        name = str(offset[kind])
        positions = {str(k): int(v) for k, v in offset["positions"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidArgumentError(f"Spark source {source_id!r} recorded an offset that is not one ({exc})") from None
    if kind == "stream":
        stream = sw.streams.get(name)
        counts = stream.events_after(StreamCut(name, {parse_segment(k): v for k, v in positions.items()}))
        lags = {segment_str(segment): count for segment, count in counts.items()}
    else:
        log = sw.logs.get(name)
        counted = sw.logs.count_records({log.id: (positions.get(str(log.id), 1), None)})
        lags = {name: int(counted.get(log.id, 0))}
    return SourceInfo(source_id, kind, name, offset, committed is not None, lags, sum(lags.values()))


class SparkLagCollector(Collector):
    """The gauge ``seaway_spark_source_lag{source}`` of a store, computed when scraped: what a server
    started by ``seaway serve`` serves at /metrics beside its own lag gauges (at most
    :data:`GAUGE_SOURCES_MAX` series)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sources = GaugeMetricFamily("seaway_spark_source_lag", "Events or records after a Spark query's "
                                    "committed offset (by its sourceId).", labels=["source"])
        try:
            for source in spark_sources(self._store, GAUGE_SOURCES_MAX):
                sources.add_metric([source.source_id], source.lag)
        except SeawayError as exc:  # a scrape must not fail: the series collected so far are given
            log.warning("Spark source lag incomplete: %s", exc)
        yield sources
