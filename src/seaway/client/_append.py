"""The client's appends: batches queue while calls are in flight, and go out together in the next call.

A batch is sent at once while fewer than ``calls_max`` ``AppendMany`` calls are in flight (one, by
default); the batches that arrive meanwhile wait, and the next call carries all of them (up to a
count and a byte bound). A Kafka producer fills its next produce request the same way. At low rates
nothing waits; at high rates a call carries several batches, so the per-call work of both ends is
shared.

Every batch carries a producer id and sequence number, so a batch that failed retriably (alone, or
with its whole call) is sent again, up to the retry policy, without being stored twice.

Order per log: a log's batches are in at most one call at a time, in the order they were queued
(with ``calls_max`` > 1, another call may carry other logs meanwhile). While a log's call is in
flight, or a batch of it waits to be retried, its later batches are held back; a retried batch goes
out before them. A batch that fails for good with a retriable error fails the log's batches held
behind it too, unsent, so that none of them is stored before a caller's own retry of it; its
producer's batches ahead of it in the same call that were to be retried fail too, each with its own
(retriable) error, which says that it may have been stored.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from seaway._errors import BufferFullError, ClosedError, InvalidArgumentError, SeawayError, ServerError
from seaway.log import ProducerMark, RetryPolicy
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
    """Batches waiting to be sent, per log, and the number of calls carrying others."""

    def __init__(self, call: Callable[[pb.AppendManyRequest], Future[Any]], retry: RetryPolicy,
                 config: AppendQueueConfig, later: Callable[[float, Callable[[], None]], None] | None = None,
                 failed: Callable[[int, ProducerMark], None] | None = None) -> None:
        self._call = call
        self._failed = failed or (lambda log_id, mark: None)
        self._retry = retry
        self._later = later or _later
        self._config = config
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting: dict[int, deque[_Queued]] = {}  # per log, in the order they go out
        self._ready: deque[int] = deque()  # logs with batches waiting and not busy, first come first
        self._busy: set[int] = set()  # logs in a call in flight, or with a retry scheduled
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
                # The batch's sequence number will never be sent: its producer's next batch would
                # wait for it for ever at the store (docs/ordering.md), so the producer ends here.
                self._failed(log_id, mark)
                raise BufferFullError(f"{self._waiting_bytes} bytes of appends have waited for the server "
                                      f"for {timeout_s} s (waiting_bytes_max={self._config.waiting_bytes_max})")
            closed = self._closed
            if not closed:
                self._enqueue(log_id, [_Queued(log_id, payloads, mark, size, outer, 1, if_tail)], front=False)
                calls = self._take()
        if closed:
            outer.set_exception(ClosedError("the client is closed"))
        for batch in calls:
            self._send(batch)
        return outer

    def _enqueue(self, log_id: int, items: list[_Queued], front: bool) -> None:
        """Under the lock: queue a log's ``items``, after (or before) those waiting."""
        queue = self._waiting.get(log_id)
        if queue is None:
            queue = self._waiting[log_id] = deque()
            if log_id not in self._busy:
                self._ready.append(log_id)
        if front:
            queue.extendleft(reversed(items))
        else:
            queue.extend(items)
        self._waiting_bytes += sum(item.size for item in items)

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
        """A call ended. Per log, in order: the stored are answered, the retriable are retried (the
        log stays busy until then), and one that fails for good fails its producer's batches
        behind it, in the call and waiting (see the module docstring): the store would refuse them
        anyway, since it takes a producer's batches only in order."""
        outcomes = self._outcomes(batch, error, call)
        settle: list[tuple[_Queued, range | BaseException]] = []
        retries: dict[int, list[_Queued]] = {}
        doomed: dict[tuple[int, bytes], BaseException] = {}  # producer -> the error its later batches fail with
        own: dict[int, BaseException] = {}  # id of a batch to retry -> its own error, should it fail now
        ended: set[tuple[int, bytes]] = set()  # producers with a batch failed for good
        with self._lock:
            self._calls -= 1
            for item, outcome in zip(batch, outcomes, strict=True):
                producer = (item.log_id, item.mark.producer_id)
                if isinstance(outcome, range):
                    settle.append((item, outcome))
                elif producer in doomed:
                    settle.append((item, doomed[producer]))
                elif (isinstance(outcome, SeawayError) and outcome.retriable and not self._closed
                      and item.attempt < self._retry.attempts_max):
                    again = replace(item, attempt=item.attempt + 1)
                    own[id(again)] = outcome
                    retries.setdefault(item.log_id, []).append(again)
                else:
                    settle.append((item, outcome))
                    ended.add(producer)
                    if not isinstance(outcome, InvalidArgumentError):
                        # Failed for good and not stored: the producer's batches behind it cannot be
                        # stored before it. (A batch refused as a mistake, say a sequence reused for
                        # a batch of another size, leaves them: a true retry of the stored batch may
                        # follow.)
                        doomed[producer] = outcome
                    # The producer's batches ahead of it that were to be retried fail too (the caller's
                    # own retry must not be overtaken by them), each with its own error: the later
                    # batch's (LogSealedError, say) would tell of one whose reply was lost that it
                    # was not stored.
                    log_retries = retries.get(item.log_id, [])
                    settle.extend((ahead, own[id(ahead)]) for ahead in log_retries
                                  if ahead.mark.producer_id == item.mark.producer_id)
                    if log_retries:
                        retries[item.log_id] = [b for b in log_retries if b.mark.producer_id != item.mark.producer_id]
                        if not retries[item.log_id]:
                            del retries[item.log_id]
            for (log_id, producer_id), failure in doomed.items():
                queue = self._waiting.get(log_id)
                if queue:
                    behind = [item for item in queue if item.mark.producer_id == producer_id]
                    if behind:
                        kept = deque(item for item in queue if item.mark.producer_id != producer_id)
                        if kept:
                            self._waiting[log_id] = kept
                        else:
                            del self._waiting[log_id]
                            self._ready = deque(i for i in self._ready if i != log_id)
                        self._waiting_bytes -= sum(item.size for item in behind)
                        settle.extend((item, failure) for item in behind)
                        self._room.notify_all()
            for log_id in {item.log_id for item in batch}:
                if log_id not in retries:
                    self._busy.discard(log_id)
                    if log_id in self._waiting:
                        self._ready.append(log_id)
            calls = self._take()
        for send in calls:
            self._send(send)
        for log_id, items in retries.items():
            delay_s = self._retry.delay_s(max(item.attempt for item in items) - 1)
            self._later(delay_s, lambda log_id=log_id, items=items: self._retry_now(log_id, items))  # type: ignore[misc]
        for log_id, producer_id in ended:
            self._failed(log_id, ProducerMark(producer_id, 0))
        for item, outcome in settle:
            if isinstance(outcome, range):
                item.outer.set_result(outcome)
            else:
                item.outer.set_exception(outcome)

    def _retry_now(self, log_id: int, items: list[_Queued]) -> None:
        """The log's retried batches go out first, then those that waited behind them."""
        calls: list[list[_Queued]] = []
        with self._lock:
            closed = self._closed
            self._busy.discard(log_id)
            if not closed:
                self._ready = deque(i for i in self._ready if i != log_id)  # rare: a retry, once per call
                self._enqueue(log_id, items, front=True)
                if log_id not in self._ready:
                    self._ready.append(log_id)
                calls = self._take()
        for send in calls:
            self._send(send)
        if closed:
            for item in items:
                item.outer.set_exception(ClosedError("the client closed before the batch was sent again"))

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
