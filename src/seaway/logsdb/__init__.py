"""LogsDB, the local log store on RocksDB (LogDevice's LogsDB).

Time-ordered partitions as column families, keys ``(log id, LSN)``, a metadata family for the
partition directory, trim points, seals and epoch ends; retention by dropping whole partitions.
"""

from seaway.logsdb._store import LogsDB
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
