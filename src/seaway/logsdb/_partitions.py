"""Partitions: time-ordered column families, each with a segment file for its large entries, and
the directory of which logs each holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocksdict import DBCompressionType, Options, ReadOptions

from seaway._values import PartitionInfo
from seaway.errors import StorageError
from seaway.logsdb import _format as fmt
from seaway.logsdb._keys import P_DIRECTORY, P_PARTITION, SEGMENT_NAME, cf_name, segment_name, u64
from seaway.logsdb._producers import ProducerWindows
from seaway.logsdb._segment import Segment

_COMPRESSION = {
    "none": DBCompressionType.none(),
    "snappy": DBCompressionType.snappy(),
    "lz4": DBCompressionType.lz4(),
    "zstd": DBCompressionType.zstd(),
}


class Partitions(ProducerWindows):
    """The partitions and their directory."""

    _segments_dir: Path
    _segments: dict[int, Segment]
    _partitions: dict[int, tuple[int, Any, Any]]
    """Partition id -> (created_ms, Rdict, handle)."""
    _directory: dict[int, dict[int, fmt.DirEntry]]
    """Partition id -> log id -> what the partition holds of the log."""
    _sizes: dict[int, int]
    """Bytes of entries per partition, kept as they are written: a write must not sum a directory."""
    _last_lsn: dict[int, int]
    """The highest LSN stored of each log."""

    def _load_partitions(self, cf_names: list[str]) -> None:
        """Load the directory of the partitions registered; drop the column families (``cf_names``,
        those RocksDB opened) and segment files of the others."""
        self._directory = {}
        created: dict[int, int] = {}
        for key, value in self._meta_scan(P_PARTITION):
            created[fmt.decode_u64(key[1:9])] = fmt.decode_u64(value)
        for name in cf_names:
            pid = int(name[1:], 16)
            if pid not in created:
                # Created but never registered (crash in between), or dropped from the directory but
                # not yet from RocksDB (crash in between): it holds nothing that is retained.
                self._db.drop_column_family(name)
                continue
            self._partitions[pid] = (created[pid], self._db.get_column_family(name),
                                     self._db.get_column_family_handle(name))
            self._directory[pid] = {}
            self._segments[pid] = Segment(self._segments_dir / segment_name(pid))
        kept = {segment_name(pid) for pid in self._partitions}
        for path in self._segments_dir.iterdir():
            # A segment whose partition was dropped, or never registered (a crash in between).
            # Nothing else is Seaway's to remove: the folder may be a mount point, say.
            if SEGMENT_NAME.fullmatch(path.name) and path.name not in kept:
                try:
                    path.unlink()
                except OSError as exc:
                    raise StorageError(f"cannot remove the orphaned segment file {path}: {exc}") from exc
        for key, value in self._meta_scan(P_DIRECTORY):
            pid, log_id = fmt.decode_u64(key[1:9]), fmt.decode_u64(key[9:17])
            if pid in self._directory:
                self._directory[pid][log_id] = fmt.DirEntry.decode(value)
        self._sizes = {pid: sum(d.size_bytes for d in entries.values()) for pid, entries in self._directory.items()}
        self._last_lsn = {}
        for entries in self._directory.values():
            for log_id, d in entries.items():
                self._last_lsn[log_id] = max(self._last_lsn.get(log_id, 0), d.lsn_max)


    def _cf_options(self) -> Options:
        opts = Options(raw_mode=True)
        opts.set_compression_type(_COMPRESSION[self._config.compression])
        return opts

    def _partition_for_write(self) -> int:
        now_ms = self._clock.now_ms()
        if self._partitions:
            newest = max(self._partitions)
            created_ms = self._partitions[newest][0]
            size = self._sizes.get(newest, 0)
            age_s = (now_ms - created_ms) / 1000
            if age_s < self._config.partition_duration_s and size < self._config.partition_bytes_max:
                return newest
            pid = newest + 1
        else:
            pid = 1
        return self._create_partition(pid, now_ms)

    def _create_partition(self, pid: int, now_ms: int) -> int:
        name = cf_name(pid)
        segment = Segment(self._segments_dir / segment_name(pid))
        try:
            cf = self._db.create_column_family(name, self._cf_options())
            # Registered after it exists: a crash in between leaves an unregistered, empty family
            # that the next open drops.
            self._meta.put(P_PARTITION + u64(pid), u64(now_ms), self._write_async)
        except Exception as exc:
            # Its family may exist now, unregistered: the next open drops it.
            segment.close()
            raise self._fail_stop(StorageError(f"cannot create partition {pid}: {exc}")) from exc
        self.sync_wal()
        with self._lock:
            previous = self._segments.get(max(self._segments, default=0))
            self._partitions[pid] = (now_ms, cf, self._db.get_column_family_handle(name))
            self._directory[pid] = {}
            self._segments[pid] = segment
        if previous is not None:
            previous.stop_appending()  # new entries go to the new partition
        return pid

    def _to_segment(self, pid: int, values: list[bytes]) -> int:
        """Append ``values`` to the partition's segment and sync them (before RocksDB holds a
        reference to them: see _segment); the offset of the first."""
        segment = self._segments[pid]
        offset = segment.append(values)  # a failed write leaves nothing referenced: writes go on
        try:
            segment.sync()
        except StorageError as exc:
            raise self._fail_stop(exc)  # noqa: B904 (its cause is the OSError already)
        return offset

    @staticmethod
    def _dir_after(d: fmt.DirEntry | None, first: int, last: int, ts: int, size: int) -> fmt.DirEntry:
        if d is None:
            return fmt.DirEntry(first, last, ts, ts, size, 1)
        # A slot retransmitted after a later one was stored arrives out of LSN order.
        return fmt.DirEntry(min(d.lsn_min, first), max(d.lsn_max, last), min(d.timestamp_ms_min, ts),
                            max(d.timestamp_ms_max, ts), d.size_bytes + size, d.entries + 1)

    def last_lsn(self, log_id: int) -> int:
        """The highest LSN ever stored for the log (records or hole plug), or its trim point; 0 if none."""
        return max(self._last_lsn.get(log_id, 0), self._trim.get(log_id, 0))

    def log_ids(self) -> list[int]:
        """Every log that has stored data or a trim point."""
        with self._lock:
            return sorted(set(self._last_lsn) | set(self._trim))

    def data_size(self, log_id: int) -> int:
        """Bytes of entries the log holds in partitions not yet dropped."""
        with self._lock:
            return sum(d[log_id].size_bytes for d in self._directory.values() if log_id in d)

    def partitions(self) -> list[PartitionInfo]:
        with self._lock:
            return [
                PartitionInfo(pid, created, sum(d.size_bytes for d in self._directory[pid].values()),
                              tuple(sorted(self._directory[pid])))
                for pid, (created, _, _) in sorted(self._partitions.items())
            ]

    def _log_partitions(self, log_id: int, lsn_min: int,
                        lsn_max: int) -> list[tuple[int, Any, Segment, fmt.DirEntry]]:
        with self._lock:
            self._check_open()
            out = []
            for pid in sorted(self._directory):
                d = self._directory[pid].get(log_id)
                if d is not None and d.lsn_max >= lsn_min and d.lsn_min <= lsn_max:
                    out.append((pid, self._partitions[pid][1], self._segments[pid], d.copy()))
            return out

    def _segment_ranges(self, pid: int, log_id: int) -> list[tuple[int, int]]:
        """Where the log's entries in a partition keep their bytes in its segment file."""
        opts = ReadOptions()
        opts.set_iterate_upper_bound(fmt.encode_key(log_id + 1, 0))
        out: list[tuple[int, int]] = []
        it = self._partitions[pid][1].iter(opts)
        it.seek(fmt.encode_key(log_id, 0))
        while it.valid():
            key, value = it.key(), it.value()
            try:
                if fmt.decode_header(key, value).kind is fmt.EntryKind.SEGMENT_REF:
                    out.append(fmt.decode_segment_ref(value))
            except fmt.HeaderCorrupt:
                pass  # a damaged reference: its bytes go with the partition
            it.next()
        return out
