"""Replicated logs, LogDevice's way: the words, the messages between the roles, and the epoch record.

A log's records are stored on R nodes of its *node set*; one *sequencer* per log numbers them
(``LSN = epoch << 32 | esn``), stores each on R nodes and acknowledges it after R copies. Each
*replica* (a storage node, :mod:`_replica`) keeps copies and a *seal*; a reader merges what the node
set holds (:mod:`_merge_reader`). A new sequencer takes a higher epoch from the epoch store by
compare-and-set and *recovers* the epochs not yet clean (:mod:`_rsequencer`): it seals the node set,
collects the digests, writes the winner of each slot on every node that answered, plugs holes, puts a
bridge after the last record, marks the epochs clean, and only then releases the new epoch.

Each slot is single-decree Paxos with the sealing sequencer's epoch as the ballot: a node *promises*
(its seal) to accept nothing from a lower ballot; a sequencer's own stores are ballot 0 of their
epoch, a recovery's are its sequencer's epoch. An acknowledged record sits on R nodes of the node set
and every f-majority (``|node set| - R + 1`` nodes) holds one of them, so every digest sees it.

The roles are state machines without I/O: they take the messages below and return effects (messages
to send, disk writes, epoch-store calls, timers). A driver runs them: the deterministic simulator in
:mod:`seaway.testing`, later the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum

from seaway.errors import CorruptionError, InvalidArgumentError, SeawayError

REPLICATION_MAX = 16
NODES_MAX = 256
HISTORY_MAX = 1000
"""Node-set changes an epoch record keeps (each one bumps the epoch; older ones are folded away
once no epoch that used them can still be read)."""
RECOVERIES_KEPT = 1000
"""Recovered epochs whose outcome an epoch record keeps for nodes that missed the recovery (they
purge by it when they return). A node that missed more than this many must be rebuilt."""


class Kind(IntEnum):
    """What a copy in a slot is."""

    RECORD = 0
    HOLE = 1
    """A plug: the slot was sequenced (or might have been) but holds no record."""
    BRIDGE = 2
    """The end of an epoch: no record after it in that epoch."""


@dataclass(frozen=True, slots=True)
class Copy:
    """One node's copy of one slot of a log."""

    lsn: int
    kind: Kind
    payload: bytes = b""
    wave: int = 1
    """The sequencer's attempt at storing this slot (a new wave on a timeout, to other nodes)."""
    recovery_epoch: int = 0
    """0 for the sequencer's own write; else the epoch of the sequencer whose recovery wrote it."""
    timestamp_ms: int = 0

    def precedence(self) -> tuple[int, int]:
        """Which of two copies of a slot wins a digest: a recovery's write beats the sequencer's, a
        later recovery's beats an earlier one's, then the later wave."""
        return self.recovery_epoch, self.wave


@dataclass(frozen=True, slots=True)
class NodeSet:
    """The nodes a log's records are stored on from epoch ``since_epoch`` on, and how many copies."""

    since_epoch: int
    nodes: tuple[int, ...]
    replication: int

    def __post_init__(self) -> None:
        if not 1 <= self.replication <= REPLICATION_MAX:
            raise InvalidArgumentError(f"replication must be in [1, {REPLICATION_MAX}], got {self.replication}")
        if len(set(self.nodes)) != len(self.nodes) or not self.nodes or len(self.nodes) > NODES_MAX:
            raise InvalidArgumentError(f"a node set is 1 to {NODES_MAX} distinct nodes, got {self.nodes}")
        if len(self.nodes) < self.replication:
            raise InvalidArgumentError(f"a node set of {len(self.nodes)} cannot hold {self.replication} copies")

    @property
    def f_majority(self) -> int:
        """Nodes enough to meet every R-node copy set: ``|nodes| - R + 1``."""
        return len(self.nodes) - self.replication + 1


@dataclass(frozen=True, slots=True)
class Recovered:
    """What the recovery of one epoch kept: copies above ``lng`` survive only if written by the
    recovery of sequencer epoch ``by``."""

    epoch: int
    lng: int
    by: int


@dataclass(frozen=True, slots=True)
class EpochRecord:
    """A log's record in the epoch store, changed only by compare-and-set as a whole: its current
    epoch, its last clean epoch, the node-set history and the outcome of recent recoveries."""

    epoch: int = 0
    lce: int = 0
    history: tuple[NodeSet, ...] = ()
    recovered: tuple[Recovered, ...] = ()
    final: int | None = None
    """The final LSN of a log sealed for good (no sequencer takes an epoch after it); None while the
    log takes appends."""
    deleted: bool = False
    """The log was deleted: no sequencer takes an epoch, its copies are being dropped."""

    def node_set(self, epoch: int) -> NodeSet:
        """The node set epoch ``epoch`` stores on."""
        chosen: NodeSet | None = None
        for entry in self.history:
            if entry.since_epoch <= epoch:
                chosen = entry
        if chosen is None:  # before the first: no record can be there; its readers ask the first set
            if not self.history:
                raise InvalidArgumentError("the log has no node set")
            return self.history[0]
        return chosen

    def recovery_of(self, epoch: int) -> Recovered | None:
        for entry in self.recovered:
            if entry.epoch == epoch:
                return entry
        return None

    def encode(self) -> bytes:
        doc: dict[str, object] = {
            "epoch": self.epoch, "lce": self.lce,
            "history": [[n.since_epoch, list(n.nodes), n.replication] for n in self.history],
            "recovered": [[r.epoch, r.lng, r.by] for r in self.recovered],
        }
        if self.final is not None:  # only then: records of logs that were never sealed stay as they were
            doc["final"] = self.final
        if self.deleted:
            doc["deleted"] = True
        return json.dumps(doc, separators=(",", ":")).encode()

    @staticmethod
    def decode(raw: bytes) -> EpochRecord:
        try:
            doc = json.loads(raw)
            return EpochRecord(
                epoch=int(doc["epoch"]), lce=int(doc["lce"]),
                history=tuple(NodeSet(int(s), tuple(int(n) for n in nodes), int(r)) for s, nodes, r in doc["history"]),
                recovered=tuple(Recovered(int(e), int(lng), int(by)) for e, lng, by in doc["recovered"]),
                final=None if doc.get("final") is None else int(doc["final"]),
                deleted=bool(doc.get("deleted", False)),
            )
        except (ValueError, KeyError, TypeError, InvalidArgumentError) as exc:
            raise CorruptionError(f"an epoch record that cannot be decoded: {exc}") from exc


def epoch_end(epoch: int) -> int:
    """The last LSN before the first record of the next epoch (ESN 0 of the next epoch is never
    issued, so a bridge covers it)."""
    return (epoch + 1) << 32


# --- to a replica ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Store:
    """Store ``copy`` of log ``log_id``. A sequencer's store (``copy.recovery_epoch == 0``) counts
    as ballot ``epoch(copy.lsn)``; a recovery's as its ``recovery_epoch``."""

    log_id: int
    copy: Copy
    lng: int = 0
    """The sender's last known good ESN in the copy's epoch: every ESN up to it is on R nodes."""


@dataclass(frozen=True, slots=True)
class Seal:
    """Accept nothing from a ballot below ``by`` (the sealing sequencer's epoch) and send the digest
    of the epochs after ``lce``."""

    log_id: int
    by: int
    lce: int


@dataclass(frozen=True, slots=True)
class Clean:
    """The recovery by ``by`` of the epochs after ``lce`` is done on this node: a node that knew every
    epoch up to ``lce`` clean now knows every epoch below ``by`` clean (one that did not still has
    earlier recoveries to purge by)."""

    log_id: int
    by: int
    lce: int


@dataclass(frozen=True, slots=True)
class Release:
    """Readers may read the log up to ``lsn`` (every slot up to it is decided)."""

    log_id: int
    lsn: int


@dataclass(frozen=True, slots=True)
class Trim:
    log_id: int
    lsn: int


@dataclass(frozen=True, slots=True)
class ReadFrom:
    """Send the copies of ``log_id`` from ``lsn`` on, up to what is released, at most ``max_copies``."""

    log_id: int
    lsn: int
    max_copies: int = 256
    reader_id: int = 0


# --- from a replica -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Stored:
    log_id: int
    lsn: int
    wave: int
    recovery_epoch: int
    node: int
    preempted_by: int = 0
    """Nonzero: refused, the node is sealed by this epoch."""


@dataclass(frozen=True, slots=True)
class Sealed:
    log_id: int
    by: int
    node: int
    lngs: tuple[tuple[int, int], ...] = ()
    """``(epoch, last known good ESN)`` of each epoch after the LCE the node has copies of."""
    digest: tuple[Copy, ...] = ()
    """The node's copies in those epochs above each epoch's LNG it knows."""
    preempted_by: int = 0


@dataclass(frozen=True, slots=True)
class Cleaned:
    log_id: int
    by: int
    node: int


@dataclass(frozen=True, slots=True)
class ReadReply:
    log_id: int
    node: int
    copies: tuple[Copy, ...]
    next_lsn: int
    """The node has sent everything it holds below this LSN."""
    trim_point: int = 0
    reader_id: int = 0


@dataclass(frozen=True, slots=True)
class EpochRecordRead:
    """The epoch store's answer: a log's record and its version (for the compare-and-set)."""

    log_id: int
    record: EpochRecord
    version: int


@dataclass(frozen=True, slots=True)
class EpochRecordSet:
    """Whether a compare-and-set of a log's record landed (its new version if it did)."""

    log_id: int
    ok: bool
    version: int = -1


# --- effects --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Send:
    to: int
    message: object


@dataclass(frozen=True, slots=True)
class ReadEpochRecord:
    log_id: int


@dataclass(frozen=True, slots=True)
class SetEpochRecord:
    log_id: int
    record: EpochRecord
    version: int
    """The version read; the write lands only if the record is still at it."""


@dataclass(frozen=True, slots=True)
class Acked:
    """An append is durable on R nodes: it has this LSN."""

    request_id: int
    lsn: int
    client: int = 0


@dataclass(frozen=True, slots=True)
class Refused:
    """An append did not get an LSN from this sequencer (it may still appear if it was stored: the
    caller does not know, as with a lost reply)."""

    request_id: int
    error: SeawayError
    client: int = 0


@dataclass(frozen=True, slots=True)
class Append:
    log_id: int
    request_id: int
    payload: bytes
    client: int = 0


@dataclass(frozen=True, slots=True)
class AppendBatch:
    """Append ``payloads`` at consecutive LSNs of one epoch; acknowledged (:class:`Acked` with the
    LSN of the last) once every one is on R nodes. With ``if_tail``: only if the last LSN the
    sequencer gave (or the tail it started its epoch at) is ``if_tail`` when the batch is sequenced."""

    log_id: int
    request_id: int
    payloads: tuple[bytes, ...]
    client: int = 0
    if_tail: int | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """Seal the log for good (``delete``: delete it) once every append queued before is decided:
    the final LSN goes into the epoch record by compare-and-set, and :class:`Acked` carries it."""

    log_id: int
    request_id: int
    delete: bool = False
    client: int = 0


@dataclass(frozen=True, slots=True)
class TailQuery:
    """The log's tail: the last LSN acknowledged (the epoch's start if none yet); :class:`Acked`
    carries it once the sequencer is active."""

    log_id: int
    request_id: int
    client: int = 0


@dataclass(frozen=True, slots=True)
class Activate:
    """Become the log's sequencer (take a new epoch), with this node set from then on (None: keep)."""

    log_id: int
    node_set: tuple[int, ...] | None = None
    replication: int | None = None
