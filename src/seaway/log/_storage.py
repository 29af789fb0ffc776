"""The storing side of the log layer (one storage node), as a state machine with no I/O.

It turns stores, plugs and seals into disk writes, one at a time: what arrives waits in a queue, and
:meth:`StorageNode.flush` (called by the driver when a burst of input is over, or when the previous
write completed) sends all of it as one write (group commit). It refuses stores
from sealed epochs, answers each message once its write is durable, and keeps each log's release
point for readers.
"""

from __future__ import annotations

from dataclasses import dataclass

from seaway._errors import PreemptedError, SeawayError
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
from seaway.logsdb import PutHolePlug, PutRecords, PutSeal, WriteOp


@dataclass(frozen=True)
class StorageConfig:
    write_ops_max: int = 4096
    """The most stores, plugs and seals one disk write carries."""
    write_bytes_max: int = 64 << 20
    """The most payload bytes one disk write carries (one oversized store still goes alone)."""


_Msg = StoreMsg | PlugMsg | SealMsg


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
        self._writing: list[tuple[_Msg, bool]] | None = None  # (message, writes something)
        self._write_id = 0
        self._write_seal: dict[int, int] = {}
        self._write_last: dict[int, int] = {}

    def released(self, log_id: int) -> int:
        return self._released.get(log_id, 0)

    def last_lsn(self, log_id: int) -> int:
        return self._last_lsn.get(log_id, 0)

    @property
    def busy(self) -> bool:
        return self._writing is not None or bool(self._queue)

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

    def _on_store(self, msg: StoreMsg | PlugMsg, out: list[StorageEffect]) -> None:
        log_id = msg.log_id
        if epoch_of(msg.first_lsn) <= self._seal.get(log_id, 0):
            out.append(StoreReply(log_id, msg.first_lsn, PreemptedError(
                f"log {log_id}: epoch {epoch_of(msg.first_lsn)} is sealed")))
        elif msg.first_lsn <= self._released.get(log_id, 0) or msg.first_lsn in self._stored.get(log_id, ()):
            # A retransmission of a slot that is decided or stored already. A plug for a stored
            # slot is answered the same way: the record stays, its append's outcome was unknown.
            out.append(StoreReply(log_id, msg.first_lsn, None))
        else:
            self._queue.append(msg)

    def flush(self) -> list[StorageEffect]:
        """Start a disk write with everything queued, unless one is in progress already."""
        out: list[StorageEffect] = []
        if self._writing is None and self._queue:
            self._start_write(out)
        return out

    def _start_write(self, out: list[StorageEffect]) -> None:
        ops: list[WriteOp] = []
        group: list[tuple[_Msg, bool]] = []
        seal = dict(self._seal)
        last = dict(self._last_lsn)
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
                if msg.epoch > seal.get(log_id, 0):
                    ended = last.get(log_id, 0)
                    ops.append(PutSeal(log_id, msg.epoch, epoch_of(ended), ended))
                    seal[log_id] = msg.epoch
                    sync = True
                group.append((msg, True))
                continue
            if epoch_of(msg.first_lsn) <= seal.get(log_id, 0):
                out.append(StoreReply(log_id, msg.first_lsn, PreemptedError(
                    f"log {log_id}: epoch {epoch_of(msg.first_lsn)} is sealed")))
                continue
            if (log_id, msg.first_lsn) in in_group:
                group.append((msg, False))  # a duplicate riding on the write of its original
                continue
            in_group.add((log_id, msg.first_lsn))
            if isinstance(msg, StoreMsg):
                ops.append(PutRecords(log_id, msg.first_lsn, msg.timestamp_ms, msg.payloads, msg.producer))
                size += sum(map(len, msg.payloads))
                msg_last = msg.first_lsn + len(msg.payloads) - 1
                sync = sync or msg.sync
            else:
                ops.append(PutHolePlug(log_id, msg.first_lsn, msg.count, msg.timestamp_ms))
                msg_last = msg.first_lsn + msg.count - 1
                sync = True
            last[log_id] = max(last.get(log_id, 0), msg_last)
            group.append((msg, True))
        del self._queue[:taken]
        if not group:
            return
        self._write_id += 1
        self._writing = group
        self._write_seal = seal
        self._write_last = last
        out.append(DiskWrite(self._write_id, tuple(ops), sync))

    def _on_write_done(self, done: DiskWriteDone, out: list[StorageEffect]) -> None:
        if self._writing is None or done.write_id != self._write_id:
            return
        group, self._writing = self._writing, None
        if done.error is None:
            self._seal = self._write_seal
            self._last_lsn = self._write_last
            for msg, wrote in group:
                if wrote and not isinstance(msg, SealMsg):
                    self._stored.setdefault(msg.log_id, set()).add(msg.first_lsn)
        for msg, _ in group:
            out.append(self._reply(msg, done.error))

    def _reply(self, msg: _Msg, error: SeawayError | None) -> StoreReply | SealReply:
        if isinstance(msg, SealMsg):
            return SealReply(msg.log_id, msg.epoch, self._last_lsn.get(msg.log_id, 0), error)
        return StoreReply(msg.log_id, msg.first_lsn, error)
