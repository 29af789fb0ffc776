"""LogsDB, the local log store on RocksDB (LogDevice's LogsDB).

Time-ordered partitions as column families, keys ``(log id, LSN)``, a metadata family for the
partition directory, trim points, seals and epoch ends; retention by dropping whole partitions.

:class:`LogsDB` is loaded on first use: the value types below are shared with the remote client,
which must not load RocksDB (``rocksdict``) just to name a :class:`Durability`. They live in a module below
this package and ``seaway.log`` (``seaway.log`` re-exports the ones its users name); this package re-exports
them for its own callers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seaway._lazy import lazy_names
from seaway._values import (
    CorruptEntry,
    Durability,
    Entry,
    HolePlugEntry,
    KvCheck,
    KvDelete,
    KvDeleteRange,
    KvOp,
    KvPut,
    PartitionInfo,
    ProducerMark,
    PutHolePlug,
    PutRecords,
    PutSeal,
    RecordsEntry,
    WriteOp,
)

if TYPE_CHECKING:
    from seaway.logsdb._config import LogsDBConfig
    from seaway.logsdb._store import LogsDB
else:  # hidden from mypy, which would otherwise accept any name imported from here
    # Only the store itself needs RocksDB, and only it and its configuration the on-disk format, so only
    # naming them loads them.
    __getattr__, __dir__ = lazy_names(globals(), {"LogsDB": "seaway.logsdb._store",
                                                  "LogsDBConfig": "seaway.logsdb._config"})


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
