"""One producer's appends to one log, stored in the order they were made, or the later ones fail.

This is the client side of the store's rule for idempotent producers (:mod:`seaway.log._order`,
Kafka's): the store takes a producer's batch only if its sequence number is the next one. An
:class:`OrderedAppends` owns, for one producer and one log:

- the queue of *units* (a record, a gathered batch, a write) in the order they were made;
- their joining: units waiting while ``batches_in_flight_max`` batches are in flight go out joined
  into one batch (whole units, up to ``join_records_max`` records and ``join_bytes_max`` bytes); a
  joined batch is stored whole or not at all;
- their numbering, as each batch goes out: producer id and sequence 0, 1, 2...;
- retries: a batch that failed with a retriable error is sent again, with the same sequence number
  (so the store keeps it once), after a backoff, up to ``retry.attempts_max`` attempts; nothing new
  goes out meanwhile, and the batches sent after it (which the store refuses with
  :class:`SequenceGapError`, or stored, if the failure was a lost answer) are sent again after it,
  in order, once every batch in flight has been answered. A retry therefore never lands after
  something sent later;
- the final-failure rule: a batch that fails for good (a final error, or its attempts used up)
  fails with its error, and so does every unit of the producer behind it that is not in flight
  (waiting to be sent, or to be sent again); the batches ahead of it waiting to be sent again fail
  with their own error (one whose answer was lost may be stored: a later batch's error such as
  :class:`LogSealedError` would wrongly say it was not). Batches still in flight end as the store
  answers them (stored; or, behind the failed batch, refused for its sake with
  :class:`SequenceGapError`: then with its error). The producer id is then replaced and
  numbering restarts at 0 (the old id's next batch would wait for ever for the failed one), but
  only once every batch of the old id is answered, so that nothing of the new id overtakes them;
- a bound on the bytes it holds (waiting and in flight): :meth:`put` blocks for room, then raises
  :class:`BufferFullError`;
- :meth:`flush` (wait until everything put is settled) and :meth:`close`.

What it sends through is injected (``send``: the embedded store, the client's ``AppendMany``
multiplexer, a segment log), so the rule is written once. See docs/ordering.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from seaway._invariant import invariant
from seaway._values import ProducerMark
from seaway.errors import (
    BufferFullError,
    ClosedError,
    InternalError,
    InvalidArgumentError,
    SeawayError,
    SequenceGapError,
    SequenceOrderError,
    TimedOutError,
)


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


@dataclass(frozen=True)
class PipelineConfig:
    """Bounds of an :class:`OrderedAppends`."""

    batches_in_flight_max: int = 8
    """Batches sent and not yet answered (Kafka: ``max.in.flight.requests.per.connection``, 5)."""
    join_records_max: int = 10_000
    """Records of units joined into one batch at most (a single unit may be larger)."""
    join_bytes_max: int = 4 << 20
    """Payload bytes of units joined into one batch at most (a single unit may be larger)."""
    held_bytes_max: int = 64 << 20
    """Payload bytes held (waiting and in flight); :meth:`OrderedAppends.put` beyond it blocks."""
    room_wait_s: float = 30.0
    """How long :meth:`OrderedAppends.put` blocks for room before it raises :class:`BufferFullError`."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        for name in ("batches_in_flight_max", "join_records_max", "join_bytes_max", "held_bytes_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
        if not self.room_wait_s >= 0:
            raise InvalidArgumentError(f"room_wait_s must be >= 0, got {self.room_wait_s!r}")


SendBatch = Callable[[Sequence[bytes], ProducerMark, "int | None"], "Future[range]"]
"""Sends one batch with its producer mark and tail condition (``if_tail``: stored only if the log's
tail is that LSN; None: none); the future gives its LSNs, or the error."""
Settle = Callable[[range | None, BaseException | None], None]
"""Told a unit's outcome once: its LSNs, or the error."""
Later = Callable[[float, Callable[[], None]], object]
"""Runs a function after a delay (a timer thread by default; a test's own scheduler)."""


def _timer(delay_s: float, run: Callable[[], None]) -> object:
    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()
    return timer


def new_producer_id() -> bytes:
    """A fresh random producer id (16 bytes)."""
    return os.urandom(16)


@dataclass(slots=True, eq=False)
class _Unit:
    payloads: Sequence[bytes]
    size: int
    settle: Settle
    tag: object = None
    if_tail: int | None = None


@dataclass(slots=True, eq=False)
class _Batch:
    units: list[_Unit]
    payloads: Sequence[bytes]
    size: int
    producer_id: bytes
    sequence: int
    if_tail: int | None = None
    attempts: int = 0
    sent: bool = False
    """Sent and not yet answered."""
    retry_at: float = 0.0
    """Not sent: when it may go out again."""
    error: BaseException | None = None
    """Its last retriable failure."""
    handed_back: bool = False
    """Refused with an error the owner takes back (see ``hand_back``): not sent again."""
    doomed: BaseException | None = None
    """In flight behind a batch that failed for good: the store refuses it for that batch's sake
    (``SequenceGapError``), so that batch's error is its own."""
    abandoned: bool = False
    """Settled by :meth:`OrderedAppends.close` before its answer came; the answer is ignored."""


def _retriable(error: BaseException) -> bool:
    return isinstance(error, SeawayError) and error.retriable


class OrderedAppends:
    """One producer's appends to one log; see the module docstring. Thread-safe.

    ``hand_back``: the errors that say the log takes nothing more (a sealed segment's, for a
    stream writer that moves its writes to the successors). A batch refused with one is not sent
    again and its units are not failed: nothing new goes out, the batches waiting to be sent again
    ahead of and behind it still are (one whose answer was lost may be stored, and the sealed log
    still answers a retry of what it stored), and once every batch is answered, ``ended`` is called
    (from the thread of that answer; it must not block). The owner then calls :meth:`take_back` for
    the units not stored, in order (those put meanwhile too).

    ``dispatch``: where answers are handled (and what they make due is sent): by default in the
    thread that answers (the store's, a transport's); an owner whose ``send`` may block (on a
    bound that only that thread frees) passes its own thread's queue."""

    def __init__(self, send: SendBatch, config: PipelineConfig | None = None, *,
                 new_producer: Callable[[], bytes] = new_producer_id, later: Later | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 hand_back: Callable[[BaseException], bool] | None = None,
                 ended: Callable[[BaseException], None] | None = None,
                 dispatch: Callable[[Callable[[], None]], None] | None = None) -> None:
        config = config or PipelineConfig()
        self.config = config
        self._send = send
        self._hand_back = hand_back
        self._dispatch = dispatch
        self._ended = ended
        self._ending: BaseException | None = None  # the first error handed back
        self._ended_told = False
        self._new_producer = new_producer
        self._later = later or _timer
        self._clock = clock
        self._retry = config.retry
        self._in_flight_max = config.batches_in_flight_max
        self._join_records_max = config.join_records_max
        self._join_bytes_max = config.join_bytes_max
        self._held_max = config.held_bytes_max
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # room made, or everything settled
        self._producer_id = new_producer()
        self._next_sequence = 0
        self._queue: deque[_Unit] = deque()  # not numbered yet, in the order put
        self._in_flight: list[_Batch] = []  # numbered and not settled, in sequence order
        self._sent = 0  # batches of the current producer sent and not answered
        self._retrying = 0  # batches of the current producer waiting to be sent again
        self._stale = 0  # batches of a replaced producer sent and not answered
        self._held = 0  # payload bytes of units not settled
        self._sending = False  # a thread is sending; the others leave what becomes due to it
        self._wake_at: float | None = None
        self._closed = False

    # --- putting (any thread) -------------------------------------------------------------------

    @property
    def producer_id(self) -> bytes:
        """The producer id the next batch goes out under."""
        return self._producer_id

    @property
    def idle(self) -> bool:
        """Nothing put is unsettled (nothing waits, nothing is in flight)."""
        return not self._queue and not self._in_flight

    @property
    def held_bytes(self) -> int:
        """Payload bytes put and not yet settled."""
        return self._held

    def put(self, payloads: Sequence[bytes], *, wait: bool = True, if_tail: int | None = None) -> Future[range]:
        """Queue one unit, stored whole or not at all; the future gives its LSNs. With ``wait``,
        blocks while the bytes held are at their bound (see :meth:`wait_room`). With ``if_tail``,
        stored only if the log's tail is then that LSN (a conditional append): such a unit goes
        alone, never joined with others."""
        future: Future[range] = Future()
        future.set_running_or_notify_cancel()  # an append on its way cannot be called back

        def settle(lsns: range | None, error: BaseException | None) -> None:
            if error is None:
                future.set_result(lsns)  # type: ignore[arg-type]  # None only with an error
            else:
                future.set_exception(error)

        self.put_unit(payloads, settle, wait=wait, if_tail=if_tail)
        return future

    def put_unit(self, payloads: Sequence[bytes], settle: Settle, *, size: int | None = None,
                 wait: bool = True, send: bool = True, tag: object = None, if_tail: int | None = None) -> None:
        """As :meth:`put`, with ``settle`` told the outcome instead of a future (cheaper for a
        caller that has futures of its own). With ``send=False`` the unit is only queued, to go
        out with the next :meth:`kick` (or answer): a caller that orders its units under a lock
        of its own queues them under it, and sends outside it. ``tag``: given back by
        :meth:`take_back`."""
        if size is None:
            size = sum(map(len, payloads))
        with self._lock:
            if wait and self._held and self._held + size > self._held_max:
                self._wait_room_locked(size, self.config.room_wait_s)
            if self._closed:
                raise ClosedError("the appends are closed")
            self._queue.append(_Unit(payloads, size, settle, tag, if_tail))
            self._held += size
            if self._sending or not send:
                return  # the sending thread takes it
            due = self._take()
        if due:
            self._send_all(due)

    def kick(self) -> None:
        """Send what is due now (units queued with ``send=False``), unless a thread is sending."""
        with self._lock:
            if self._sending:
                return
            due = self._take()
        if due:
            self._send_all(due)

    def wait_room(self, size: int, timeout_s: float) -> None:
        """Block until ``size`` more bytes fit in the bound (or nothing is held), at most
        ``timeout_s``; then :class:`BufferFullError`. :class:`ClosedError` once closed."""
        with self._lock:
            self._wait_room_locked(size, timeout_s)

    def _wait_room_locked(self, size: int, timeout_s: float) -> None:
        bound = self._held_max
        if not self._changed.wait_for(lambda: self._closed or not self._held or self._held + size <= bound,
                                      timeout_s):
            raise BufferFullError(f"{self._held} bytes of appends have waited to be stored for {timeout_s} s "
                                  f"(the bound is {bound})")
        if self._closed:
            raise ClosedError("the appends are closed")

    # --- sending --------------------------------------------------------------------------------

    def _take(self) -> list[_Batch]:
        """Under the lock, with no thread sending: the batches to send now, in sequence order; the
        caller becomes the sending thread if there are any."""
        if self._stale:
            return []  # a replaced producer's batches are not all answered: nothing may overtake them
        if self._retrying:
            if self._sent:
                return []  # the failed go out again once every batch sent after them is answered
            now = self._clock()
            first = next(b for b in self._in_flight if not b.handed_back)
            if first.retry_at > now:
                self._wake_in(first.retry_at, now)
                return []
            due = [b for b in self._in_flight if not b.handed_back]  # all waiting to be sent again, in order
            self._retrying = 0
        elif self._ending is not None:
            return []  # nothing new goes to a log that takes nothing more
        elif self._queue and len(self._in_flight) < self._in_flight_max:
            due = []
            while self._queue and len(self._in_flight) < self._in_flight_max:
                batch = self._join()
                self._in_flight.append(batch)
                due.append(batch)
        else:
            return []
        for batch in due:
            batch.sent = True
            batch.attempts += 1
        self._sent += len(due)
        self._sending = True
        return due

    def _join(self) -> _Batch:
        """Under the lock: the next batch, numbered: the first unit waiting, and those behind it that
        fit the join bounds."""
        queue = self._queue
        first = queue.popleft()
        units = [first]
        records, size = len(first.payloads), first.size
        while queue and first.if_tail is None and queue[0].if_tail is None \
                and records + len(queue[0].payloads) <= self._join_records_max \
                and size + queue[0].size <= self._join_bytes_max:
            unit = queue.popleft()
            units.append(unit)
            records += len(unit.payloads)
            size += unit.size
        payloads = first.payloads if len(units) == 1 else [p for u in units for p in u.payloads]
        batch = _Batch(units, payloads, size, self._producer_id, self._next_sequence, first.if_tail)
        self._next_sequence += 1
        return batch

    def _wake_in(self, at: float, now: float) -> None:
        if self._wake_at is None or at < self._wake_at:
            self._wake_at = at
            self._later(max(0.0, at - now), self._wake)

    def _wake(self) -> None:
        with self._lock:
            self._wake_at = None
        self.kick()  # a thread sending looks again when it is done

    def _send_all(self, due: list[_Batch]) -> None:
        """Send ``due``, then what fell due meanwhile; only the sending thread runs this, so batches
        go out in sequence order."""
        while True:
            for i, batch in enumerate(due):
                try:
                    future = self._send(batch.payloads, ProducerMark(batch.producer_id, batch.sequence), batch.if_tail)
                except Exception as exc:  # refused at once: the rest of this round waits behind it
                    with self._lock:
                        for rest in due[i + 1:]:
                            if rest.sent:
                                rest.sent = False
                                rest.attempts -= 1
                                rest.retry_at = 0.0
                                self._sent -= 1
                                self._retrying += 1
                    self._answered(batch, None, exc)
                    break
                if self._dispatch is None:
                    future.add_done_callback(lambda f, batch=batch: self._on_done(batch, f))  # type: ignore[misc]
                else:
                    dispatch = self._dispatch
                    future.add_done_callback(
                        lambda f, batch=batch, dispatch=dispatch: dispatch(lambda: self._on_done(batch, f)))  # type: ignore[misc]
            with self._lock:
                due = self._take_sending()
                if not due:
                    return

    def _take_sending(self) -> list[_Batch]:
        """Under the lock, by the sending thread: what to send next; if nothing, it stops sending."""
        self._sending = False
        return self._take()

    def _on_done(self, batch: _Batch, future: Future[range]) -> None:
        error = future.exception()
        lsns = None
        if error is None:
            lsns = future.result()
            if len(lsns) != len(batch.payloads):  # a bug: fail its units rather than misplace them
                error, lsns = InternalError(f"a batch of {len(batch.payloads)} records was answered with {lsns}"), None
        self._answered(batch, lsns, error)

    def _answered(self, batch: _Batch, lsns: range | None, error: BaseException | None) -> None:
        """A batch was answered: settle it, schedule its retry, or apply the final-failure rule."""
        settled: list[tuple[_Batch, range | None, BaseException | None]] = []
        failed_units: list[_Unit] = []
        ended: BaseException | None = None
        with self._lock:
            if batch.abandoned:
                return
            batch.sent = False
            current = batch.producer_id == self._producer_id
            if current:
                self._sent -= 1
            else:
                self._stale -= 1
            if error is None or not current:
                self._in_flight.remove(batch)
                if batch.doomed is not None and isinstance(error, SequenceGapError | SequenceOrderError):
                    error = batch.doomed
                settled.append((batch, lsns, error))
            elif self._hand_back is not None and self._hand_back(error):
                batch.handed_back = True
                batch.error = error
                if self._ending is None:
                    self._ending = error
            elif _retriable(error) and batch.attempts < self._retry.attempts_max and not self._closed:
                batch.error = error
                batch.retry_at = self._clock() + self._retry.delay_s(batch.attempts)
                self._retrying += 1
            else:
                failed_units = self._fail_producer(batch, error, settled)
            for done, _, _ in settled:
                self._held -= done.size
            self._held -= sum(u.size for u in failed_units)
            self._changed.notify_all()
            due = [] if self._sending else self._take()
            if (self._ending is not None and not self._ended_told and not self._sent and not self._stale
                    and not self._retrying):
                self._ended_told = True
                ended = self._ending
        if due:
            self._send_all(due)
        for done, done_lsns, done_error in settled:
            self._settle(done, done_lsns, done_error)
        for unit in failed_units:
            unit.settle(None, error)
        if ended is not None and self._ended is not None:
            self._ended(ended)

    def _fail_producer(self, batch: _Batch, error: BaseException,
                       settled: list[tuple[_Batch, range | None, BaseException | None]]) -> list[_Unit]:
        """Under the lock: ``batch`` failed for good. Returns the waiting units that fail with it."""
        ahead = True
        kept: list[_Batch] = []
        for other in self._in_flight:
            if other is batch:
                ahead = False
                settled.append((batch, None, error))
            elif other.sent:  # answered later, as a replaced producer's
                self._sent -= 1
                self._stale += 1
                if not ahead:
                    other.doomed = error
                kept.append(other)
            else:  # waiting to be sent again (or handed back): never will be
                if not other.handed_back:
                    self._retrying -= 1
                settled.append((other, None, (other.error or error) if ahead else error))
        self._in_flight = kept
        failed_units = list(self._queue)
        self._queue.clear()
        self._producer_id = self._new_producer()
        self._next_sequence = 0
        self._ending = None  # what was handed back failed: the new producer starts afresh
        return failed_units

    @staticmethod
    def _settle(batch: _Batch, lsns: range | None, error: BaseException | None) -> None:
        if lsns is None:
            for unit in batch.units:
                unit.settle(None, error)
            return
        first = lsns.start
        for unit in batch.units:
            count = len(unit.payloads)
            unit.settle(range(first, first + count), None)
            first += count

    # --- flush and close ------------------------------------------------------------------------

    def flush(self, timeout_s: float | None = None) -> None:
        """Wait until every unit put so far is settled; :class:`TimedOutError` after ``timeout_s``
        (they go on)."""
        if not self.drain(timeout_s):
            raise TimedOutError(f"appends were not all stored within {timeout_s} s; they are still being sent")

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until every unit put so far is settled; False if ``timeout_s`` passed first."""
        with self._lock:
            return self._changed.wait_for(lambda: not self._queue and not self._in_flight, timeout_s)

    def close(self, abandon: BaseException | None = None) -> None:
        """Take no more units. Those not yet sent fail with :class:`ClosedError`, and those waiting to
        be sent again with their last error (it may say they are stored); those in flight end as
        the store answers them, or, with ``abandon``, fail with it now (their answers are ignored).
        Idempotent."""
        with self._lock:
            self._closed = True
            waiting = list(self._queue)
            self._queue.clear()
            retrying = [b for b in self._in_flight if not b.sent]
            self._in_flight = [b for b in self._in_flight if b.sent]
            self._retrying = 0
            abandoned: list[_Batch] = []
            if abandon is not None:
                abandoned, self._in_flight = self._in_flight, []
                self._sent = self._stale = 0
                for batch in abandoned:
                    batch.abandoned = True
            self._held -= sum(u.size for u in waiting) + sum(b.size for b in retrying + abandoned)
            self._changed.notify_all()
        closed = ClosedError("the appends were closed before this one was sent")
        for unit in waiting:
            unit.settle(None, closed)
        for batch in retrying:
            self._settle(batch, None, batch.error or closed)
        for batch in abandoned:
            self._settle(batch, None, abandon)

    def take_back(self) -> list[object]:
        """Once ``ended`` was called: the tags of the units not stored, in the order they were put,
        which the owner moves elsewhere; the appends take no more units."""
        with self._lock:
            invariant(self._ended_told, "take_back before the appends ended")
            units = [u for b in self._in_flight for u in b.units] + list(self._queue)
            self._in_flight = []
            self._queue.clear()
            self._held = 0
            self._closed = True
            self._changed.notify_all()
        return [u.tag for u in units]
