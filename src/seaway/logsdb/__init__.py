"""LogsDB, the local log store on RocksDB (LogDevice's LogsDB).

Time-ordered partitions as column families, keys ``(log id, LSN)``, a metadata family for the
partition directory, trim points, seals and epoch ends; retention by dropping whole partitions.

:class:`LogsDB` is loaded on first use: the value types below are shared with the remote client,
which must not load RocksDB (``rocksdict``) just to name a :class:`Durability`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seaway._lazy import lazy_names
from seaway.logsdb._types import (
    CorruptEntry,
    Durability,
    Entry,
    HolePlugEntry,
    KvCheck,
    KvDelete,
    KvDeleteRange,
    KvOp,
    KvPut,
    LogsDBConfig,
    PartitionInfo,
    ProducerMark,
    PutHolePlug,
    PutRecords,
    PutSeal,
    RecordsEntry,
    WriteOp,
)

if TYPE_CHECKING:
    from seaway.logsdb._store import LogsDB
else:  # hidden from mypy, which would otherwise accept any name imported from here
    # Only the store itself needs RocksDB, so only naming it loads it.
    __getattr__, __dir__ = lazy_names(globals(), {"LogsDB": "seaway.logsdb._store"})


__all__ = [
    "CorruptEntry",
    "Durability",
    "Entry",
    "HolePlugEntry",
    "KvCheck",
    "KvDelete",
    "KvDeleteRange",
    "KvOp",
    "KvPut",
    "LogsDB",
    "LogsDBConfig",
    "PartitionInfo",
    "ProducerMark",
    "PutHolePlug",
    "PutRecords",
    "PutSeal",
    "RecordsEntry",
    "WriteOp",
]
