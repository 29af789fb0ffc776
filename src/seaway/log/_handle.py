"""What every log handle shares, embedded or remote: identity, checks, and the single-record forms
of appending, all built on the one method each implementation provides, ``append_batch_async``."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple, TypeVar

from seaway._values import Durability, ProducerMark
from seaway.errors import (
    InvalidArgumentError,
    LogDeletedError,
    LogExistsError,
    PayloadTooLargeError,
    TimedOutError,
    UnknownLogError,
)
from seaway.log._coalesce import AppendCoalescer
from seaway.log._config import LOG_ID_MAX, LogInfo
from seaway.log._lsn import LSN_MAX, LSN_OLDEST, check_lsn
from seaway.log._types import LogAttributes, ReadItem
from seaway.log._writer import BatchingWriter, RetryPolicy

BATCH_RECORDS_MAX = 100_000
"""The most records one append may carry."""
PRODUCER_ID_BYTES_MAX = 64
APPEND_COUNTS_LOGS_MAX = 100_000
"""The most logs one ``append_counts`` or ``bounds`` call asks about."""

T = TypeVar("T")

UNSET: Any = object()
"""Marks an attribute argument not given, so that it is inherited."""


def attribute_overrides(backlog_s: Any = UNSET, payload_bytes_max: Any = UNSET,
                        durability: Any = UNSET) -> dict[str, Any]:
    """The attributes actually given to ``create`` or ``create_group``, checked."""
    overrides = {k: v for k, v in (("backlog_s", backlog_s), ("payload_bytes_max", payload_bytes_max),
                                   ("durability", durability)) if v is not UNSET}
    LogAttributes().with_overrides(overrides)  # raises InvalidArgumentError for bad values
    return overrides


def producer_mark(producer_id: bytes | None, sequence: int | None) -> ProducerMark | None:
    """Check an idempotent append's producer id and sequence number (both, or neither)."""
    if producer_id is None and sequence is None:
        return None
    if not isinstance(producer_id, bytes) or not 1 <= len(producer_id) <= PRODUCER_ID_BYTES_MAX:
        raise InvalidArgumentError(f"producer_id must be 1-{PRODUCER_ID_BYTES_MAX} bytes, got {producer_id!r}")
    if not isinstance(sequence, int) or isinstance(sequence, bool) or not 0 <= sequence < 2**63:
        raise InvalidArgumentError(f"sequence must be an integer in [0, 2**63), got {sequence!r}")
    return ProducerMark(producer_id, sequence)


class AppendCounts(NamedTuple):
    """What was appended to one log since the store opened: records and their payload bytes."""

    records: int
    payload_bytes: int


class LogBounds(NamedTuple):
    """Where one log stands: what a reader planning a range of it needs, in one answer."""

    tail_lsn: int
    """The LSN of the last record appended (or trimmed); 0 if the log was never written. For a
    sealed log, its final LSN."""
    final_lsn: int | None
    """The final LSN of a log sealed for good; None while it takes appends."""
    trim_point: int
    """The last LSN trimmed away (0 if none)."""


def check_log_ids(log_ids: Iterable[int]) -> list[int]:
    """Log ids given to ``append_counts`` or ``bounds``, checked: integers in ``[1, LOG_ID_MAX]``, at most
    ``APPEND_COUNTS_LOGS_MAX`` of them."""
    if isinstance(log_ids, str | bytes) or not isinstance(log_ids, Iterable):
        raise InvalidArgumentError(f"log_ids must be an iterable of log ids, got {log_ids!r:.80}")
    ids = list(log_ids)
    if len(ids) > APPEND_COUNTS_LOGS_MAX:
        raise InvalidArgumentError(f"at most {APPEND_COUNTS_LOGS_MAX} logs at a time, got {len(ids)}")
    for log_id in ids:
        if not isinstance(log_id, int) or isinstance(log_id, bool) or not 1 <= log_id <= LOG_ID_MAX:
            raise InvalidArgumentError(f"a log id is an integer in [1, {LOG_ID_MAX}], got {log_id!r:.80}")
    return ids


def check_count_ranges(ranges: Mapping[int, tuple[int, int | None]]) -> dict[int, tuple[int, int]]:
    """Ranges given to ``count_records``, checked: log id -> ``(lsn_from, lsn_until)``, both inclusive,
    ``lsn_until`` None (or ``LSN_MAX``) for the log's tail; at most ``APPEND_COUNTS_LOGS_MAX`` logs."""
    if not isinstance(ranges, Mapping):
        raise InvalidArgumentError(f"ranges must map log ids to (lsn_from, lsn_until), got {ranges!r:.80}")
    checked: dict[int, tuple[int, int]] = {}
    for log_id in check_log_ids(ranges):
        bounds = ranges[log_id]
        if not isinstance(bounds, tuple) or len(bounds) != 2:
            raise InvalidArgumentError(f"log {log_id}: a range is (lsn_from, lsn_until), got {bounds!r:.80}")
        lsn_from, lsn_until = bounds
        checked[log_id] = (check_lsn(lsn_from), LSN_MAX if lsn_until is None else check_lsn(lsn_until))
    return checked


def get_or_create_log(logs: Any, name: str, **attributes: Any) -> Any:
    """``logs.get(name)``, or ``logs.create(name, **attributes)`` if there is no such log (for
    any implementation of the logs namespace, embedded or remote). :class:`LogExistsError`, saying
    what differs, if the log there has another group, or other values of the attributes given."""
    try:
        found = logs.get(name)
    except LogDeletedError:
        raise
    except UnknownLogError:
        try:
            return logs.create(name, **attributes)
        except LogExistsError:  # created meanwhile by another caller
            found = logs.get(name)
    differs = [f"{what} is {has!r}, not {wanted!r}" for what, wanted in attributes.items()
               if wanted is not UNSET and (wanted is not None or what == "backlog_s")
               and (has := found.info.group if what == "group" else getattr(found.attributes, what)) != wanted]
    if differs:
        raise LogExistsError(f"log {name!r} exists with other attributes: {'; '.join(differs)}")
    return found


def _payload(payload: object) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, bytearray | memoryview):
        return bytes(payload)
    raise InvalidArgumentError(f"a payload must be bytes, got {type(payload).__name__}")


def _wait(future: Future[T], timeout_s: float | None) -> T:
    try:
        return future.result(timeout_s)
    except TimeoutError:
        if future.done():  # the append itself failed with a TimeoutError
            raise
        raise TimedOutError(f"the append was not answered within {timeout_s} s; it may or may not be stored, "
                            "and its future still tells") from None


class LogHandle:
    """A handle on one log. Cheap to create; all state lives in the store (or the server)."""

    def __init__(self, info: LogInfo, owner: object) -> None:
        self.info = info
        self._owner = owner  # the store or connection: handles are equal only within one
        self._coalescer: AppendCoalescer | None = None
        self._payload_bytes_max = info.attributes.payload_bytes_max

    @property
    def id(self) -> int:
        return self.info.log_id

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def attributes(self) -> LogAttributes:
        return self.info.attributes

    @property
    def _sync(self) -> bool:
        return self.attributes.durability is Durability.SYNC

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, id={self.id})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.id == self.id and other._owner is self._owner

    def __hash__(self) -> int:
        return hash(self.id)

    def _check_batch(self, payloads: Iterable[object]) -> tuple[bytes, ...]:
        batch: tuple[Any, ...] = tuple(payloads)
        if set(map(type, batch)) != {bytes}:  # a pass in C for the common case: all bytes already
            batch = tuple(map(_payload, batch))
        if not batch:
            raise InvalidArgumentError("an append batch needs at least one record")
        if len(batch) > BATCH_RECORDS_MAX:
            raise PayloadTooLargeError(f"a batch holds at most {BATCH_RECORDS_MAX} records, got {len(batch)}")
        limit = self.attributes.payload_bytes_max
        longest = max(map(len, batch))
        if longest > limit:
            raise PayloadTooLargeError(
                f"log {self.name!r}: payload of {longest} bytes exceeds payload_bytes_max={limit}")
        return batch

    def _make_appends(self) -> AppendCoalescer:
        """The log's coalescer, shared by every handle on the log in this store or connection."""
        raise NotImplementedError

    def _appends(self) -> AppendCoalescer:
        coalescer = self._coalescer
        if coalescer is None:
            coalescer = self._coalescer = self._make_appends()
        return coalescer

    def append_batch_async(self, payloads: Iterable[bytes], *, producer_id: bytes | None = None,
                           sequence: int | None = None, if_tail: int | None = None) -> Future[range]:
        """Append records as one batch: stored all together or not at all, at consecutive LSNs.

        The future gives the LSNs as a ``range`` once the batch is stored (durable, unless the log's
        durability says otherwise); it fails with a :class:`SeawayError` (check its ``retriable``)
        if the batch was not acknowledged. Appends of a log, batches and single records, are stored
        in the order they were made; those made while earlier ones are in flight may be sent
        together as one batch (see :class:`~seaway.log.AppendCoalescer`).

        Idempotent appends (Kafka's idempotent producer): with ``producer_id`` (1-64 bytes, unique
        per producer) and a ``sequence`` number that the producer never reuses for another batch of
        this log, sending the same batch again stores it once and answers with the same LSNs, even
        across a crash. The last ``producer_window`` batches of each producer are remembered.

        Conditional appends (fencing a writer): with ``if_tail``, the batch is stored only if the
        log's last LSN is ``if_tail`` when the batch is sequenced, that is after every append made
        before it; otherwise it fails with :class:`TailMismatchError` and nothing is stored. A
        writer that appends its next batch with ``if_tail`` set to the last LSN of its previous one
        learns at once that another writer got in between. Such a batch is never joined with others.
        """
        batch = self._check_batch(payloads)
        if if_tail is not None:
            check_lsn(if_tail, "if_tail")
        return self._appends().append_batch(batch, producer_mark(producer_id, sequence), if_tail)

    def append_batch(self, payloads: Iterable[bytes], timeout_s: float | None = None, *,
                     producer_id: bytes | None = None, sequence: int | None = None,
                     if_tail: int | None = None) -> range:
        """Append records as one durable batch and wait; return their LSNs. ``if_tail``: append
        only if the log's last LSN is this one (see :meth:`append_batch_async`)."""
        return _wait(self.append_batch_async(payloads, producer_id=producer_id, sequence=sequence,
                                             if_tail=if_tail), timeout_s)

    def append_async(self, payload: bytes) -> Future[int]:
        """Append one record; the future gives its LSN once it is stored (durable, unless the log's
        durability says otherwise).

        Records appended while earlier appends of the log are in flight wait and go out together as
        one batch, in the order they were appended, as soon as one in flight is answered: one record
        per call costs about what batches cost. Blocks while the log's waiting bound is reached (see
        :class:`~seaway.log.CoalesceConfig`), then raises :class:`BufferFullError`.
        """
        if type(payload) is not bytes:
            payload = _payload(payload)
        if len(payload) > self._payload_bytes_max:
            raise PayloadTooLargeError(f"log {self.name!r}: payload of {len(payload)} bytes exceeds "
                                       f"payload_bytes_max={self._payload_bytes_max}")
        return (self._coalescer or self._appends()).append_one(payload)

    def append(self, payload: bytes, timeout_s: float | None = None) -> int:
        """Append one record and wait until it is durable; return its LSN."""
        return _wait(self.append_async(payload), timeout_s)

    def writer(self, *, flush_records_max: int = 500, flush_bytes_max: int = 1 << 20,
               flush_interval_s: float = 0.05,
               retry: RetryPolicy | None = None, in_flight_batches_max: int = 8) -> BatchingWriter:
        """A writer that gathers single records into batches (see :class:`BatchingWriter`), with a
        producer of its own: a batch it sends again (after the retries below it gave up) keeps its
        sequence number, so it is stored once."""
        producer = [os.urandom(16)]

        def append(payloads: list[bytes], sequence: int) -> Future[range]:
            return self.append_batch_async(payloads, producer_id=producer[0], sequence=sequence)

        def new_producer() -> None:
            producer[0] = os.urandom(16)

        return BatchingWriter(append, flush_records_max=flush_records_max,
                              flush_bytes_max=flush_bytes_max, flush_interval_s=flush_interval_s,
                              retry=retry, in_flight_batches_max=in_flight_batches_max,
                              payload_bytes_max=self.attributes.payload_bytes_max, new_producer=new_producer)

    # --- the log's state (the embedded store's handles and the client's answer the same) ----------

    def tail_lsn(self) -> int:
        """The LSN of the last record appended (or trimmed); 0 if the log was never written."""
        raise NotImplementedError

    def seal(self) -> int:
        """Seal the log for good and return its final LSN (its tail, for ever)."""
        raise NotImplementedError

    def final_lsn(self) -> int | None:
        """The final LSN of a log sealed for good; None while it takes appends."""
        raise NotImplementedError

    def delete(self) -> None:
        """Delete the log (see ``Logs.delete``)."""
        raise NotImplementedError

    def trim_point(self) -> int:
        """The LSN up to which the log is trimmed (0: nothing trimmed)."""
        raise NotImplementedError

    def is_empty(self) -> bool:
        """True when the log holds no record above its trim point."""
        raise NotImplementedError

    def data_size(self) -> int:
        """Bytes the log occupies on disk, approximately."""
        raise NotImplementedError

    def trim(self, lsn: int) -> None:
        """Trim the log up to and including ``lsn``; readers then see a TRIM gap there."""
        raise NotImplementedError

    def find_time(self, timestamp_ms: int) -> int:
        """The LSN of the first record stamped at or after ``timestamp_ms`` (the LSN after the tail
        if there is none)."""
        raise NotImplementedError

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Generator[ReadItem, None, None]:
        """Records and gaps of this log from ``lsn_from`` up to ``lsn_until`` (the tail by default)."""
        raise NotImplementedError
