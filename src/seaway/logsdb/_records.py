"""Writing and reading the logs' entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rocksdict import ReadOptions, WriteBatch

from seaway._invariant import invariant
from seaway._values import Entry, PutRecords, PutSeal, WriteOp
from seaway.errors import CorruptionError, InvalidArgumentError, PayloadTooLargeError
from seaway.logsdb import _format as fmt
from seaway.logsdb._core import holding_no_handles
from seaway.logsdb._keys import P_DIRECTORY, P_EPOCH_END, P_HOLE, P_PRODUCER, P_TRIM, u64
from seaway.logsdb._partitions import Partitions
from seaway.logsdb._producers import Window
from seaway.logsdb._read import Unreadable, check, first_key_from, read_partition


class Records(Partitions):
    """The logs' entries: atomic writes, reads, time searches, deletion."""

    @holding_no_handles
    def write(self, ops: Sequence[WriteOp], *, sync: bool = True) -> None:
        """Store ``ops`` atomically. Raises :class:`StorageError` if nothing was stored."""
        with self._writing():
            self._write(ops, sync)

    def _write(self, ops: Sequence[WriteOp], sync: bool) -> None:
        pid = self._partition_for_write()
        _, _, handle = self._partitions[pid]
        batch = WriteBatch(raw_mode=True)
        directory = self._directory[pid]
        changed: dict[int, fmt.DirEntry] = {}
        seals: dict[int, int] = {}
        produced: dict[tuple[int, bytes], Window] = {}
        entries: list[tuple[bytes, bytes]] = []
        to_segment: list[tuple[bytes, int, int, bytes]] = []  # key, timestamp, count, entry
        total = 0
        for op in ops:
            if isinstance(op, PutSeal):
                self._batch_seal(batch, op)
                seals[op.log_id] = op.epoch
                continue
            key = fmt.encode_key(op.log_id, op.first_lsn)
            if isinstance(op, PutRecords):
                value = fmt.encode_records(key, op.timestamp_ms, list(op.payloads))
                last = op.first_lsn + len(op.payloads) - 1
                if op.producer is not None:
                    self._remember(produced, op, op.producer)
            else:
                value = fmt.encode_hole_plug(key, op.timestamp_ms, op.count)
                last = op.first_lsn + op.count - 1
                batch.put(P_HOLE + key, u64(op.count), self._meta_handle)
            if len(value) > self._config.entry_bytes_max:
                raise PayloadTooLargeError(
                    f"entry of {len(value)} bytes exceeds entry_bytes_max={self._config.entry_bytes_max}")
            invariant(op.first_lsn > self._trim.get(op.log_id, 0),
                      f"log {op.log_id}: LSN {fmt.lsn_text(op.first_lsn)} is at or below the trim point")
            total += len(value)
            if isinstance(op, PutRecords) and len(value) >= self._config.segment_min_bytes:
                to_segment.append((key, op.timestamp_ms, len(op.payloads), value))
            else:
                entries.append((key, value))
            d = changed.get(op.log_id) or directory.get(op.log_id)
            changed[op.log_id] = self._dir_after(d, op.first_lsn, last, op.timestamp_ms, len(value))
        if total > self._config.write_bytes_max:
            raise PayloadTooLargeError(
                f"write of {total} bytes exceeds write_bytes_max={self._config.write_bytes_max}")
        for log_id, d in changed.items():
            batch.put(P_DIRECTORY + u64(pid) + u64(log_id), d.encode(), self._meta_handle)
        now_ms = self._clock.now_ms()
        forgotten = self._put_producers(batch, produced, now_ms)
        if to_segment:
            offset = self._to_segment(pid, [value for *_, value in to_segment])
            for key, timestamp_ms, count, value in to_segment:
                entries.append((key, fmt.encode_segment_ref(key, timestamp_ms, count, offset, len(value))))
                offset += len(value)
        # The entries go in last: a batch grows by reallocation, so a small put after a large
        # one would copy the large one again (the order of puts to distinct keys does not matter).
        for key, value in entries:
            batch.put(key, value, handle)
        self._apply(batch, sync)
        with self._lock:
            self._producers_written(produced, forgotten, now_ms)
            self._sizes[pid] = self._sizes.get(pid, 0) + total
            for log_id, d in changed.items():
                directory[log_id] = d
                self._last_lsn[log_id] = max(self._last_lsn.get(log_id, 0), d.lsn_max)
            self._seal.update(seals)
            if seals:
                self._forget_epoch_ends(seals)

    @holding_no_handles
    def delete_log_data(self, log_id: int) -> None:
        """Remove every entry of the log and what LogsDB knows of it besides its trim point (raised
        to its last LSN, so the log reads as trimmed) and its seal; idempotent. The entries go by
        range deletes, one per partition, and RocksDB compacts their space away; bytes in segment
        files go with their partition."""
        with self._writing():
            batch = WriteBatch(raw_mode=True)
            start, end = fmt.encode_key(log_id, 0), fmt.encode_key(log_id + 1, 0)
            held = [pid for pid, entries in self._directory.items() if log_id in entries]
            in_segments = {pid: self._segment_ranges(pid, log_id) for pid in held}
            for pid in held:
                batch.delete_range(start, end, self._partitions[pid][2])
                batch.delete(P_DIRECTORY + u64(pid) + u64(log_id), self._meta_handle)
            for prefix in (P_PRODUCER, P_EPOCH_END, P_HOLE):
                batch.delete_range(prefix + u64(log_id), prefix + u64(log_id + 1), self._meta_handle)
            last = self.last_lsn(log_id)
            if last > self._trim.get(log_id, 0):
                batch.put(P_TRIM + u64(log_id), u64(last), self._meta_handle)
            self._apply(batch, sync=True)
            with self._lock:
                for pid in held:
                    d = self._directory[pid].pop(log_id)
                    self._sizes[pid] -= d.size_bytes
                if last:
                    self._trim[log_id] = last
                self._forget_log_producers(log_id)
                self._forget_epoch_ends([log_id])
        for pid in held:
            try:
                self._segments[pid].punch(in_segments[pid])
                self._partitions[pid][1].compact_range(start, end)
            except Exception:  # dropped meanwhile, or a failed compaction: only space is at stake
                continue

    @holding_no_handles
    def read(self, log_id: int, lsn_from: int, lsn_to: int, bytes_max: int) -> tuple[list[Entry], int]:
        """Entries of the log that overlap ``[lsn_from, lsn_to]``, in LSN order, and how far they cover.

        Stops after the entry that brings the total past ``bytes_max`` (at least one entry is
        returned when any exists); the second value is the highest LSN up to which every entry was
        returned. Damaged entries come back as :class:`CorruptEntry`, never as data.
        """
        if lsn_from > lsn_to:
            raise InvalidArgumentError(f"lsn_from {fmt.lsn_text(lsn_from)} is above lsn_to {fmt.lsn_text(lsn_to)}")
        out: list[Entry] = []
        budget = [bytes_max]
        covered_to = lsn_to
        for _, cf, segment, d in self._log_partitions(log_id, lsn_from, lsn_to):
            if covered_to < d.lsn_min:
                continue
            # Past the budget, later partitions are read only up to what is covered so far: a slot
            # stored late (a retransmission) may sit in a newer partition than the LSNs after it.
            with segment.held_open() as read_segment:
                spent = read_partition(cf, read_segment, d, log_id, lsn_from, covered_to, budget, out)
            if spent and covered_to == lsn_to:
                covered_to = min(out[-1].last_lsn, lsn_to)
                budget[0] = 2**63
        out.sort(key=lambda e: e.first_lsn)
        while out and out[-1].first_lsn > covered_to:
            out.pop()
        return out, covered_to

    def count_records(self, log_id: int, lsn_from: int, lsn_to: int) -> int:
        """The records stored in ``[lsn_from, lsn_to]`` above the trim point, without reading one.

        Within an epoch the sequencer issues ESNs from 1 with no gap, and a slot it could not store
        is plugged (a hole plug, noted under ``P_HOLE`` when written); an epoch ends at its recorded
        epoch end, or (the last one) at the log's last LSN. So the count is ESN arithmetic per
        epoch that held data, less the holes: O(epochs + holes in range), not O(records). Records
        lost to damage after they were stored (DATALOSS) still count. ``lsn_to`` should not pass
        what readers may read (the caller's release point)."""
        self._check_open()
        lsn_from = max(lsn_from, self.trim_point(log_id) + 1, 1)
        last = self.last_lsn(log_id)
        lsn_to = min(lsn_to, last)
        if lsn_from > lsn_to:
            return 0
        ends = self.epoch_ends(log_id, lsn_from >> 32, lsn_to >> 32)
        ends.setdefault(last >> 32, last)  # the epoch being written has no recorded end yet
        total = 0
        for epoch, end in ends.items():
            lo, hi = max(lsn_from, epoch << 32 | 1), min(lsn_to, end)
            if lo <= hi:
                total += hi - lo + 1
        prefix = P_HOLE + u64(log_id)
        for key, value in self._meta_scan(prefix):
            first = fmt.decode_u64(key[9:])
            if first > lsn_to:
                break
            lo, hi = max(lsn_from, first), min(lsn_to, first + fmt.decode_u64(value) - 1)
            if lo <= hi:
                total -= hi - lo + 1
        return total

    @holding_no_handles
    def next_entry_lsn(self, log_id: int, after_lsn: int) -> int | None:
        """The first LSN of the first entry of the log that starts above ``after_lsn``, if any.

        Where RocksDB cannot read the keys above ``after_lsn`` (a damaged block), the LSN from which
        :meth:`read` reports them damaged.
        """
        if after_lsn >= 2**64 - 1:
            return None
        for _, cf, _, d in self._log_partitions(log_id, after_lsn + 1, 2**64 - 1):
            try:
                lsn = first_key_from(cf, log_id, after_lsn + 1)
            except Unreadable:
                return max(after_lsn + 1, d.lsn_min)
            if lsn is not None:
                return lsn
        return None

    @holding_no_handles
    def find_time(self, log_id: int, timestamp_ms: int) -> int:
        """The first LSN above the trim point whose entry is stamped at or after ``timestamp_ms``.

        Returns the LSN after the last stored one if every entry is older. Uses the partition
        directory and a binary search by seeks, never a scan.
        """
        trim = self.trim_point(log_id)
        last = self.last_lsn(log_id)
        for _, cf, _, d in self._log_partitions(log_id, trim + 1, 2**64 - 1):
            if d.timestamp_ms_max < timestamp_ms:
                continue
            found = self._bisect_time(cf, log_id, max(trim + 1, d.lsn_min), d.lsn_max, timestamp_ms)
            if found is not None:
                return found
        return last + 1

    def _bisect_time(self, cf: Any, log_id: int, lo: int, hi: int, timestamp_ms: int) -> int | None:
        it = cf.iter(ReadOptions())

        def check_readable(lsn: int) -> None:
            # A time search cannot step over damaged blocks as a read does: it would answer with
            # an LSN it cannot vouch for.
            try:
                check(it)
            except Unreadable as exc:
                raise CorruptionError(f"log {log_id}: the entries near LSN {fmt.lsn_text(lsn)} "
                                      f"cannot be read: {exc}") from None

        def entry_at_or_after(lsn: int) -> tuple[int, int, int] | None:
            it.seek(fmt.encode_key(log_id, lsn))
            if not it.valid():
                check_readable(lsn)
                return None
            key = it.key()
            entry_log, first = fmt.decode_key(key)
            if entry_log != log_id:
                return None
            try:
                header = fmt.decode_header(key, it.value())
            except fmt.HeaderCorrupt as exc:
                raise CorruptionError(f"log {log_id}: entry at LSN {fmt.lsn_text(first)} is damaged") from exc
            return first, first + header.count - 1, header.timestamp_ms

        # The entry holding `lo` may start below it.
        it.seek_for_prev(fmt.encode_key(log_id, lo))
        if not it.valid():
            check_readable(lo)
        if it.valid() and fmt.decode_key(it.key())[0] == log_id:
            first = fmt.decode_key(it.key())[1]
            covering = entry_at_or_after(first)
            if covering is not None and covering[1] >= lo and covering[2] >= timestamp_ms:
                return lo
        # The first entry starting in [lo, hi] stamped at or after the timestamp. Timestamps do not
        # decrease along a log, so bisect: every entry starting below `low` is older; the answer,
        # if any, starts below `high` or is `best`. Each step moves `low` up or `high` down.
        low, high, best = lo, hi + 1, None
        while low < high:
            mid = (low + high) // 2
            found = entry_at_or_after(mid)
            if found is None or found[0] >= high:
                high = mid
            elif found[2] >= timestamp_ms:
                best = high = found[0]
            else:
                low = found[0] + 1
        return best
