"""Per log, the ordered append pipeline of one connection's plain appends.

The client sends every batch as an idempotent append, so that its retries store it once: each log
gets a producer of its own, an :class:`~seaway.log.OrderedAppends`, which numbers its batches as
they leave the client, retries them in order with the client's retry policy, and replaces its
producer id after a batch that failed for good (docs/ordering.md). The memory is bounded: a
deleted log's producer is forgotten at once, and beyond ``logs_max`` logs the one used least
recently with nothing in flight is forgotten. A log appended to again after that gets a new
producer id, from sequence 0 (never the old id from 0 again: the log would take those batches for
retries of the old ones and store nothing).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from itertools import islice

from seaway.log import OrderedAppends, SendBatch

LOGS_MAX = 65_536
"""Logs whose producers a connection remembers; more are forgotten, least recently used first."""
_EVICTION_SCAN_MAX = 64
"""Producers looked at, oldest first, for one with nothing in flight to forget; if all of them
have batches in flight, the bound is passed for a while rather than an ordering broken."""


def _new_id() -> bytes:
    return uuid.uuid4().bytes


class LogProducers:
    """See the module docstring. Thread-safe."""

    def __init__(self, make: Callable[[int, Callable[[], bytes]], OrderedAppends], logs_max: int = LOGS_MAX,
                 new_id: Callable[[], bytes] = _new_id) -> None:
        self._make = make
        self._logs_max = logs_max
        self._new_id = new_id
        self._lock = threading.RLock()  # put looks up under it
        self._by_log: OrderedDict[int, OrderedAppends] = OrderedDict()  # least recently used first

    def get(self, log_id: int) -> OrderedAppends:
        """The log's producer, made on first use."""
        with self._lock:
            producer = self._by_log.get(log_id)
            if producer is None:
                if len(self._by_log) >= self._logs_max:
                    self._evict()
                producer = self._by_log[log_id] = self._make(log_id, self._new_id)
            else:
                self._by_log.move_to_end(log_id)
            return producer

    def put(self, log_id: int, payloads: Sequence[bytes], *, if_tail: int | None = None) -> Future[range]:
        """Append through the log's producer (as :meth:`OrderedAppends.put`, without waiting for
        room). The batch is queued under this lock: a producer looked up, then forgotten by another
        log's first append before the batch was queued, would leave the log two producers, and the
        new one's batches could be stored before a retry of the old one's."""
        future: Future[range] = Future()
        future.set_running_or_notify_cancel()  # an append on its way cannot be called back

        def settle(lsns: range | None, error: BaseException | None) -> None:
            if error is None:
                future.set_result(lsns)  # type: ignore[arg-type]  # None only with an error
            else:
                future.set_exception(error)

        with self._lock:
            producer = self.get(log_id)
            producer.put_unit(payloads, settle, wait=False, send=False, if_tail=if_tail)
        producer.kick()
        return future

    def forget(self, log_id: int) -> None:
        """The log was deleted."""
        with self._lock:
            self._by_log.pop(log_id, None)

    def __contains__(self, log_id: int) -> bool:
        return log_id in self._by_log

    def __len__(self) -> int:
        return len(self._by_log)

    def close(self) -> None:
        """Fail what waits to be sent (the connection closes)."""
        with self._lock:
            producers = list(self._by_log.values())
        for producer in producers:
            producer.close()

    def _evict(self) -> None:
        """Under the lock: forget the least recently used log with nothing in flight."""
        for log_id, producer in islice(self._by_log.items(), _EVICTION_SCAN_MAX):
            if producer.idle:
                del self._by_log[log_id]
                return


__all__ = ["LOGS_MAX", "LogProducers", "SendBatch"]
