"""The metadata store: namespaced keys, point and range reads, and atomic conditional batches.

Every control plane above the log layer (streams, reader groups, transactions, consumer groups,
the notification ledger) keeps its state here, and makes each change as one batch: puts, deletes
and range deletes that are applied all together, or not at all if one of the batch's conditions
fails. Each batch that applies gets the next *revision* of the store; the version of a key is the
revision of the batch that last put it, so "the key still has the version I read" is the
compare-and-set that lets processes change shared state without locks (as etcd's ``mod_revision``,
or ZooKeeper's multi-op with version checks).

Embedded, the batch is one RocksDB write batch, synced before it returns (concurrent batches share
a sync). In a replicated cluster the same interface is served by a replicated store (ZooKeeper's
multi-op, or a metadata log replicated like any other log), never by several independent writes.

The batch is plain data (:class:`MetaBatch`), built the same way embedded and remote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from seaway._values import KvCheck, KvDelete, KvDeleteRange, KvOp, KvPut
from seaway.errors import ConditionFailedError, InvalidArgumentError, PayloadTooLargeError, SeawayError
from seaway.ledger import Change, encode_change
from seaway.log._config import LOG_ID_MAX, check_name

if TYPE_CHECKING:  # the remote client uses this module and must not load RocksDB
    from seaway.log._config import LogsConfig
    from seaway.logsdb import LogsDB

NAMESPACE_CHARS_MAX = 64
KEY_BYTES_MAX = 1024
VALUE_BYTES_MAX = 1 << 20
BATCH_OPS_MAX = 10_000
"""Puts, deletes, range deletes and conditions of one batch, together."""
COMMIT_MANY_MAX = 1_000
"""Batches one ``commit_many`` takes at most."""
BATCH_NEW_LOGS_MAX = 10_000
"""Logs one batch creates (:meth:`MetaBatch.create_log`), besides its operations."""
BATCH_BYTES_MAX = 16 << 20
"""Keys and values of one batch, together."""
SCAN_LIMIT_MAX = 10_000
"""The most keys one scan returns; continue from the last key returned."""

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SEP = b"\x00"


class Versioned(NamedTuple):
    """A value and its version (the revision of the batch that put it)."""

    value: bytes
    version: int


def check_namespace(namespace: object) -> str:
    if (not isinstance(namespace, str) or not _NAMESPACE.match(namespace)
            or len(namespace) > NAMESPACE_CHARS_MAX):
        raise InvalidArgumentError(f"a namespace is 1-{NAMESPACE_CHARS_MAX} letters, digits and ._- starting "
                                   f"with a letter or digit, got {namespace!r}")
    return namespace


def check_key(key: object, what: str = "key") -> bytes:
    if not isinstance(key, bytes) or len(key) > KEY_BYTES_MAX:
        raise InvalidArgumentError(f"a metadata {what} is at most {KEY_BYTES_MAX} bytes, got {key!r:.80}")
    return key


def check_meta_key(namespace: object, key: object) -> tuple[str, bytes]:
    """A namespace and key, checked (for the API's implementations)."""
    return check_namespace(namespace), check_key(key)


def prefix_end(prefix: bytes) -> bytes:
    """The first key above every key that starts with ``prefix`` (``b""``: no upper bound)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return b""
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


@dataclass(frozen=True, slots=True)
class MetaPut:
    namespace: str
    key: bytes
    value: bytes


@dataclass(frozen=True, slots=True)
class MetaDelete:
    namespace: str
    key: bytes


@dataclass(frozen=True, slots=True)
class MetaDeleteRange:
    """Delete the namespace's keys in ``[start, end)``; an empty ``end`` means to its end."""

    namespace: str
    start: bytes
    end: bytes


@dataclass(frozen=True, slots=True)
class MetaCondition:
    """The key's version is ``version`` (0: absent) and/or its value is ``value``."""

    namespace: str
    key: bytes
    version: int | None = None
    value: bytes | None = None


MetaOp = MetaPut | MetaDelete | MetaDeleteRange


@dataclass(frozen=True, slots=True)
class MetaNewLog:
    """A log the batch creates (see :meth:`MetaBatch.create_log`)."""

    name: str
    log_id: int | None = None
    group: str | None = None


@dataclass
class MetaBatch:
    """An atomic batch under construction. Chain the calls, then :meth:`commit` (bound batches, from
    ``sw.meta.batch()``) or pass it to ``sw.meta.commit(batch)``. Conditions are checked before
    anything is applied; operations apply in the order given."""

    conditions: list[MetaCondition] = field(default_factory=list)
    ops: list[MetaOp] = field(default_factory=list)
    ledger: bytes | None = None
    """The encoded change ledger entry written with the batch (see :meth:`record`), if any."""
    new_logs: list[MetaNewLog] = field(default_factory=list)
    """The logs the batch creates (see :meth:`create_log`)."""
    _commit: Callable[[MetaBatch], int] | None = field(default=None, repr=False, compare=False)
    _bytes: int = field(default=0, repr=False, compare=False)

    def _grow(self, *parts: bytes) -> None:
        self._bytes += sum(map(len, parts))
        if len(self.conditions) + len(self.ops) > BATCH_OPS_MAX:
            raise PayloadTooLargeError(f"a metadata batch holds at most {BATCH_OPS_MAX} operations and conditions")
        if self._bytes > BATCH_BYTES_MAX:
            raise PayloadTooLargeError(f"a metadata batch holds at most {BATCH_BYTES_MAX} bytes")

    def record(self, change: Change) -> MetaBatch:
        """Write ``change``'s ledger entry in the same atomic write as the batch (one per batch:
        a batch is one control-plane change). Nothing is recorded if a condition fails."""
        if self.ledger is not None:
            raise InvalidArgumentError("a metadata batch records one ledger change")
        self.ledger = encode_change(change)
        self._grow(self.ledger)
        return self

    def put(self, namespace: str, key: bytes, value: bytes) -> MetaBatch:
        check_namespace(namespace)
        check_key(key)
        if not isinstance(value, bytes):
            raise InvalidArgumentError(f"a metadata value must be bytes, got {type(value).__name__}")
        if len(value) > VALUE_BYTES_MAX:
            raise PayloadTooLargeError(f"a metadata value is at most {VALUE_BYTES_MAX} bytes, got {len(value)}")
        self.ops.append(MetaPut(namespace, key, value))
        self._grow(key, value)
        return self

    def create_log(self, name: str, log_id: int | None = None, *, group: str | None = None) -> MetaBatch:
        """Create the log ``name`` (with id ``log_id``, or the next free one of its group when
        None; attributes from the group) in the same atomic write as the batch: the log exists
        exactly when the batch applied, so metadata that names it never names a missing log, and
        no log is left that nothing names. A caller that writes the id into the batch's values
        chooses it (a random id of its group is unlikely to be taken; if it is, the commit raises
        :class:`LogExistsError` and nothing is applied: choose again). Each log is recorded in the
        ledger (``log.created``) before the batch's own change."""
        check_name(name, "log")
        if log_id is not None and (not isinstance(log_id, int) or isinstance(log_id, bool)
                                   or not 1 <= log_id <= LOG_ID_MAX):
            raise InvalidArgumentError(f"log id must be in [1, {LOG_ID_MAX}], got {log_id!r}")
        if group is not None:
            check_name(group, "log group")
        if len(self.new_logs) >= BATCH_NEW_LOGS_MAX:
            raise PayloadTooLargeError(f"a metadata batch creates at most {BATCH_NEW_LOGS_MAX} logs")
        self.new_logs.append(MetaNewLog(name, log_id, group))
        self._grow(name.encode(), (group or "").encode(), b"\0" * 8)
        return self

    def delete(self, namespace: str, key: bytes) -> MetaBatch:
        self.ops.append(MetaDelete(check_namespace(namespace), check_key(key)))
        self._grow(key)
        return self

    def delete_range(self, namespace: str, start: bytes, end: bytes = b"") -> MetaBatch:
        """Delete the keys in ``[start, end)`` (``end`` empty: every key from ``start`` on)."""
        check_namespace(namespace)
        check_key(start, "range start")
        check_key(end, "range end")
        if end and end <= start:
            raise InvalidArgumentError(f"a range's end {end!r} must be above its start {start!r}")
        self.ops.append(MetaDeleteRange(namespace, start, end))
        self._grow(start, end)
        return self

    def delete_prefix(self, namespace: str, prefix: bytes) -> MetaBatch:
        """Delete every key that starts with ``prefix`` (all of the namespace for ``b""``)."""
        return self.delete_range(namespace, check_key(prefix, "prefix"), prefix_end(prefix))

    def expect_version(self, namespace: str, key: bytes, version: int) -> MetaBatch:
        """Apply only if the key's version is ``version`` (0: only if the key is absent)."""
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version < 2**63:
            raise InvalidArgumentError(f"a version is an integer in [0, 2**63), got {version!r}")
        self.conditions.append(MetaCondition(check_namespace(namespace), check_key(key), version=version))
        self._grow(key)
        return self

    def expect_absent(self, namespace: str, key: bytes) -> MetaBatch:
        return self.expect_version(namespace, key, 0)

    def expect_value(self, namespace: str, key: bytes, value: bytes) -> MetaBatch:
        """Apply only if the key exists and holds ``value``."""
        if not isinstance(value, bytes):
            raise InvalidArgumentError(f"a metadata value must be bytes, got {type(value).__name__}")
        self.conditions.append(MetaCondition(check_namespace(namespace), check_key(key), value=value))
        self._grow(key, value)
        return self

    def commit(self) -> int:
        """Apply the batch; return its revision. See :meth:`MetadataStore.commit`."""
        if self._commit is None:
            raise InvalidArgumentError("this batch is not bound to a store: pass it to sw.meta.commit()")
        return self._commit(self)


def encode_key(namespace: str, key: bytes) -> bytes:
    return namespace.encode() + _SEP + key


def decode_key(full: bytes) -> tuple[str, bytes]:
    namespace, _, key = full.partition(_SEP)
    return namespace.decode(), key


def _range_end(namespace: str, end: bytes) -> bytes:
    return encode_key(namespace, end) if end else namespace.encode() + bytes([_SEP[0] + 1])


class MetaApi:
    """What the embedded store and the remote client share: the convenience forms, on top of
    :meth:`get`, :meth:`scan` and :meth:`commit`."""

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        raise NotImplementedError

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        raise NotImplementedError

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        raise NotImplementedError

    def commit_many(self, batches: Sequence[MetaBatch]) -> list[int | SeawayError]:
        """Commit several batches, each on its own (its conditions, its outcome), durable when this
        returns: each one's revision, or the error it failed with (:class:`ConditionFailedError`
        among them), in order. They share one sync, where separate commits from one thread would
        each wait for their own. Through a server they go in one call; a call cut off raises
        :class:`TransportError` (whether each batch was applied is then unknown, as for
        :meth:`commit`). At most ``COMMIT_MANY_MAX`` batches (:class:`PayloadTooLargeError`)."""
        raise NotImplementedError

    @property
    def revision(self) -> int:
        raise NotImplementedError

    def batch(self) -> MetaBatch:
        """A new batch bound to this store: chain puts, deletes and conditions, then ``commit()``."""
        return MetaBatch(_commit=self.commit)

    def put(self, namespace: str, key: bytes, value: bytes, *, expect_version: int | None = None) -> int:
        """Put one key (if its version is ``expect_version``, when given); return its new version."""
        batch = self.batch()
        if expect_version is not None:
            batch.expect_version(namespace, key, expect_version)
        return batch.put(namespace, key, value).commit()

    def delete(self, namespace: str, key: bytes, *, expect_version: int | None = None) -> int:
        batch = self.batch()
        if expect_version is not None:
            batch.expect_version(namespace, key, expect_version)
        return batch.delete(namespace, key).commit()

    def scan_all(self, namespace: str, *, prefix: bytes = b"", page: int = 1000) -> Iterator[tuple[bytes, Versioned]]:
        """Every key of the namespace that starts with ``prefix``, in pages of ``page`` keys."""
        start: bytes | None = None
        while True:
            rows = self.scan(namespace, prefix=prefix, start=start, limit=page)
            yield from rows
            if len(rows) < page:
                return
            start = rows[-1][0] + _SEP


def scan_bounds(namespace: str, prefix: bytes, start: bytes | None, end: bytes | None,
                limit: int) -> tuple[bytes, bytes]:
    """The full-key range ``[lo, hi)`` of a scan, its arguments checked."""
    check_namespace(namespace)
    check_key(prefix, "prefix")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= SCAN_LIMIT_MAX:
        raise InvalidArgumentError(f"a scan's limit is in [1, {SCAN_LIMIT_MAX}], got {limit!r}")
    lo = max(prefix, check_key(start, "start")) if start is not None else prefix
    hi = prefix_end(prefix)
    if end is not None:
        check_key(end, "end")
        hi = min(hi, end) if hi else end
    return encode_key(namespace, lo), _range_end(namespace, hi)


class MetadataStore(MetaApi):
    """The metadata store of an embedded store (``sw.meta``). Thread-safe. ``logs``: the names of
    the store's logs, which batches that create logs change (without it such a batch is refused)."""

    def __init__(self, db: LogsDB, logs: LogsConfig | None = None) -> None:
        self._db = db
        self._logs = logs

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        """The key's value and version, or None if absent. Sees every batch that returned."""
        found = self._db.kv_get(encode_key(check_namespace(namespace), check_key(key)))
        return None if found is None else Versioned(found[1], found[0])

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        """Up to ``limit`` keys of the namespace that start with ``prefix``, from ``start`` (inclusive)
        to ``end`` (exclusive), in byte order. A seek and a walk: the cost does not grow with what
        else the store holds."""
        return self.scan_page(namespace, prefix=prefix, start=start, end=end, limit=limit)[0]

    def scan_page(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
                  end: bytes | None = None, limit: int = 1000,
                  bytes_max: int | None = None) -> tuple[list[tuple[bytes, Versioned]], bool]:
        """As :meth:`scan`, also bounded by ``bytes_max`` bytes of keys and values (checked as
        they are read: one key comes however large); and whether it stopped at that bound with
        keys left. (A server's replies are pages of this: more is read from the last key + 0x00.)"""
        lo, hi = scan_bounds(namespace, prefix, start, end, limit)
        if lo >= hi:
            return [], False
        rows, more = self._db.kv_scan(lo, hi, limit, bytes_max)
        return [(decode_key(full)[1], Versioned(value, version)) for full, version, value in rows], more

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        """Apply ``batch`` atomically; return its revision, the version of every key it put.

        Raises :class:`ConditionFailedError` (naming the key) if a condition fails: nothing is
        applied. Durable when it returns; raises :class:`StorageError` if the write failed.
        A batch that creates logs (:meth:`MetaBatch.create_log`) creates them in the same write;
        :class:`LogExistsError` if a name or id is taken (nothing applied). ``sync=False``:
        applied but not waited onto the disk (a later synced write makes it
        durable; a power loss before that may lose it), for writes that can be made again from a
        log (the transaction manager's commits)."""
        checks = [KvCheck(encode_key(c.namespace, c.key), c.version, c.value) for c in batch.conditions]
        ops: list[KvOp] = []
        for op in batch.ops:
            if isinstance(op, MetaPut):
                ops.append(KvPut(encode_key(op.namespace, op.key), op.value))
            elif isinstance(op, MetaDelete):
                ops.append(KvDelete(encode_key(op.namespace, op.key)))
            else:
                ops.append(KvDeleteRange(encode_key(op.namespace, op.start), _range_end(op.namespace, op.end)))
        try:
            if not batch.new_logs:
                return self._db.kv_commit(checks, ops, sync=sync, ledger=batch.ledger)
            if self._logs is None:
                raise InvalidArgumentError("this metadata store cannot create logs")
            return self._logs.create_logs(
                [(n.name, n.log_id, n.group) for n in batch.new_logs],
                lambda keys, entries: self._db.kv_commit(checks, ops, sync=sync, ledger=batch.ledger,
                                                         plain=keys, plain_ledger=entries))
        except ConditionFailedError as exc:
            namespace, key = decode_key(exc.key)
            raise ConditionFailedError(f"metadata batch not applied: {namespace}/{key!r}: {exc}",
                                       namespace, key, exc.version) from None

    def commit_many(self, batches: Sequence[MetaBatch]) -> list[int | SeawayError]:
        if len(batches) > COMMIT_MANY_MAX:
            raise PayloadTooLargeError(f"commit_many takes at most {COMMIT_MANY_MAX} batches, got {len(batches)}")
        out: list[int | SeawayError] = []
        for batch in batches:
            try:
                out.append(self.commit(batch, sync=False))
            except SeawayError as exc:
                out.append(exc)
        if any(isinstance(result, int) for result in out):
            try:
                self._db.kv_sync()
            except SeawayError as exc:  # none of them is known durable
                return [exc if isinstance(result, int) else result for result in out]
        return out

    @property
    def revision(self) -> int:
        """The revision of the last batch applied."""
        return self._db.kv_revision
