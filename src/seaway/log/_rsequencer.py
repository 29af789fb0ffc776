"""The sequencer of a replicated log, as a state machine (see :mod:`_replication`).

It activates by taking the next epoch from the epoch store (compare-and-set of the log's record), then
recovers every epoch not yet clean:

1. **seal** the node sets of those epochs: each node promises to accept nothing from a lower ballot
   and sends its digest (its copies above the last known good ESN it was told);
2. once an f-majority (and at least R nodes) of each epoch's node set answered (and the others had a
   grace period), **decide** each slot above the highest last known good: the winning copy if it is a
   record, else a hole; a bridge after the last record; holes after the bridge up to the last slot
   any digest held;
3. **mutate**: write each decision, as a recovery write of this epoch, on every node that answered;
4. **clean**: tell those nodes the epochs are clean; then mark them clean in the epoch store, with
   what each recovery kept (nodes that missed it purge by that when they return);
5. **release** the new epoch: only now do readers move past the old one.

Appends wait until then. An append is stored on R nodes of the node set (a copy set that turns with
the ESN, skipping nodes that timed out lately); when a copy set does not answer in time a new wave goes
to another. It is acknowledged once it and every ESN before it are on R nodes (the last known good),
and released to readers at once. A node that refuses a store or a seal because a newer sequencer
sealed it ends this one: its appends fail (retriable) and the client goes elsewhere.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from enum import Enum

from seaway.errors import (
    InvalidArgumentError,
    LogDeletedError,
    LogSealedError,
    PreemptedError,
    SeawayError,
    TailMismatchError,
    UnavailableError,
)
from seaway.log._lsn import ESN_MAX, epoch_of, esn_of, make_lsn
from seaway.log._replication import (
    RECOVERIES_KEPT,
    Acked,
    Activate,
    Append,
    AppendBatch,
    Clean,
    Cleaned,
    Copy,
    EpochRecord,
    EpochRecordRead,
    EpochRecordSet,
    Finish,
    Kind,
    NodeSet,
    ReadEpochRecord,
    Recovered,
    Refused,
    Release,
    Seal,
    Sealed,
    Send,
    SetEpochRecord,
    Store,
    Stored,
    TailQuery,
)

Request = Append | AppendBatch | Finish | TailQuery
"""What waits in a sequencer's queue, in the order it came."""
NEVER_WRITTEN = make_lsn(1, 0)
"""The tail of a log whose first epoch has no record yet: reported as 0, as on one node."""


def visible_tail(lsn: int) -> int:
    """A tail as users see it: 0 for a log never written."""
    return 0 if lsn == NEVER_WRITTEN else lsn


@dataclass(frozen=True, slots=True)
class ClusterSequencerConfig:
    store_timeout_ms: int = 200
    """A wave that has not got R copies by then is sent again, to other nodes."""
    window_max: int = 1024
    """Appends stored at once; more wait in a queue."""
    window_bytes_max: int = 16 << 20
    """Payload bytes stored at once (at least one append): a node's unacknowledged copies, which its
    digest carries to the next sequencer in one message, stay well below what a message may carry."""
    queue_max: int = 100_000
    seal_grace_ms: int = 30
    """How long recovery waits for nodes beyond an f-majority to answer its seal."""
    recovery_timeout_ms: int = 1_000
    """A recovery step (mutation or clean) not finished by then starts over, under a new epoch."""
    release_interval_ms: int = 500
    """How often the release point is sent again to every node (for nodes that restarted)."""
    graylist_ms: int = 2_000
    """How long a node that did not answer a store in time is skipped in new copy sets."""

    def __post_init__(self) -> None:
        for name in ("store_timeout_ms", "window_max", "window_bytes_max", "queue_max", "seal_grace_ms",
                     "recovery_timeout_ms", "release_interval_ms", "graylist_ms"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be at least 1")


class ClusterSequencerState(Enum):
    IDLE = "idle"
    READING = "reading the epoch record"
    TAKING = "taking an epoch"
    SEALING = "sealing"
    MUTATING = "mutating"
    CLEANING = "cleaning"
    MARKING = "marking epochs clean"
    ACTIVE = "active"
    FINISHING = "writing the final LSN"
    PREEMPTED = "preempted"


@dataclass
class _Slot:
    request_id: int
    copy: Copy
    copyset: tuple[int, ...]
    deadline_ms: int
    acks: set[int] = field(default_factory=set)
    client: int = 0
    ack: bool = True
    """Whether its caller is answered when it is acknowledged (a batch: at its last record)."""


@dataclass
class _Recovery:
    epochs: list[int]
    nodes: set[int]
    """Every node of the node sets of the epochs recovered."""
    started_ms: int
    enough_ms: int | None = None
    sealed: dict[int, Sealed] = field(default_factory=dict)
    outcomes: list[Recovered] = field(default_factory=list)
    pending: set[tuple[int, int]] = field(default_factory=set)
    """(node, lsn) of mutation writes not yet answered."""
    mutations: list[tuple[int, Copy]] = field(default_factory=list)
    cleaned: set[int] = field(default_factory=set)
    participants: set[int] = field(default_factory=set)
    step_deadline_ms: int = 0


class ClusterSequencer:
    def __init__(self, log_id: int, node: int, config: ClusterSequencerConfig | None = None) -> None:
        self.log_id = log_id
        self.node = node
        self.config = config or ClusterSequencerConfig()
        self.state = ClusterSequencerState.IDLE
        self.epoch = 0
        self.error: SeawayError | None = None
        self._record = EpochRecord()
        self._version = -1
        self._wanted: Activate = Activate(log_id)
        self._recovery: _Recovery | None = None
        self._next_esn = 1
        self._next_send = 1
        """The ESN of the first slot not stored yet (a batch's slots beyond the window wait)."""
        self._lng = 0
        self._slots: dict[int, _Slot] = {}
        self._window_bytes = 0
        self._queue: deque[Request] = deque()
        self._graylist: dict[int, int] = {}
        self._next_release_ms = 0
        self.stamp_offset_ms = 0
        """Added to the clock's milliseconds to stamp records (a node's wall clock; 0 in the simulator)."""
        self.final: int | None = None
        """The log's final LSN once it is known sealed for good."""
        self._finishing: Finish | None = None

    @property
    def node_set(self) -> NodeSet:
        return self._record.node_set(self.epoch)

    @property
    def last_known_good(self) -> int:
        return make_lsn(self.epoch, self._lng)

    def handle(self, sender: int, message: object, now_ms: int) -> list[object]:
        out: list[object] = []
        if isinstance(message, (Append, AppendBatch, Finish, TailQuery)):
            self._on_append(message, now_ms, out)
        elif isinstance(message, Activate):
            if self.state is ClusterSequencerState.ACTIVE:  # a reader or client checks on it: release again
                self._send_release(now_ms, out)
            elif self.state is ClusterSequencerState.IDLE:
                self._wanted = message
                self.state = ClusterSequencerState.READING
                out.append(ReadEpochRecord(self.log_id))
        elif isinstance(message, EpochRecordRead):
            self._on_record(message, now_ms, out)
        elif isinstance(message, EpochRecordSet):
            self._on_record_set(message, now_ms, out)
        elif isinstance(message, Stored):
            self._on_stored(message, now_ms, out)
        elif isinstance(message, Sealed):
            self._on_sealed(message, now_ms, out)
        elif isinstance(message, Cleaned):
            self._on_cleaned(message, now_ms, out)
        return out

    def tick(self, now_ms: int) -> list[object]:
        out: list[object] = []
        state = self.state
        if state is ClusterSequencerState.ACTIVE:
            for slot in list(self._slots.values()):
                if slot.copyset and len(slot.acks) < self.node_set.replication and now_ms >= slot.deadline_ms:
                    self._new_wave(slot, now_ms, out)
            if now_ms >= self._next_release_ms:
                self._send_release(now_ms, out)
        elif self._recovery is not None:
            rec = self._recovery
            if state is ClusterSequencerState.SEALING:
                if rec.enough_ms is not None and now_ms >= rec.enough_ms + self.config.seal_grace_ms:
                    self._decide(now_ms, out)
                elif now_ms >= rec.step_deadline_ms:  # seal again whoever has not answered
                    rec.step_deadline_ms = now_ms + self.config.store_timeout_ms
                    for node in sorted(rec.nodes - set(rec.sealed)):
                        out.append(Send(node, Seal(self.log_id, self.epoch, self._record.lce)))
            elif state in (ClusterSequencerState.MUTATING, ClusterSequencerState.CLEANING) \
                    and now_ms >= rec.step_deadline_ms:
                # A node stopped answering: start over without it, under a new epoch. Sealing again
                # with this one could decide a slot otherwise than the first try did (another
                # f-majority answers), and both decisions would carry the same ballot: a node holding
                # the first would keep it through its purge.
                self._recovery = None
                self.state = ClusterSequencerState.READING
                out.append(ReadEpochRecord(self.log_id))
        return out

    # --- activation ------------------------------------------------------------------------------

    def _on_record(self, msg: EpochRecordRead, now_ms: int, out: list[object]) -> None:
        if self.state is not ClusterSequencerState.READING:
            return
        record = msg.record
        if record.deleted:
            self._fail(LogDeletedError(f"log {self.log_id} was deleted"), out)
            return
        if record.final is not None:
            self.final = record.final
            self._fail(LogSealedError(f"log {self.log_id} is sealed at LSN {record.final:#x}"), out)
            return
        if self.epoch and record.epoch != self.epoch:  # starting over, and a newer sequencer took an epoch
            self._fail(PreemptedError(f"log {self.log_id}: another sequencer took epoch {record.epoch}"), out)
            return
        new_epoch = record.epoch + 1
        history = record.history
        wanted = self._wanted
        if wanted.node_set is not None:
            replication = wanted.replication or (history[-1].replication if history else 1)
            entry = NodeSet(new_epoch, tuple(wanted.node_set), replication)
            if not history or (history[-1].nodes, history[-1].replication) != (entry.nodes, entry.replication):
                history = (*history, entry)
        if not history:
            self._fail(InvalidArgumentError(f"log {self.log_id} has no node set"), out)
            return
        if new_epoch > 2**32 - 2:
            self._fail(InvalidArgumentError(f"log {self.log_id} ran out of epochs"), out)
            return
        self._record = replace(record, epoch=new_epoch, history=history)
        self._version = msg.version
        self.state = ClusterSequencerState.TAKING
        out.append(SetEpochRecord(self.log_id, self._record, msg.version))

    def _on_record_set(self, msg: EpochRecordSet, now_ms: int, out: list[object]) -> None:
        if self.state is ClusterSequencerState.FINISHING:
            finish = self._finishing
            assert finish is not None
            self._finishing = None
            if not msg.ok:
                self._fail(PreemptedError(f"log {self.log_id}: a newer sequencer changed the epoch record"), out)
                return
            self._version = msg.version
            final = self._record.final
            assert final is not None
            self.final = final
            out.append(Acked(finish.request_id, final, finish.client))
            if finish.delete:
                self._fail(LogDeletedError(f"log {self.log_id} was deleted"), out)
            else:
                self._fail(LogSealedError(f"log {self.log_id} is sealed at LSN {final:#x}"), out)
            return
        if self.state is ClusterSequencerState.TAKING:
            if not msg.ok:  # another sequencer took an epoch meanwhile: it is the newer one
                self._fail(PreemptedError(f"log {self.log_id}: another sequencer took an epoch first"), out)
                return
            self._version = msg.version
            self.epoch = self._record.epoch
            if self._record.lce >= self.epoch - 1:
                self._activate(now_ms, out)
            else:
                self._start_recovery(now_ms, out)
        elif self.state is ClusterSequencerState.MARKING:
            if not msg.ok:
                self._fail(PreemptedError(f"log {self.log_id}: a newer sequencer changed the epoch record"), out)
                return
            self._version = msg.version
            self._activate(now_ms, out)

    # --- recovery --------------------------------------------------------------------------------

    def _start_recovery(self, now_ms: int, out: list[object]) -> None:
        epochs = list(range(self._record.lce + 1, self.epoch))
        nodes = {n for e in epochs for n in self._record.node_set(e).nodes}
        self._recovery = _Recovery(epochs, nodes, now_ms, step_deadline_ms=now_ms + self.config.store_timeout_ms)
        self.state = ClusterSequencerState.SEALING
        for node in sorted(nodes):
            out.append(Send(node, Seal(self.log_id, self.epoch, self._record.lce)))

    def _enough_sealed(self, rec: _Recovery) -> bool:
        for epoch in rec.epochs:
            node_set = self._record.node_set(epoch)
            answered = sum(1 for n in node_set.nodes if n in rec.sealed)
            if answered < max(node_set.f_majority, node_set.replication):
                return False
        return True

    def _on_sealed(self, msg: Sealed, now_ms: int, out: list[object]) -> None:
        rec = self._recovery
        if self.state is not ClusterSequencerState.SEALING or rec is None or msg.by != self.epoch:
            return
        if msg.preempted_by > self.epoch:
            self._fail(PreemptedError(f"log {self.log_id}: sealed by epoch {msg.preempted_by}"), out)
            return
        rec.sealed[msg.node] = msg
        if rec.enough_ms is None and self._enough_sealed(rec):
            rec.enough_ms = now_ms
        if rec.enough_ms is not None and set(rec.sealed) >= rec.nodes:
            self._decide(now_ms, out)

    def _decide(self, now_ms: int, out: list[object]) -> None:
        rec = self._recovery
        assert rec is not None
        mutations: list[tuple[int, Copy]] = []
        for epoch in rec.epochs:
            node_set = self._record.node_set(epoch)
            answered = [rec.sealed[n] for n in node_set.nodes if n in rec.sealed]
            lng = max((lng for s in answered for e, lng in s.lngs if e == epoch), default=0)
            winners: dict[int, Copy] = {}
            for sealed in answered:
                for copy in sealed.digest:
                    esn = esn_of(copy.lsn)
                    if epoch_of(copy.lsn) != epoch or esn <= lng:
                        continue
                    best = winners.get(esn)
                    if best is None or copy.precedence() > best.precedence():
                        winners[esn] = copy
            last_record = max((esn for esn, c in winners.items() if c.kind is Kind.RECORD), default=lng)
            bridge = last_record + 1
            last = max([bridge, *winners])
            if last > ESN_MAX:
                last = bridge = ESN_MAX
            for esn in range(lng + 1, last + 1):
                won = winners.get(esn)
                if esn < bridge and won is not None and won.kind is Kind.RECORD:
                    copy = replace(won, recovery_epoch=self.epoch, wave=0)
                else:
                    kind = Kind.BRIDGE if esn == bridge else Kind.HOLE
                    copy = Copy(make_lsn(epoch, esn), kind, recovery_epoch=self.epoch, wave=0)
                for sealed in answered:
                    mutations.append((sealed.node, copy))
            rec.participants.update(s.node for s in answered)
            rec.outcomes.append(Recovered(epoch, lng, self.epoch))
        rec.mutations = mutations
        rec.pending = {(node, copy.lsn) for node, copy in mutations}
        rec.step_deadline_ms = now_ms + self.config.recovery_timeout_ms
        self.state = ClusterSequencerState.MUTATING
        for node, copy in mutations:
            out.append(Send(node, Store(self.log_id, copy)))
        if not rec.pending:
            self._clean(now_ms, out)

    def _on_stored_in_recovery(self, msg: Stored, now_ms: int, out: list[object]) -> None:
        rec = self._recovery
        if rec is None or self.state is not ClusterSequencerState.MUTATING or msg.recovery_epoch != self.epoch:
            return
        if msg.preempted_by:
            self._fail(PreemptedError(f"log {self.log_id}: sealed by epoch {msg.preempted_by}"), out)
            return
        rec.pending.discard((msg.node, msg.lsn))
        if not rec.pending:
            self._clean(now_ms, out)

    def _clean(self, now_ms: int, out: list[object]) -> None:
        rec = self._recovery
        assert rec is not None
        self.state = ClusterSequencerState.CLEANING
        rec.step_deadline_ms = now_ms + self.config.recovery_timeout_ms
        for node in sorted(rec.participants):
            out.append(Send(node, Clean(self.log_id, self.epoch, self._record.lce)))
        if not rec.participants:
            self._mark_clean(out)

    def _on_cleaned(self, msg: Cleaned, now_ms: int, out: list[object]) -> None:
        rec = self._recovery
        if rec is None or self.state is not ClusterSequencerState.CLEANING or msg.by != self.epoch:
            return
        rec.cleaned.add(msg.node)
        if rec.cleaned >= rec.participants:
            self._mark_clean(out)

    def _mark_clean(self, out: list[object]) -> None:
        rec = self._recovery
        assert rec is not None
        kept = {r.epoch: r for r in self._record.recovered}
        kept.update((r.epoch, r) for r in rec.outcomes)
        recovered = tuple(sorted(kept.values(), key=lambda r: r.epoch)[-RECOVERIES_KEPT:])
        self._record = replace(self._record, lce=self.epoch - 1, recovered=recovered)
        self.state = ClusterSequencerState.MARKING
        out.append(SetEpochRecord(self.log_id, self._record, self._version))

    # --- appends ---------------------------------------------------------------------------------

    def _activate(self, now_ms: int, out: list[object]) -> None:
        self.state = ClusterSequencerState.ACTIVE
        self._recovery = None
        self._send_release(now_ms, out)
        self._fill(now_ms, out)

    def _answer_ended(self, msg: Request, out: list[object]) -> None:
        """A request to a sequencer that has ended: a sealed log still answers its tail and a seal."""
        assert self.error is not None
        if self.final is not None and isinstance(self.error, LogSealedError) and (
                isinstance(msg, TailQuery) or (isinstance(msg, Finish) and not msg.delete)):
            out.append(Acked(msg.request_id, self.final, msg.client))
        else:
            out.append(Refused(msg.request_id, self.error, msg.client))

    def _on_append(self, msg: Request, now_ms: int, out: list[object]) -> None:
        if self.state is ClusterSequencerState.PREEMPTED:
            self._answer_ended(msg, out)
            return
        if isinstance(msg, TailQuery) and self.state is ClusterSequencerState.ACTIVE and self._finishing is None:
            out.append(Acked(msg.request_id, visible_tail(self.last_known_good), msg.client))
            return
        if len(self._queue) >= self.config.queue_max:
            out.append(Refused(msg.request_id, UnavailableError(f"log {self.log_id}: the sequencer's queue is full"),
                                msg.client))
            return
        self._queue.append(msg)
        if self.state is ClusterSequencerState.IDLE:
            self.state = ClusterSequencerState.READING
            out.append(ReadEpochRecord(self.log_id))
        elif self.state is ClusterSequencerState.ACTIVE:
            self._fill(now_ms, out)

    def _fill(self, now_ms: int, out: list[object]) -> None:
        while self._queue and len(self._slots) < self.config.window_max \
                and self.state is ClusterSequencerState.ACTIVE:
            head = self._queue[0]
            if isinstance(head, TailQuery):
                self._queue.popleft()
                out.append(Acked(head.request_id, visible_tail(self.last_known_good), head.client))
                continue
            if isinstance(head, Finish):
                if self._slots:  # every append before it is decided first
                    return
                self._queue.popleft()
                self._finish(head, out)
                return
            payloads = (head.payload,) if isinstance(head, Append) else head.payloads
            size = sum(map(len, payloads))
            if self._slots and (self._window_bytes + size > self.config.window_bytes_max
                                or len(self._slots) + len(payloads) > self.config.window_max):
                return
            if self._next_esn + len(payloads) > ESN_MAX:  # the epoch is full: the next sequencer takes a new one
                self._fail(UnavailableError(f"log {self.log_id}: epoch {self.epoch} is full"), out)
                return
            self._queue.popleft()
            if isinstance(head, AppendBatch) and head.if_tail is not None:
                last = visible_tail(make_lsn(self.epoch, self._next_esn - 1))
                if last != head.if_tail:
                    out.append(Refused(head.request_id, TailMismatchError(
                        f"log {self.log_id}: the tail is {last:#x}, not {head.if_tail:#x}"), head.client))
                    continue
            stamp = now_ms + self.stamp_offset_ms
            for i, payload in enumerate(payloads):
                esn = self._next_esn
                self._next_esn += 1
                copy = Copy(make_lsn(self.epoch, esn), Kind.RECORD, payload, wave=1, timestamp_ms=stamp)
                slot = _Slot(head.request_id, copy, (), 0, client=head.client, ack=i == len(payloads) - 1)
                self._slots[esn] = slot
                self._window_bytes += len(payload)
            self._send_held(now_ms, out)

    def _send_held(self, now_ms: int, out: list[object]) -> None:
        """Store the slots not sent yet that are within the window above the last known good: a batch
        larger than the window gets its ESNs at once, and its stores as the window moves (all at once,
        they would outlast the store timeout and every one be sent again, and again)."""
        while self._next_send <= self._lng + self.config.window_max:
            slot = self._slots.get(self._next_send)
            if slot is None:
                return
            self._next_send += 1
            self._send_wave(slot, now_ms, out)

    def _finish(self, msg: Finish, out: list[object]) -> None:
        """Write the final LSN (and the deletion) into the epoch record: no sequencer takes an epoch
        after it, so nothing is appended past it."""
        final = visible_tail(self.last_known_good)
        self._record = replace(self._record, final=final, deleted=msg.delete)
        self._finishing = msg
        self.state = ClusterSequencerState.FINISHING
        out.append(SetEpochRecord(self.log_id, self._record, self._version))

    def _copyset(self, esn: int, now_ms: int, avoid: set[int]) -> tuple[int, ...]:
        node_set = self.node_set
        nodes = node_set.nodes
        start = esn % len(nodes)
        turned = nodes[start:] + nodes[:start]
        good = [n for n in turned if n not in avoid and self._graylist.get(n, 0) <= now_ms]
        if len(good) < node_set.replication:
            good += [n for n in turned if n not in good and n not in avoid]
        if len(good) < node_set.replication:
            good += [n for n in turned if n not in good]
        return tuple(good[:node_set.replication])

    def _send_wave(self, slot: _Slot, now_ms: int, out: list[object], avoid: set[int] | None = None) -> None:
        slot.copyset = self._copyset(esn_of(slot.copy.lsn), now_ms, avoid or set())
        slot.deadline_ms = now_ms + self.config.store_timeout_ms
        slot.acks = set()
        for node in slot.copyset:
            out.append(Send(node, Store(self.log_id, slot.copy, self._lng)))

    def _new_wave(self, slot: _Slot, now_ms: int, out: list[object]) -> None:
        silent = set(slot.copyset) - slot.acks
        for node in silent:
            self._graylist[node] = now_ms + self.config.graylist_ms
        slot.copy = replace(slot.copy, wave=slot.copy.wave + 1)
        self._send_wave(slot, now_ms, out, avoid=silent)

    def _on_stored(self, msg: Stored, now_ms: int, out: list[object]) -> None:
        if msg.recovery_epoch:
            self._on_stored_in_recovery(msg, now_ms, out)
            return
        if self.state is not ClusterSequencerState.ACTIVE or epoch_of(msg.lsn) != self.epoch:
            return
        if msg.preempted_by:
            self._fail(PreemptedError(f"log {self.log_id}: sealed by epoch {msg.preempted_by}"), out)
            return
        slot = self._slots.get(esn_of(msg.lsn))
        if slot is None or msg.wave != slot.copy.wave or msg.node not in slot.copyset:
            return
        slot.acks.add(msg.node)
        if len(slot.acks) < self.node_set.replication:
            return
        reaped = False
        while (head := self._slots.get(self._lng + 1)) is not None and len(head.acks) >= self.node_set.replication:
            del self._slots[self._lng + 1]
            self._window_bytes -= len(head.copy.payload)
            self._lng += 1
            if head.ack:
                out.append(Acked(head.request_id, head.copy.lsn, head.client))
            reaped = True
        if reaped:
            self._send_release(now_ms, out)
            self._send_held(now_ms, out)
            self._fill(now_ms, out)

    def _send_release(self, now_ms: int, out: list[object]) -> None:
        self._next_release_ms = now_ms + self.config.release_interval_ms
        lsn = make_lsn(self.epoch, self._lng)
        nodes = {n for entry in self._record.history if entry.since_epoch <= self.epoch for n in entry.nodes}
        for node in sorted(nodes):
            out.append(Send(node, Release(self.log_id, lsn)))

    def fail(self, error: SeawayError) -> list[object]:
        """Give up (the driver could not reach the epoch store): every append waiting is refused."""
        out: list[object] = []
        self._fail(error, out)
        return out

    def _fail(self, error: SeawayError, out: list[object]) -> None:
        self.state = ClusterSequencerState.PREEMPTED
        self.error = error
        self._recovery = None
        for slot in self._slots.values():
            if slot.ack:
                out.append(Refused(slot.request_id, error, slot.client))
        if self._finishing is not None:
            out.append(Refused(self._finishing.request_id, error, self._finishing.client))
            self._finishing = None
        for msg in self._queue:
            self._answer_ended(msg, out)
        self._slots.clear()
        self._window_bytes = 0
        self._queue.clear()
