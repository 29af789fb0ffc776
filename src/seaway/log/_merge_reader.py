"""A reader of a replicated log: it asks every node of the node set and merges, with LogDevice's
gap rules (see :mod:`_replication`).

Each node answers with its copies in LSN order up to what it may release, and how far it has sent
(its *next LSN*). Let N be the next LSN to deliver:

- if some node of N's epoch's node set sent a copy of N, deliver it (the copy that wins a digest, if
  they differ): a record, a HOLE (a plugged slot) or a BRIDGE (the rest of the epoch);
- else, if every node of that node set is past N, report a gap at once; if an f-majority is, report
  it after a grace period without a copy of N coming; else wait (a node that is behind may hold N);
- the gap ends before the smallest LSN at or past which a node that is past N holds something; it is
  TRIM up to the trim point, BRIDGE if it ends in a later epoch, and DATALOSS if it ends in the same
  one (every slot of an epoch is a record, a hole or after the bridge, so a slot no f-majority holds
  is one whose copies are gone).

It is a state machine: the driver sends the :class:`ReadFrom` requests :meth:`requests` returns,
feeds back the replies, and calls :meth:`take` for what can be delivered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seaway.log._lsn import LSN_MAX, epoch_of
from seaway.log._replication import Copy, EpochRecord, Kind, ReadFrom, ReadReply, epoch_end
from seaway.log._types import Gap, GapType, ReadItem, Record

GRACE_MS = 100
"""LogDevice's gap grace period: how long an f-majority past an LSN waits for a copy of it."""
BUFFERED_MAX = 65_536
BUFFERED_BYTES_MAX = 32 << 20
"""A node is not asked for more while the reader holds this many payload bytes of it (a reader that
waits for an f-majority keeps what the others sent, and records are up to 1 MiB)."""


@dataclass
class _Node:
    next_lsn: int
    copies: dict[int, Copy] = field(default_factory=dict)
    asked: bool = False
    trim: int = 0
    size: int = 0
    """The payload bytes of ``copies``."""

    def put(self, copy: Copy) -> None:
        old = self.copies.get(copy.lsn)
        self.size += len(copy.payload) - (len(old.payload) if old is not None else 0)
        self.copies[copy.lsn] = copy

    def pop(self, lsn: int) -> None:
        old = self.copies.pop(lsn, None)
        if old is not None:
            self.size -= len(old.payload)


class MergeReader:
    def __init__(self, log_id: int, record: EpochRecord, start_lsn: int, until_lsn: int = LSN_MAX, *,
                 grace_ms: int = GRACE_MS, reader_id: int = 0, trim_point: int = 0) -> None:
        self.log_id = log_id
        self.record = record
        self.next_lsn = start_lsn
        self.until_lsn = until_lsn
        self.grace_ms = grace_ms
        self.reader_id = reader_id
        self._nodes: dict[int, _Node] = {}
        self._grace_from: int | None = None
        self.trim_point = trim_point
        """The log's trim point as far as the reader knows (the durable one it was given, or a
        node's): nothing at or below it is delivered, whichever node still holds a copy."""
        self.needs_record = False
        """Set when N is in an epoch the record does not know yet: the driver reads it again."""

    @property
    def done(self) -> bool:
        return self.next_lsn > self.until_lsn

    def update_record(self, record: EpochRecord) -> None:
        if record.epoch >= self.record.epoch:
            self.record = record
        self.needs_record = False

    def _node(self, node: int) -> _Node:
        state = self._nodes.get(node)
        if state is None:
            state = self._nodes[node] = _Node(self.next_lsn)
        return state

    def _current_nodes(self) -> tuple[int, ...]:
        """The nodes to ask: those of the node sets from N's epoch on."""
        epoch = epoch_of(self.next_lsn)
        history = self.record.history
        out: list[int] = []
        for i, entry in enumerate(history):
            if i + 1 == len(history) or history[i + 1].since_epoch > epoch:
                out.extend(n for n in entry.nodes if n not in out)
        return tuple(out)

    def requests(self, max_copies: int = 256) -> list[tuple[int, ReadFrom]]:
        """(node, request) for each node to ask now (one request in flight per node)."""
        if self.done:
            return []
        out = []
        for node in self._current_nodes():
            state = self._node(node)
            if not state.asked and len(state.copies) < BUFFERED_MAX and state.size < BUFFERED_BYTES_MAX:
                state.asked = True
                ask = max(state.next_lsn, self.next_lsn)
                out.append((node, ReadFrom(self.log_id, ask, max_copies, self.reader_id)))
        return out

    def lost(self, node: int) -> None:
        """A request to ``node`` got no answer (timed out): it may be asked again."""
        if node in self._nodes:
            self._nodes[node].asked = False

    def on_reply(self, reply: ReadReply) -> None:
        state = self._node(reply.node)
        state.asked = False
        state.trim = max(state.trim, reply.trim_point)
        if reply.trim_point > self.trim_point:
            self.trim_point = reply.trim_point
            for other in self._nodes.values():
                for trimmed in [k for k in other.copies if k <= self.trim_point]:
                    other.pop(trimmed)
        for copy in reply.copies:
            if copy.lsn >= self.next_lsn and copy.lsn > self.trim_point:
                old = state.copies.get(copy.lsn)
                if old is None or copy.precedence() > old.precedence():
                    state.put(copy)
        state.next_lsn = max(state.next_lsn, reply.next_lsn)

    def take(self, now_ms: int) -> list[ReadItem]:
        """What can be delivered now, in order."""
        out: list[ReadItem] = []
        while not self.done:
            n = self.next_lsn
            if n <= self.trim_point:
                hi = min(self.trim_point, self.until_lsn)
                self._advance(hi + 1)
                out.append(Gap(self.log_id, GapType.TRIM, n, hi))
                continue
            epoch = epoch_of(n)
            if epoch > self.record.epoch:
                self.needs_record = True
                break
            node_set = self.record.node_set(epoch)
            states = [self._node(node) for node in node_set.nodes]
            copies = [s.copies[n] for s in states if n in s.copies]
            if copies:
                best = max(copies, key=Copy.precedence)
                self._deliver(best, out)
                continue
            behind = sum(1 for s in states if s.next_lsn <= n)
            passed = [s for s in states if s.next_lsn > n]
            if behind:
                if len(passed) < node_set.f_majority:
                    self._grace_from = None
                    break
                if self._grace_from is None:
                    self._grace_from = now_ms
                if now_ms - self._grace_from < self.grace_ms:
                    break
            end = min(min((lsn for lsn in s.copies if lsn > n), default=s.next_lsn) for s in passed)
            hi = min(end - 1, self.until_lsn)
            if hi <= max(self.trim_point, *(s.trim for s in states)):
                kind = GapType.TRIM
            elif epoch_of(end) == epoch:
                kind = GapType.DATALOSS
            else:
                kind = GapType.BRIDGE
            self._advance(hi + 1)
            out.append(Gap(self.log_id, kind, n, hi))
        return out

    def _deliver(self, copy: Copy, out: list[ReadItem]) -> None:
        n = copy.lsn
        if copy.kind is Kind.RECORD:
            out.append(Record(self.log_id, n, copy.timestamp_ms, copy.payload))
            self._advance(n + 1)
        elif copy.kind is Kind.HOLE:
            out.append(Gap(self.log_id, GapType.HOLE, n, n))
            self._advance(n + 1)
        else:
            hi = min(epoch_end(epoch_of(n)), self.until_lsn)
            out.append(Gap(self.log_id, GapType.BRIDGE, n, hi))
            self._advance(hi + 1)

    def _advance(self, lsn: int) -> None:
        step = lsn == self.next_lsn + 1
        old_n = self.next_lsn
        self.next_lsn = lsn
        self._grace_from = None
        for state in self._nodes.values():
            if step:
                state.pop(old_n)
            elif state.copies:
                for old in [k for k in state.copies if k < lsn]:
                    state.pop(old)
