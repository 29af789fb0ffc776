"""Replicated logs (LogDevice's protocol): the roles of a cluster as state machines and their messages.

The sequencer (:class:`ClusterSequencer`), the storage node (:class:`Replica`) and the reader
(:class:`MergeReader`) take messages and return effects; drivers (the deterministic simulator in
:mod:`seaway.testing`, the network) carry them out. See ``docs/cluster.md``.
"""

from seaway.log._merge_reader import GRACE_MS, MergeReader
from seaway.log._replica import DiskWrite, LogCopies, NodeDisk, Replica
from seaway.log._replication import (
    HISTORY_MAX,
    NODES_MAX,
    RECOVERIES_KEPT,
    REPLICATION_MAX,
    Acked,
    Activate,
    Append,
    Clean,
    Cleaned,
    Copy,
    EpochRecord,
    EpochRecordRead,
    EpochRecordSet,
    Kind,
    NodeSet,
    ReadEpochRecord,
    ReadFrom,
    ReadReply,
    Recovered,
    Refused,
    Release,
    Seal,
    Sealed,
    Send,
    SetEpochRecord,
    Store,
    Stored,
    Trim,
    epoch_end,
)
from seaway.log._rsequencer import ClusterSequencer, ClusterSequencerConfig, ClusterSequencerState

__all__ = [
    "GRACE_MS", "HISTORY_MAX", "NODES_MAX", "RECOVERIES_KEPT", "REPLICATION_MAX",
    "Acked", "Activate", "Append", "Clean", "Cleaned", "ClusterSequencer", "ClusterSequencerConfig",
    "ClusterSequencerState", "Copy", "DiskWrite", "EpochRecord", "EpochRecordRead", "EpochRecordSet", "Kind",
    "LogCopies", "MergeReader", "NodeDisk", "NodeSet", "ReadEpochRecord", "ReadFrom", "ReadReply", "Recovered",
    "Refused", "Release", "Replica", "Seal", "Sealed", "Send", "SetEpochRecord", "Store", "Stored", "Trim",
    "epoch_end",
]
