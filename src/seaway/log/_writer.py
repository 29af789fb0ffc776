"""A writer that gathers single records into batches (LogDevice's BufferedWriter).

A batch is sent when it holds ``flush_records_max`` records or ``flush_bytes_max`` bytes, or when its
first record has waited ``flush_interval_s``. The batches go through one
:class:`~seaway.log.OrderedAppends`, which keeps the ordering contract of docs/ordering.md: up to
``in_flight_batches_max`` batches in flight, batches that became ready while that many were go out
joined as one, each numbered (producer id, sequence) as it goes out; a batch that fails with a
retriable error is sent again with the same number, before anything sent after it, up to the retry
policy's limit, so the store keeps it once and in order. A batch that fails for good fails the
writer's batches behind it that are not in flight, and the next ones go out under a new producer id
(``new_producer``), numbered from 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import cast

from seaway._values import ProducerMark
from seaway.errors import ClosedError, InvalidArgumentError, PayloadTooLargeError
from seaway.log._futures import BatchFutures
from seaway.log._pipeline import (
    OrderedAppends,
    PipelineConfig,
    RetryPolicy,
)

JOINED_RECORDS_MAX = 10_000
"""Batches ready at once are sent as one of at most this many records (a single batch may be larger)."""
JOINED_BYTES_MAX = 4 << 20
"""... and at most this many payload bytes."""

__all__ = ["JOINED_BYTES_MAX", "JOINED_RECORDS_MAX", "AppendBatch", "BatchingWriter", "RetryPolicy"]


@dataclass(slots=True, eq=False)
class _Gathered:
    payloads: list[bytes] = field(default_factory=list)
    futures: BatchFutures[int] = field(default_factory=BatchFutures)
    size_bytes: int = 0
    started_s: float = 0.0

    def settle(self, lsns: range | None, error: BaseException | None) -> None:
        self.futures.settle(None if lsns is None else list(lsns), error)


AppendBatch = Callable[[list[bytes], int], "Future[range]"]
"""Appends a batch of payloads with its sequence number (the same on every retry of the batch)."""


class BatchingWriter:
    """Gathers records into batches and appends them; see the module docstring."""

    def __init__(self, append_batch: AppendBatch, *, flush_records_max: int = 500,
                 flush_bytes_max: int = 1 << 20, flush_interval_s: float = 0.05,
                 retry: RetryPolicy | None = None, in_flight_batches_max: int = 8,
                 payload_bytes_max: int = 1 << 20, buffered_bytes_max: int = 64 << 20,
                 room_wait_s: float = 30.0, new_producer: Callable[[], None] | None = None) -> None:
        if flush_records_max < 1 or flush_bytes_max < 1 or flush_interval_s <= 0 or in_flight_batches_max < 1:
            raise InvalidArgumentError("flush limits, interval and in-flight batches must be positive")
        if not room_wait_s >= 0:
            raise InvalidArgumentError(f"room_wait_s must be >= 0, got {room_wait_s!r}")
        self._records_max = flush_records_max
        self._bytes_max = flush_bytes_max
        self._interval_s = flush_interval_s
        self._payload_bytes_max = payload_bytes_max
        self._buffered_bytes_max = buffered_bytes_max
        self._room_wait_s = room_wait_s
        producers = [0]

        def next_producer() -> bytes:  # the caller's append names the producer; tell it of a new one
            producers[0] += 1
            if producers[0] > 1 and new_producer is not None:
                new_producer()
            return producers[0].to_bytes(8, "big")

        def send(payloads: Sequence[bytes], mark: ProducerMark, _if_tail: int | None) -> Future[range]:
            return append_batch(cast(list[bytes], payloads), mark.sequence)  # the writer's lists, joined or not

        self._appends = OrderedAppends(send, PipelineConfig(
            batches_in_flight_max=in_flight_batches_max, join_records_max=JOINED_RECORDS_MAX,
            join_bytes_max=JOINED_BYTES_MAX, held_bytes_max=buffered_bytes_max, room_wait_s=room_wait_s,
            retry=retry or RetryPolicy()), new_producer=next_producer)
        self._cv = threading.Condition()
        self._current = _Gathered()
        self._idle_forever = False  # the thread waits with no deadline: a new batch must wake it
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
        if self._closing:
            raise ClosedError("the writer is closed")
        gathered = self._current.size_bytes + size
        if self._appends.held_bytes + gathered > self._buffered_bytes_max:
            self._appends.wait_room(gathered, self._room_wait_s)
        with self._cv:
            if self._closing:
                raise ClosedError("the writer is closed")
            batch = self._current
            if not batch.payloads:
                batch.started_s = time.monotonic()
                if self._idle_forever:  # else it wakes by then anyway, and times this batch
                    self._cv.notify_all()
            future = batch.futures.new()
            batch.payloads.append(payload)
            batch.size_bytes += size
            if len(batch.payloads) < self._records_max and batch.size_bytes < self._bytes_max:
                return future
            self._seal_current()
        self._appends.kick()  # from this thread: waking another costs a GIL hand-over
        return future

    def _seal_current(self) -> None:
        """Under the lock: hand the gathered batch to the appends (in the order of sealing)."""
        batch = self._current
        if batch.payloads:
            self._current = _Gathered()
            self._appends.put_unit(batch.payloads, batch.settle, size=batch.size_bytes, wait=False, send=False)

    def flush(self, timeout_s: float | None = None) -> None:
        """Send what is gathered now and wait until every batch written so far is settled; raises
        :class:`TimedOutError` if that takes longer than ``timeout_s`` (the batches go on)."""
        with self._cv:
            self._seal_current()
        self._appends.kick()
        self._appends.flush(timeout_s)

    def close(self) -> None:
        """Flush, then stop. Idempotent."""
        with self._cv:  # closing first: a write once flush has sealed would never be sent
            again, self._closing = self._closing, True
            self._cv.notify_all()
        self.flush()  # a second close too returns once what was written is settled
        if again:
            return
        self._thread.join()
        self._appends.close()

    def __enter__(self) -> BatchingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        """Sends a batch whose first record has waited ``flush_interval_s``; what falls due by a
        write is sent by that thread, and retries by the appends' own timer."""
        while True:
            with self._cv:
                if self._closing:
                    return
                batch = self._current
                if not batch.payloads:
                    self._idle_forever = True
                    self._cv.wait()
                    self._idle_forever = False
                    continue
                wait_s = batch.started_s + self._interval_s - time.monotonic()
                if wait_s > 0:
                    self._cv.wait(wait_s)
                    continue
                self._seal_current()
            self._appends.kick()
