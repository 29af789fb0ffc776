"""A consumer's cursor over one queue partition's log (or a FIFO claim's range of it).

The cursor holds the committed position, the position after what the current transaction
delivered (``pending``), a tailing reader and the chunks it read ahead. It walks the log by the
rules of :mod:`seaway.queues._chunks`, judging each chunk with a :class:`Judge`.
"""

from __future__ import annotations

import enum
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from seaway.errors import LogDeletedError, SeawayError, UnknownLogError
from seaway.log import Gap, Record, RecordRun
from seaway.queues._chunks import Budget, Chunk, Entry, Outcome, read_item
from seaway.queues._data import keys as data_keys
from seaway.queues._lag import prune
from seaway.queues._records import DataRef, Layout, Position, decode_record
from seaway.txn import AbortedJudges, Snapshot, Visibility

if TYPE_CHECKING:
    from seaway.queues._queues import Queues

log = logging.getLogger("seaway.queues")

CLAIMED_WAIT_S = 10.0
"""How long a consumer waits for the records of a range it claimed (they exist: this only bounds a
stalled connection)."""
TRIM_INTERVAL_S = 0.5
"""A consumer trims its partition's log to its committed position at most this often (a trim
is a call to the store; the log layer drops whole time partitions once every log in them is
trimmed)."""
READ_AHEAD_ITEMS = 64
"""Records (or gaps) a cursor takes from its reader at a time."""


class Judge:
    """Whether a chunk may be delivered: by the transaction's snapshot, and for a chunk that
    snapshot must wait at, by a fresher one taken while waiting (read committed: an entry committed
    after the transaction began is delivered, never one that is not committed); and a chunk either
    calls visible, by the aborted transactions its log lists (``aborted``: see
    :class:`~seaway.txn.LogJudge`)."""

    def __init__(self, snapshot: Snapshot, aborted: AbortedJudges) -> None:
        self.snapshot = snapshot
        self.fresh: Snapshot | None = None
        self.blocked = False
        self.blocked_by: int | None = None
        """The transaction (its write pointer) of the last chunk this judge had to wait at."""
        self._aborted = aborted

    def judge(self, write_pointer: int, log_id: int) -> Visibility:
        snapshot = self.snapshot
        visibility = snapshot.visibility(write_pointer)
        if visibility is Visibility.WAIT and self.fresh is not None:
            snapshot = self.fresh
            visibility = snapshot.visibility(write_pointer)
        if visibility is not Visibility.VISIBLE:
            if visibility is Visibility.WAIT:
                self.blocked, self.blocked_by = True, write_pointer
            return visibility
        return self._aborted.of(log_id).judge(snapshot, write_pointer, visibility)

    def of(self, log_id: int) -> Callable[[int], Visibility]:
        """This judge for the chunks of log ``log_id``."""
        return functools.partial(self.judge, log_id=log_id)


class Cursor:
    """Reading one partition: the committed position, the position after what was delivered in
    the current transaction, and the chunks read ahead."""

    def __init__(self, queues: Queues, slot: Slot, log_id: int, committed: Position,
                 until: int | None = None) -> None:
        self.queues = queues
        self.until = until
        """A FIFO claim's last LSN: the cursor ends after it (and never trims: others' claims
        may lie below)."""
        self.slot = slot
        self.generation = slot.generation
        self.log_id = log_id
        self.committed = committed
        self.pending = committed
        self.ended = False
        self._ahead: deque[Chunk | Gap] = deque()
        self._reader: Any = None
        self._trimmed = 0
        self._trimmed_s = 0.0
        self._log: Any = None

    def _open(self) -> Any:
        if self._reader is None:
            self._reader = self.queues.logs.reader(256, runs=True)
            self._reader.start_reading(self.log_id, max(1, self.committed.lsn),
                                       *(() if self.until is None else (self.until,)))
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _fill(self, timeout_s: float) -> None:
        """Read ahead: the next records (waiting up to ``timeout_s`` for the first), decoded; the
        data chunks their pointer chunks name start being read at once (see :func:`decoded`)."""
        if self.ended:
            return
        try:
            items = self._open().read(READ_AHEAD_ITEMS, timeout_s)
        except (LogDeletedError, UnknownLogError):
            # Deleted after the consumer chose to read it: at a resize's barrier, which deletes
            # only drained logs (nothing left to deliver), or with its group (whose next read of
            # the group record says so). Either way the log ended for this cursor.
            self.ended = True
            self.close()
            return
        self._ahead.extend(decoded(self.queues, items))

    def _resolve_head(self, chunk: Chunk) -> Chunk:
        """``chunk``, the first read ahead, with its payloads (read by now, or soon: asked for when
        it was read ahead), kept so (the next take may go on inside it)."""
        chunk = resolve_chunk(self.queues, chunk)
        self._ahead[0] = chunk
        return chunk

    def take(self, judge: Judge, budget: Budget, timeout_s: float) -> list[Entry]:
        """The entries from ``pending`` on that ``judge`` lets through, within ``budget``, waiting
        up to ``timeout_s`` for the first record. Stops before a chunk still in progress. A gap
        of trimmed entries above ``pending`` or of lost ones raises (and again at the next call)."""
        out: list[Entry] = []
        deadline = time.monotonic() + timeout_s
        judged = judge.of(self.log_id)
        outcome = Outcome.NEXT
        while not budget.spent:
            if self.until is not None and self.pending.lsn > self.until:
                break
            if not self._ahead:
                if self.ended:
                    break
                wait_s = max(0.0, deadline - time.monotonic()) if not out else 0.0
                if self.until is not None:  # a claimed range: its records are there, on their way
                    wait_s = max(wait_s, CLAIMED_WAIT_S)
                self._fill(wait_s)
                if not self._ahead:
                    break
            entries, self.pending, outcome = read_item(self._ahead[0], self.pending, judged, budget, self.log_id,
                                                       resolve=self._resolve_head)
            out.extend(entries)
            if outcome is Outcome.WAIT or outcome is Outcome.PARTIAL:
                break  # before a chunk in progress, or the budget ends inside the chunk
            self._ahead.popleft()
            if outcome is Outcome.SEALED:
                self.ended = True
                self.close()
        if self.until is not None and self.pending.lsn > self.until:
            self.ended = True
        if (out or outcome is Outcome.WAIT) and len(self._ahead) < READ_AHEAD_ITEMS // 4:
            # What came meanwhile: its data is read while this transaction commits, or while the
            # consumer waits for the transaction of the chunk it stopped at.
            self._fill(0.0)
        return out

    def committed_now(self) -> None:
        self.committed = self.pending
        if self.until is not None:
            return
        if time.monotonic() - self._trimmed_s >= TRIM_INTERVAL_S:
            self.trim()

    def trim(self) -> None:
        """Trim the partition's log up to the committed position. Best-effort: it runs after a
        commit, which must not fail for it; a trim that failed is tried again after a later one."""
        trim_to = self.committed.lsn - 1
        if self.until is None and trim_to > self._trimmed:
            try:
                if self._log is None:
                    self._log = self.queues.logs.get(self.log_id)
                self.queues.trim_acknowledged(self.log_id, trim_to, self._log)
                prune(self.queues.meta.batch(), self.log_id, trim_to + 1).commit()  # their counts go too
            except UnknownLogError:  # deleted at a resize's barrier: nothing to trim
                pass
            except SeawayError as exc:
                log.info("queue partition trim failed; tried again later",
                         extra={"log_id": self.log_id, "error": str(exc)})
                return
            self._trimmed, self._trimmed_s = trim_to, time.monotonic()


def decoded(queues: Queues, items: Iterable[object]) -> list[Chunk | Gap]:
    """The records (and runs of them) and gaps a reader read, as chunks; pointer chunks with their
    payloads not read yet (``ref`` set), whose data chunks this asks for at once, so that they
    are read while the reader goes on (see :class:`~seaway.queues._data.DataChunks`)."""
    out: list[Chunk | Gap] = []
    refs: list[DataRef] = []

    def push(lsn: int, raw: bytes) -> None:
        write_pointer, counters, payloads, ref = decode_record(raw)
        if ref is not None:
            refs.append(ref)
        out.append(Chunk(lsn, write_pointer, counters, payloads, ref))

    for item in items:
        if isinstance(item, RecordRun):
            for i, payload in enumerate(item.payloads):
                push(item.first_lsn + i, payload)
        elif isinstance(item, Record):
            push(item.lsn, item.payload)
        elif isinstance(item, Gap):
            out.append(item)
    if refs:
        queues.data.prefetch(data_keys(refs))
    return out


def resolve_chunk(queues: Queues, chunk: Chunk) -> Chunk:
    """A pointer chunk of :func:`decoded` with its payloads (None: its data chunks are gone)."""
    return chunk._replace(payloads=queues.data.resolve([chunk.ref])[0], ref=None)


def resolved(queues: Queues, items: Iterable[object]) -> list[Chunk | Gap]:
    """The records (and runs of them) and gaps a reader read, as chunks with their payloads: those
    of pointer chunks read from their data chunks, in one read per data log (see
    :mod:`seaway.queues._data`)."""
    out = decoded(queues, items)
    pointed = [at for at, item in enumerate(out) if isinstance(item, Chunk) and item.ref is not None]
    if pointed:
        refs: list[DataRef | None] = [out[at].ref for at in pointed]  # type: ignore[union-attr]
        for at, payloads in zip(pointed, queues.data.resolve(refs), strict=True):
            chunk = out[at]
            assert isinstance(chunk, Chunk)
            out[at] = chunk._replace(payloads=payloads, ref=None)
    return out


class SlotKind(enum.Enum):
    PARTITION = "partition"
    CLAIM = "claim"


class Slot(NamedTuple):
    """A cursor's place among a consumer's cursors: partition ``number`` of a generation's layout,
    or the FIFO claim held by consumer ``number`` (two kinds, never told apart by the number's sign)."""

    generation: int
    kind: SlotKind
    number: int


@dataclass(frozen=True)
class Source:
    """Where a consumer reads: a partition of a layout, or (``partition`` None) a FIFO layout's
    shared log, with the consumer ids whose claims it holds."""

    layout: Layout
    partition: int | None
    log_id: int
    owners: tuple[int, ...]
