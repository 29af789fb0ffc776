"""Messages between the roles of the log layer, and the effects they ask their driver to carry out.

The roles (:mod:`_sequencer`, :mod:`_storage`, :mod:`_reader`) are state machines: they take these
events and return effects; they never touch a disk, a socket or a clock themselves. A driver delivers
messages (in-process, over a network, or through a simulator), performs disk writes and epoch-store
requests, and feeds the results back as events. Links are assumed FIFO per pair of roles (as TCP is);
messages may be lost, which the sequencer's timers recover from.
"""

from __future__ import annotations

from dataclasses import dataclass

from seaway._values import ProducerMark, WriteOp
from seaway.errors import SeawayError

# --- Sequencer inputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AppendRequest:
    request_id: int
    payloads: tuple[bytes, ...]
    sync: bool = True
    producer: ProducerMark | None = None
    if_tail: int | None = None
    """A conditional append: stored only if the log's last LSN, when the batch is sequenced, is this."""


@dataclass(frozen=True, slots=True)
class EpochGranted:
    """The epoch store gave the sequencer a new epoch (by compare-and-set)."""

    epoch: int


@dataclass(frozen=True, slots=True)
class EpochFailed:
    error: SeawayError


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed; the role checks its deadlines."""


# --- Sequencer -> storage node ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreMsg:
    log_id: int
    first_lsn: int
    timestamp_ms: int
    payloads: tuple[bytes, ...]
    sync: bool
    producer: ProducerMark | None = None


@dataclass(frozen=True, slots=True)
class PlugMsg:
    log_id: int
    first_lsn: int
    count: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class SealMsg:
    log_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class ReleaseMsg:
    """Every LSN of the log up to ``lsn`` is decided (stored or plugged): readers may read it."""

    log_id: int
    lsn: int


# --- Storage node -> sequencer ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreReply:
    log_id: int
    first_lsn: int
    error: SeawayError | None


@dataclass(frozen=True, slots=True)
class SealReply:
    log_id: int
    epoch: int
    last_lsn: int
    """The log's last stored LSN when the seal was written."""
    error: SeawayError | None


# --- Storage node inputs from its disk ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiskWriteDone:
    write_id: int
    error: SeawayError | None


# --- Effects ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestEpoch:
    """Driver: bump the log's epoch in the epoch store and answer EpochGranted or EpochFailed."""

    log_id: int


@dataclass(frozen=True, slots=True)
class AppendAcked:
    request_id: int
    first_lsn: int
    count: int


@dataclass(frozen=True, slots=True)
class AppendFailed:
    request_id: int
    error: SeawayError


@dataclass(frozen=True, slots=True)
class DiskWrite:
    """Driver: write ``ops`` atomically (fsynced if ``sync``) and answer DiskWriteDone."""

    write_id: int
    ops: tuple[WriteOp, ...]
    sync: bool


@dataclass(frozen=True, slots=True)
class Released:
    """Driver: readers of the log may now read up to ``lsn``."""

    log_id: int
    lsn: int


ToStorage = StoreMsg | PlugMsg | SealMsg | ReleaseMsg
ToSequencer = StoreReply | SealReply
SequencerEvent = AppendRequest | EpochGranted | EpochFailed | Tick | StoreReply | SealReply
SequencerEffect = RequestEpoch | AppendAcked | AppendFailed | StoreMsg | PlugMsg | SealMsg | ReleaseMsg
StorageEvent = StoreMsg | PlugMsg | SealMsg | ReleaseMsg | DiskWriteDone
StorageEffect = DiskWrite | StoreReply | SealReply | Released
