"""The log API (LogDevice's logs): LSNs, records, gaps, sequencers, epoch store, writers, readers.

The sequencer, the storage node and the reader are state machines with no I/O
(:class:`Sequencer`, :class:`StorageNode`, :class:`LogReadState`); :class:`EmbeddedLogStore` drives
them in-process over LogsDB, and :mod:`seaway.testing` drives them from a seeded simulator.
"""

from seaway.log._config import LOG_ID_MAX, LogGroup, LogInfo
from seaway.log._embedded import DiskFault, EmbeddedLogStore, LogStoreConfig, read_chunk
from seaway.log._epoch_store import EpochStore, RocksDBEpochStore, bump_epoch
from seaway.log._handle import (
    BATCH_RECORDS_MAX,
    PRODUCER_ID_BYTES_MAX,
    UNSET,
    LogHandle,
    attribute_overrides,
    producer_mark,
)
from seaway.log._logs import Log, Logs, Reader
from seaway.log._lsn import (
    EPOCH_MAX,
    ESN_FIRST,
    ESN_MAX,
    LSN_INVALID,
    LSN_MAX,
    LSN_OLDEST,
    epoch_of,
    esn_of,
    lsn_str,
    make_lsn,
)
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
from seaway.log._storage import StorageConfig, StorageNode
from seaway.log._types import (
    PAYLOAD_BYTES_MAX_LIMIT,
    Gap,
    GapType,
    LogAttributes,
    ReadItem,
    Record,
    RecordRun,
    RunItem,
    take,
    weight,
)
from seaway.log._writer import BatchingWriter, RetryPolicy

__all__ = [
    "BATCH_RECORDS_MAX",
    "EPOCH_MAX",
    "ESN_FIRST",
    "ESN_MAX",
    "LOG_ID_MAX",
    "LSN_INVALID",
    "LSN_MAX",
    "LSN_OLDEST",
    "PAYLOAD_BYTES_MAX_LIMIT",
    "PRODUCER_ID_BYTES_MAX",
    "UNSET",
    "AppendAcked",
    "AppendFailed",
    "AppendRequest",
    "BatchingWriter",
    "DiskFault",
    "DiskWrite",
    "DiskWriteDone",
    "EmbeddedLogStore",
    "EpochFailed",
    "EpochGranted",
    "EpochStore",
    "Gap",
    "GapType",
    "Log",
    "LogAttributes",
    "LogGroup",
    "LogHandle",
    "LogInfo",
    "LogReadState",
    "LogStoreConfig",
    "Logs",
    "PlugMsg",
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
    "Sequencer",
    "SequencerConfig",
    "SequencerState",
    "StorageConfig",
    "StorageNode",
    "StoreMsg",
    "StoreReply",
    "Tick",
    "attribute_overrides",
    "bump_epoch",
    "epoch_of",
    "esn_of",
    "lsn_str",
    "make_lsn",
    "producer_mark",
    "read_chunk",
    "take",
    "weight",
]
