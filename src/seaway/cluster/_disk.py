"""A storage node's disk: its copies and per-log state in a RocksDB of its own.

Keys: ``c`` + log id + LSN (big-endian, so a log's copies are in LSN order) for each copy; ``m`` +
log id for the log's state (seal, last known goods, last clean epoch, trim and release points, as
JSON). The replica's changes go into one write batch; :meth:`RocksDisk.flush` writes it synced,
and only then does the node send the answers those changes earned. Until then an overlay holds
the batch's copies, so the changes of one batch see each other.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import cast

from rocksdict import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from seaway.errors import CorruptionError, StorageError
from seaway.log.replication import Copy, Kind

_KEY = struct.Struct(">cQQ")
_META = struct.Struct(">cQ")
_VALUE = struct.Struct(">BIIQ")
LNGS_KEPT = 64
"""Epochs whose last known good a log's state keeps (older ones are clean long since)."""


def _copy_key(log_id: int, lsn: int) -> bytes:
    return _KEY.pack(b"c", log_id, lsn)


def _encode(copy: Copy) -> bytes:
    return _VALUE.pack(int(copy.kind), copy.wave, copy.recovery_epoch, copy.timestamp_ms) + copy.payload


def _decode(lsn: int, raw: bytes) -> Copy:
    try:
        kind, wave, recovery_epoch, timestamp_ms = _VALUE.unpack_from(raw)
        return Copy(lsn, Kind(kind), raw[_VALUE.size:], wave, recovery_epoch, timestamp_ms)
    except (struct.error, ValueError) as exc:
        raise CorruptionError(f"a stored copy at LSN {lsn:#x} cannot be decoded: {exc}") from exc


class RocksLog:
    """One log's state on this node (:class:`seaway.log.replication.LogState`)."""

    def __init__(self, disk: RocksDisk, log_id: int, meta: dict[str, object] | None) -> None:
        self._disk = disk
        self.log_id = log_id
        meta = meta or {}
        self.seal = int(cast(int, meta.get("seal", 0)))
        self.lngs = {int(k): int(v) for k, v in cast(dict[str, int], meta.get("lngs", {})).items()}
        self.lce = int(cast(int, meta.get("lce", 0)))
        self.trim = int(cast(int, meta.get("trim", 0)))
        self.released = int(cast(int, meta.get("released", 0)))
        self._overlay: dict[int, Copy | None] = {}
        self._dropped_upto = 0
        self._written = self._meta()

    def _meta(self) -> bytes:
        lngs = dict(sorted(self.lngs.items())[-LNGS_KEPT:])
        return json.dumps({"seal": self.seal, "lngs": lngs, "lce": self.lce, "trim": self.trim,
                           "released": self.released}, separators=(",", ":")).encode()

    def get(self, lsn: int) -> Copy | None:
        if lsn in self._overlay:
            return self._overlay[lsn]
        if lsn <= self._dropped_upto:
            return None
        raw = self._disk.db.get(_copy_key(self.log_id, lsn))
        return None if raw is None else _decode(lsn, cast(bytes, raw))

    def put(self, copy: Copy) -> None:
        self._overlay[copy.lsn] = copy
        self._disk.batch.put(_copy_key(self.log_id, copy.lsn), _encode(copy))

    def drop(self, lsns: list[int]) -> None:
        for lsn in lsns:
            self._overlay[lsn] = None
            self._disk.batch.delete(_copy_key(self.log_id, lsn))

    def drop_upto(self, lsn: int) -> None:
        self._dropped_upto = max(self._dropped_upto, lsn)
        for key in [k for k in self._overlay if k <= lsn]:
            self._overlay[key] = None
        # Up to the last LSN (a deleted log's trim point, or a peer's Trim to LSN_MAX), the range ends
        # at the next log's first key: the LSN after it does not fit a key (that failed the node's loop).
        end = _copy_key(self.log_id, lsn + 1) if lsn < 2**64 - 1 else _META.pack(b"c", self.log_id + 1)
        self._disk.batch.delete_range(_copy_key(self.log_id, 0), end)

    def scan(self, lo: int, hi: int, limit: int) -> list[Copy]:
        if lo > hi or limit <= 0:
            return []
        pending = {k: v for k, v in self._overlay.items() if lo <= k <= hi}
        lo_stored = max(lo, self._dropped_upto + 1)  # stored copies up to a pending range drop are gone
        if lo_stored > hi:
            return sorted((c for c in pending.values() if c is not None), key=lambda c: c.lsn)[:limit]
        opts = ReadOptions()
        upper = _copy_key(self.log_id, hi + 1) if hi < 2**64 - 1 else _META.pack(b"c", self.log_id + 1)
        opts.set_iterate_upper_bound(upper)
        it = self._disk.db.iter(opts)
        it.seek(_copy_key(self.log_id, lo_stored))
        out: list[Copy] = []
        wanted = limit + len(pending)
        while it.valid() and len(out) < wanted:
            lsn = _KEY.unpack(cast(bytes, it.key()))[2]
            if lsn not in pending:
                out.append(_decode(lsn, cast(bytes, it.value())))
            it.next()
        out.extend(c for c in pending.values() if c is not None)
        out.sort(key=lambda c: c.lsn)
        return out[:limit]

    def _flushed(self) -> None:
        self._overlay.clear()
        self._dropped_upto = 0


class RocksDisk:
    """A node's disk (:class:`seaway.log.replication.Disk`)."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        try:
            self.db = Rdict(str(path), opts)
        except Exception as exc:
            raise StorageError(f"cannot open the node's store at {path}: {exc}") from exc
        self._sync = WriteOptions()
        self._sync.sync = True
        self.batch = WriteBatch(raw_mode=True)
        self._logs: dict[int, RocksLog] = {}
        self._touched: set[int] = set()
        it = self.db.iter(ReadOptions())
        it.seek(b"m")
        while it.valid():
            key = cast(bytes, it.key())
            if not key.startswith(b"m"):
                break
            log_id = _META.unpack(key)[1]
            try:
                meta = json.loads(cast(bytes, it.value()))
            except ValueError as exc:
                raise CorruptionError(f"log {log_id}: its state on this node cannot be decoded") from exc
            self._logs[log_id] = RocksLog(self, log_id, meta)
            it.next()

    def log(self, log_id: int) -> RocksLog:
        state = self._logs.get(log_id)
        if state is None:
            state = self._logs[log_id] = RocksLog(self, log_id, None)
        self._touched.add(log_id)
        return state

    def has(self, log_id: int) -> bool:
        return log_id in self._logs

    def logs(self) -> list[int]:
        return sorted(self._logs)

    def released_points(self) -> dict[int, int]:
        return {log_id: state.released for log_id, state in self._logs.items()}

    def flush(self) -> None:
        """Write what the replica changed since the last flush, synced."""
        for log_id in self._touched:
            state = self._logs[log_id]
            meta = state._meta()
            if meta != state._written:
                self.batch.put(_META.pack(b"m", log_id), meta)
                state._written = meta
        self._touched.clear()
        if self.batch.len() == 0:
            return
        try:
            self.db.write(self.batch, self._sync)
        except Exception as exc:
            raise StorageError(f"the node's store failed a write: {exc}") from exc
        self.batch = WriteBatch(raw_mode=True)
        for state in self._logs.values():
            state._flushed()

    def close(self) -> None:
        self.db.close()
