"""Lag gauges for Prometheus, computed when /metrics is scraped: reader groups (events), consumer
groups (entries, in all and per partition) and notification plugins (ledger entries).

Cardinality is bounded: at most :data:`GROUPS_MAX` reader groups and consumer groups each (the first
by name) and :data:`PARTITION_SERIES_MAX` partition series in all; a scrape costs what ``describe``
costs for each of them (metadata reads and one record count per group, no data read)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from seaway.errors import SeawayError

GROUPS_MAX = 100
"""Reader groups, and consumer groups, given a lag series (the first by name)."""
PARTITION_SERIES_MAX = 1_000
"""Consumer-group partition series in all."""

log = logging.getLogger("seaway.server")


class LagCollector(Collector):
    """The lag gauges of a store (its ``streams``, ``queues`` and ``notify``)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        readers = GaugeMetricFamily("seaway_reader_group_lag", "Events a reader group has left to read.",
                                    labels=["group"])
        groups = GaugeMetricFamily("seaway_consumer_group_lag", "Committed entries a consumer group has not "
                                   "acknowledged.", labels=["queue", "group"])
        partitions = GaugeMetricFamily("seaway_consumer_group_partition_lag",
                                       "Committed entries of a queue partition not acknowledged.",
                                       labels=["queue", "group", "generation", "partition"])
        plugins = GaugeMetricFamily("seaway_notify_lag", "Ledger entries written after a plugin's position.",
                                    labels=["plugin"])
        try:
            self._collect(readers, groups, partitions, plugins)
        except SeawayError as exc:  # a scrape must not fail: the gauges collected so far are given
            log.warning("lag metrics incomplete: %s", exc)
        yield from (readers, groups, partitions, plugins)

    def _collect(self, readers: GaugeMetricFamily, groups: GaugeMetricFamily, partitions: GaugeMetricFamily,
                 plugins: GaugeMetricFamily) -> None:
        store = self._store
        for name in store.streams.list_reader_groups(GROUPS_MAX):
            readers.add_metric([name], store.streams.reader_group(name).describe().lag)
        series = counted = 0
        for queue in store.queues.list():
            for group in store.queues.groups(queue):
                if counted == GROUPS_MAX:
                    break
                counted += 1
                info = store.queues.describe_group(queue, group)
                groups.add_metric([queue, group], info.lag)
                for p in info.partitions:
                    if series < PARTITION_SERIES_MAX:
                        series += 1
                        partitions.add_metric([queue, group, str(p.generation), str(p.partition)], p.lag)
        notify = getattr(store, "notify", None)
        if notify is not None:
            for status in notify.status():
                if status.lag is not None:
                    plugins.add_metric([status.name], status.lag)
