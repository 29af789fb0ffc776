"""What LogsDB keeps of each log besides its entries: its trim point, sealed epoch, epoch ends and
final seal."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from rocksdict import WriteBatch

from seaway._values import PutSeal
from seaway.logsdb import _format as fmt
from seaway.logsdb._core import holding_no_handles
from seaway.logsdb._keys import P_EPOCH_END, P_FINAL, P_SEAL, P_TRIM, u64
from seaway.logsdb._kv import KvStore

_EPOCH_ENDS_LOGS_MAX = 16_384
"""Logs whose epoch ends are kept in memory (the most recently read)."""
_EPOCH_ENDS_CACHED_MAX = 16
"""A log with more epoch ends than this has them read from RocksDB each time."""


class LogMarks(KvStore):
    """Trim points, seals, epoch ends and final seals of the logs."""

    _trim: dict[int, int]
    _seal: dict[int, int]
    _epoch_ends: OrderedDict[int, dict[int, int]]
    _epoch_ends_generation: int
    _final: dict[int, int]

    def _load_marks(self) -> None:
        self._trim = self._load_u64_map(P_TRIM)
        self._seal = self._load_u64_map(P_SEAL)
        self._epoch_ends = OrderedDict()  # recently read logs' (LRU)
        self._epoch_ends_generation = 0  # changed by every write of epoch ends
        self._final = self._load_u64_map(P_FINAL)

    @holding_no_handles
    def trim(self, log_id: int, lsn: int, *, ledger: bytes | None = None) -> None:
        """Raise the log's trim point to ``lsn`` (durably). Lowering it is a no-op (and writes no
        ``ledger`` entry: see :meth:`ledger_read`)."""
        with self._writing():
            if lsn <= self._trim.get(log_id, 0):
                return
            self._meta_put_sync(P_TRIM + u64(log_id), u64(lsn), ledger)
            with self._lock:
                self._trim[log_id] = lsn

    def trim_point(self, log_id: int) -> int:
        """The highest trimmed LSN of the log; 0 if none."""
        return self._trim.get(log_id, 0)

    def sealed_epoch(self, log_id: int) -> int:
        """The highest epoch sealed for the log; 0 if never sealed."""
        return self._seal.get(log_id, 0)

    def epoch_ends(self, log_id: int, epoch_min: int, epoch_max: int) -> dict[int, int]:
        """Last LSN of each sealed epoch of the log in ``[epoch_min, epoch_max]`` that held data."""
        self._check_open()
        # Every first read of a log asks (a RocksDB iterator each time, as much as reading a small
        # log's records): a log's few epoch ends are kept, for a bounded number of logs.
        with self._lock:
            known = self._epoch_ends.get(log_id)
            if known is not None:
                self._epoch_ends.move_to_end(log_id)
            generation = self._epoch_ends_generation
        if known is None:
            known = self._scan_epoch_ends(log_id, 0, _EPOCH_ENDS_CACHED_MAX + 1)
            if len(known) > _EPOCH_ENDS_CACHED_MAX:  # too many to keep: scan just the range asked
                return self._scan_epoch_ends(log_id, epoch_min, None, epoch_max)
            with self._lock:
                if generation == self._epoch_ends_generation:  # no epoch end written meanwhile
                    self._epoch_ends[log_id] = known
                    if len(self._epoch_ends) > _EPOCH_ENDS_LOGS_MAX:
                        self._epoch_ends.popitem(last=False)
        return {epoch: lsn for epoch, lsn in known.items() if epoch_min <= epoch <= epoch_max}

    def _scan_epoch_ends(self, log_id: int, epoch_min: int, count_max: int | None,
                         epoch_max: int = 2**64 - 1) -> dict[int, int]:
        prefix = P_EPOCH_END + u64(log_id)
        out: dict[int, int] = {}
        for key, value in self._meta_scan(prefix, prefix + u64(epoch_min)):
            epoch = fmt.decode_u64(key[9:])
            if epoch > epoch_max or len(out) == count_max:
                break
            out[epoch] = fmt.decode_u64(value)
        return out

    def _forget_epoch_ends(self, log_ids: Iterable[int]) -> None:
        """After a write that changed these logs' epoch ends (under ``_lock``)."""
        self._epoch_ends_generation += 1
        for log_id in log_ids:
            self._epoch_ends.pop(log_id, None)

    @holding_no_handles
    def seal_log(self, log_id: int, last_lsn: int, *, ledger: bytes | None = None) -> None:
        """Record, durably, that the log takes no more appends and ends at ``last_lsn`` (with a
        ``ledger`` entry, atomically; a log sealed already writes neither). The caller (the log's
        only sequencer) seals only once every append below is decided."""
        with self._writing():
            if log_id in self._final:
                return
            self._meta_put_sync(P_FINAL + u64(log_id), u64(last_lsn), ledger)
            with self._lock:
                self._final[log_id] = last_lsn

    def final_lsn(self, log_id: int) -> int | None:
        """The last LSN of a log sealed for good, or None while it takes appends."""
        return self._final.get(log_id)

    def sealed_logs(self) -> dict[int, int]:
        """Every log sealed for good, with its last LSN."""
        with self._lock:
            return dict(self._final)

    def _batch_seal(self, batch: WriteBatch, op: PutSeal) -> None:
        batch.put(P_SEAL + u64(op.log_id), u64(op.epoch), self._meta_handle)
        if op.ended_epoch:
            key = P_EPOCH_END + u64(op.log_id) + u64(op.ended_epoch)
            batch.put(key, u64(op.ended_lsn), self._meta_handle)
