"""A writer that gathers single records into batches (LogDevice's BufferedWriter).

A batch is sent when it holds ``flush_records_max`` records or ``flush_bytes_max`` bytes, or when its
first record has waited ``flush_interval_s``. Up to ``in_flight_batches_max`` batches are in flight;
batches that became ready while that many were go out joined, as one.
A batch that fails with a retriable error is sent again, with backoff, up to the retry policy's
limit; each batch carries its own sequence number, kept across its retries, so an idempotent append
function stores a retried batch once.

In ``ordered`` mode (the default) a batch that failed is stored before every batch written after it:
once one fails, no new batch is sent until every failed batch has been stored (or given up), and
failed batches are sent again in the order they were written. The store keeps this order too: it
takes a producer's batches only in the order of their sequence numbers (see
:mod:`seaway.log._order`), so a batch sent after one that failed is refused until that one is
stored. A batch that fails for good ends its producer: the batches in flight behind it fail, and
the next ones go out under a new producer id (``new_producer``), numbered from 0.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from seaway._errors import (
    BufferFullError,
    ClosedError,
    InvalidArgumentError,
    PayloadTooLargeError,
    SeawayError,
    TimedOutError,
)
from seaway._invariant import invariant
from seaway.log._futures import BatchFutures


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a retriable failure."""

    attempts_max: int = 5
    backoff_s: float = 0.05
    backoff_max_s: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts_max < 1 or self.backoff_s < 0 or self.backoff_max_s < self.backoff_s:
            raise InvalidArgumentError("retry policy needs attempts_max >= 1 and 0 <= backoff_s <= backoff_max_s")

    def delay_s(self, attempt: int) -> float:
        """The wait before attempt number ``attempt + 1`` (``attempt`` >= 1)."""
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1)))


JOINED_RECORDS_MAX = 10_000
"""Batches ready at once are sent as one of at most this many records (a single batch may be larger)."""
JOINED_BYTES_MAX = 4 << 20
"""... and at most this many payload bytes."""


@dataclass(slots=True, eq=False)
class _Batch:
    payloads: list[bytes] = field(default_factory=list)
    futures: BatchFutures[int] = field(default_factory=BatchFutures)
    joined: list[BatchFutures[int]] = field(default_factory=list)
    """The futures of the batches joined to this one, in order (see :meth:`BatchingWriter._join`)."""
    size_bytes: int = 0
    started_s: float = 0.0
    attempts: int = 0
    sequence: int = 0
    producer: int = 0
    """Which of the writer's producers (a new one after each batch that failed for good) numbered it."""
    retry_at_s: float | None = None
    sent: bool = False
    failed: bool = False
    """Failed at least once and not yet stored or given up."""


AppendBatch = Callable[[list[bytes], int], "Future[range]"]
"""Appends a batch of payloads with its sequence number (the same on every retry of the batch)."""


class BatchingWriter:
    """Gathers records into batches and appends them; see the module docstring."""

    def __init__(self, append_batch: AppendBatch, *, flush_records_max: int = 500,
                 flush_bytes_max: int = 1 << 20, flush_interval_s: float = 0.05, ordered: bool = True,
                 retry: RetryPolicy | None = None, in_flight_batches_max: int = 8,
                 payload_bytes_max: int = 1 << 20, buffered_bytes_max: int = 64 << 20,
                 room_wait_s: float = 30.0, new_producer: Callable[[], None] | None = None) -> None:
        if flush_records_max < 1 or flush_bytes_max < 1 or flush_interval_s <= 0 or in_flight_batches_max < 1:
            raise InvalidArgumentError("flush limits, interval and in-flight batches must be positive")
        if not room_wait_s >= 0:
            raise InvalidArgumentError(f"room_wait_s must be >= 0, got {room_wait_s!r}")
        self._append_batch = append_batch
        self._new_producer = new_producer
        self._records_max = flush_records_max
        self._bytes_max = flush_bytes_max
        self._interval_s = flush_interval_s
        self._retry = retry or RetryPolicy()
        self._ordered = ordered
        self._in_flight_max = in_flight_batches_max
        self._payload_bytes_max = payload_bytes_max
        self._buffered_bytes_max = buffered_bytes_max
        self._room_wait_s = room_wait_s
        self._buffered_bytes = 0
        self._cv = threading.Condition()
        self._current = _Batch()
        self._ready: deque[_Batch] = deque()
        self._in_flight: list[_Batch] = []  # in sequence order
        self._failed = 0  # batches in flight that failed and are not yet stored (ordered mode waits)
        self._next_sequence = 0
        self._producer = 0
        self._sending = False  # a thread is sending batches; the others leave it to that one
        self._idle_forever = False  # the sending thread waits with no deadline: a new batch must wake it
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="seaway-batching-writer", daemon=True)
        self._thread.start()

    def write(self, payload: bytes) -> Future[int]:
        """Queue one record; the future gives its LSN once its batch is stored.

        Blocks while ``buffered_bytes_max`` bytes are waiting (back-pressure), at most
        ``room_wait_s``; then raises :class:`BufferFullError` and queues nothing.
        """
        if type(payload) is not bytes:
            raise InvalidArgumentError(f"a payload must be bytes, got {type(payload).__name__}")
        size = len(payload)
        if size > self._payload_bytes_max:
            raise PayloadTooLargeError(f"payload of {size} bytes exceeds {self._payload_bytes_max}")
        with self._cv:
            if self._buffered_bytes >= self._buffered_bytes_max or self._closing:
                self._wait_room()
            batch = self._current
            if not batch.payloads:
                batch.started_s = time.monotonic()
                if self._idle_forever:  # else it wakes by then anyway, and times this batch
                    self._cv.notify_all()
            future = batch.futures.new()
            batch.payloads.append(payload)
            batch.size_bytes += size
            self._buffered_bytes += size
            if len(batch.payloads) < self._records_max and batch.size_bytes < self._bytes_max:
                return future
            self._seal_current()
            due = [] if self._sending else self._due_batches()
            if not due:
                return future
            self._sending = True
        self._send_all(due)  # from this thread: waking the sending thread costs a GIL hand-over
        return future

    def _wait_room(self) -> None:
        if not self._cv.wait_for(lambda: self._buffered_bytes < self._buffered_bytes_max or self._closing,
                                 self._room_wait_s):
            raise BufferFullError(f"{self._buffered_bytes} bytes have waited in the writer for {self._room_wait_s} s "
                                  f"(buffered_bytes_max={self._buffered_bytes_max})")
        if self._closing:
            raise ClosedError("the writer is closed")

    def _seal_current(self) -> None:
        if self._current.payloads:
            self._ready.append(self._current)
            self._current = _Batch()

    def flush(self, timeout_s: float | None = None) -> None:
        """Send what is gathered now and wait until every batch written so far is settled; raises
        :class:`TimedOutError` if that takes longer than ``timeout_s`` (the batches go on)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cv:
            self._seal_current()
            self._cv.notify_all()
            while self._ready or self._in_flight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimedOutError(f"the writer's batches were not all stored within {timeout_s} s; "
                                        "they are still being sent")
                self._cv.wait(remaining)

    def close(self) -> None:
        """Flush, then stop. Idempotent."""
        with self._cv:
            if self._closing:
                return
        self.flush()
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        self._thread.join()

    def __enter__(self) -> BatchingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the sending thread ---------------------------------------------------------------------

    def _run(self) -> None:
        """Sends what falls due by time (a batch's flush interval, a retry's backoff); what falls
        due by a write or an answer is sent by that thread, without waking this one."""
        while True:
            with self._cv:
                due = [] if self._sending else self._due_batches()
                if not due:
                    if self._closing and not self._ready and not self._in_flight:
                        return
                    wait_s = self._wait_s()
                    self._idle_forever = wait_s is None
                    self._cv.wait(wait_s)
                    self._idle_forever = False
                    continue
                self._sending = True
            self._send_all(due)

    def _send_all(self, due: list[_Batch]) -> None:
        """Send ``due``, then what fell due meanwhile; only one thread at a time (the one that set
        ``_sending``), so batches go out in sequence order."""
        while due:
            for batch in due:
                self._send(batch)
            with self._cv:
                due = self._due_batches()
                if not due:
                    self._sending = False

    def _due_batches(self) -> list[_Batch]:
        """Under the lock: the batches to send now, in sequence order."""
        now = time.monotonic()
        if self._current.payloads and now - self._current.started_s >= self._interval_s:
            self._seal_current()
        if self._ordered and self._failed:
            # Nothing new goes out while a failed batch is not stored. The failed go out again in
            # order, once every batch in flight has been answered: those sent after a failed one
            # fail with it (see the module docstring), and must not overtake it now.
            if any(b.sent for b in self._in_flight):
                return []
            due = []
            for batch in self._in_flight:
                if batch.retry_at_s is None or batch.retry_at_s > now:
                    break
                due.append(batch)
        else:
            due = [b for b in self._in_flight if not b.sent and b.retry_at_s is not None and b.retry_at_s <= now]
            while self._ready and len(self._in_flight) < self._in_flight_max:
                batch = self._join(self._ready.popleft())
                # Numbered as it goes out, joined or not: the store takes a producer's batches only
                # in the order of their numbers, with none missing.
                batch.sequence = self._next_sequence
                batch.producer = self._producer
                self._next_sequence += 1
                self._in_flight.append(batch)
                due.append(batch)
        for batch in due:
            batch.sent = True
            batch.retry_at_s = None
            batch.attempts += 1
        return due

    def _join(self, batch: _Batch) -> _Batch:
        """Under the lock: ``batch`` with the batches ready behind it joined to it, up to a bound.
        They queued because the batches in flight were at their bound: sent one by one they would
        each pay a batch's cost; together they cost one. The joined batch gets one sequence number,
        and is retried whole."""
        while (self._ready and len(batch.payloads) + len(self._ready[0].payloads) <= JOINED_RECORDS_MAX
               and batch.size_bytes + self._ready[0].size_bytes <= JOINED_BYTES_MAX):
            behind = self._ready.popleft()
            batch.payloads.extend(behind.payloads)
            batch.size_bytes += behind.size_bytes
            batch.joined.append(behind.futures)
        return batch

    def _wait_s(self) -> float | None:
        times = [b.retry_at_s for b in self._in_flight if b.retry_at_s is not None]
        if self._current.payloads:
            times.append(self._current.started_s + self._interval_s)
        if not times:
            return None
        return max(0.0005, min(times) - time.monotonic())

    def _send(self, batch: _Batch) -> None:
        try:
            future = self._append_batch(batch.payloads, batch.sequence)
        except Exception as exc:  # fail this batch's writes; the sending thread must live on
            self._settle(batch, None, exc)
            return
        future.add_done_callback(lambda f: self._on_done(batch, f))

    def _on_done(self, batch: _Batch, future: Future[range]) -> None:
        error = future.exception()
        self._settle(batch, future.result() if error is None else None, error)

    def _settle(self, batch: _Batch, lsns: range | None, error: BaseException | None) -> None:
        with self._cv:
            batch.sent = False
            if (isinstance(error, SeawayError) and error.retriable and batch.attempts < self._retry.attempts_max
                    and not self._closing and batch.producer == self._producer):
                batch.retry_at_s = time.monotonic() + self._retry.delay_s(batch.attempts)
                if not batch.failed:
                    batch.failed = True
                    self._failed += 1
                self._cv.notify_all()
                return
            if batch.failed:
                self._failed -= 1
            if error is not None and self._new_producer is not None and batch.producer == self._producer:
                # Failed for good: the store would take none of this producer's later batches
                # (they must follow this one). Those in flight fail rather than retry; the batches
                # sent from now on are a new producer's, numbered from 0.
                self._new_producer()
                self._producer += 1
                self._next_sequence = 0
            self._in_flight.remove(batch)
            self._buffered_bytes -= batch.size_bytes
            self._cv.notify_all()
            due = [] if self._sending else self._due_batches()
            if due:
                self._sending = True
        if due:
            self._send_all(due)
        invariant(lsns is None or len(lsns) == len(batch.payloads), "a batch gets an LSN per record")
        first = 0
        for futures in (batch.futures, *batch.joined):
            count = len(futures.futures)
            futures.settle(None if lsns is None else list(lsns[first:first + count]), error)
            first += count
