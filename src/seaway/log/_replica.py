"""A storage node of a replicated log cluster, as a state machine (see :mod:`_replication`).

What a node keeps durably, per log: its copies, its seal (the highest sealing sequencer's epoch), the
last known good ESN each epoch's sequencer told it, the last epoch it knows clean (set by a recovery
it took part in, or by purging), and its trim point. What it keeps in memory only: how far readers
may read (the release point), which sequencers send again after a restart.

Every change to the durable state is a disk write: :meth:`Replica.handle` queues it and asks the
driver to write (:class:`DiskWrite`); :meth:`Replica.written` applies it, in the order queued, when
the write is synced, and only then answers. A crash loses the queue, never a change answered. The
checks (the seal above all) run when a write applies, so a store queued before a seal and applied
after it is refused.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from seaway.log._lsn import epoch_of, esn_of
from seaway.log._replication import (
    Clean,
    Cleaned,
    Copy,
    EpochRecord,
    EpochRecordRead,
    Kind,
    ReadEpochRecord,
    ReadFrom,
    ReadReply,
    Release,
    Seal,
    Sealed,
    Send,
    Store,
    Stored,
    Trim,
)

READ_COPIES_MAX = 4096
READ_BYTES_MAX = 8 << 20
"""A read reply stops after the copy that takes its payloads past this (the messages between
nodes and clients are at most 64 MiB; records at most 1 MiB)."""


@dataclass(frozen=True, slots=True)
class DiskWrite:
    """Sync the node's next queued change; call :meth:`Replica.written` when done."""

    node: int


class LogState(Protocol):
    """One log's durable state on one node, as a replica uses it (:class:`LogCopies` in memory; a
    node's RocksDB behind the same methods)."""

    seal: int
    lngs: dict[int, int]
    lce: int
    trim: int
    released: int

    def get(self, lsn: int) -> Copy | None: ...

    def put(self, copy: Copy) -> None: ...

    def drop(self, lsns: list[int]) -> None: ...

    def drop_upto(self, lsn: int) -> None: ...

    def scan(self, lo: int, hi: int, limit: int) -> list[Copy]:
        """The copies at ``lo <= lsn <= hi``, in LSN order, at most ``limit``."""
        ...


class Disk(Protocol):
    def log(self, log_id: int) -> LogState:
        """The log's state (an empty one for a log this node never had)."""
        ...

    def released_points(self) -> dict[int, int]: ...

    def has(self, log_id: int) -> bool:
        """Whether the node keeps any state of the log."""
        ...


@dataclass
class LogCopies:
    """One log's state in memory (the simulator's disk)."""

    copies: dict[int, Copy] = field(default_factory=dict)
    lsns: list[int] = field(default_factory=list)
    seal: int = 0
    lngs: dict[int, int] = field(default_factory=dict)
    lce: int = 0
    trim: int = 0
    released: int = 0
    """The release point as of the last write (kept lazily: a crash may take it back, never forward)."""

    def get(self, lsn: int) -> Copy | None:
        return self.copies.get(lsn)

    def put(self, copy: Copy) -> None:
        if copy.lsn not in self.copies:
            bisect.insort(self.lsns, copy.lsn)
        self.copies[copy.lsn] = copy

    def drop(self, lsns: list[int]) -> None:
        for lsn in lsns:
            del self.copies[lsn]
        gone = set(lsns)
        self.lsns = [lsn for lsn in self.lsns if lsn not in gone]

    def drop_upto(self, lsn: int) -> None:
        self.drop(self.lsns[:bisect.bisect_right(self.lsns, lsn)])

    def scan(self, lo: int, hi: int, limit: int) -> list[Copy]:
        first = bisect.bisect_left(self.lsns, lo)
        last = bisect.bisect_right(self.lsns, hi)
        return [self.copies[lsn] for lsn in self.lsns[first:min(last, first + limit)]]


@dataclass
class NodeDisk:
    """Everything a node keeps across a crash, in memory (the simulator's disk)."""

    logs: dict[int, LogCopies] = field(default_factory=dict)

    def log(self, log_id: int) -> LogCopies:
        state = self.logs.get(log_id)
        if state is None:
            state = self.logs[log_id] = LogCopies()
        return state

    def released_points(self) -> dict[int, int]:
        return {log_id: state.released for log_id, state in self.logs.items()}

    def has(self, log_id: int) -> bool:
        return log_id in self.logs


def in_epochs(state: LogState, after: int, before: int) -> list[Copy]:
    """The copies of epochs ``after < epoch < before``, in LSN order."""
    if before <= after + 1:
        return []
    return state.scan((after + 1) << 32, (before << 32) - 1, 1 << 62)


@dataclass(frozen=True, slots=True)
class _Purge:
    """Drop what recoveries this node missed did not keep, then release up to ``release``."""

    log_id: int
    record: EpochRecord
    release: int


class Replica:
    def __init__(self, node: int, disk: Disk) -> None:
        self.node = node
        self.disk = disk
        self._queue: deque[tuple[int, object]] = deque()
        self._released: dict[int, int] = disk.released_points()
        self._released_dirty: set[int] = set()
        self._release_waiting: dict[int, int] = {}
        """Releases that wait for a purge (the epoch record is being read), per log."""
        self._cleaned_by: dict[int, int] = {}
        """Per log, the sequencer epoch whose recovery cleaned this node (it knew every earlier
        recovery): once that sequencer releases, its recovery is marked in the epoch record, and the
        node knows the epochs below it clean without reading the record. Until then it may not: the
        sequencer can die between its cleans and its mark, and the next recovery decide otherwise."""

    def released(self, log_id: int) -> int:
        return self._released.get(log_id, 0)

    @property
    def busy(self) -> bool:
        return bool(self._queue)

    def handle(self, sender: int, message: object) -> list[object]:
        """A message from ``sender`` (a node or client id)."""
        if isinstance(message, (Store, Seal, Clean, Trim)):
            self._queue.append((sender, message))
            return [DiskWrite(self.node)]
        if isinstance(message, Release):
            return self._on_release(message)
        if isinstance(message, EpochRecordRead):
            release = self._release_waiting.pop(message.log_id, None)
            if release is None:
                return []
            self._queue.append((-1, _Purge(message.log_id, message.record, release)))
            return [DiskWrite(self.node)]
        if isinstance(message, ReadFrom):
            return [Send(sender, self._read(message))]
        return []

    def record_unreadable(self, log_id: int) -> None:
        """The driver could not read the log's epoch record for a purge: the next release asks again
        (until then a node that waited for the answer would never purge, nor release the log again)."""
        self._release_waiting.pop(log_id, None)

    def written(self) -> list[object]:
        """The oldest queued change is synced: apply it and answer."""
        sender, message = self._queue.popleft()
        for log_id in self._released_dirty:  # the release points ride along with the write
            self.disk.log(log_id).released = self._released[log_id]
        self._released_dirty.clear()
        if isinstance(message, Store):
            return [Send(sender, self._store(message))]
        if isinstance(message, Seal):
            return [Send(sender, self._seal(message))]
        if isinstance(message, Clean):
            state = self.disk.log(message.log_id)
            if message.by != state.seal:  # a newer recovery sealed this node: this one's outcome may not stand
                return []
            if state.lce >= message.lce:  # else it missed an earlier recovery: it purges by the record later
                self._cleaned_by[message.log_id] = message.by
            return [Send(sender, Cleaned(message.log_id, message.by, self.node))]
        if isinstance(message, Trim):
            state = self.disk.log(message.log_id)
            if message.lsn > state.trim:
                state.trim = message.lsn
                state.drop_upto(message.lsn)
            return []
        assert isinstance(message, _Purge)
        return self._purge(message)

    def _store(self, msg: Store) -> Stored:
        state = self.disk.log(msg.log_id)
        copy = msg.copy
        ballot = copy.recovery_epoch or epoch_of(copy.lsn)
        if ballot < state.seal:
            return Stored(msg.log_id, copy.lsn, copy.wave, copy.recovery_epoch, self.node, preempted_by=state.seal)
        if copy.lsn > state.trim:
            old = state.get(copy.lsn)
            if old is None or copy.precedence() >= old.precedence():
                state.put(copy)
        if copy.recovery_epoch == 0:
            epoch = epoch_of(copy.lsn)
            state.lngs[epoch] = max(state.lngs.get(epoch, 0), msg.lng)
        return Stored(msg.log_id, copy.lsn, copy.wave, copy.recovery_epoch, self.node)

    def _seal(self, msg: Seal) -> Sealed:
        state = self.disk.log(msg.log_id)
        if msg.by < state.seal:
            return Sealed(msg.log_id, msg.by, self.node, preempted_by=state.seal)
        state.seal = msg.by
        digest = [c for c in in_epochs(state, msg.lce, msg.by) if esn_of(c.lsn) > state.lngs.get(epoch_of(c.lsn), 0)]
        lngs = tuple(sorted((e, lng) for e, lng in state.lngs.items() if msg.lce < e < msg.by))
        return Sealed(msg.log_id, msg.by, self.node, lngs=lngs, digest=tuple(digest))

    def _on_release(self, msg: Release) -> list[object]:
        state = self.disk.log(msg.log_id)
        if msg.lsn <= self.released(msg.log_id):
            return []
        if self._cleaned_by.get(msg.log_id) == epoch_of(msg.lsn) and state.seal == epoch_of(msg.lsn):
            state.lce = max(state.lce, epoch_of(msg.lsn) - 1)  # kept lazily: a crash only makes it purge
        if epoch_of(msg.lsn) - 1 <= state.lce:
            self._released[msg.log_id] = msg.lsn
            self._released_dirty.add(msg.log_id)
            return []
        # Every epoch below the released one is clean, but this node took no part in (some of)
        # their recoveries: it may hold copies those did not keep. Read what they kept, purge, then
        # release.
        waiting = self._release_waiting.get(msg.log_id)
        self._release_waiting[msg.log_id] = max(msg.lsn, waiting or 0)
        return [] if waiting is not None else [ReadEpochRecord(msg.log_id)]

    def _purge(self, purge: _Purge) -> list[object]:
        state = self.disk.log(purge.log_id)
        upto = min(epoch_of(purge.release) - 1, purge.record.lce)
        dropped: list[int] = []
        for copy in in_epochs(state, state.lce, upto + 1):
            outcome = purge.record.recovery_of(epoch_of(copy.lsn))
            if outcome is None:  # its outcome is no longer kept: keep only what some recovery wrote
                if copy.recovery_epoch == 0:
                    dropped.append(copy.lsn)
            elif esn_of(copy.lsn) > outcome.lng and copy.recovery_epoch != outcome.by:
                dropped.append(copy.lsn)
        state.drop(dropped)
        state.lce = max(state.lce, upto)
        state.seal = max(state.seal, upto + 1)  # it seals itself: a clean epoch takes no more stores
        if epoch_of(purge.release) - 1 <= state.lce:
            self._released[purge.log_id] = max(self.released(purge.log_id), purge.release)
            self._released_dirty.add(purge.log_id)
        return []

    def _read(self, msg: ReadFrom) -> ReadReply:
        if not self.disk.has(msg.log_id):  # keep no state for a log only read (the ids are the client's)
            return ReadReply(msg.log_id, self.node, (), max(msg.lsn, 1), 0, msg.reader_id)
        state = self.disk.log(msg.log_id)
        released = self.released(msg.log_id)
        start = max(msg.lsn, state.trim + 1)
        limit = max(1, min(msg.max_copies, READ_COPIES_MAX))
        copies: list[Copy] = []
        size = 0
        full = False  # stopped (at the count or the byte budget) before the release point
        lo = start
        while lo <= released and not full:  # in chunks, so a reply of large copies reads no more than it sends
            asked = min(limit - len(copies), 64) + 1
            chunk = state.scan(lo, released, asked)
            for copy in chunk:
                if len(copies) == limit or size >= READ_BYTES_MAX:
                    full = True
                    break
                copies.append(copy)
                size += len(copy.payload)
            if len(chunk) < asked:
                break
            lo = copies[-1].lsn + 1
        next_lsn = copies[-1].lsn + 1 if full else max(msg.lsn, released + 1)
        return ReadReply(msg.log_id, self.node, tuple(copies), next_lsn, state.trim, msg.reader_id)


def is_record(copy: Copy) -> bool:
    return copy.kind is Kind.RECORD
