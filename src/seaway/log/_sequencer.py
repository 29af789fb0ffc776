"""The sequencer of one log, as a state machine with no I/O.

It issues LSNs in its epoch, sends each append to storage, plugs slots whose append failed, and
releases LSNs to readers once every LSN below is decided (stored or plugged). It gets its epoch from
the epoch store and seals the epochs before it, so that a sequencer it replaced can store nothing more.

States: INACTIVE (no epoch) -> ACTIVATING (waiting for an epoch, then for the seal) -> ACTIVE.
An ACTIVE sequencer returns to INACTIVE when preempted, when its ESNs run out, or when a slot can be
neither stored nor plugged; the next append activates it again in a higher epoch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum

from seaway._invariant import invariant
from seaway._values import ProducerMark
from seaway.errors import (
    InvalidArgumentError,
    OverloadedError,
    PreemptedError,
    SeawayError,
    TailMismatchError,
    TimedOutError,
)
from seaway.log._lsn import EPOCH_MAX, ESN_FIRST, ESN_MAX, lsn_str, make_lsn
from seaway.log._protocol import (
    AppendAcked,
    AppendFailed,
    AppendRequest,
    EpochFailed,
    EpochGranted,
    PlugMsg,
    ReleaseMsg,
    RequestEpoch,
    SealMsg,
    SealReply,
    SequencerEffect,
    SequencerEvent,
    StoreMsg,
    StoreReply,
    Tick,
)


@dataclass(frozen=True)
class SequencerConfig:
    store_timeout_ms: int = 10_000
    """How long a store or plug may go unanswered before it is sent again."""
    store_attempts_max: int = 3
    """Sends of one store before the append fails and its slot is plugged."""
    plug_attempts_max: int = 5
    """Sends of one plug before the sequencer gives up its epoch."""
    seal_retry_ms: int = 100
    """How long after a failed seal the sequencer seals again (an unanswered one: ``store_timeout_ms``,
    the sooner of the two)."""
    in_flight_max: int = 4096
    """Appends sequenced but not yet decided; more wait in the queue."""
    queued_max: int = 65_536
    """Appends waiting for activation or for the window; more are refused as overloaded."""

    def __post_init__(self) -> None:
        if self.store_timeout_ms <= 0 or self.seal_retry_ms <= 0:
            raise InvalidArgumentError("store_timeout_ms and seal_retry_ms must be positive")
        if self.store_attempts_max < 1 or self.plug_attempts_max < 1:
            raise InvalidArgumentError("store_attempts_max and plug_attempts_max must be at least 1")
        if self.in_flight_max < 1 or self.queued_max < 1:
            raise InvalidArgumentError("in_flight_max and queued_max must be at least 1")


class SequencerState(Enum):
    INACTIVE = "INACTIVE"
    ACTIVATING = "ACTIVATING"
    ACTIVE = "ACTIVE"


class _SlotState(Enum):
    STORING = 1
    PLUGGING = 2
    DONE = 3


@dataclass(slots=True)
class _Slot:
    request_id: int
    first_lsn: int
    timestamp_ms: int
    payloads: tuple[bytes, ...]
    sync: bool
    producer: ProducerMark | None
    state: _SlotState
    attempts: int
    deadline_ms: int

    @property
    def last_lsn(self) -> int:
        return self.first_lsn + len(self.payloads) - 1


class Sequencer:
    """Sequencer of log ``log_id``. Feed events to :meth:`handle`; carry out what it returns."""

    def __init__(self, log_id: int, config: SequencerConfig | None = None) -> None:
        self.log_id = log_id
        self._config = config or SequencerConfig()
        self.state = SequencerState.INACTIVE
        self.epoch = 0
        self._sealed = False
        self._next_esn = ESN_FIRST
        self._last_timestamp_ms = 0
        self.released_lsn = 0
        self._slots: dict[int, _Slot] = {}  # by first LSN, in LSN order
        self._queue: deque[AppendRequest] = deque()
        self._seal_deadline_ms: int | None = None
        self._seal_attempts = 0

    @property
    def timed(self) -> bool:
        """Whether the sequencer has a deadline (cheap: :attr:`next_deadline_ms` walks the slots).
        A slot stays only while it or one below it is undecided."""
        return bool(self._slots) or self._seal_deadline_ms is not None

    @property
    def next_deadline_ms(self) -> int | None:
        pending = [s.deadline_ms for s in self._slots.values() if s.state is not _SlotState.DONE]
        if self._seal_deadline_ms is not None:
            pending.append(self._seal_deadline_ms)
        return min(pending, default=None)

    @property
    def in_flight(self) -> int:
        return len(self._slots)

    @property
    def idle(self) -> bool:
        """No append queued or undecided, and no epoch being taken: ``released_lsn`` is the tail."""
        return not self._slots and not self._queue and self.state is not SequencerState.ACTIVATING

    def _last_issued(self) -> int:
        """The log's last LSN as sequenced so far: the tail once every append in flight is decided."""
        if self._next_esn > ESN_FIRST:
            return make_lsn(self.epoch, self._next_esn - 1)
        return self.released_lsn  # a new epoch: the seal released everything stored before it

    def handle(self, event: SequencerEvent, now_ms: int) -> list[SequencerEffect]:
        out: list[SequencerEffect] = []
        if isinstance(event, AppendRequest):
            self._on_append(event, now_ms, out)
        elif isinstance(event, StoreReply):
            self._on_store_reply(event, now_ms, out)
        elif isinstance(event, EpochGranted):
            self._on_epoch(event, now_ms, out)
        elif isinstance(event, SealReply):
            self._on_seal_reply(event, now_ms, out)
        elif isinstance(event, EpochFailed):
            self._fail_queue(event.error, out)
            self.state = SequencerState.INACTIVE
        elif isinstance(event, Tick):
            self._on_tick(now_ms, out)
        return out

    # --- appends --------------------------------------------------------------------------------

    def _on_append(self, request: AppendRequest, now_ms: int, out: list[SequencerEffect]) -> None:
        invariant(len(request.payloads) > 0, "an append carries at least one record")
        if len(self._queue) >= self._config.queued_max:
            out.append(AppendFailed(request.request_id, OverloadedError(
                f"log {self.log_id}: {len(self._queue)} appends already queued")))
            return
        self._queue.append(request)
        if self.state is SequencerState.INACTIVE:
            self._activate(out)
        elif self.state is SequencerState.ACTIVE:
            self._drain(now_ms, out)

    def _activate(self, out: list[SequencerEffect]) -> None:
        self.state = SequencerState.ACTIVATING
        self._sealed = False
        out.append(RequestEpoch(self.log_id))

    def _drain(self, now_ms: int, out: list[SequencerEffect]) -> None:
        while self._queue and self.state is SequencerState.ACTIVE and len(self._slots) < self._config.in_flight_max:
            request = self._queue[0]
            if request.if_tail is not None and request.if_tail != self._last_issued():
                self._queue.popleft()
                out.append(AppendFailed(request.request_id, TailMismatchError(
                    f"log {self.log_id}: the tail is {lsn_str(self._last_issued())}, "
                    f"not {lsn_str(request.if_tail)}; nothing was appended")))
                continue
            count = len(request.payloads)
            if self._next_esn + count - 1 > ESN_MAX:
                # This epoch has no room for the batch: continue in a new one.
                self._activate(out)
                return
            self._queue.popleft()
            first = make_lsn(self.epoch, self._next_esn)
            self._next_esn += count
            self._last_timestamp_ms = max(self._last_timestamp_ms, now_ms)
            slot = _Slot(request.request_id, first, self._last_timestamp_ms, request.payloads,
                         request.sync, request.producer, _SlotState.STORING, 1, now_ms + self._config.store_timeout_ms)
            self._slots[first] = slot
            out.append(self._store_msg(slot))

    def _store_msg(self, slot: _Slot) -> StoreMsg:
        return StoreMsg(self.log_id, slot.first_lsn, slot.timestamp_ms, slot.payloads, slot.sync, slot.producer)

    def _plug_msg(self, slot: _Slot) -> PlugMsg:
        return PlugMsg(self.log_id, slot.first_lsn, len(slot.payloads), slot.timestamp_ms)

    # --- replies from storage -------------------------------------------------------------------

    def _on_store_reply(self, reply: StoreReply, now_ms: int, out: list[SequencerEffect]) -> None:
        slot = self._slots.get(reply.first_lsn)
        if slot is None or slot.state is _SlotState.DONE:
            return  # a duplicate reply to a retransmission
        if isinstance(reply.error, PreemptedError):
            self._preempted(reply.error, out)
            return
        if slot.state is _SlotState.STORING:
            if reply.error is None:
                slot.state = _SlotState.DONE
                out.append(AppendAcked(slot.request_id, slot.first_lsn, len(slot.payloads)))
            else:
                out.append(AppendFailed(slot.request_id, reply.error))
                self._start_plug(slot, now_ms, out)
        elif reply.error is None:
            slot.state = _SlotState.DONE
        else:
            self._retry_plug(slot, now_ms, out)
        self._release(out)
        self._drain(now_ms, out)

    def _start_plug(self, slot: _Slot, now_ms: int, out: list[SequencerEffect]) -> None:
        slot.state = _SlotState.PLUGGING
        slot.attempts = 1
        slot.deadline_ms = now_ms + self._config.store_timeout_ms
        out.append(self._plug_msg(slot))

    def _retry_plug(self, slot: _Slot, now_ms: int, out: list[SequencerEffect]) -> None:
        if slot.attempts >= self._config.plug_attempts_max:
            self._abandon_epoch(out)
            return
        slot.attempts += 1
        slot.deadline_ms = now_ms + self._config.store_timeout_ms
        out.append(self._plug_msg(slot))

    def _release(self, out: list[SequencerEffect]) -> None:
        released = self.released_lsn
        while self._slots:
            first = next(iter(self._slots))
            slot = self._slots[first]
            if slot.state is not _SlotState.DONE:
                break
            released = slot.last_lsn
            del self._slots[first]
        if released > self.released_lsn:
            self.released_lsn = released
            out.append(ReleaseMsg(self.log_id, released))

    def _on_tick(self, now_ms: int, out: list[SequencerEffect]) -> None:
        if self._seal_deadline_ms is not None and self._seal_deadline_ms <= now_ms:
            self._resend_seal(now_ms, out)
        if self.state is SequencerState.ACTIVE and self.released_lsn:
            # Release messages are idempotent and may be lost: repeat the latest on every tick.
            out.append(ReleaseMsg(self.log_id, self.released_lsn))
        for slot in list(self._slots.values()):
            if slot.state is _SlotState.DONE or slot.deadline_ms > now_ms:
                continue
            if slot.state is _SlotState.STORING:
                if slot.attempts < self._config.store_attempts_max:
                    slot.attempts += 1
                    slot.deadline_ms = now_ms + self._config.store_timeout_ms
                    out.append(self._store_msg(slot))
                else:
                    out.append(AppendFailed(slot.request_id, TimedOutError(
                        f"log {self.log_id}: store unanswered after {slot.attempts} attempts; "
                        "the append may or may not be stored")))
                    self._start_plug(slot, now_ms, out)
            else:
                self._retry_plug(slot, now_ms, out)
            if self.state is not SequencerState.ACTIVE:
                return

    # --- epochs ---------------------------------------------------------------------------------

    def _on_epoch(self, granted: EpochGranted, now_ms: int, out: list[SequencerEffect]) -> None:
        if self.state is not SequencerState.ACTIVATING:
            return
        invariant(granted.epoch > self.epoch, "the epoch store never goes backwards")
        if granted.epoch > EPOCH_MAX:
            self._fail_queue(PreemptedError(f"log {self.log_id}: epochs exhausted"), out)
            self.state = SequencerState.INACTIVE
            return
        self.epoch = granted.epoch
        self._next_esn = ESN_FIRST
        self._seal_attempts = 1
        self._seal_deadline_ms = now_ms + self._config.store_timeout_ms
        out.append(SealMsg(self.log_id, self.epoch - 1))

    def _resend_seal(self, now_ms: int, out: list[SequencerEffect]) -> None:
        """The seal went unanswered. Keep sealing (only a seal releases what is stored), but do not
        keep appends waiting for ever."""
        self._seal_attempts += 1
        if self._seal_attempts > self._config.store_attempts_max:
            self._fail_queue(TimedOutError(f"log {self.log_id}: no seal of {self._seal_attempts - 1} "
                                           "succeeded (unanswered or failed)"), out)
        self._seal_deadline_ms = now_ms + self._config.store_timeout_ms
        out.append(SealMsg(self.log_id, self.epoch - 1))

    def _on_seal_reply(self, reply: SealReply, now_ms: int, out: list[SequencerEffect]) -> None:
        if self.state is not SequencerState.ACTIVATING or reply.epoch != self.epoch - 1:
            return
        if reply.error is not None:
            # Not at once: storage that fails every write would answer at once again, and the two
            # would go on answering each other without a pause.
            retry_ms = now_ms + min(self._config.seal_retry_ms, self._config.store_timeout_ms)
            self._seal_deadline_ms = min(retry_ms, self._seal_deadline_ms or retry_ms)
            return
        self._seal_deadline_ms = None
        self.state = SequencerState.ACTIVE
        # Everything below the seal is decided: what is stored stays, the rest never will be.
        if reply.last_lsn > self.released_lsn:
            self.released_lsn = reply.last_lsn
            out.append(ReleaseMsg(self.log_id, reply.last_lsn))
        self._drain(now_ms, out)

    def _preempted(self, error: SeawayError, out: list[SequencerEffect]) -> None:
        """Another sequencer sealed this epoch: nothing undecided of ours can be stored any more."""
        for slot in self._slots.values():
            if slot.state is _SlotState.STORING:
                out.append(AppendFailed(slot.request_id, error))
        self._slots.clear()
        self._fail_queue(error, out)
        self.state = SequencerState.INACTIVE

    def _abandon_epoch(self, out: list[SequencerEffect]) -> None:
        """A slot can be neither stored nor plugged: leave this epoch; the next one is sealed above it."""
        for slot in self._slots.values():
            if slot.state is _SlotState.STORING:
                out.append(AppendFailed(slot.request_id, TimedOutError(
                    f"log {self.log_id}: epoch {self.epoch} abandoned; the append may or may not be stored")))
        self._slots.clear()
        # Activate again at once even with nothing queued: only the seal of a new epoch releases
        # what this epoch stored, and acknowledged records must become readable.
        self._activate(out)

    def _fail_queue(self, error: SeawayError, out: list[SequencerEffect]) -> None:
        while self._queue:
            out.append(AppendFailed(self._queue.popleft().request_id, error))
