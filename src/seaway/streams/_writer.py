"""Event writers: events appended to a stream's segments, in order per routing key, across scalings.

A writer keeps its own view of the stream's segments: a partition of the key space ``[0, 1)``
into routes, each to one segment. An event goes to the segment of its key's position (or, without
a key, of a position spread by :class:`~seaway.streams._routing.Spreader`). Each segment has a
queue of the writer's writes (``write`` and ``write_batch`` calls) for it, in the order they were
made.

Each segment's queue is an ordered append pipeline of the segment's log
(:class:`~seaway.log.OrderedAppends`, the one every producer of Seaway uses: docs/ordering.md). It
joins writes into idempotent appends, named by a producer id of the writer's and a sequence number
per segment log, so that sending one again (after an answer that was lost) stores it once. While
fewer than ``appends_in_flight_max`` appends of a segment are in flight, a write is sent at once,
alone; the writes made meanwhile wait, and go out joined into one append (bounded by
``append_events_max`` and ``append_bytes_max``; a write is never split). At high rates each append
carries what arrived during the previous ones, so that the per-append work (sequencing, a disk
sync, a round trip, an entry to read back) is shared by many writes. Each write's future gives its
own slice of the append's LSNs.

When an append fails:

- with a retriable error: it is sent again, with the same sequence number, before anything sent
  after it (those go again after it), up to ``retries_max`` times; then it fails, with the writes
  of the segment behind it that are not in flight, and the segment's next appends go out under a
  new producer id.
- sealed (a scaling happened): nothing new goes to the segment; the appends waiting to be sent
  again still are (one whose answer was lost may be stored, and a sealed log answers a retry of
  what it stored). Once every append of the segment is answered, the segment's log hands back the
  writes it did not store, in order, and the writer's thread reads the stream's current segments,
  replaces the sealed segment's routes by its successors' ranges within them, and sends those
  writes (then the ones made meanwhile) to the successors in their original order, each to the
  successor of its key's position, before anything new for that range (which routes there only
  from then on). So a key's events stay in order across any number of scalings.
- a sealed stream: the writes fail with :class:`StreamSealedError`, and so does every later write.

Transactions. On a stream created ``transactional``, a write may be made in a transaction
(``write(event, key, txn=tx)``): its events are stored at once, framed with the transaction's write
pointer (see :mod:`seaway.streams._framing`), and readers deliver them only once the transaction
committed. Before a transaction's write is sent to a segment, that segment's log is registered
with the transaction (so that the manager knows where an aborted transaction's data lies): at its
first write through the writer, every segment's log the writer routes to, in one call; a rerouted
write is registered with its successor's log before it is sent there. The writer hooks
each transaction it writes in: its commit first waits until every write the transaction made
through this writer is stored, and fails (so the transaction aborts) if one of them failed.

Routing keys. On a framed stream (created ``transactional`` or ``store_routing_keys``), every event
of a write with a routing key is stored with that key in its header, for readers to see; one
header is made per write and shared by its events.
"""

from __future__ import annotations

import contextlib
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seaway._invariant import invariant
from seaway.errors import (
    BufferFullError,
    ClosedError,
    InvalidArgumentError,
    LogDeletedError,
    LogSealedError,
    PayloadTooLargeError,
    SeawayError,
    StreamSealedError,
    TimedOutError,
    TransactionTimedOutError,
    UnavailableError,
    UnknownLogError,
    UnknownStreamError,
)
from seaway.log import BATCH_RECORDS_MAX, LogsApi, OrderedAppends, PipelineConfig, ProducerMark, RetryPolicy, SegmentLog
from seaway.streams._framing import header
from seaway.streams._names import segment_str
from seaway.streams._records import Segment
from seaway.streams._routing import Spreader, key_position

if TYPE_CHECKING:
    from seaway.streams._streams import Stream
    from seaway.txn import Transaction

WRITER_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,40}")
_GONE = (LogSealedError, LogDeletedError, UnknownLogError)
"""Failures that mean the segment takes no more appends: look for its successors."""
APPENDS_IN_FLIGHT_LIMIT = 64
"""The most appends of a segment a writer may keep in flight: half the store's default
``producer_window``, so that every append that may be sent again is remembered."""
REGISTER_ATTEMPTS_MAX = 100
"""Times a transaction's write registers a segment's log and finds it rerouted meanwhile."""
APPEND_BYTES_LIMIT = 32 << 20
"""The largest ``append_bytes_max``: half the store's default ``entry_bytes_max``."""


@dataclass(frozen=True)
class WriterConfig:
    """Bounds and timings of an :class:`EventWriter`."""

    event_bytes_max: int = 1 << 20
    """The largest event; a larger one fails with :class:`PayloadTooLargeError` before it is
    sent. Segment logs take records up to their ``payload_bytes_max`` (1 MiB by default). On a
    framed stream (transactional, or storing routing keys) the record's header counts too: 1 byte,
    8 more in a transaction, 2 more and the key's bytes with a routing key."""
    batch_events_max: int = 10_000
    """Events of one ``write_batch`` at most."""
    events_in_flight_max: int = 100_000
    """Events written and not yet answered; a write beyond it blocks, then fails."""
    bytes_in_flight_max: int = 16 << 20
    """Event bytes written and not yet answered; a write beyond it blocks, then fails."""
    batches_in_flight_max: int = 100
    """Writes (``write`` and ``write_batch`` calls) made and not yet answered; one beyond it
    blocks, then fails."""
    appends_in_flight_max: int = 2
    """Appends of one segment sent and not yet answered; writes made meanwhile wait and are joined.
    At most ``APPENDS_IN_FLIGHT_LIMIT``, well below the store's ``producer_window`` (128), so that
    an append sent again is still remembered by the log and stored once. Two keep a segment's disk
    pipeline busy (one append applied while another syncs) and join the most: measured with
    ``seaway bench stream`` (medians of 7 runs on 2 cores), 2, 4 and 8 wrote 1 segment equally
    fast (1.0x the log path, embedded and remote), and 2 wrote 64 segments fastest (0.80x
    embedded, against 0.71x with 4 and 0.65x with 8), as fewer, larger appends share the syncs."""
    append_events_max: int = 10_000
    """Events joined into one append at most (a larger ``write_batch`` goes alone). At most the
    log layer's ``BATCH_RECORDS_MAX``."""
    append_bytes_max: int = 4 << 20
    """Event bytes joined into one append at most (a larger ``write_batch`` goes alone): one stored
    entry, well below the store's ``entry_bytes_max`` and the server's ``request_bytes_max`` (64 MiB
    each, by default)."""
    room_wait_s: float = 30.0
    """How long a write blocks for room before it raises :class:`BufferFullError`."""
    retries_max: int = 8
    """Times a segment's failed batches are sent again after retriable errors, before they fail."""
    retry_backoff_s: float = 0.05
    """Wait before sending again after a retriable error, or before reading the segments again."""
    successors_wait_s: float = 30.0
    """How long a sealed segment's successors are looked for before its batches fail."""

    def __post_init__(self) -> None:
        for name in ("event_bytes_max", "batch_events_max", "events_in_flight_max", "bytes_in_flight_max",
                     "batches_in_flight_max", "appends_in_flight_max", "append_events_max", "append_bytes_max",
                     "retries_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
        if self.appends_in_flight_max > APPENDS_IN_FLIGHT_LIMIT:
            raise InvalidArgumentError(f"appends_in_flight_max must be at most {APPENDS_IN_FLIGHT_LIMIT}, "
                                       f"got {self.appends_in_flight_max}")
        if self.append_events_max > BATCH_RECORDS_MAX:
            raise InvalidArgumentError(f"append_events_max must be at most {BATCH_RECORDS_MAX}, "
                                       f"got {self.append_events_max}")
        if self.append_bytes_max > APPEND_BYTES_LIMIT:
            raise InvalidArgumentError(f"append_bytes_max must be at most {APPEND_BYTES_LIMIT}, "
                                       f"got {self.append_bytes_max}")
        for name in ("room_wait_s", "retry_backoff_s", "successors_wait_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 86_400:
                raise InvalidArgumentError(f"{name} must be a number of seconds in [0, 86400), got {value!r}")


@dataclass(frozen=True)
class WriteAck:
    """Where a write's events were stored: the segment and their LSNs in its log."""

    segment: int
    lsns: range

    @property
    def lsn(self) -> int:
        """The first event's LSN."""
        return self.lsns[0]

    def __str__(self) -> str:
        return f"{segment_str(self.segment)}@{self.lsns[0]}..{self.lsns[-1]}"


@dataclass(eq=False)
class _Batch:
    """One write: its events go to one segment, all in one append."""

    events: tuple[bytes, ...]
    """As stored: framed on a framed stream (see :attr:`StreamConfig.framed`)."""
    position: float
    size: int
    future: Future[WriteAck]
    txn: Transaction | None = None


@dataclass(eq=False)
class _TxnWrites:
    """This writer's writes in one transaction that are not answered yet, and the first that
    failed: what the transaction's commit waits for, and fails on."""

    unanswered: int = 0
    failure: BaseException | None = None


@dataclass(eq=False)
class _Queue:
    """The writer's writes for one segment, in the order they were made: an ordered append
    pipeline of the segment's log (:class:`~seaway.log.OrderedAppends`), which joins, numbers,
    sends and retries them, and hands back, once the segment is sealed, the writes it did not
    store (``held``, until they move to the successors)."""

    segment: Segment
    log: SegmentLog
    appends: OrderedAppends
    held: list[_Batch] | None = None
    """Once the segment ended: its writes not stored, in order, and those made since; they move
    to the successors (or fail)."""


class EventWriter:
    """Writes events to a stream; made by :meth:`Stream.writer`. Thread-safe.

    Contract: a write's future gives a :class:`WriteAck` once its events are stored (durable);
    the events of one ``write_batch`` are stored together in one segment, or not at all. Events
    written with the same routing key by this writer are stored in the order of the calls that
    wrote them (calls made one after the other), across any number of scalings. A batch is
    stored at most once even when sent again. A future that fails says why; its events were not
    stored (or, with :class:`ClosedError`, might have been). Events without a key are spread
    over the key space and have no order among themselves.
    """

    def __init__(self, stream: Stream, logs: LogsApi, writer_id: str | None = None,
                 config: WriterConfig | None = None) -> None:
        if writer_id is None:
            writer_id = secrets.token_hex(8)
        if not isinstance(writer_id, str) or not WRITER_ID_PATTERN.fullmatch(writer_id):
            raise InvalidArgumentError(f"a writer id is 1-40 of A-Z a-z 0-9 . _ -, got {writer_id!r:.80}")
        self.writer_id = writer_id
        self.config = config or WriterConfig()
        self._stream = stream
        self._logs = logs
        self._spreader = Spreader(secrets.randbelow(2**32) / 2**32)
        self._lock = threading.RLock()  # routes and queues
        self._room = threading.Condition()  # the bounds, and transactions' writes: never held while calling out
        self._events = self._bytes = self._batches = 0
        self._stop = threading.Event()
        self._ended: SeawayError | None = None
        """Why the writer takes no more writes (closed, stream sealed or deleted)."""
        self._answers: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        """The answers of the segments' appends, and the segments that ended (sealed), handled by
        the writer's thread: the log layer's threads only queue them, and never wait on a bound
        (a full queue of the log's appends) that only they can free."""
        self._queues: dict[int, _Queue] = {}
        self._routes: list[tuple[float, float, int]] = []
        """(key_lo, key_hi, segment id), sorted, covering [0, 1) exactly."""
        self._txns: dict[int, _TxnWrites] = {}
        """Transactions written in and not yet ended, by id."""
        stream_state = stream.metadata.state()[0]
        self._framed = stream_state.config.framed
        """Whether the stream's records carry a header, with the write's routing key (fixed when
        it was created)."""
        self._transactional = stream_state.config.transactional
        state = stream_state.state
        if state != "active":
            self._ended = (StreamSealedError(f"stream {stream.name!r} is sealed") if state == "sealed"
                           else UnknownStreamError(f"stream {stream.name!r} is being deleted"))
        for segment in stream.current_segments():
            self._queues[segment.id] = self._new_queue(segment, logs.get(segment.log_id))
            self._routes.append((segment.key_lo, segment.key_hi, segment.id))
        self._routes.sort()
        self._thread = threading.Thread(target=self._run, name=f"seaway-writer-{writer_id}", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"EventWriter({self._stream.name!r}, {self.writer_id!r})"

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------------

    def write(self, event: bytes, routing_key: str | bytes | None = None, *,
              txn: Transaction | None = None) -> Future[WriteAck]:
        """Write one event; see :meth:`write_batch`."""
        return self.write_batch((event,), routing_key, txn=txn)

    def write_batch(self, events: Iterable[bytes], routing_key: str | bytes | None = None, *,
                    txn: Transaction | None = None) -> Future[WriteAck]:
        """Write events with one routing key, atomically (one segment, one append); the future
        gives their segment and LSNs once they are durable. Blocks while the writer's in-flight
        bounds are reached, then raises :class:`BufferFullError` (nothing was written; retry
        later). Raises :class:`PayloadTooLargeError` for an event over ``event_bytes_max``,
        :class:`StreamSealedError` once the writer found the stream sealed, :class:`ClosedError`
        after :meth:`close`.

        With ``txn`` (on a stream created ``transactional``, else :class:`InvalidArgumentError`),
        the events are part of that transaction: stored now, seen by readers only once it commits
        (never if it aborts or times out). Its commit waits for them and fails if they could not be
        stored. Raises the transaction's :class:`TransactionNotInProgressError` (or
        :class:`TransactionTimedOutError`) once it may no longer write; make every write of a
        transaction before its commit."""
        if txn is not None and not self._transactional:
            raise InvalidArgumentError(f"stream {self._stream.name!r} was not created transactional: it takes no "
                                       "writes in a transaction")
        batch = self._make_batch(events, routing_key, txn)
        with self._room:
            self._wait_room(batch, time.monotonic() + self.config.room_wait_s)
            self._events += len(batch.events)
            self._bytes += batch.size
            self._batches += 1
        try:
            log_id = 0
            logs: list[int] = []
            if txn is not None:
                with self._lock:
                    log_id = self._queue_at(batch.position).log.id
                    # The first write of a transaction through this writer registers every segment's
                    # log at once: one durable manager call, rather than one per segment written.
                    logs = [log_id] if txn.id in self._txns else [log_id, *(q.log.id for q in self._queues.values())]
            for _ in range(REGISTER_ATTEMPTS_MAX):
                if txn is not None:  # outside the lock: a manager round trip, unless all are registered already
                    txn.register_logs(logs)
                with self._lock:
                    if self._ended is not None:
                        raise self._ended
                    target = self._queue_at(batch.position)
                    if txn is not None and target.log.id != log_id:
                        log_id = target.log.id  # rerouted meanwhile by a scaling: register, look again
                        logs = [log_id]
                        continue
                    if txn is not None:
                        self._note_txn_write(txn, batch)
                    self._put(target, batch)
                return batch.future
        except BaseException:
            self._release(batch)
            raise
        self._release(batch)
        raise UnavailableError(f"{self!r}: the segment of a transaction's write changed on each of "
                               f"{REGISTER_ATTEMPTS_MAX} tries (scalings in a row); nothing was written")

    def _wait_room(self, batch: _Batch, deadline: float) -> None:
        """Under the lock: wait until the batch fits the writer's bounds."""
        while True:
            if self._ended is not None:
                raise self._ended
            if self._fits(batch):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise BufferFullError(f"{self!r}: {self._batches} batches, {self._events} events, {self._bytes} "
                                      f"bytes in flight stayed at the writer's bounds for {self.config.room_wait_s}"
                                      " s: the stream takes events slower than they are written")
            self._room.wait(left)

    # --- transactions ---------------------------------------------------------------------------

    def _note_txn_write(self, txn: Transaction, batch: _Batch) -> None:
        """Under the lock: count the write among its transaction's; the first time, hook the
        transaction's commit (to wait for its writes) and its end (to forget it)."""
        writes = self._txns.get(txn.id)
        if writes is None:
            writes = self._txns[txn.id] = _TxnWrites()
            txn.before_commit(lambda: self._await_txn_writes(txn, writes))
            txn.after_end(lambda _committed: self._forget_txn(txn.id))
        writes.unanswered += 1

        def answered(future: Future[WriteAck]) -> None:
            with self._room:
                writes.unanswered -= 1
                if writes.failure is None and future.exception() is not None:
                    writes.failure = future.exception()
                self._room.notify_all()

        batch.future.add_done_callback(answered)

    def _await_txn_writes(self, txn: Transaction, writes: _TxnWrites) -> None:
        """The transaction's commit hook: wait until its writes through this writer are answered
        (at most until its deadline); raise if one failed or they took too long, so that the
        transaction aborts rather than commit part of its writes."""
        with self._room:
            while writes.unanswered and writes.failure is None:
                left = txn.deadline_s - time.monotonic()
                if left <= 0:
                    raise TransactionTimedOutError(f"transaction {txn.id}: {writes.unanswered} writes to stream "
                                                   f"{self._stream.name!r} were not stored before its deadline")
                self._room.wait(left)
            failure = writes.failure
        if failure is not None:
            if isinstance(failure, SeawayError):
                raise failure
            raise ClosedError(f"transaction {txn.id}: a write to stream {self._stream.name!r} failed: {failure!r}")

    def _forget_txn(self, txn_id: int) -> None:
        with self._lock:
            self._txns.pop(txn_id, None)

    def _make_batch(self, events: Iterable[bytes], routing_key: str | bytes | None,
                    txn: Transaction | None = None) -> _Batch:
        if isinstance(events, bytes | bytearray | str):
            raise InvalidArgumentError("write_batch takes an iterable of events (bytes), not one event")
        batch = tuple(events)
        limits = self.config
        if not batch or len(batch) > limits.batch_events_max:
            raise InvalidArgumentError(f"a batch holds 1-{limits.batch_events_max} events, got {len(batch)}")
        if len(batch) > limits.events_in_flight_max:
            raise InvalidArgumentError(f"a batch of {len(batch)} events exceeds events_in_flight_max="
                                       f"{limits.events_in_flight_max}")
        position = self._spreader.next() if routing_key is None else key_position(routing_key)  # checks the key
        head = header(0 if txn is None else txn.id, routing_key) if self._framed else b""
        overhead = len(head)
        for event in batch:
            if type(event) is not bytes:
                raise InvalidArgumentError(f"an event is bytes, got {type(event).__name__}")
            if len(event) + overhead > limits.event_bytes_max:
                raise PayloadTooLargeError(f"an event of {len(event)} bytes (+{overhead} of header) exceeds "
                                           f"event_bytes_max={limits.event_bytes_max}")
        if head:
            batch = tuple(head + event for event in batch)
        size = sum(map(len, batch))
        if size > limits.bytes_in_flight_max:
            raise PayloadTooLargeError(f"a batch of {size} bytes exceeds bytes_in_flight_max="
                                       f"{limits.bytes_in_flight_max}")
        return _Batch(batch, position, size, Future(), txn)

    def _fits(self, batch: _Batch) -> bool:
        limits = self.config
        return (self._events + len(batch.events) <= limits.events_in_flight_max
                and self._bytes + batch.size <= limits.bytes_in_flight_max
                and self._batches < limits.batches_in_flight_max)

    def _queue_at(self, position: float) -> _Queue:
        lo, hi = 0, len(self._routes) - 1
        while lo < hi:  # the last route starting at or below the position
            mid = (lo + hi + 1) // 2
            if self._routes[mid][0] <= position:
                lo = mid
            else:
                hi = mid - 1
        key_lo, key_hi, segment = self._routes[lo]
        invariant(key_lo <= position < key_hi, f"{self!r}: no route for key position {position}")
        return self._queues[segment]

    def _new_queue(self, segment: Segment, log: SegmentLog) -> _Queue:
        config = self.config

        def send(payloads: Sequence[bytes], mark: ProducerMark, _if_tail: int | None) -> Future[range]:
            return log.append_batch_async(payloads, producer_id=mark.producer_id, sequence=mark.sequence)

        def new_producer() -> bytes:
            # A fresh part per producer: a writer made again with the same id starts its
            # sequences at 0 again, and its appends must not be taken for retries of the old one's.
            return f"{self.writer_id}/{secrets.token_hex(8)}".encode()

        def ended(failure: BaseException) -> None:
            self._answers.put(lambda: self._reroute(target, failure if isinstance(failure, SeawayError)
                                                    else ClosedError(f"append failed: {failure!r}")))

        appends = OrderedAppends(send, PipelineConfig(
            batches_in_flight_max=config.appends_in_flight_max, join_records_max=config.append_events_max,
            join_bytes_max=config.append_bytes_max, held_bytes_max=config.bytes_in_flight_max,
            retry=RetryPolicy(attempts_max=config.retries_max + 1, backoff_s=config.retry_backoff_s,
                              backoff_max_s=config.retry_backoff_s * config.retries_max)),
            new_producer=new_producer, hand_back=lambda error: isinstance(error, _GONE), ended=ended,
            dispatch=self._answers.put)
        target = _Queue(segment, log, appends)
        return target

    def _put(self, target: _Queue, batch: _Batch, send: bool = True) -> None:
        """Under the lock: the write goes into the segment's appends, after those made before it
        (or waits with the writes of a segment that ended, to move with them)."""
        if target.held is not None:
            target.held.append(batch)
            return
        segment = target.segment.id

        def settle(lsns: range | None, error: BaseException | None) -> None:  # any thread, once
            if lsns is not None:
                batch.future.set_result(WriteAck(segment, lsns))
            else:
                batch.future.set_exception(error if isinstance(error, SeawayError)
                                           else ClosedError(f"append failed: {error!r}"))
            self._release(batch)

        target.appends.put_unit(batch.events, settle, size=batch.size, wait=False, send=send, tag=batch)

    # --- moves (the writer's thread) ------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._answers.get()
            if item is None:
                return
            try:
                item()
            except SeawayError as exc:  # the store is gone (a lost server, a closed store) while
                # moving: what the writer holds fails with it, and so does every later write
                self._fail_all(exc)
                return
            except BaseException as exc:  # a bug here must not leave every future waiting
                self._fail_all(ClosedError(f"{self!r} stopped on an unexpected error: {exc!r}"))
                raise

    def _release(self, batch: _Batch) -> None:
        """The batch is answered (or was never queued): make room."""
        with self._room:
            self._events -= len(batch.events)
            self._bytes -= batch.size
            self._batches -= 1
            self._room.notify_all()

    def _fail(self, batches: Iterable[_Batch], exc: SeawayError) -> None:
        for batch in batches:
            batch.future.set_exception(exc)
            self._release(batch)

    def _reroute(self, target: _Queue, failure: SeawayError) -> None:
        """The segment takes no more appends: send its writes, in order, to its successors. The
        appends it refused are taken apart, since keys joined in one may now belong to different
        successors: each write waits in its successor's queue, to be joined into that segment's
        next appends (with that log's sequences)."""
        with self._lock:
            if target.held is None:
                target.held = [b for b in target.appends.take_back() if isinstance(b, _Batch)]
        deadline = time.monotonic() + self.config.successors_wait_s
        while True:
            found = self._successors(target)
            if isinstance(found, list):
                break
            if found is not None or time.monotonic() >= deadline:
                self._end_segment(target, found or failure)
                return
            if self._stop.wait(self.config.retry_backoff_s):
                return
        logs = [log.id for _, log in found]
        registered: set[int] = set()
        refused: dict[int, SeawayError] = {}
        while True:  # the transactions of the writes to move are registered with the successors' logs first
            with self._lock:
                fresh = {b.txn.id: b.txn for b in target.held or ()
                         if b.txn is not None and b.txn.id not in registered and b.txn.id not in refused}
                if not fresh:  # under the same lock as the move: no write of an unregistered one moves
                    failed = self._move(target, found, refused)
                    break
            # Outside the lock (a manager round trip); writes made meanwhile may bring more
            # transactions, at most batches_in_flight_max in all, so this ends.
            for txn_id, txn in fresh.items():
                try:
                    txn.register_logs(logs)
                    registered.add(txn_id)
                except SeawayError as exc:  # ended or timed out: its writes fail
                    refused[txn_id] = exc
        for batch in failed:
            invariant(batch.txn is not None, "only writes of a transaction that ended fail when moved")
            assert batch.txn is not None  # for mypy
            self._fail([batch], refused[batch.txn.id])

    def _move(self, target: _Queue, found: list[tuple[Segment, SegmentLog]],
              refused: dict[int, SeawayError]) -> list[_Batch]:
        """Under the lock: route the sealed segment's range to its successors and move its writes
        there, in order; the writes of ``refused`` transactions are returned instead, to fail."""
        for successor, log in found:
            if successor.id not in self._queues:
                self._queues[successor.id] = self._new_queue(successor, log)
        routes: list[tuple[float, float, int]] = []
        for lo, hi, segment in self._routes:
            if segment != target.segment.id:
                routes.append((lo, hi, segment))
                continue
            routes.extend((max(lo, s.key_lo), min(hi, s.key_hi), s.id) for s, _ in found
                          if s.key_lo < hi and lo < s.key_hi)
        self._routes = sorted(routes)
        del self._queues[target.segment.id]
        held = target.held or []
        target.held = []
        moved = [b for b in held if b.txn is None or b.txn.id not in refused]
        failed = [b for b in held if b.txn is not None and b.txn.id in refused]
        successors: dict[int, _Queue] = {}
        for batch in moved:  # first, in their order: anything new for these keys comes after
            now = self._queue_at(batch.position)
            self._put(now, batch, send=False)  # queued all, then sent: joined as far as they fit
            successors[now.segment.id] = now
        for now in successors.values():
            now.appends.kick()
        return failed

    def _successors(self, target: _Queue) -> list[tuple[Segment, SegmentLog]] | SeawayError | None:
        """The current segments over the sealed segment's range, with their logs; an error if the
        stream ended; None if they are not to be found yet (look again)."""
        try:
            current = self._stream.current_segments()
            if any(s.id == target.segment.id for s in current):
                state = self._stream.metadata.state()[0].state
                if state == "sealed":
                    return StreamSealedError(f"stream {self._stream.name!r} is sealed")
                if state != "active":
                    return UnknownStreamError(f"stream {self._stream.name!r} is being deleted")
                return None  # sealed by hand, or a scaling not yet seen: look again
            ranges = [(lo, hi) for lo, hi, s in self._routes if s == target.segment.id]
            found = [s for s in current if any(s.key_lo < hi and lo < s.key_hi for lo, hi in ranges)]
            return [(s, self._queues[s.id].log if s.id in self._queues else self._logs.get(s.log_id))
                    for s in found]
        except UnknownStreamError as exc:
            return exc
        except (LogDeletedError, UnknownLogError):
            return None  # a successor sealed and truncated away meanwhile: read the segments again

    def _end_segment(self, target: _Queue, failure: SeawayError) -> None:
        """The segment's batches cannot be stored; if the stream ended, neither can any write."""
        with self._lock:
            failed = target.held or []
            target.held = []
            if isinstance(failure, StreamSealedError | UnknownStreamError) and self._ended is None:
                self._ended = failure
                with self._room:
                    self._room.notify_all()
        self._fail(failed, failure)

    def _fail_all(self, exc: SeawayError) -> None:
        with self._lock:
            if self._ended is None:
                self._ended = exc
            failed = [b for q in self._queues.values() for b in q.held or ()]
            queues = list(self._queues.values())
            for q in queues:
                q.held = [] if q.held is not None else None
        with self._room:
            self._room.notify_all()
        for q in queues:
            q.appends.close(abandon=exc)
        self._fail(failed, exc)

    # --- flush and close ------------------------------------------------------------------------

    def flush(self, timeout_s: float | None = None) -> None:
        """Wait until every write made before this call is answered (stored or failed: each
        future says which). :class:`TimedOutError` if that takes over ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._room:
            while self._batches:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimedOutError(f"{self!r}: {self._batches} writes still unanswered after {timeout_s} s")
                self._room.wait(left)

    def close(self, timeout_s: float | None = None) -> None:
        """Take no more writes, wait for those made (see :meth:`flush`), stop. Writes still
        unanswered after ``timeout_s`` fail with :class:`ClosedError`: they may or may not be
        stored. Idempotent."""
        with self._lock:
            if self._ended is None or not isinstance(self._ended, ClosedError):
                self._ended = ClosedError(f"{self!r} is closed")
        with contextlib.suppress(TimedOutError):
            self.flush(timeout_s)
        self._stop.set()
        self._answers.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._fail_all(ClosedError(f"{self!r} was closed before the write was answered"))

    @property
    def closed(self) -> bool:
        return self._stop.is_set()

