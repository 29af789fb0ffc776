"""The replicated log's roles driven by hand, one scenario each (LogDevice's tests of the same name in
parentheses); the seeded simulation (test_cluster_sim.py) runs them under random faults."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import pytest

from seaway.errors import CorruptionError, InvalidArgumentError, LogSealedError, PreemptedError, TailMismatchError
from seaway.log import Gap, GapType, Record
from seaway.log.replication import (
    Acked,
    Activate,
    Append,
    AppendBatch,
    ClusterSequencer,
    ClusterSequencerConfig,
    ClusterSequencerState,
    Copy,
    DiskWrite,
    EpochRecord,
    EpochRecordRead,
    EpochRecordSet,
    Finish,
    Kind,
    MergeReader,
    NodeDisk,
    NodeSet,
    ReadEpochRecord,
    ReadFrom,
    Recovered,
    Refused,
    Release,
    Replica,
    Seal,
    Send,
    SetEpochRecord,
    Store,
    TailQuery,
    Trim,
)

LOG = 7


@dataclass
class Mini:
    """Nodes 1..n, delivered at once and in order; nodes can be down or cut off from a sender."""

    n: int = 5
    r: int = 3
    now: int = 0
    disks: dict[int, NodeDisk] = field(default_factory=dict)
    replicas: dict[int, Replica] = field(default_factory=dict)
    down: set[int] = field(default_factory=set)
    drop: set[tuple[int, int]] = field(default_factory=set)
    """(from, to) links that lose every message."""
    record: EpochRecord = field(default_factory=EpochRecord)
    version: int = 0
    results: dict[int, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.record = EpochRecord(history=(NodeSet(1, tuple(range(1, self.n + 1)), self.r),))
        for i in range(1, self.n + 1):
            self.disks[i] = NodeDisk()
            self.replicas[i] = Replica(i, self.disks[i])

    def sequencer(self, node: int) -> ClusterSequencer:
        return ClusterSequencer(LOG, node, ClusterSequencerConfig(store_timeout_ms=100, seal_grace_ms=10))

    def restart(self, node: int) -> None:
        self.down.discard(node)
        self.replicas[node] = Replica(node, self.disks[node])

    def run(self, seq: ClusterSequencer | None, effects: list[object], src: int | None = None) -> None:
        """Carry out effects of ``seq`` (or, with ``seq`` None, of node ``src``'s replica) to the end."""
        first = seq.node if seq is not None else src
        # (node, effect, whether the sequencer made it rather than the node's replica)
        queue: deque[tuple[int, object, bool]] = deque((first or 0, e, seq is not None) for e in effects)
        while queue:
            src, effect, by_seq = queue.popleft()
            if isinstance(effect, Send):
                to, msg = effect.to, effect.message
                if to in self.down or (src, to) in self.drop:
                    continue
                if type(msg).__name__ in ("Stored", "Sealed", "Cleaned"):
                    if seq is not None and to == seq.node:
                        queue.extend((seq.node, e, True) for e in seq.handle(src, msg, self.now))
                    continue
                for out in self.replicas[to].handle(src, msg):
                    queue.append((to, out, False))
            elif isinstance(effect, DiskWrite):
                queue.extend((effect.node, e, False) for e in self.replicas[effect.node].written())
            elif isinstance(effect, ReadEpochRecord):
                reply = EpochRecordRead(effect.log_id, self.record, self.version)
                if by_seq:  # the sequencer reads the record; a replica reads it to purge
                    assert seq is not None
                    queue.extend((src, e, True) for e in seq.handle(-1, reply, self.now))
                else:
                    queue.extend((src, e, False) for e in self.replicas[src].handle(-1, reply))
            elif isinstance(effect, SetEpochRecord):
                ok = effect.version == self.version
                if ok:
                    self.record, self.version = effect.record, self.version + 1
                assert seq is not None
                queue.extend((seq.node, e, True) for e in seq.handle(-1, EpochRecordSet(LOG, ok, self.version),
                                                                   self.now))
            elif isinstance(effect, (Acked, Refused)):
                self.results[effect.request_id] = effect
            else:
                raise AssertionError(effect)

    def activate(self, node: int, node_set: tuple[int, ...] | None = None) -> ClusterSequencer:
        seq = self.sequencer(node)
        self.run(seq, seq.handle(-1, Activate(LOG, node_set, self.r if node_set else None), self.now))
        self.settle(seq)
        return seq

    def settle(self, seq: ClusterSequencer) -> None:
        """Let timers run until the sequencer stops changing state."""
        for _ in range(50):
            if seq.state in (ClusterSequencerState.ACTIVE, ClusterSequencerState.PREEMPTED):
                return
            self.now += 20
            self.run(seq, seq.tick(self.now))

    def append(self, seq: ClusterSequencer, payloads: list[bytes], first_id: int = 1) -> None:
        for i, payload in enumerate(payloads):
            self.run(seq, seq.handle(-1, Append(LOG, first_id + i, payload), self.now))

    def release_to(self, node: int, lsn: int) -> None:
        """A release reaching ``node`` (its purge reads the epoch record first)."""
        self.run(None, self.replicas[node].handle(0, Release(LOG, lsn)), src=node)

    def read(self, nodes: list[int] | None = None, until: int | None = None, start: int = 1) -> list[object]:
        """Read everything released, asking ``nodes`` in that order (each reply taken as it comes)."""
        reader = MergeReader(LOG, self.record, start, until if until is not None else 2**64 - 1, grace_ms=0)
        out: list[object] = []
        for _ in range(200):
            asked = reader.requests()
            if not asked:
                break
            order = sorted(asked, key=lambda a: (nodes or []).index(a[0]) if nodes and a[0] in nodes else 99)
            for node, request in order:
                if node in self.down:
                    continue
                for effect in self.replicas[node].handle(100, request):
                    assert isinstance(effect, Send)
                    reader.on_reply(effect.message)  # type: ignore[arg-type]
                    out.extend(reader.take(self.now))
            if reader.done:
                break
            if all(node in self.down for node, _ in asked):
                break
        return out


def records(items: list[object]) -> list[tuple[int, bytes]]:
    return [(i.lsn, i.payload) for i in items if isinstance(i, Record)]


def gaps(items: list[object]) -> list[GapType]:
    return [i.type for i in items if isinstance(i, Gap)]


def acked(mini: Mini) -> dict[int, bytes]:
    return {r.lsn: p for rid, r in mini.results.items() if isinstance(r, Acked) for p in [f"p{rid}".encode()]}


def test_appends_on_five_nodes_at_r3_are_read_back_exactly_in_order() -> None:
    mini = Mini()
    seq = mini.activate(1)
    assert seq.state is ClusterSequencerState.ACTIVE and seq.epoch == 1
    mini.append(seq, [f"p{i}".encode() for i in range(1, 101)])
    got = acked(mini)
    assert len(got) == 100
    items = mini.read(until=max(got))
    assert records(items) == sorted((lsn, f"p{lsn & 0xFFFFFFFF}".encode()) for lsn in got)
    assert gaps(items) == [GapType.BRIDGE]  # from LSN 1 to the first record of epoch 1
    for disk in mini.disks.values():  # each record on exactly R nodes
        assert all(len(disk.log(LOG).copies) < 100 for _ in [0])
    assert sum(len(d.log(LOG).copies) for d in mini.disks.values()) == 300


def test_killing_the_sequencer_loses_no_acked_record_and_leaves_one_bridge() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1", b"p2", b"p3"])
    mini.down.add(1)  # the sequencer's node dies (its copies too, for now)
    seq2 = mini.activate(2)
    assert seq2.epoch == 2 and seq2.state is ClusterSequencerState.ACTIVE
    mini.append(seq2, [b"p4", b"p5"], first_id=4)
    got = acked(mini)
    items = mini.read(until=max(got))
    assert [p for _, p in records(items)] == [b"p1", b"p2", b"p3", b"p4", b"p5"]
    assert gaps(items) == [GapType.BRIDGE, GapType.BRIDGE]  # before epoch 1; the end of epoch 1
    assert mini.record.lce == 1 and mini.record.recovered[-1].by == 2
    bridges = [n for n in (2, 3, 4, 5) if mini.disks[n].log(LOG).copies.get(1 << 32 | 4, Copy(0, Kind.HOLE)).kind
               is Kind.BRIDGE]
    assert bridges == [2, 3, 4, 5]  # written by the recovery on every node that answered its seal


def test_an_old_sequencer_cut_off_by_a_seal_acknowledges_nothing_after_it() -> None:
    mini = Mini()
    old = mini.activate(1)
    mini.append(old, [b"p1"])
    new = mini.activate(2)  # seals an f-majority (here every node) at epoch 1
    assert new.epoch == 2
    mini.append(old, [b"late"], first_id=50)
    assert isinstance(mini.results[50], Refused) and isinstance(mini.results[50].error, PreemptedError)
    assert old.state is ClusterSequencerState.PREEMPTED


def test_a_record_on_fewer_than_r_nodes_at_the_crash_is_a_record_or_a_hole_for_every_reader_alike() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1"])
    for to in (3, 4, 5):  # the next store reaches node 2 at most: never acknowledged
        mini.drop.add((1, to))
    mini.append(seq, [b"partial"], first_id=2)
    assert 2 not in mini.results
    mini.down.add(1)
    mini.drop.clear()
    mini.activate(3)
    outcomes = {tuple(map(repr, mini.read(order))) for order in ([2, 3, 4, 5], [5, 4, 3, 2], [3, 2, 5, 4])}
    assert len(outcomes) == 1
    assert GapType.DATALOSS not in gaps(mini.read())


def test_a_node_that_missed_recovery_purges_what_recovery_did_not_keep() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1"])
    for to in (2, 3, 4, 5):  # three records reach node 1 only (the sequencer's own)
        mini.drop.add((1, to))
    mini.append(seq, [b"x2", b"x3", b"x4"], first_id=2)
    mini.down.add(1)
    mini.drop.clear()
    seq2 = mini.activate(2)  # recovers epoch 1 without node 1: the three slots are not kept
    mini.append(seq2, [b"p5"], first_id=5)
    mini.restart(1)  # node 1 returns with its copies and learns the release of epoch 2
    mini.release_to(1, seq2.last_known_good)
    assert not [c for c in mini.disks[1].log(LOG).copies.values() if c.payload.startswith(b"x")]
    first = mini.read([1, 2, 3, 4, 5])  # node 1 answers first
    assert [p for _, p in records(first)] == [b"p1", b"p5"]
    assert first == mini.read([5, 4, 3, 2, 1])


def test_a_reader_below_an_f_majority_waits_and_reports_no_false_dataloss() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1", b"p2", b"p3", b"p4"])
    mini.down.update({2, 3, 4})  # two of five answer: below the f-majority of 3
    items = mini.read()
    assert GapType.DATALOSS not in gaps(items)
    # it may deliver what it has but must stop where a missing node might hold the next record
    assert len(records(items)) < 4


def test_dataloss_only_when_every_copy_of_an_acked_record_is_gone() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1", b"p2"])
    lsn = max(acked(mini))
    for disk in mini.disks.values():  # every copy of the last record lost
        state = disk.log(LOG)
        if lsn in state.copies:
            state.drop([lsn])
    mini.append(seq, [b"p3"], first_id=3)
    assert gaps(mini.read(until=max(acked(mini)))).count(GapType.DATALOSS) == 1


def test_racing_sequencers_give_readers_one_sequence() -> None:
    mini = Mini()
    a = mini.activate(1)
    mini.append(a, [b"a1", b"a2"])
    b = mini.activate(2)
    mini.append(a, [b"a3"], first_id=3)  # refused: sealed
    mini.append(b, [b"b1"], first_id=4)
    c = mini.activate(1)  # node 1 again, a newer epoch: preempts b
    mini.append(b, [b"b2"], first_id=5)
    mini.append(c, [b"c1"], first_id=6)
    assert [a.epoch, b.epoch, c.epoch] == [1, 2, 3]
    assert isinstance(mini.results[3], Refused) and isinstance(mini.results[5], Refused)
    got = acked(mini)
    reads = [mini.read(order, until=max(got)) for order in ([1, 2, 3, 4, 5], [5, 3, 1, 4, 2])]
    assert reads[0] == reads[1]
    assert [p for _, p in records(reads[0])] == [b"a1", b"a2", b"b1", b"c1"]


def test_a_reader_crosses_a_node_set_change() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1", b"p2"])
    seq2 = mini.activate(3, node_set=(3, 4, 5))
    assert mini.record.node_set(seq2.epoch).nodes == (3, 4, 5)
    mini.append(seq2, [b"p3", b"p4"], first_id=3)
    assert all(c.lsn >> 32 == 1 for c in mini.disks[1].log(LOG).copies.values())  # node 1 only in epoch 1
    mini.down.add(2)  # epoch 2's node set does not need it; epoch 1's f-majority is still there
    got = acked(mini)
    assert [p for _, p in records(mini.read(until=max(got)))] == [b"p1", b"p2", b"p3", b"p4"]


def test_a_tailing_reader_sees_nothing_unreleased() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"p1"])
    for to in (2, 3, 4, 5):
        mini.drop.add((1, to))
    mini.append(seq, [b"pending"], first_id=2)  # stored on node 1 only, so not released
    assert [p for _, p in records(mini.read())] == [b"p1"]


def test_a_store_from_a_sealed_epoch_is_refused_even_if_queued_before_the_seal() -> None:
    disk = NodeDisk()
    replica = Replica(1, disk)
    assert replica.handle(9, Store(LOG, Copy(1 << 32 | 1, Kind.RECORD, b"x"))) == [DiskWrite(1)]
    assert replica.handle(9, Seal(LOG, by=2, lce=0)) == [DiskWrite(1)]
    # the seal is applied second, so the store lands; a store queued after the seal is refused
    replica.written()
    replica.written()
    replica.handle(9, Store(LOG, Copy(1 << 32 | 2, Kind.RECORD, b"y")))
    (reply,) = replica.written()
    assert reply.message.preempted_by == 2  # type: ignore[attr-defined]


def test_a_node_set_that_cannot_hold_r_copies_is_a_typed_error() -> None:
    with pytest.raises(InvalidArgumentError):
        NodeSet(1, (1, 2), 3)
    with pytest.raises(InvalidArgumentError):
        NodeSet(1, (1, 1, 2), 2)


def test_an_epoch_record_round_trips_and_a_corrupt_one_is_a_typed_error() -> None:
    record = EpochRecord(3, 2, (NodeSet(1, (1, 2, 3), 2), NodeSet(3, (2, 3, 4), 3)), (Recovered(2, 5, 3),))
    assert EpochRecord.decode(record.encode()) == record
    with pytest.raises(CorruptionError):
        EpochRecord.decode(b'{"epoch": 1}')


def test_a_node_that_missed_one_recovery_and_joined_the_next_still_purges_the_first() -> None:
    """Found by the simulation (seed 2374): a clean from a recovery of later epochs made a node that
    had missed an earlier recovery believe every epoch before clean, so it served a copy that the
    earlier recovery had not kept."""
    mini = Mini()
    seq1 = mini.activate(1)
    mini.append(seq1, [b"p1"])
    mini.down.add(3)
    mini.activate(2)  # recovers epoch 1 without node 3: a bridge after p1
    mini.restart(3)
    mini.drop.update({(1, 2), (1, 4), (1, 5)})
    mini.append(seq1, [b"stale"], first_id=2)  # the old sequencer reaches node 3, which it never sealed
    assert any(c.payload == b"stale" for c in mini.disks[3].log(LOG).copies.values())
    mini.drop.clear()
    seq3 = mini.activate(4)  # recovers epoch 2 only; node 3 takes part
    mini.append(seq3, [b"p3"], first_id=3)
    mini.release_to(3, seq3.last_known_good)
    items = mini.read([3, 1, 2, 4, 5])
    assert [p for _, p in records(items)] == [b"p1", b"p3"]
    assert items == mini.read([5, 4, 2, 1, 3])
    after_p1 = mini.read([3, 1, 2, 4, 5], start=1 << 32 | 2)  # a reader already past p1 hears node 3 first
    assert [p for _, p in records(after_p1)] == [b"p3"]


def test_a_node_that_purged_refuses_later_stores_of_the_old_epoch() -> None:
    """Found by the simulation (seed 6183): a node that missed a recovery purged the old epoch on the
    release, then took a late store from the old sequencer, which it had never been sealed against,
    and served it."""
    mini = Mini()
    seq1 = mini.activate(1)
    mini.append(seq1, [b"p1"])
    mini.down.add(3)
    seq2 = mini.activate(2)  # recovers epoch 1 without node 3
    mini.restart(3)
    mini.append(seq2, [b"p2"], first_id=2)  # its release reaches node 3, which purges epoch 1
    assert mini.disks[3].log(LOG).lce == 1
    mini.drop.update({(1, 2), (1, 4), (1, 5)})
    mini.append(seq1, [b"stale"], first_id=3)  # the old sequencer still runs and reaches node 3
    assert not any(c.payload == b"stale" for c in mini.disks[3].log(LOG).copies.values())
    mini.drop.clear()
    assert [p for _, p in records(mini.read([3, 1, 2, 4, 5], start=1 << 32 | 2))] == [b"p2"]


def test_a_reader_given_the_trim_point_skips_copies_a_node_has_not_trimmed_yet() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [f"p{i}".encode() for i in range(1, 9)])
    point = 1 << 32 | 4
    for node in (2, 3, 4, 5):  # node 1 has not heard of the trim yet
        mini.run(None, mini.replicas[node].handle(0, Trim(LOG, point)), src=node)
    reader = MergeReader(LOG, mini.record, 1, trim_point=point, grace_ms=0)
    out: list[object] = []
    for node, request in reader.requests():
        (reply,) = mini.replicas[node].handle(0, request)
        reader.on_reply(reply.message)  # type: ignore[attr-defined]
        out.extend(reader.take(0))
    assert isinstance(out[0], Gap) and out[0].type is GapType.TRIM and out[0].lsn_hi == point
    assert [p for _, p in records(out)] == [f"p{i}".encode() for i in range(5, 9)]


def test_a_recovery_that_starts_over_cannot_leave_two_decisions_for_one_slot() -> None:
    """A recovery whose mutation timed out sealed again with the same epoch and could decide a slot
    differently from its first try (another f-majority answered); both decisions carried the same
    ballot, so a node holding the first one kept it through its purge and readers disagreed."""
    mini = Mini()
    seq1 = mini.activate(1)
    mini.append(seq1, [b"p1"])  # acknowledged, on nodes 2, 3 and 4
    partial = Copy(1 << 32 | 2, Kind.RECORD, b"partial")
    mini.run(None, mini.replicas[2].handle(1, Store(LOG, partial)), src=2)  # a store that reached node 2 only
    seq = mini.sequencer(3)
    mini.drop.update({(3, 1), (3, 2)})  # the first try seals 3, 4 and 5: no copy of ESN 2 there
    mini.run(seq, seq.handle(-1, Activate(LOG), mini.now))
    assert seq.state is ClusterSequencerState.SEALING
    mini.drop.update({(3, 3), (3, 4)})  # its mutation (a bridge at ESN 2) reaches node 5 only
    for _ in range(100):
        mini.now += 20
        mini.run(seq, seq.tick(mini.now))
        if seq.state is ClusterSequencerState.MUTATING:
            break
    assert mini.disks[5].log(LOG).copies[partial.lsn].kind is Kind.BRIDGE
    mini.drop = {(3, 5)}  # node 5 is cut off; the others answer the next try, node 2 with the record
    for _ in range(200):
        mini.now += 20
        mini.run(seq, seq.tick(mini.now))
        if seq.state in (ClusterSequencerState.ACTIVE, ClusterSequencerState.PREEMPTED):
            break
    assert seq.state is ClusterSequencerState.ACTIVE and seq.epoch == 3  # it started over under a new epoch
    mini.drop.clear()
    mini.release_to(5, seq.last_known_good)  # node 5 purges by the epoch record
    first = mini.read([5, 1, 2, 3, 4], start=1 << 32 | 1)  # a reader at p1 hears node 5 first
    assert first == mini.read([2, 1, 3, 4, 5], start=1 << 32 | 1)
    assert records(first)[0][1] == b"p1"


def test_a_node_cleaned_by_a_recovery_that_was_never_marked_purges_by_the_one_that_was() -> None:
    """A recovery's clean made a node believe the epochs clean before the recovery marked them so in
    the epoch record. When the sequencer died between the two, the next recovery could decide the
    epoch's tail otherwise (a record past the first one's bridge that only it saw), and the node,
    down meanwhile, kept the first recovery's bridge and served it."""
    mini = Mini()
    seq1 = mini.activate(1)
    mini.append(seq1, [b"p1"])  # acknowledged, on nodes 2, 3 and 4
    partial = Copy(1 << 32 | 3, Kind.RECORD, b"partial")
    mini.run(None, mini.replicas[4].handle(1, Store(LOG, partial)), src=4)  # a store that reached node 4 only
    seq2 = mini.sequencer(2)
    mini.drop.update({(2, 4), (2, 5)})  # it recovers epoch 1 with nodes 1, 2 and 3: a bridge at ESN 2
    mini.run(seq2, seq2.handle(-1, Activate(LOG), mini.now))
    mini.version += 1  # its node dies after the cleans, before its mark lands (here: the mark fails)
    mini.settle(seq2)
    assert seq2.state is ClusterSequencerState.PREEMPTED and mini.record.lce == 0
    assert mini.disks[1].log(LOG).copies[1 << 32 | 2].kind is Kind.BRIDGE
    mini.drop.clear()
    mini.down.add(1)
    seq3 = mini.activate(3)  # recovers epochs 1 and 2 without node 1, and sees the record at ESN 3
    assert seq3.state is ClusterSequencerState.ACTIVE
    mini.append(seq3, [b"p2"], first_id=2)
    mini.restart(1)
    mini.release_to(1, seq3.last_known_good)
    first = mini.read([1, 2, 3, 4, 5], start=1 << 32 | 2)  # a reader past p1 hears node 1 first
    assert first == mini.read([2, 3, 4, 5, 1], start=1 << 32 | 2)
    assert [p for _, p in records(first)] == [b"partial", b"p2"]


def test_a_node_whose_epoch_record_read_failed_asks_again_at_the_next_release() -> None:
    """A node that must purge before it releases reads the epoch record; when that read failed (the
    epoch store was down) it never asked again, so it never released the log again."""
    mini = Mini()
    seq1 = mini.activate(1)
    mini.append(seq1, [b"p1"])
    mini.down.add(5)
    seq2 = mini.activate(2)  # recovers epoch 1 without node 5
    mini.append(seq2, [b"p2"], first_id=2)
    mini.restart(5)
    release = Release(LOG, seq2.last_known_good)
    assert mini.replicas[5].handle(2, release) == [ReadEpochRecord(LOG)]
    mini.replicas[5].record_unreadable(LOG)  # the driver's read failed
    effects = mini.replicas[5].handle(2, release)  # the sequencer's periodic release
    assert effects == [ReadEpochRecord(LOG)]
    mini.run(None, effects, src=5)
    assert mini.replicas[5].released(LOG) == seq2.last_known_good


def test_a_read_reply_of_large_records_stays_small_enough_to_send() -> None:
    """A node answered a read with as many copies as asked (256 by default) whatever their size: 1 MiB
    records made replies past what gRPC carries between nodes and clients (64 MiB), so the reader
    asked again for ever. A reply now stops at a byte budget, after at least one copy."""
    mini = Mini(n=3, r=3)
    seq = mini.activate(1)
    big = [bytes([i]) * (1 << 20) for i in range(24)]
    mini.append(seq, big)
    assert len(acked(mini)) == 24
    reader = MergeReader(LOG, mini.record, 1, max(acked(mini)), grace_ms=0)
    out: list[object] = []
    for _ in range(100):
        for node, request in reader.requests():
            (reply,) = mini.replicas[node].handle(100, request)
            message = reply.message  # type: ignore[attr-defined]
            assert sum(len(c.payload) for c in message.copies) <= 16 << 20
            reader.on_reply(message)
        out.extend(reader.take(mini.now))
        if reader.done:
            break
    assert [p for _, p in records(out)] == big


def test_a_digest_of_large_unacknowledged_records_stays_small_enough_to_send() -> None:
    """The sequencer stored up to 1,024 appends at once whatever their size, so a node could hold
    more unacknowledged copies than one message carries (64 MiB), and its digest could never reach
    a new sequencer: recovery sealed it again for ever. The window is now bounded in bytes too."""
    mini = Mini()
    seq = mini.activate(1)
    mini.drop.update({(1, 1), (1, 3), (1, 4), (1, 5)})  # the stores reach node 2 only: nothing is acked
    big = b"x" * (1 << 20)
    mini.append(seq, [big] * 150)
    assert not mini.results
    held = sum(len(c.payload) for c in mini.disks[2].log(LOG).copies.values())
    assert mini.replicas[2].handle(3, Seal(LOG, by=2, lce=0)) == [DiskWrite(2)]  # a new sequencer's seal
    (answer,) = mini.replicas[2].written()
    assert isinstance(answer, Send)
    sealed = answer.message
    assert sum(len(c.payload) for c in sealed.digest) == held  # type: ignore[attr-defined]
    assert held <= 32 << 20


def test_reads_of_logs_a_node_never_had_leave_no_state_behind() -> None:
    """A read of an unknown log made the node keep an empty state for it, so a client asking for
    many log ids (by mistake or not) grew the node's memory without bound."""
    disk = NodeDisk()
    replica = Replica(1, disk)
    for log_id in range(1, 1001):
        (answer,) = replica.handle(100, ReadFrom(log_id, 1))
        assert isinstance(answer, Send) and answer.message.copies == ()  # type: ignore[attr-defined]
    assert disk.logs == {}


def test_a_stalled_reader_buffers_a_bounded_number_of_bytes() -> None:
    """A reader waiting for an f-majority kept asking the nodes that answered, up to 65,536 copies
    each whatever their size: with large records, gigabytes. It now stops asking a node once what
    it holds of it passes a byte budget."""
    mini = Mini(n=3, r=2)
    seq = mini.activate(1)
    big = b"y" * (1 << 20)
    mini.append(seq, [big] * 100)
    assert len(acked(mini)) == 100
    mini.down.update({2, 3})  # one node of three answers: below the f-majority of 2, the reader waits
    reader = MergeReader(LOG, mini.record, 1, grace_ms=0)
    received = 0
    for _ in range(50):
        for node, request in reader.requests():
            if node in mini.down:
                reader.lost(node)
                continue
            (reply,) = mini.replicas[node].handle(100, request)
            message = reply.message  # type: ignore[attr-defined]
            received += sum(len(c.payload) for c in message.copies)
            reader.on_reply(message)
        assert reader.take(mini.now) == []
    assert 0 < received <= 48 << 20


# --- batches, seals and tails (what ClusterLogs asks of a sequencer) -------------------------------

def test_a_batch_takes_consecutive_esns_and_is_acknowledged_once_whole() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.run(seq, seq.handle(-1, AppendBatch(LOG, 1, (b"a", b"b", b"c")), mini.now))
    ack = mini.results[1]
    assert isinstance(ack, Acked) and ack.lsn == (seq.epoch << 32) + 3
    assert records(mini.read(until=ack.lsn)) == [((seq.epoch << 32) + i, p) for i, p in ((1, b"a"), (2, b"b"),
                                                                                         (3, b"c"))]


def test_a_batch_larger_than_the_window_is_stored_a_window_at_a_time() -> None:
    """All its stores at once outlasted the store timeout on a node: every slot was sent again in
    new waves, again and again, and a batch of 5,000 records was never acknowledged."""
    mini = Mini()
    seq = ClusterSequencer(LOG, 1, ClusterSequencerConfig(window_max=8))
    mini.run(seq, seq.handle(-1, Activate(LOG), mini.now))
    mini.settle(seq)
    effects = seq.handle(-1, AppendBatch(LOG, 1, tuple(b"%d" % i for i in range(20))), mini.now)
    stores = [e for e in effects if isinstance(e, Send) and isinstance(e.message, Store)]
    assert len(stores) == 8 * mini.r  # the window's slots, R copies each
    mini.run(seq, effects)
    ack = mini.results[1]
    assert isinstance(ack, Acked) and ack.lsn == (seq.epoch << 32) + 20


def test_a_conditional_batch_checks_the_last_lsn_given() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.run(seq, seq.handle(-1, AppendBatch(LOG, 1, (b"a",), if_tail=0), mini.now))
    first = mini.results[1]
    assert isinstance(first, Acked)
    mini.run(seq, seq.handle(-1, AppendBatch(LOG, 2, (b"b",), if_tail=first.lsn - 1), mini.now))
    refused = mini.results[2]
    assert isinstance(refused, Refused) and isinstance(refused.error, TailMismatchError)
    mini.run(seq, seq.handle(-1, AppendBatch(LOG, 3, (b"c",), if_tail=first.lsn), mini.now))
    assert isinstance(mini.results[3], Acked)


def test_a_seal_puts_the_final_lsn_in_the_epoch_record_and_every_later_sequencer_refuses() -> None:
    mini = Mini()
    seq = mini.activate(1)
    mini.append(seq, [b"x", b"y"])
    mini.run(seq, seq.handle(-1, Finish(LOG, 10), mini.now))
    final = mini.results[10]
    assert isinstance(final, Acked) and final.lsn == (seq.epoch << 32) + 2 and mini.record.final == final.lsn
    mini.run(seq, seq.handle(-1, Append(LOG, 11, b"late"), mini.now))
    late = mini.results[11]
    assert isinstance(late, Refused) and isinstance(late.error, LogSealedError)
    other = mini.sequencer(2)
    mini.run(other, other.handle(-1, Append(LOG, 12, b"elsewhere"), mini.now))
    mini.run(other, other.handle(-1, TailQuery(LOG, 13), mini.now))
    elsewhere, tail = mini.results[12], mini.results[13]
    assert isinstance(elsewhere, Refused) and isinstance(elsewhere.error, LogSealedError)
    assert isinstance(tail, Acked) and tail.lsn == final.lsn
    assert EpochRecord.decode(mini.record.encode()) == mini.record
