"""The client's appends: batches queue while calls are in flight, and go out together in the next call.

A batch is sent at once while fewer than ``calls_max`` ``AppendMany`` calls are in flight (one, by
default); the batches that arrive meanwhile wait, and the next call carries all of them (up to a
count and a byte bound). A Kafka producer fills its next produce request the same way. At low rates
nothing waits; at high rates a call carries several batches, so the per-call work of both ends is
shared.

This queue only carries batches: each one ends as its call says (its LSNs, or its error; a call
that fails fails each of its batches). Order and retries are the producer's, in the log layer's
ordered append pipeline (:class:`~seaway.log.OrderedAppends`, docs/ordering.md): the connection's
own producer of each log is one, and so are the writers'. What this queue keeps is that a log's
batches reach the server in the order they were put: a log's batches are in at most one call at a
time (with ``calls_max`` > 1, another call may carry other logs meanwhile), in the order queued.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from seaway.errors import BufferFullError, ClosedError, InvalidArgumentError, SeawayError, ServerError
from seaway.log import ProducerMark
from seaway.wire import error_from_msg, seaway_pb2

pb = seaway_pb2


@dataclass(frozen=True)
class AppendQueueConfig:
    calls_max: int = 1
    """``AppendMany`` calls in flight at once; further batches wait for one of them to finish. One
    by default: whatever queues up meanwhile rides on the next call, and a server costs less per
    batch serving a few large calls than many small concurrent ones (docs/benchmarks.md). A lone
    producer that keeps many batches in flight may go faster with 2 to 4; keep ``calls_max *
    batches_per_call_max`` within the server's appends in flight per connection (64 by default)."""
    batches_per_call_max: int = 32
    """At most this many batches in one call (the server accepts 64 by default)."""
    bytes_per_call_max: int = 8 << 20
    """At most this many payload bytes in one call, unless a single batch is larger."""
    waiting_bytes_max: int = 64 << 20
    """Payload bytes waiting for a call. An append that would go beyond blocks until there is room
    (as a Kafka producer's ``send`` does when its buffer is full), up to the client's timeout."""

    def __post_init__(self) -> None:
        for name in ("calls_max", "batches_per_call_max", "bytes_per_call_max", "waiting_bytes_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True)
class _Queued:
    log_id: int
    payloads: Sequence[bytes]
    mark: ProducerMark
    size: int
    outer: Future[range]
    if_tail: int | None = None


class AppendQueue:
    """Batches waiting to be sent, per log, and the number of calls carrying others."""

    def __init__(self, call: Callable[[pb.AppendManyRequest], Future[Any]], config: AppendQueueConfig) -> None:
        self._call = call
        self._config = config
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting: dict[int, deque[_Queued]] = {}  # per log, in the order they go out
        self._ready: deque[int] = deque()  # logs with batches waiting and not busy, first come first
        self._busy: set[int] = set()  # logs in a call in flight
        self._waiting_bytes = 0
        self._calls = 0
        self._closed = False

    def put(self, log_id: int, payloads: Sequence[bytes], mark: ProducerMark, timeout_s: float,
            if_tail: int | None = None) -> Future[range]:
        """Queue one batch; the future gives its LSNs. Blocks while the queue is full, at most
        ``timeout_s``; then raises :class:`BufferFullError` (this client's bound, not the server's)."""
        size = sum(map(len, payloads))
        outer: Future[range] = Future()
        outer.set_running_or_notify_cancel()  # an append on its way cannot be called back
        calls: list[list[_Queued]] = []
        with self._room:
            # A batch larger than the bound goes alone, once nothing else waits.
            if not self._room.wait_for(lambda: self._closed or not self._waiting_bytes
                                       or self._waiting_bytes + size <= self._config.waiting_bytes_max, timeout_s):
                raise BufferFullError(f"{self._waiting_bytes} bytes of appends have waited for the server "
                                      f"for {timeout_s} s (waiting_bytes_max={self._config.waiting_bytes_max})")
            closed = self._closed
            if not closed:
                self._enqueue(log_id, _Queued(log_id, payloads, mark, size, outer, if_tail))
                calls = self._take()
        if closed:
            outer.set_exception(ClosedError("the client is closed"))
        for batch in calls:
            self._send(batch)
        return outer

    def _enqueue(self, log_id: int, item: _Queued) -> None:
        """Under the lock: queue a log's ``item``, after those waiting."""
        queue = self._waiting.get(log_id)
        if queue is None:
            queue = self._waiting[log_id] = deque()
            if log_id not in self._busy:
                self._ready.append(log_id)
        queue.append(item)
        self._waiting_bytes += item.size

    def _take(self) -> list[list[_Queued]]:
        """The calls to start now (under the lock): as many as free call slots allow, each filled
        from the logs that are ready, in turn; a log goes in one call at most."""
        calls = []
        while self._ready and self._calls < self._config.calls_max:
            batch: list[_Queued] = []
            size = 0
            while self._ready and len(batch) < self._config.batches_per_call_max:
                log_id = self._ready[0]
                queue = self._waiting[log_id]
                if batch and size + queue[0].size > self._config.bytes_per_call_max:
                    break
                self._ready.popleft()
                self._busy.add(log_id)
                while queue and len(batch) < self._config.batches_per_call_max and (
                        not batch or size + queue[0].size <= self._config.bytes_per_call_max):
                    item = queue.popleft()
                    batch.append(item)
                    size += item.size
                if not queue:
                    del self._waiting[log_id]
            calls.append(batch)
            self._calls += 1
            self._waiting_bytes -= size
            self._room.notify_all()
        return calls

    def _send(self, batch: list[_Queued]) -> None:
        try:
            request = pb.AppendManyRequest()
            for item in batch:  # built in place: a message given to the constructor would be copied again
                added = request.batches.add(log_id=item.log_id, payloads=item.payloads,
                                            producer_id=item.mark.producer_id, sequence=item.mark.sequence)
                if item.if_tail is not None:
                    added.if_tail = item.if_tail
            inner = self._call(request)
        except Exception as exc:  # e.g. the channel closed under us: fail these batches, never strand them
            error = (exc if isinstance(exc, SeawayError) else ClosedError("the client is closed") if self._closed
                     else ServerError(f"could not start an append call: {exc!r}"))
            self._finished(batch, error, None)
            return
        inner.add_done_callback(lambda f: self._finished(batch, f.exception(), f))

    def _outcomes(self, batch: list[_Queued], error: BaseException | None,
                  call: Future[Any] | None) -> list[range | BaseException]:
        """What each batch of a finished call got: its LSNs, or its error."""
        if error is None and call is not None:
            reply: pb.AppendManyReply = call.result()
            if len(reply.results) == len(batch):
                return [range(r.appended.first_lsn, r.appended.first_lsn + r.appended.count)
                        if r.HasField("appended") else error_from_msg(r.error) for r in reply.results]
            error = ServerError(f"the server answered {len(reply.results)} results for {len(batch)} batches")
        return [error or ServerError("the call failed without an error")] * len(batch)

    def _finished(self, batch: list[_Queued], error: BaseException | None, call: Future[Any] | None) -> None:
        """A call ended: each batch gets its outcome, its logs may go in the next call."""
        outcomes = self._outcomes(batch, error, call)
        with self._lock:
            self._calls -= 1
            for log_id in {item.log_id for item in batch}:
                self._busy.discard(log_id)
                if log_id in self._waiting:
                    self._ready.append(log_id)
            calls = self._take()
        for send in calls:
            self._send(send)
        for item, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, range):
                item.outer.set_result(outcome)
            else:
                item.outer.set_exception(outcome)

    def close(self) -> None:
        """Fail the batches still waiting; calls in flight fail on their own as the channel closes."""
        with self._lock:
            self._closed = True
            waiting = [item for queue in self._waiting.values() for item in queue]
            self._waiting.clear()
            self._ready.clear()
            self._waiting_bytes = 0
            self._room.notify_all()
        for item in waiting:
            item.outer.set_exception(ClosedError("the client closed before the batch was sent"))
