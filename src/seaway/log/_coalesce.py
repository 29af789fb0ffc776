"""Appends to one log, in the order they were made, batched while earlier ones are in flight.

A producer that hands over one record per call expects the client to batch (Kafka's and Pravega's
writers do). Every append of a log, single record or whole batch, goes through the log's
:class:`AppendCoalescer`: while fewer than ``batches_in_flight_max`` batches are in flight, an append
is sent at once; the records appended meanwhile wait, joined into one batch, and go out as soon as a
batch in flight is answered. At low rates nothing waits; at high rates each batch carries what
arrived during the previous one, so the per-batch work (sequencing, the disk write, a network call)
is shared by many records without a timer.

Order: units (a joined batch, or an idempotent or conditional batch, which is never joined with
others because its producer mark names it alone, or its tail condition holds for it alone) are sent
in the order their first record was appended, by one sending thread at a time, so the store
sequences them in that order. A joined batch is stored whole or not at all, like any batch: every
record in it gets the same outcome. A batch that fails fails its producer's appends queued behind
it, unsent, with the same error (appends without a producer id count as one producer): none of them
can then be stored before the failed one is tried again. Other producers' appends go on. This is
the rule the store itself keeps for producers with sequence numbers (docs/ordering.md).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from seaway._invariant import InvariantViolation
from seaway._values import ProducerMark
from seaway.errors import BufferFullError, ClosedError, InvalidArgumentError
from seaway.log._futures import BatchFutures

Send = Callable[[tuple[bytes, ...], ProducerMark | None, int | None], "Future[range]"]
"""Sends one batch to the store (or the server), with its producer mark and tail condition (if_tail);
the future gives its LSNs."""


@dataclass(frozen=True)
class CoalesceConfig:
    """How appends of one log are batched and bounded."""

    batches_in_flight_max: int = 8
    """Batches of a log sent and not yet answered; appends made meanwhile wait and are joined. Several
    keep the store's disk pipeline (a write applied while the previous one syncs) busy, and cover
    the time the store's threads wait for the GIL while a producer runs (up to the interpreter's
    switch interval, 5 ms, per hand-over): measured, 8 did better than 4 and no worse than 16."""
    batch_records_max: int = 10_000
    """Records joined into one batch at most (a batch appended whole may be larger)."""
    batch_bytes_max: int = 4 << 20
    """Payload bytes joined into one batch at most (a batch appended whole may be larger)."""
    waiting_bytes_max: int = 64 << 20
    """Payload bytes of a log waiting to be sent; an append beyond it blocks until there is room."""
    room_wait_s: float = 30.0
    """How long an append blocks for room before it raises :class:`BufferFullError`."""

    def __post_init__(self) -> None:
        for name in ("batches_in_flight_max", "batch_records_max", "batch_bytes_max", "waiting_bytes_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
        if not self.room_wait_s >= 0:
            raise InvalidArgumentError(f"room_wait_s must be >= 0, got {self.room_wait_s!r}")


@dataclass(slots=True, eq=False)
class _Unit:
    """What goes out as one batch: records appended one at a time (``singles``), or batches
    appended whole (``parts``: offset, count and future of each), never both."""

    mark: ProducerMark | None
    payloads: list[bytes] = field(default_factory=list)
    if_tail: int | None = None
    size_bytes: int = 0
    singles: BatchFutures[int] | None = None
    parts: list[tuple[int, int, Future[range]]] = field(default_factory=list)
    records_left: int = 0
    """Room left for single records (they join only the open unit)."""
    bytes_left: int = 0


class AppendCoalescer:
    """The appends of one log; see the module docstring. Thread-safe."""

    def __init__(self, send: Send, config: CoalesceConfig | None = None) -> None:
        self._send = send
        self._config = config = config or CoalesceConfig()
        # The hot path reads these a million times a second: plain attributes, not the config's.
        self._in_flight_max = config.batches_in_flight_max
        self._records_max = config.batch_records_max
        self._bytes_max = config.batch_bytes_max
        self._waiting_bytes_max = config.waiting_bytes_max
        self._open: _Unit | None = None  # the unit of single records at the queue's tail, still open
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._queue: deque[_Unit] = deque()
        self._waiting_bytes = 0
        self._in_flight = 0
        self._sending = False  # a thread is sending units; others only queue theirs
        self._closed = False

    # --- appending (any thread) -----------------------------------------------------------------

    def append_one(self, payload: bytes) -> Future[int]:
        """Queue one record; the future gives its LSN once it is stored (durable, for a log whose
        durability says so), or the error its batch failed with."""
        size = len(payload)
        with self._lock:
            if self._closed or self._waiting_bytes + size > self._waiting_bytes_max:
                self._wait_room(size)
            unit = self._open
            if unit is None or unit.records_left == 0 or unit.bytes_left < size:
                unit = self._open = _Unit(None, singles=BatchFutures(), records_left=self._records_max,
                                          bytes_left=self._bytes_max)
                self._queue.append(unit)
            future = unit.singles.new()  # type: ignore[union-attr]  # a unit made for singles
            unit.payloads.append(payload)
            unit.records_left -= 1
            unit.bytes_left -= size
            unit.size_bytes += size
            self._waiting_bytes += size
            if self._sending or self._in_flight >= self._in_flight_max:
                return future  # the common case at high rates: a batch in flight will take it
            units = self._take()  # not empty: there is room, and this unit waits
        self._send_all(units)
        return future

    def append_batch(self, payloads: tuple[bytes, ...], mark: ProducerMark | None,
                     if_tail: int | None = None) -> Future[range]:
        """Queue a whole batch, stored all together or not at all; the future gives its LSNs. A
        batch with a producer ``mark`` or a tail condition ``if_tail`` goes out alone; one without
        may be joined with other batches appended while earlier ones are in flight."""
        alone = mark is not None or if_tail is not None
        size = sum(map(len, payloads))
        config = self._config
        outer: Future[range] = Future()
        outer.set_running_or_notify_cancel()  # an append on its way cannot be called back
        with self._lock:
            self._wait_room(size)
            unit = self._queue[-1] if self._queue and not alone else None
            if (unit is None or unit.mark is not None or unit.if_tail is not None or unit.singles is not None
                    or len(unit.payloads) + len(payloads) > config.batch_records_max
                    or unit.size_bytes + size > config.batch_bytes_max):
                unit = _Unit(mark, if_tail=if_tail)
                self._queue.append(unit)
                self._open = None  # records appended one at a time from now on go after this batch
            unit.parts.append((len(unit.payloads), len(payloads), outer))
            unit.payloads.extend(payloads)
            unit.size_bytes += size
            self._waiting_bytes += size
            if self._sending:
                return outer
            units = self._take()
        if units:  # else the bound is reached: an answer to come sends it
            self._send_all(units)
        return outer

    def _wait_room(self, size: int) -> None:
        """Under the lock: block while the bytes waiting are at their bound (a lone large append
        goes once nothing else waits)."""
        if self._closed:
            raise ClosedError("the log store is closed")
        bound = self._waiting_bytes_max
        if self._waiting_bytes + size <= bound or not self._queue:
            return
        if not self._room.wait_for(lambda: self._closed or not self._queue or self._waiting_bytes + size <= bound,
                                   self._config.room_wait_s):
            raise BufferFullError(f"{self._waiting_bytes} bytes of appends to this log have waited to be sent for "
                                  f"{self._config.room_wait_s} s (waiting_bytes_max={bound})")
        if self._closed:
            raise ClosedError("the log store is closed")

    # --- sending --------------------------------------------------------------------------------

    def _take(self) -> list[_Unit]:
        """Under the lock, with no other thread sending: the units to send now, in order. The caller
        becomes the sending thread if there are any (and calls :meth:`_send_all`)."""
        units: list[_Unit] = []
        max_in_flight = self._in_flight_max
        while self._queue and self._in_flight < max_in_flight:
            head = self._queue.popleft()
            if head is self._open:
                self._open = None  # sent: records appended from now on start a new unit
            self._in_flight += 1
            self._waiting_bytes -= head.size_bytes
            units.append(head)
        if units:
            self._sending = True
            self._room.notify_all()
        return units

    def _send_all(self, units: list[_Unit]) -> None:
        """Send ``units``, then whatever became sendable meanwhile, until nothing is; then give up
        the sending role. Only the sending thread runs this, so units go out in queue order."""
        while True:
            refused: dict[bytes | None, BaseException] = {}  # producer -> why its first unit was refused
            for unit in units:
                producer = _producer(unit)
                error = refused.get(producer)
                if error is None:
                    try:
                        future = self._send(tuple(unit.payloads), unit.mark, unit.if_tail)
                    except Exception as exc:  # refused at once (full, closed)
                        error = refused[producer] = exc
                    else:
                        future.add_done_callback(lambda f, unit=unit: self._on_done(unit, f))  # type: ignore[misc]
                        continue
                # Refused, or behind its producer's refused unit: not sent, so that nothing of the
                # producer is stored before the refused unit is tried again.
                self._answered(unit, None, error)
            with self._lock:
                self._sending = False
                units = self._take()
                if not units:
                    if not self._queue and not self._in_flight:
                        self._idle.notify_all()
                    return

    def _on_done(self, unit: _Unit, future: Future[range]) -> None:
        error = future.exception()
        if error is None and len(lsns := future.result()) == len(unit.payloads):
            self._answered(unit, lsns, None)
        else:  # a wrong answer is a bug: its appends fail with it rather than wait forever
            self._answered(unit, None, error or InvariantViolation(
                f"a batch of {len(unit.payloads)} records was answered with {len(future.result())} LSNs"))

    def _answered(self, unit: _Unit, lsns: range | None, error: BaseException | None) -> None:
        """A unit's batch was answered. Stored: send what waited for it. Failed: fail its
        producer's units waiting behind it too, unsent, so that nothing the producer appended
        after it is stored before it is tried again (by the caller, or a writer's retry); other
        producers' units go on. (The store keeps this order for producers with sequence numbers
        anyway, see :mod:`seaway.log._order`; records appended one at a time and plain batches
        count as one producer.)"""
        queued: list[_Unit] = []
        with self._lock:
            self._in_flight -= 1
            if error is not None and self._queue:
                producer = _producer(unit)
                queued = [u for u in self._queue if _producer(u) == producer]
                if queued:
                    self._queue = deque(u for u in self._queue if _producer(u) != producer)
                    if self._open is not None and _producer(self._open) == producer:
                        self._open = None
                    self._waiting_bytes -= sum(u.size_bytes for u in queued)
                    self._room.notify_all()
            units = [] if self._sending else self._take()
            if not units and not self._sending and not self._queue and not self._in_flight:
                self._idle.notify_all()
        if units:
            self._send_all(units)
        self._settle(unit, lsns, error)
        for behind in queued:
            self._settle(behind, None, error)

    @staticmethod
    def _settle(unit: _Unit, lsns: range | None, error: BaseException | None) -> None:
        if unit.singles is not None:
            unit.singles.settle(None if lsns is None else list(lsns), error)
            return
        for offset, count, outer in unit.parts:
            if lsns is None:
                outer.set_exception(error)
            else:
                first = lsns.start + offset
                outer.set_result(range(first, first + count))

    # --- lifecycle ------------------------------------------------------------------------------

    def drain(self, timeout_s: float) -> bool:
        """Wait until nothing waits or is in flight; False if ``timeout_s`` passed first."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._queue and not self._in_flight, timeout_s)

    def close(self) -> None:
        """Refuse further appends, and fail those still waiting with :class:`ClosedError` (those in
        flight end as the store answers them)."""
        with self._lock:
            self._closed = True
            self._open = None
            waiting, self._queue = list(self._queue), deque()
            self._waiting_bytes = 0
            self._room.notify_all()
            self._idle.notify_all()
        error = ClosedError("the log store closed before the append was sent")
        for unit in waiting:
            self._settle(unit, None, error)


def _producer(unit: _Unit) -> bytes | None:
    """Whose unit it is: a producer id, or None for records and batches appended without one."""
    return None if unit.mark is None else unit.mark.producer_id


class Coalescers:
    """The :class:`AppendCoalescer` of each log of a store or connection, made on first use. All of
    a log's handles share it, so that appends through any of them keep their order.

    Held weakly: a log's coalescer lives while a handle on the log or an append in flight refers to
    it (an append waiting in it is always behind one in flight), so memory follows the logs in use,
    not every log ever appended to. One made again later starts empty, which changes nothing: no
    append of the old one was left. A deleted log's is forgotten at once (:meth:`forget`)."""

    def __init__(self, config: CoalesceConfig | None = None) -> None:
        self._config = config or CoalesceConfig()
        self._lock = threading.Lock()
        self._by_log: weakref.WeakValueDictionary[int, AppendCoalescer] = weakref.WeakValueDictionary()
        self._closed = False

    def get(self, log_id: int, send: Send) -> AppendCoalescer:
        """The log's coalescer; ``send`` is used only when it is made."""
        found = self._by_log.get(log_id)  # no lock on the common path: a lookup changes nothing
        if found is not None:
            return found
        with self._lock:
            if self._closed:
                raise ClosedError("the log store is closed")
            found = self._by_log.get(log_id)
            if found is None:
                found = self._by_log[log_id] = AppendCoalescer(send, self._config)
            return found

    def forget(self, log_id: int) -> None:
        """The log was deleted: its coalescer is no longer handed out (handles that have it keep it,
        and their appends fail as the store refuses them)."""
        with self._lock:
            self._by_log.pop(log_id, None)

    def __contains__(self, log_id: int) -> bool:
        return log_id in self._by_log

    def __len__(self) -> int:
        return len(self._by_log)

    def close(self, drain_s: float) -> None:
        """Let what was appended go out (waiting up to ``drain_s`` in all), then refuse more."""
        with self._lock:
            self._closed = True
            coalescers = list(self._by_log.values())
        for coalescer in coalescers:
            coalescer.drain(drain_s)
        for coalescer in coalescers:
            coalescer.close()
