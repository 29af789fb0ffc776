"""The server's Prometheus metrics, in a registry of its own (one per server, so tests can run many)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("seaway_requests_total", "Requests received, by method.", ["method"], registry=r)
        self.errors = Counter("seaway_errors_total", "Requests that failed, by method and error code.",
                              ["method", "code"], registry=r)
        self.appended_records = Counter("seaway_appended_records_total", "Records appended.", registry=r)
        self.appended_bytes = Counter("seaway_appended_bytes_total", "Payload bytes appended.", registry=r)
        self.read_records = Counter("seaway_read_records_total", "Records sent to readers.", registry=r)
        self.append_seconds = Histogram(
            "seaway_append_seconds", "Time from receiving an append to its acknowledgement.", registry=r,
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0))
        self.undecodable_requests = Counter(
            "seaway_undecodable_requests_total", "Requests refused before any handler: not a valid message.",
            registry=r)
        self.undecodable_metadata = Counter(
            "seaway_undecodable_metadata_total",
            "Request metadata keys or values that were not valid UTF-8 (decoded as Latin-1).", registry=r)
        self.unauthenticated_requests = Counter(
            "seaway_unauthenticated_requests_total", "Requests refused for a missing or wrong token.", registry=r)
        self.open_readers = Gauge("seaway_open_readers", "Streaming reads in progress.", registry=r)
        self.ledger_head_index = Gauge("seaway_ledger_head_index",
                                       "The change ledger's last index written (0: none ever).", registry=r)
        self.ledger_tail_index = Gauge("seaway_ledger_tail_index",
                                       "The change ledger's first index kept (head + 1 when none is).", registry=r)

    def watch_ledger(self, bounds: Callable[[], tuple[int, int]]) -> None:
        """Read the ledger's gauges from ``bounds`` (``(tail, head)``, read from memory) when scraped."""
        self.ledger_tail_index.set_function(lambda: bounds()[0])
        self.ledger_head_index.set_function(lambda: bounds()[1])

    def watch_syncs(self, syncs: Callable[[], int]) -> None:
        """Count the store's write-ahead log syncs (``syncs()``, read from memory) when scraped."""
        self.registry.register(_SyncCounter(syncs))


class _SyncCounter(Collector):
    def __init__(self, syncs: Callable[[], int]) -> None:
        self._syncs = syncs

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily("seaway_disk_syncs", "Syncs of the write-ahead log (each covers every write "
                                  "stored before it: concurrent commits and appends share them).",
                                  value=self._syncs())
