"""The change ledger: numbered entries, each written in the same atomic batch as the change it
records, pruned by readers and by a hard bound in entries and bytes, seen by readers only once durable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from rocksdict import ReadOptions, WriteBatch

from seaway.errors import StorageError
from seaway.logsdb import _format as fmt
from seaway.logsdb._core import LedgerState, StoreCore, holding_no_handles
from seaway.logsdb._keys import P_LEDGER, P_LEDGER_HEAD, P_LEDGER_START, P_LEDGER_WRITTEN, u64


class LedgerStore(StoreCore):
    """The ledger's entries, and metadata writes that carry one."""

    _ledger_listeners: tuple[Callable[[], None], ...]

    def _load_ledger(self) -> None:
        raw_head = self._meta.get(P_LEDGER_HEAD)
        head = fmt.decode_u64(raw_head) if raw_head is not None else 0
        first = next(self._meta_scan(P_LEDGER), None)
        tail = fmt.decode_u64(first[0][1:]) if first is not None else head + 1
        raw_written = self._meta.get(P_LEDGER_WRITTEN)
        written = fmt.decode_u64(raw_written) if raw_written is not None else 0
        state = LedgerState(tail, head, written, 0)
        self._ledger = state._replace(tail_start=self._ledger_start(tail, {}, state))
        self._ledger_shown = (tail, head)

    def _meta_put_sync(self, key: bytes, value: bytes | None, ledger: bytes | None = None) -> None:
        # Written unsynced, then synced by a call that lets the GIL go (see _apply): a synced
        # rocksdict write would stall every thread of the process for the fsync. Nothing reads
        # these keys back while the store is open but the store itself, after this returns.
        # A value of None deletes the key. With a ledger entry, both go in one write batch.
        if ledger is not None:
            batch = WriteBatch(raw_mode=True)
            if value is None:
                batch.delete(key, self._meta_handle)
            else:
                batch.put(key, value, self._meta_handle)
            kept = self._ledger_add(batch, (ledger,))
            self._apply(batch, sync=False)
            self._ledger_kept(kept)
            self.sync_wal()
            self._wake_ledger_readers()
            return
        try:
            if value is None:
                self._meta.delete(key, self._write_async)
            else:
                self._meta.put(key, value, self._write_async)
        except Exception as exc:
            raise self._fail_stop(StorageError(f"RocksDB metadata write failed: {exc}")) from exc
        self.sync_wal()

    def _ledger_add(self, batch: WriteBatch, bodies: Sequence[bytes]) -> LedgerState:
        """Put the next ledger entries into ``batch`` (under the writers' lock), and, if they would
        pass the hard bound (in entries or in bytes), a range delete of the oldest entries, down to
        nine tenths of it; return the ledger as it is once the batch is applied (see
        :meth:`_ledger_kept`)."""
        tail, head, written, _ = self._ledger
        now = u64(self._clock.now_ms())
        starts: dict[int, int] = {}
        for body in bodies:
            head += 1
            starts[head] = written
            value = now + body
            batch.put(P_LEDGER + u64(head), value, self._meta_handle)
            batch.put(P_LEDGER_START + u64(head), u64(written), self._meta_handle)
            written += len(value)
        batch.put(P_LEDGER_HEAD, u64(head), self._meta_handle)
        batch.put(P_LEDGER_WRITTEN, u64(written), self._meta_handle)
        grown = LedgerState(tail, head, written, self._ledger.tail_start)
        # A range, not the one oldest entry: the next hard prune is a tenth of the bound away.
        entries_max, bytes_max = self._config.ledger_hard_entries_max, self._config.ledger_hard_bytes_max
        new_tail = tail
        if head - tail + 1 > entries_max:
            new_tail = head - (entries_max - entries_max // 10) + 1
        if written - self._ledger_start(new_tail, starts, grown) > bytes_max:
            new_tail = self._ledger_bytes_cut(new_tail, starts, grown, bytes_max - bytes_max // 10)
        if new_tail == tail:
            return grown
        self._ledger_delete_below(batch, tail, new_tail)
        return LedgerState(new_tail, head, written, self._ledger_start(new_tail, starts, grown))

    def _ledger_start(self, index: int, starts: dict[int, int], state: LedgerState | None = None) -> int:
        """Bytes of every entry written before entry ``index`` (kept, or the next to be written);
        ``starts`` holds those of entries not applied yet. A store written before entries were
        counted has none for its older entries: 0, so that they are the first to go."""
        state = state or self._ledger
        if index > state.head:
            return state.written
        if index in starts:
            return starts[index]
        raw = self._meta.get(P_LEDGER_START + u64(index))
        return fmt.decode_u64(raw) if raw is not None else 0

    def _ledger_bytes_cut(self, low: int, starts: dict[int, int], state: LedgerState, bytes_max: int) -> int:
        """The first index from which the entries kept hold at most ``bytes_max`` bytes: a binary
        search over the entries' start offsets (a few point reads, whatever the ledger holds)."""
        high = state.head + 1  # keeps nothing: within any bound
        while low < high:
            mid = (low + high) // 2
            if state.written - self._ledger_start(mid, starts, state) <= bytes_max:
                high = mid
            else:
                low = mid + 1
        return low

    def _ledger_delete_below(self, batch: WriteBatch, tail: int, new_tail: int) -> None:
        for prefix in (P_LEDGER, P_LEDGER_START):
            batch.delete_range(prefix + u64(tail), prefix + u64(new_tail), self._meta_handle)

    def _ledger_kept(self, state: LedgerState) -> None:
        """The ledger as a write applied it; readers see it once a sync made it durable (see
        :meth:`sync_wal`)."""
        with self._lock:
            self._ledger = state

    def _wake_ledger_readers(self) -> None:
        for listener in self._ledger_listeners:
            listener()

    def add_ledger_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after each write that adds ledger entries, once it is durable (from
        the writer's thread: it must only wake a reader, never read or block)."""
        with self._lock:
            self._ledger_listeners = (*self._ledger_listeners, listener)

    def remove_ledger_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._ledger_listeners = tuple(x for x in self._ledger_listeners if x is not listener)

    @holding_no_handles
    def ledger_append(self, body: bytes) -> int:
        """Write a ledger entry on its own (durably); return its index."""
        with self._writing():
            batch = WriteBatch(raw_mode=True)
            kept = self._ledger_add(batch, (body,))
            self._apply(batch, sync=False)
            self._ledger_kept(kept)
        self.sync_wal()
        self._wake_ledger_readers()
        return kept.head

    def ledger_bounds(self) -> tuple[int, int]:
        """``(tail, head)``: the first index still kept and the last written; ``tail == head + 1``
        when nothing is kept. Indexes go up by one an entry, across restarts and prunings. Both
        move only once what moved them is durable."""
        with self._lock:
            return self._ledger_shown

    @holding_no_handles
    def ledger_read(self, index_from: int, limit: int, bytes_max: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` entries from ``index_from`` on, as ``(index, stored bytes)`` (the time,
        8 bytes big-endian, then the change), in index order; entries below the tail are gone.

        Stops before the entry that would bring the stored bytes past ``bytes_max`` (one entry is
        returned however large, when any is there), without loading it. Returns only durable
        entries (a metadata batch applied unsynced is synced first, see :meth:`kv_commit`)."""
        self._check_open()
        self._kv_settled()
        _, head = self.ledger_bounds()
        out: list[tuple[int, bytes]] = []
        size = 0
        opts = ReadOptions()
        opts.set_iterate_upper_bound(P_LEDGER + u64(head + 1))
        it = self._meta.iter(opts)
        it.seek(P_LEDGER + u64(max(index_from, 0)))
        while it.valid() and len(out) < limit:
            value = cast(bytes, it.value())
            size += len(value)
            if out and size > bytes_max:
                break
            out.append((fmt.decode_u64(cast(bytes, it.key())[1:]), value))
            it.next()
        return out

    @holding_no_handles
    def ledger_prune(self, through: int) -> int:
        """Drop every entry up to index ``through`` (one range delete, durably); return the new tail."""
        with self._writing():
            tail, head, written, _ = self._ledger
            through = min(through, head)
            if through < tail:
                return tail
            batch = WriteBatch(raw_mode=True)
            self._ledger_delete_below(batch, tail, through + 1)
            state = LedgerState(through + 1, head, written, self._ledger_start(through + 1, {}))
            self._apply(batch, sync=False)
            self._ledger_kept(state)
        self.sync_wal()
        return through + 1
