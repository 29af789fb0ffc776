"""The client's appends: batches queue while calls are in flight, and go out together in the next call.

A batch is sent at once while fewer than ``calls_max`` ``AppendMany`` calls are in flight (one, by
default); the batches that arrive meanwhile wait, and the next call carries all of them (up to a
count and a byte bound). A Kafka producer fills its next produce request the same way. At low rates
nothing waits; at high rates a call carries several batches, so the per-call work of both ends is
shared.

Every batch carries a producer id and sequence number, so a batch that failed retriably (alone, or
with its whole call) is queued again, up to the retry policy, without being stored twice.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from seaway._errors import ClosedError, InvalidArgumentError, OverloadedError, SeawayError, ServerError
from seaway.log import RetryPolicy
from seaway.logsdb import ProducerMark
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
    attempt: int
    if_tail: int | None = None


def _later(delay_s: float, run: Callable[[], None]) -> None:
    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()


class AppendQueue:
    """Batches waiting to be sent, and the number of calls carrying others."""

    def __init__(self, call: Callable[[pb.AppendManyRequest], Future[Any]], retry: RetryPolicy,
                 config: AppendQueueConfig, later: Callable[[float, Callable[[], None]], None] | None = None) -> None:
        self._call = call
        self._retry = retry
        self._later = later or _later
        self._config = config
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting: deque[_Queued] = deque()
        self._waiting_bytes = 0
        self._calls = 0
        self._closed = False

    def put(self, log_id: int, payloads: Sequence[bytes], mark: ProducerMark, timeout_s: float,
            if_tail: int | None = None) -> Future[range]:
        """Queue one batch; the future gives its LSNs. Blocks while the queue is full, at most
        ``timeout_s``; then raises :class:`OverloadedError`."""
        size = sum(map(len, payloads))
        with self._room:
            # A batch larger than the bound goes alone, once nothing else waits.
            if not self._room.wait_for(lambda: self._closed or not self._waiting
                                       or self._waiting_bytes + size <= self._config.waiting_bytes_max, timeout_s):
                raise OverloadedError(f"{self._waiting_bytes} bytes of appends have waited for the server "
                                      f"for {timeout_s} s (waiting_bytes_max={self._config.waiting_bytes_max})")
        outer: Future[range] = Future()
        outer.set_running_or_notify_cancel()  # an append on its way cannot be called back
        self._put(_Queued(log_id, payloads, mark, size, outer, 1, if_tail))
        return outer

    def _put(self, item: _Queued) -> None:
        with self._lock:
            closed = self._closed
            if not closed:
                self._waiting.append(item)
                self._waiting_bytes += item.size
                calls = self._take()
        if closed:
            item.outer.set_exception(ClosedError("the client is closed"))
            return
        for batch in calls:
            self._send(batch)

    def _take(self) -> list[list[_Queued]]:
        """The calls to start now (under the lock): as many as free call slots allow."""
        calls = []
        while self._waiting and self._calls < self._config.calls_max:
            batch = [self._waiting.popleft()]
            size = batch[0].size
            while (self._waiting and len(batch) < self._config.batches_per_call_max
                   and size + self._waiting[0].size <= self._config.bytes_per_call_max):
                item = self._waiting.popleft()
                batch.append(item)
                size += item.size
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

    def _finished(self, batch: list[_Queued], error: BaseException | None, call: Future[Any] | None) -> None:
        with self._lock:
            self._calls -= 1
            calls = self._take()
        for send in calls:
            self._send(send)
        if error is None and call is not None:
            reply: pb.AppendManyReply = call.result()
            if len(reply.results) != len(batch):
                error = ServerError(f"the server answered {len(reply.results)} results for {len(batch)} batches")
            else:
                for item, result in zip(batch, reply.results, strict=True):
                    if result.HasField("appended"):
                        first = result.appended.first_lsn
                        item.outer.set_result(range(first, first + result.appended.count))
                    else:
                        self._failed(item, error_from_msg(result.error))
                return
        for item in batch:
            self._failed(item, error or ServerError("the call failed without an error"))

    def _failed(self, item: _Queued, error: BaseException) -> None:
        if (isinstance(error, SeawayError) and error.retriable and not self._closed
                and item.attempt < self._retry.attempts_max):
            again = replace(item, attempt=item.attempt + 1)
            self._later(self._retry.delay_s(item.attempt), lambda: self._put(again))
        else:
            item.outer.set_exception(error)

    def close(self) -> None:
        """Fail the batches still waiting; calls in flight fail on their own as the channel closes."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = list(self._waiting), deque()
            self._waiting_bytes = 0
            self._room.notify_all()
        for item in waiting:
            item.outer.set_exception(ClosedError("the client closed before the batch was sent"))
