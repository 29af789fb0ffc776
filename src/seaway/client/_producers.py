"""Per log, the producer id and next sequence number of one connection's plain appends.

The client sends every batch as an idempotent append, so that its retries store it once: each log
gets a producer id of its own and consecutive sequence numbers (the log takes a producer's batches
only in order). The memory is bounded: a deleted log's producer is forgotten at once, and beyond
``logs_max`` logs the one used least recently with no batch in flight is forgotten. A log appended
to again after that gets a new producer id, from sequence 0 (never the old id from 0 again: the log
would take those batches for retries of the old ones and store nothing).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

from seaway._values import ProducerMark

LOGS_MAX = 65_536
"""Logs whose producers a connection remembers; more are forgotten, least recently used first."""
_EVICTION_SCAN_MAX = 64
"""Producers looked at, oldest first, for one with no batch in flight to forget; if all of them
have batches in flight, the bound is passed for a while rather than an ordering broken."""


@dataclass(slots=True)
class _Producer:
    producer_id: bytes
    next_sequence: int = 0
    in_flight: int = 0


class ProducerSequences:
    """See the module docstring. Thread-safe."""

    def __init__(self, logs_max: int = LOGS_MAX, new_id: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> None:
        self._logs_max = logs_max
        self._new_id = new_id
        self._lock = threading.Lock()
        self._by_log: OrderedDict[int, _Producer] = OrderedDict()  # least recently used first

    def take(self, log_id: int) -> ProducerMark:
        """The mark of the log's next batch; call :meth:`answered` once it is decided."""
        with self._lock:
            producer = self._by_log.get(log_id)
            if producer is None:
                if len(self._by_log) >= self._logs_max:
                    self._evict()
                producer = self._by_log[log_id] = _Producer(self._new_id())
            else:
                self._by_log.move_to_end(log_id)
            mark = ProducerMark(producer.producer_id, producer.next_sequence)
            producer.next_sequence += 1
            producer.in_flight += 1
            return mark

    def answered(self, log_id: int, mark: ProducerMark) -> None:
        """The batch of ``mark`` (from :meth:`take`) was decided, stored or not."""
        with self._lock:
            producer = self._by_log.get(log_id)
            if producer is not None and producer.producer_id == mark.producer_id:
                producer.in_flight -= 1

    def failed(self, log_id: int, mark: ProducerMark) -> None:
        """A batch of ``mark``'s producer failed for good: the log's next batches go under a new
        producer id (the old id's next batch would wait for ever for the one that failed)."""
        with self._lock:
            producer = self._by_log.get(log_id)
            if producer is not None and producer.producer_id == mark.producer_id:
                self._by_log[log_id] = _Producer(self._new_id())

    def forget(self, log_id: int) -> None:
        """The log was deleted."""
        with self._lock:
            self._by_log.pop(log_id, None)

    def __contains__(self, log_id: int) -> bool:
        return log_id in self._by_log

    def __len__(self) -> int:
        return len(self._by_log)

    def _evict(self) -> None:
        """Under the lock: forget the least recently used log with no batch in flight."""
        for log_id, producer in islice(self._by_log.items(), _EVICTION_SCAN_MAX):
            if producer.in_flight == 0:
                del self._by_log[log_id]
                return
