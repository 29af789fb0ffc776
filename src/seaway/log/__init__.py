"""The log API (LogDevice's logs): LSNs, records, gaps, sequencers, epoch store, writers, readers.

The sequencer, the storage node and the reader are state machines with no I/O
(:class:`Sequencer`, :class:`StorageNode`, :class:`LogReadState`); :class:`EmbeddedLogStore` drives
them in-process over LogsDB, and :mod:`seaway.testing` drives them from a seeded simulator.

The names backed by RocksDB (the embedded store, its ``Log``/``Logs``/``Reader``, the epoch store)
are loaded on first use, so that the remote client, which shares the rest, does not load RocksDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seaway._lazy import lazy_names
from seaway._values import Durability, PartitionInfo, ProducerMark
from seaway.log._aborted import ABORTED_NAMESPACE, ABORTED_PER_LOG_MAX, AbortedView, AbortedWrites
from seaway.log._api import LogReaderApi, LogsApi, SegmentLog, check_logs_api, closing_iter, read_logs
from seaway.log._coalesce import AppendCoalescer, CoalesceConfig, Coalescers
from seaway.log._config import LOG_ID_MAX, LogGroup, LogInfo, check_name
from seaway.log._handle import (
    APPEND_COUNTS_LOGS_MAX,
    BATCH_RECORDS_MAX,
    PRODUCER_ID_BYTES_MAX,
    UNSET,
    AppendCounts,
    LogBounds,
    LogHandle,
    attribute_overrides,
    check_count_ranges,
    check_log_ids,
    get_or_create_log,
    producer_mark,
)
from seaway.log._ledger import (
    FLOORS_MAX,
    FLOORS_NAMESPACE,
    READ_BYTES_MAX,
    READ_LIMIT_MAX,
    LedgerApi,
    LedgerConfig,
    LedgerStore,
    check_floor_name,
    check_ledger_index,
    check_ledger_read,
)
from seaway.log._linked import (
    LINKED_BATCHES_MAX,
    LinkedBatch,
    LsnSlot,
    append_linked,
    check_linked,
    check_slots,
    fill_lsns,
)
from seaway.log._lsn import (
    EPOCH_MAX,
    ESN_FIRST,
    ESN_MAX,
    LSN_INVALID,
    LSN_MAX,
    LSN_OLDEST,
    check_lsn,
    epoch_of,
    esn_of,
    lsn_str,
    make_lsn,
)
from seaway.log._meta import (
    COMMIT_MANY_MAX,
    MetaApi,
    MetaBatch,
    MetaCondition,
    MetadataStore,
    MetaDelete,
    MetaDeleteRange,
    MetaNewLog,
    MetaOp,
    MetaPut,
    Versioned,
    check_meta_key,
    scan_bounds,
)
from seaway.log._pipeline import OrderedAppends, PipelineConfig, RetryPolicy, SendBatch, new_producer_id
from seaway.log._protocol import (
    AppendAcked,
    AppendFailed,
    AppendRequest,
    DiskWrite,
    DiskWriteDone,
    EpochFailed,
    EpochGranted,
    PlugMsg,
    Released,
    ReleaseMsg,
    RequestEpoch,
    SealMsg,
    SealReply,
    StoreMsg,
    StoreReply,
    Tick,
)
from seaway.log._reader import LogReadState, ReadChunk, ReadWant
from seaway.log._sequencer import Sequencer, SequencerConfig, SequencerState
from seaway.log._split_meta import CREATING_NAMESPACE, SplitMetadataStore
from seaway.log._storage import StorageConfig, StorageNode
from seaway.log._types import (
    BUFFERED_BYTES_MAX_DEFAULT,
    PAYLOAD_BYTES_MAX_LIMIT,
    Gap,
    GapType,
    LogAttributes,
    ReadItem,
    Record,
    RecordRun,
    RunItem,
    check_buffer_bounds,
    payload_bytes,
    take,
    take_within,
    weight,
)
from seaway.log._writer import BatchingWriter

if TYPE_CHECKING:
    from seaway.log._embedded import DiskFault, EmbeddedLogStore, LogStoreConfig, read_chunk
    from seaway.log._epoch_store import EpochStore, RocksDBEpochStore, bump_epoch
    from seaway.log._logs import Log, Logs, Reader
    from seaway.log._zk_epoch_store import ZooKeeperEpochStore

_LAZY = {
    **dict.fromkeys(("DiskFault", "EmbeddedLogStore", "LogStoreConfig", "read_chunk"), "seaway.log._embedded"),
    **dict.fromkeys(("EpochStore", "RocksDBEpochStore", "bump_epoch"), "seaway.log._epoch_store"),
    **dict.fromkeys(("Log", "Logs", "Reader"), "seaway.log._logs"),
    "ZooKeeperEpochStore": "seaway.log._zk_epoch_store",
}
"""The names whose modules import RocksDB, and where they live (PEP 562 loads them on first use)."""

if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any name imported from here
    __getattr__, __dir__ = lazy_names(globals(), _LAZY)

__all__ = [
    "ABORTED_NAMESPACE",
    "ABORTED_PER_LOG_MAX",
    "APPEND_COUNTS_LOGS_MAX",
    "BATCH_RECORDS_MAX",
    "BUFFERED_BYTES_MAX_DEFAULT",
    "COMMIT_MANY_MAX",
    "CREATING_NAMESPACE",
    "EPOCH_MAX",
    "ESN_FIRST",
    "ESN_MAX",
    "FLOORS_MAX",
    "FLOORS_NAMESPACE",
    "LINKED_BATCHES_MAX",
    "LOG_ID_MAX",
    "LSN_INVALID",
    "LSN_MAX",
    "LSN_OLDEST",
    "PAYLOAD_BYTES_MAX_LIMIT",
    "PRODUCER_ID_BYTES_MAX",
    "READ_BYTES_MAX",
    "READ_LIMIT_MAX",
    "UNSET",
    "AbortedView",
    "AbortedWrites",
    "AppendAcked",
    "AppendCoalescer",
    "AppendCounts",
    "AppendFailed",
    "AppendRequest",
    "BatchingWriter",
    "CoalesceConfig",
    "Coalescers",
    "DiskFault",
    "DiskWrite",
    "DiskWriteDone",
    "Durability",
    "EmbeddedLogStore",
    "EpochFailed",
    "EpochGranted",
    "EpochStore",
    "Gap",
    "GapType",
    "LedgerApi",
    "LedgerConfig",
    "LedgerStore",
    "LinkedBatch",
    "Log",
    "LogAttributes",
    "LogBounds",
    "LogGroup",
    "LogHandle",
    "LogInfo",
    "LogReadState",
    "LogReaderApi",
    "LogStoreConfig",
    "Logs",
    "LogsApi",
    "LsnSlot",
    "MetaApi",
    "MetaBatch",
    "MetaCondition",
    "MetaDelete",
    "MetaDeleteRange",
    "MetaNewLog",
    "MetaOp",
    "MetaPut",
    "MetadataStore",
    "OrderedAppends",
    "PartitionInfo",
    "PipelineConfig",
    "PlugMsg",
    "ProducerMark",
    "ReadChunk",
    "ReadItem",
    "ReadWant",
    "Reader",
    "Record",
    "RecordRun",
    "ReleaseMsg",
    "Released",
    "RequestEpoch",
    "RetryPolicy",
    "RocksDBEpochStore",
    "RunItem",
    "SealMsg",
    "SealReply",
    "SegmentLog",
    "SendBatch",
    "Sequencer",
    "SequencerConfig",
    "SequencerState",
    "SplitMetadataStore",
    "StorageConfig",
    "StorageNode",
    "StoreMsg",
    "StoreReply",
    "Tick",
    "Versioned",
    "ZooKeeperEpochStore",
    "append_linked",
    "attribute_overrides",
    "bump_epoch",
    "check_buffer_bounds",
    "check_count_ranges",
    "check_floor_name",
    "check_ledger_index",
    "check_ledger_read",
    "check_linked",
    "check_log_ids",
    "check_logs_api",
    "check_lsn",
    "check_meta_key",
    "check_name",
    "check_slots",
    "closing_iter",
    "epoch_of",
    "esn_of",
    "fill_lsns",
    "get_or_create_log",
    "lsn_str",
    "make_lsn",
    "new_producer_id",
    "payload_bytes",
    "producer_mark",
    "read_chunk",
    "read_logs",
    "scan_bounds",
    "take",
    "take_within",
    "weight",
]
