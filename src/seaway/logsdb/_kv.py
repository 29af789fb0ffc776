"""The two key-value stores of the metadata family: the versioned one with compare-and-set
batches (``kv_*``) and the upper layers' plain keys (``*_meta``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

from rocksdict import ReadOptions, WriteBatch

from seaway._values import KvCheck, KvDelete, KvOp, KvPut
from seaway.errors import ConditionFailedError, CorruptionError
from seaway.logsdb import _format as fmt
from seaway.logsdb._core import holding_no_handles
from seaway.logsdb._keys import P_KV, P_KV_REVISION, P_USER, u64
from seaway.logsdb._ledger import LedgerStore


class KvStore(LedgerStore):
    """Both key-value stores (see the module's docstring)."""

    _kv_revision: int

    def _load_kv(self) -> None:
        raw_revision = self._meta.get(P_KV_REVISION)
        self._kv_revision = fmt.decode_u64(raw_revision) if raw_revision is not None else 0

    @holding_no_handles
    def put_meta(self, key: bytes, value: bytes, *, ledger: bytes | None = None) -> None:
        """Durably store an upper layer's metadata key (with a ``ledger`` entry, atomically)."""
        with self._writing():
            self._meta_put_sync(P_USER + key, value, ledger)

    @holding_no_handles
    def delete_meta(self, key: bytes, *, ledger: bytes | None = None) -> None:
        with self._writing():
            self._meta_put_sync(P_USER + key, None, ledger)

    def get_meta(self, key: bytes) -> bytes | None:
        self._check_open()
        value: bytes | None = self._meta.get(P_USER + key)
        return value

    def scan_meta(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Upper-layer metadata keys starting with ``prefix``, in key order (prefix kept)."""
        self._check_open()
        for key, value in self._meta_scan(P_USER + prefix):
            yield key[len(P_USER):], value

    @holding_no_handles
    def kv_commit(self, checks: Sequence[KvCheck], ops: Sequence[KvOp], *, sync: bool = True,
                  ledger: bytes | None = None, plain: Sequence[tuple[bytes, bytes]] = (),
                  plain_ledger: Sequence[bytes] = ()) -> int:
        """Apply ``ops`` atomically if every check holds; return the batch's revision (the version
        of every key it puts). Durable when it returns (``sync=False``: applied, and durable with
        the next synced write; a process crash keeps it, a power loss may not). Raises
        :class:`ConditionFailedError` for the first check that fails (nothing is applied),
        :class:`StorageError` if the write failed.

        Revisions go up by one a batch that changes something, across restarts. Concurrent
        callers share WAL syncs (group commit). A ``ledger`` entry is written in the same batch.

        ``plain``: upper-layer metadata keys (as :meth:`put_meta` writes) put in the same write,
        recorded by the ledger entries ``plain_ledger`` (before ``ledger``): what makes a log's
        creation atomic with the versioned batch that names it."""
        with self._writing():
            for check in checks:
                self._kv_check(check)
            revision = self._kv_revision + 1
            batch = WriteBatch(raw_mode=True)
            for op in ops:
                if isinstance(op, KvPut):
                    key = P_KV + op.key
                    batch.put(key, fmt.encode_kv(key, revision, op.value), self._meta_handle)
                elif isinstance(op, KvDelete):
                    batch.delete(P_KV + op.key, self._meta_handle)
                else:
                    batch.delete_range(P_KV + op.start, P_KV + op.end, self._meta_handle)
            batch.put(P_KV_REVISION, u64(revision), self._meta_handle)
            for key, value in plain:
                batch.put(P_USER + key, value, self._meta_handle)
            bodies = (*plain_ledger, *((ledger,) if ledger is not None else ()))
            kept = self._ledger_add(batch, bodies) if bodies else None
            self._apply(batch, sync=False)
            self._kv_revision = revision
            if kept is not None:
                self._ledger_kept(kept)
            self._kv_applied += 1
            applied = self._kv_applied
        if sync:
            self._kv_sync(applied)
        if bodies:  # unsynced (sync=False): a woken reader's read syncs it
            self._wake_ledger_readers()
        return revision

    @holding_no_handles
    def kv_sync(self) -> None:
        """Make every metadata batch applied so far durable (those committed with ``sync=False``)."""
        self._check_open()
        self._kv_sync(self._kv_applied)

    def _kv_check(self, check: KvCheck) -> None:
        found = self._kv_read(check.key)
        version = found[0] if found is not None else 0
        if check.version is not None and version != check.version:
            raise ConditionFailedError(f"expected version {check.version}, found {version}", key=check.key,
                                       version=version)
        if check.value is not None and (found is None or found[1] != check.value):
            raise ConditionFailedError("the value differs from the expected one" if found is not None
                                       else "expected a value, the key is absent", key=check.key, version=version)

    def _kv_read(self, key: bytes) -> tuple[int, bytes] | None:
        full = P_KV + key
        raw: bytes | None = self._meta.get(full)
        if raw is None:
            return None
        try:
            return fmt.decode_kv(full, raw)
        except fmt.HeaderCorrupt as exc:
            raise CorruptionError(f"metadata key {key!r}: {exc}") from exc

    @holding_no_handles
    def kv_get(self, key: bytes) -> tuple[int, bytes] | None:
        """``(version, value)`` of a metadata key, or None. Raises :class:`CorruptionError`."""
        self._check_open()
        self._kv_settled()
        return self._kv_read(key)

    @holding_no_handles
    def kv_scan(self, start: bytes, end: bytes, limit: int,
                bytes_max: int | None = None) -> tuple[list[tuple[bytes, int, bytes]], bool]:
        """Up to ``limit`` metadata keys in ``[start, end)``, in key order, as ``(key, version,
        value)``; and whether the scan stopped at ``bytes_max`` (of keys and values) with keys left
        to read: it stops before the key that would pass it (one key comes however large)."""
        self._check_open()
        self._kv_settled()
        opts = ReadOptions()
        opts.set_iterate_upper_bound(P_KV + end)
        it = self._meta.iter(opts)
        it.seek(P_KV + start)
        out: list[tuple[bytes, int, bytes]] = []
        size = 0
        while it.valid() and len(out) < limit:
            full, raw = cast(bytes, it.key()), cast(bytes, it.value())
            size += len(full) + len(raw)
            if bytes_max is not None and out and size > bytes_max:
                return out, True
            try:
                version, value = fmt.decode_kv(full, raw)
            except fmt.HeaderCorrupt as exc:
                raise CorruptionError(f"metadata key {full[1:]!r}: {exc}") from exc
            out.append((full[1:], version, value))
            it.next()
        return out, False

    @property
    def kv_revision(self) -> int:
        """The revision of the last metadata batch applied."""
        return self._kv_revision
