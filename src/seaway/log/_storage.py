"""The storing side of the log layer (one storage node), as a state machine with no I/O.

It turns stores, plugs and seals into disk writes, one at a time: what arrives waits in a queue, and
:meth:`StorageNode.flush` (called by the driver when a burst of input is over, or when the previous
write completed) sends all of it as one write (group commit). It refuses stores
from sealed epochs, answers each message once its write is durable, and keeps each log's release
point for readers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from seaway._values import PutHolePlug, PutRecords, PutSeal, WriteOp
from seaway.errors import PreemptedError, SeawayError, StorageError
from seaway.log._lsn import epoch_of
from seaway.log._protocol import (
    DiskWrite,
    DiskWriteDone,
    PlugMsg,
    Released,
    ReleaseMsg,
    SealMsg,
    SealReply,
    StorageEffect,
    StorageEvent,
    StoreMsg,
    StoreReply,
)


@dataclass(frozen=True)
class StorageConfig:
    write_ops_max: int = 4096
    """The most stores, plugs and seals one disk write carries."""
    write_bytes_max: int = 64 << 20
    """The most payload bytes one disk write carries (one oversized store still goes alone)."""
    writes_in_flight_max: int = 1
    """Disk writes started and not yet durable. With 2, the driver may apply the next write while
    the previous one syncs; it must report every write's completion in the order they started."""


_Msg = StoreMsg | PlugMsg | SealMsg


@dataclass(slots=True)
class _Write:
    write_id: int
    group: list[tuple[_Msg, bool]]  # (message, writes something)
    seal: dict[int, int]  # the sealed epochs this write changes, once it is durable
    last: dict[int, int]  # the last LSNs this write changes, once it is durable


def _lookup(log_id: int, own: dict[int, int], bases: list[_Write], field: str, durable: dict[int, int]) -> int:
    """A log's value as a new write sees it: its own change, else the newest write in flight under
    it that changed it, else the durable value."""
    if log_id in own:
        return own[log_id]
    for write in bases:
        changed: dict[int, int] = getattr(write, field)
        if log_id in changed:
            return changed[log_id]
    return durable.get(log_id, 0)


class StorageNode:
    """Feed events to :meth:`handle`; carry out what it returns."""

    def __init__(self, last_lsns: dict[int, int], seals: dict[int, int],
                 config: StorageConfig | None = None) -> None:
        self._config = config or StorageConfig()
        self._last_lsn = dict(last_lsns)  # durable: highest LSN stored (records or plug)
        self._seal = dict(seals)  # durable: highest sealed epoch
        self._released = dict(last_lsns)  # after a restart everything stored is decided
        # First LSNs stored above the release point: what a retransmission may find already written.
        self._stored: dict[int, set[int]] = {}
        self._queue: list[_Msg] = []
        # Writes in flight, oldest first: their messages and the state each leaves once durable.
        self._writing: deque[_Write] = deque()
        self._write_id = 0
        # Writes started on top of one that then failed: they fail too, and nothing builds on them.
        self._doomed: set[int] = set()
        self._slots_writing: dict[tuple[int, int], _Write] = {}  # (log id, first LSN) -> its write

    def released(self, log_id: int) -> int:
        return self._released.get(log_id, 0)

    def last_lsn(self, log_id: int) -> int:
        return self._last_lsn.get(log_id, 0)

    @property
    def busy(self) -> bool:
        return bool(self._writing) or bool(self._queue)

    def handle(self, event: StorageEvent) -> list[StorageEffect]:
        out: list[StorageEffect] = []
        if isinstance(event, DiskWriteDone):
            self._on_write_done(event, out)
        elif isinstance(event, ReleaseMsg):
            self._on_release(event, out)
        elif isinstance(event, StoreMsg | PlugMsg):
            self._on_store(event, out)
        else:
            self._queue.append(event)
        return out

    def _on_release(self, msg: ReleaseMsg, out: list[StorageEffect]) -> None:
        if msg.lsn > self._released.get(msg.log_id, 0):
            self._released[msg.log_id] = msg.lsn
            stored = self._stored.get(msg.log_id)
            if stored:
                stored.difference_update([lsn for lsn in stored if lsn <= msg.lsn])
            out.append(Released(msg.log_id, msg.lsn))

    def _durable(self, msg: StoreMsg | PlugMsg) -> bool:
        """Whether the message's slot is decided or stored already (so storing it again is moot)."""
        return msg.first_lsn <= self._released.get(msg.log_id, 0) or msg.first_lsn in self._stored.get(msg.log_id, ())

    def _on_store(self, msg: StoreMsg | PlugMsg, out: list[StorageEffect]) -> None:
        log_id = msg.log_id
        if epoch_of(msg.first_lsn) <= self._seal.get(log_id, 0):
            out.append(StoreReply(log_id, msg.first_lsn, PreemptedError(
                f"log {log_id}: epoch {epoch_of(msg.first_lsn)} is sealed")))
        elif self._durable(msg):
            # A retransmission of a slot that is decided or stored already. A plug for a stored
            # slot is answered the same way: the record stays, its append's outcome was unknown.
            out.append(StoreReply(log_id, msg.first_lsn, None))
        else:
            self._queue.append(msg)

    def flush(self) -> list[StorageEffect]:
        """Start a disk write with everything queued, unless one is in progress already."""
        out: list[StorageEffect] = []
        if len(self._writing) < self._config.writes_in_flight_max and self._queue:
            self._start_write(out)
        return out

    def _start_write(self, out: list[StorageEffect]) -> None:
        ops: list[WriteOp] = []
        group: list[tuple[_Msg, bool]] = []
        # On top of the writes in flight: this one is durable only after they are. Each write keeps
        # only what it changes, so starting one costs the same however many logs exist.
        bases = [w for w in reversed(self._writing) if w.write_id not in self._doomed]
        seal: dict[int, int] = {}
        last: dict[int, int] = {}

        def seal_of(log_id: int) -> int:
            return _lookup(log_id, seal, bases, "seal", self._seal)

        def last_of(log_id: int) -> int:
            return _lookup(log_id, last, bases, "last", self._last_lsn)
        in_group: set[tuple[int, int]] = set()
        size = 0
        sync = False
        taken = 0
        for msg in self._queue:
            if len(group) >= self._config.write_ops_max or (group and size >= self._config.write_bytes_max):
                break
            taken += 1
            log_id = msg.log_id
            if isinstance(msg, SealMsg):
                if msg.epoch > seal_of(log_id):
                    ended = last_of(log_id)
                    ops.append(PutSeal(log_id, msg.epoch, epoch_of(ended), ended))
                    seal[log_id] = msg.epoch
                    sync = True
                group.append((msg, True))
                continue
            if epoch_of(msg.first_lsn) <= seal_of(log_id):
                out.append(StoreReply(log_id, msg.first_lsn, PreemptedError(
                    f"log {log_id}: epoch {epoch_of(msg.first_lsn)} is sealed")))
                continue
            slot = (log_id, msg.first_lsn)
            if slot in in_group:
                group.append((msg, False))  # a duplicate riding on the write of its original
                continue
            if self._durable(msg):
                out.append(StoreReply(log_id, msg.first_lsn, None))  # became durable while it waited
                continue
            earlier = self._slots_writing.get(slot)
            if earlier is not None:
                earlier.group.append((msg, False))  # rides on the write in flight that stores it
                continue
            in_group.add(slot)
            if isinstance(msg, StoreMsg):
                ops.append(PutRecords(log_id, msg.first_lsn, msg.timestamp_ms, msg.payloads, msg.producer))
                size += sum(map(len, msg.payloads))
                msg_last = msg.first_lsn + len(msg.payloads) - 1
                sync = sync or msg.sync
            else:
                ops.append(PutHolePlug(log_id, msg.first_lsn, msg.count, msg.timestamp_ms))
                msg_last = msg.first_lsn + msg.count - 1
                sync = True
            last[log_id] = max(last_of(log_id), msg_last)
            group.append((msg, True))
        del self._queue[:taken]
        if not group:
            return
        self._write_id += 1
        write = _Write(self._write_id, group, seal, last)
        self._writing.append(write)
        for slot in in_group:
            self._slots_writing[slot] = write
        out.append(DiskWrite(self._write_id, tuple(ops), sync))

    def _on_write_done(self, done: DiskWriteDone, out: list[StorageEffect]) -> None:
        if not self._writing or done.write_id != self._writing[0].write_id:
            return
        write = self._writing.popleft()
        for msg, wrote in write.group:
            if wrote and not isinstance(msg, SealMsg):
                self._slots_writing.pop((msg.log_id, msg.first_lsn), None)
        error = done.error
        if write.write_id in self._doomed:
            # Started on top of a write that failed: what it assumed did not happen.
            self._doomed.discard(write.write_id)
            error = error or StorageError(f"disk write {write.write_id} followed a failed one")
        elif error is not None:
            # Every write in flight was started while this one was, so on top of it.
            self._doomed.update(w.write_id for w in self._writing)
        if error is None:
            self._seal.update(write.seal)
            self._last_lsn.update(write.last)
            for msg, wrote in write.group:
                if wrote and not isinstance(msg, SealMsg):
                    self._stored.setdefault(msg.log_id, set()).add(msg.first_lsn)
        for msg, _ in write.group:
            out.append(self._reply(msg, error))

    def _reply(self, msg: _Msg, error: SeawayError | None) -> StoreReply | SealReply:
        if isinstance(msg, SealMsg):
            return SealReply(msg.log_id, msg.epoch, self._last_lsn.get(msg.log_id, 0), error)
        return StoreReply(msg.log_id, msg.first_lsn, error)
