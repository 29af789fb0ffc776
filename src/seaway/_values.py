"""Values that every layer shares: how durable a write is, which producer sent a batch, what a partition
holds, and the values that cross the log store's interface (write operations, metadata batches, stored entries).

They live below both the log store (``seaway.logsdb``) and the log API (``seaway.log``), so that the remote
client, which names them too, loads neither the storage engine nor its on-disk format. ``seaway.log``
re-exports the ones its users name; ``seaway.logsdb`` re-exports all of them for its own callers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Durability(Enum):
    """When a write is acknowledged.

    ``SYNC`` (the default): after the write batch is fsynced; it survives ``kill -9`` and power loss.
    ``ASYNC``: after it is in RocksDB's write-ahead log in the page cache; it survives ``kill -9`` of
    the process but not a crash of the machine. (A batch large enough for a segment file has its
    bytes synced either way, before RocksDB refers to them, so ``ASYNC`` saves less there.)
    """

    SYNC = "sync"
    ASYNC = "async"


# --- Write operations ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerMark:
    """Which producer sent a batch, and its sequence number for the log (idempotent appends)."""

    producer_id: bytes
    sequence: int


@dataclass(frozen=True, slots=True)
class PutRecords:
    """Store ``payloads`` at consecutive LSNs from ``first_lsn`` on, with one timestamp.

    With ``producer``, the batch is also remembered under its producer and sequence number, in the
    same atomic write, so that a retry of it is recognised even after a crash.
    """

    log_id: int
    first_lsn: int
    timestamp_ms: int
    payloads: tuple[bytes, ...]
    producer: ProducerMark | None = None


@dataclass(frozen=True, slots=True)
class PutHolePlug:
    """Mark ``count`` LSNs from ``first_lsn`` on as never to hold records."""

    log_id: int
    first_lsn: int
    count: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class PutSeal:
    """Refuse stores of epochs up to ``epoch``; record where the last written epoch ended."""

    log_id: int
    epoch: int
    ended_epoch: int
    """The epoch of the log's last stored LSN when sealed (0 if none)."""
    ended_lsn: int
    """That epoch's last stored LSN (0 if none)."""


WriteOp = PutRecords | PutHolePlug | PutSeal


# --- The metadata store's batches (see LogsDB.kv_commit) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class KvPut:
    key: bytes
    value: bytes


@dataclass(frozen=True, slots=True)
class KvDelete:
    key: bytes


@dataclass(frozen=True, slots=True)
class KvDeleteRange:
    """Delete every key in ``[start, end)``."""

    start: bytes
    end: bytes


@dataclass(frozen=True, slots=True)
class KvCheck:
    """A batch's condition on one key: its version is ``version`` (0: the key is absent), and, if
    ``value`` is given, its value is that."""

    key: bytes
    version: int | None = None
    value: bytes | None = None


KvOp = KvPut | KvDelete | KvDeleteRange


# --- Stored entries, as reads return them -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordsEntry:
    """Records with consecutive LSNs; a payload that failed its checksum is ``None``."""

    log_id: int
    first_lsn: int
    timestamp_ms: int
    payloads: list[bytes | None]

    @property
    def last_lsn(self) -> int:
        return self.first_lsn + len(self.payloads) - 1


@dataclass(frozen=True, slots=True)
class HolePlugEntry:
    """LSNs that never held records (an append that did not complete)."""

    log_id: int
    first_lsn: int
    last_lsn: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class CorruptEntry:
    """LSNs whose stored bytes could not be read back intact."""

    log_id: int
    first_lsn: int
    last_lsn: int


Entry = RecordsEntry | HolePlugEntry | CorruptEntry


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One time partition (a RocksDB column family) and what it holds."""

    partition_id: int
    created_ms: int
    size_bytes: int
    log_ids: tuple[int, ...]
