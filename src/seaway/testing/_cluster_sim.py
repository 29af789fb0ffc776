"""A deterministic simulation of a replicated log cluster (the roles of :mod:`seaway.log`'s
replication), in the manner of FoundationDB's simulator and TigerBeetle's VOPR.

One ``random.Random(seed)`` decides everything: the fault parameters of the run (message loss,
duplication, delay, partitions, crashes that lose unsynced writes, pauses, nodes lost for good, node
set changes, trims) and every event. Time is a fake clock; events run from a heap in time order. A
failing seed replays exactly.

A run has a faulty phase, while clients append and tailing readers read, then it heals (nodes back,
network whole) and the clients must finish; final readers then read the whole log. The checkers:

- every acknowledged record is read back, at its LSN, by every final reader (above the trim point);
- no two appends were acknowledged with one LSN;
- every reader sees the same sequence of records and gaps (a tailing reader a prefix of it);
- no DATALOSS gap (at most R-1 nodes are lost in a run);
- progress after healing: every client's appends are acknowledged.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from seaway.log import Gap, GapType, ReadItem, Record
from seaway.log.replication import (
    Acked,
    Activate,
    Append,
    Cleaned,
    ClusterSequencer,
    ClusterSequencerConfig,
    ClusterSequencerState,
    DiskWrite,
    EpochRecord,
    EpochRecordRead,
    EpochRecordSet,
    MergeReader,
    NodeDisk,
    NodeSet,
    ReadEpochRecord,
    ReadReply,
    Refused,
    Replica,
    Sealed,
    Send,
    SetEpochRecord,
    Stored,
    Trim,
)

CLIENT_BASE = 1000
READER_BASE = 2000
ADMIN = 3000
TICK_MS = 10
REQUEST_TIMEOUT_MS = 1_500
READ_TIMEOUT_MS = 300
READ_POLL_MS = 20
STALL_MS = 500


@dataclass(frozen=True)
class ClusterSimConfig:
    nodes: int = 5
    replication: int = 3
    logs: int = 2
    appends: int = 120
    """Per client."""
    clients: int = 2
    in_flight: int = 4
    fault_ms: int = 4_000
    heal_ms: int = 20_000
    tailing_readers: int = 1
    final_readers: int = 2


@dataclass(frozen=True)
class Faults:
    """The fault parameters a seed chose."""

    loss: float
    duplicate: float
    delay_mean_ms: float
    crashes: int
    pauses: int
    partitions: int
    lost_nodes: int
    node_set_changes: int
    trims: int
    disk_ms: float
    store_crashes: float = 0.0
    """How likely a sequencer's node dies at a compare-and-set of the epoch record (which lands or
    not): between taking its epoch and sealing, or between its cleans and marking them; and how
    likely a node's read of the record for a purge fails. Drawn from a random generator of its own,
    so that the other faults of a seed stay as they were."""

    @staticmethod
    def pick(rng: random.Random, config: ClusterSimConfig) -> Faults:
        return Faults(
            loss=rng.choice([0.0, 0.0, 0.01, 0.05]),
            duplicate=rng.choice([0.0, 0.01, 0.03]),
            delay_mean_ms=rng.choice([0.5, 2.0, 10.0]),
            crashes=rng.choice([0, 1, 3, 6]),
            pauses=rng.choice([0, 1, 2]),
            partitions=rng.choice([0, 0, 1, 2]),
            lost_nodes=rng.randint(0, config.replication - 1),
            node_set_changes=rng.choice([0, 0, 1, 2]),
            trims=rng.choice([0, 0, 1]),
            disk_ms=rng.choice([0.2, 1.0, 5.0]),
        )


@dataclass
class SimReport:
    seed: int
    faults: Faults
    failures: list[str]
    acked: int
    read: int
    gaps: dict[str, int]
    epochs: dict[int, int]
    time_ms: int

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class _Node:
    id: int
    disk: NodeDisk = field(default_factory=NodeDisk)
    replica: Replica | None = None
    sequencers: dict[int, ClusterSequencer] = field(default_factory=dict)
    alive: bool = True
    lost: bool = False
    paused: bool = False
    held: list[tuple[int, object]] = field(default_factory=list)
    generation: int = 0
    disk_free_ms: float = 0.0


@dataclass
class _Request:
    log_id: int
    payload: bytes
    node: int
    deadline_ms: int


@dataclass
class _Client:
    id: int
    todo: list[tuple[int, bytes]]
    preferred: dict[int, int]
    pending: dict[int, _Request] = field(default_factory=dict)
    done: set[bytes] = field(default_factory=set)
    wanted: set[bytes] = field(default_factory=set)


@dataclass
class _Reader:
    id: int
    log_id: int
    reader: MergeReader
    items: list[ReadItem] = field(default_factory=list)
    asked_ms: dict[int, int] = field(default_factory=dict)
    final: bool = False
    refreshing: bool = False
    progress_ms: int = 0
    progress_lsn: int = 0
    pokes: int = 0


class ClusterSim:
    def __init__(self, seed: int, config: ClusterSimConfig | None = None, faults: Faults | None = None) -> None:
        self.seed = seed
        self.config = config or ClusterSimConfig()
        self.rng = random.Random(seed)
        self._store_rng = random.Random(seed * 1_000_003 + 17)
        self.faults = faults or replace(Faults.pick(self.rng, self.config),
                                        store_crashes=self._store_rng.choice([0.0, 0.0, 0.1, 0.3]))
        self.now = 0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        cfg = self.config
        self.nodes = {i: _Node(i) for i in range(1, cfg.nodes + 1)}
        for node in self.nodes.values():
            node.replica = Replica(node.id, node.disk)
        self.store: dict[int, tuple[EpochRecord, int]] = {}
        initial = NodeSet(1, tuple(self.nodes), cfg.replication)
        for log_id in range(1, cfg.logs + 1):
            self.store[log_id] = (EpochRecord(history=(initial,)), 0)
        self.acked: dict[int, dict[int, bytes]] = {log_id: {} for log_id in self.store}
        self.failures: list[str] = []
        self.healed = False
        self.partition: tuple[set[int], set[int]] | None = None
        self.trim_points: dict[int, int] = dict.fromkeys(self.store, 0)
        self.clients: dict[int, _Client] = {}
        self.readers: dict[int, _Reader] = {}
        self._next_request = 1
        self._lost_pool = self.rng.sample(sorted(self.nodes), self.faults.lost_nodes)
        self.seq_config = ClusterSequencerConfig(store_timeout_ms=100, seal_grace_ms=20, recovery_timeout_ms=600,
                                                 release_interval_ms=300, graylist_ms=1_000)

    # --- the event loop ---------------------------------------------------------------------------

    def _at(self, time_ms: float, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time_ms, self._seq, action))

    def _after(self, delay_ms: float, action: Callable[[], None]) -> None:
        self._at(self.now + delay_ms, action)

    def run(self) -> SimReport:
        cfg = self.config
        for i in range(cfg.clients):
            cid = CLIENT_BASE + i
            todo = [(1 + (k % cfg.logs), f"c{cid}-{k}".encode()) for k in range(cfg.appends)]
            self.clients[cid] = _Client(cid, todo, {log_id: self._home(log_id) for log_id in self.store},
                                        wanted={p for _, p in todo})
            self._after(self.rng.uniform(0, 5), lambda c=cid: self._client_fill(c))  # type: ignore[misc]
        for i in range(cfg.tailing_readers):
            for log_id in self.store:
                self._start_reader(READER_BASE + 100 * log_id + i, log_id, final=False)
        self._schedule_faults()
        for node in self.nodes.values():
            self._after(self.rng.uniform(0, TICK_MS), lambda n=node: self._tick(n))  # type: ignore[misc]
        self._at(cfg.fault_ms, self._heal)
        end = cfg.fault_ms + cfg.heal_ms
        while self._heap:
            time_ms, _, action = heapq.heappop(self._heap)
            if time_ms > end:
                break
            self.now = int(time_ms)
            action()
            if self.healed and self._finished():
                break
        return self._check()

    def _finished(self) -> bool:
        if any(c.wanted - c.done for c in self.clients.values()):
            return False
        finals = [r for r in self.readers.values() if r.final]
        return bool(finals) and all(r.reader.done for r in finals)

    def _home(self, log_id: int) -> int:
        order = sorted(self.nodes, key=lambda n: (n * 7919 + log_id * 104729) % 1009)
        return order[0]

    def _next_node(self, node: int) -> int:
        """The next node after ``node`` that the membership (ZooKeeper's ephemeral nodes) lists as up."""
        ids = sorted(self.nodes)
        at = ids.index(node)
        for step in range(1, len(ids) + 1):
            candidate = ids[(at + step) % len(ids)]
            if self.nodes[candidate].alive:
                return candidate
        return ids[(at + 1) % len(ids)]

    def _placement(self, log_id: int) -> int:
        """Where the log's sequencer belongs: its first node, in the log's own order, that is up."""
        order = sorted(self.nodes, key=lambda n: (n * 7919 + log_id * 104729) % 1009)
        return next((n for n in order if self.nodes[n].alive), order[0])

    # --- network ----------------------------------------------------------------------------------

    def _cut(self, src: int, dst: int) -> bool:
        if self.partition is None:
            return False
        a, b = self.partition
        return (src in a and dst in b) or (src in b and dst in a)

    def send(self, src: int, dst: int, message: object) -> None:
        f = self.faults
        if not self.healed and (self._cut(src, dst) or self.rng.random() < f.loss):
            return
        copies = 2 if not self.healed and self.rng.random() < f.duplicate else 1
        for _ in range(copies):
            delay = 0.1 + self.rng.expovariate(1.0 / f.delay_mean_ms)
            self._after(delay, lambda: self._deliver(src, dst, message))

    def _deliver(self, src: int, dst: int, message: object) -> None:
        if dst in self.nodes:
            node = self.nodes[dst]
            if not node.alive:
                return
            if node.paused:
                node.held.append((src, message))
                return
            self._node_receive(node, src, message)
        elif dst in self.clients:
            self._client_receive(self.clients[dst], message)
        elif dst in self.readers:
            reader = self.readers[dst]
            if isinstance(message, ReadReply):
                reader.asked_ms.pop(message.node, None)
                reader.reader.on_reply(message)
                self._reader_take(reader)

    # --- nodes ------------------------------------------------------------------------------------

    def _node_receive(self, node: _Node, src: int, message: object) -> None:
        assert node.replica is not None
        if isinstance(message, (Append, Activate)):
            log_id = message.log_id
            seq = node.sequencers.get(log_id)
            if seq is None or seq.state is ClusterSequencerState.PREEMPTED:
                if seq is not None and isinstance(message, Append):  # tell this client once, then start anew
                    del node.sequencers[log_id]
                    assert seq.error is not None
                    self.send(node.id, src, Refused(message.request_id, seq.error, message.client))
                    return
                seq = node.sequencers[log_id] = ClusterSequencer(log_id, node.id, self.seq_config)
            self._node_effects(node, seq.handle(src, message, self.now), seq)
        elif isinstance(message, (Stored, Sealed, Cleaned)):
            seq = node.sequencers.get(message.log_id)
            if seq is not None:
                self._node_effects(node, seq.handle(src, message, self.now), seq)
        else:
            self._node_effects(node, node.replica.handle(src, message), None)

    def _node_effects(self, node: _Node, effects: list[object], seq: ClusterSequencer | None) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                if effect.to == node.id:
                    self._after(0.01, lambda e=effect: self._deliver(node.id, node.id, e.message))  # type: ignore[misc]
                else:
                    self.send(node.id, effect.to, effect.message)
            elif isinstance(effect, DiskWrite):
                self._disk_write(node)
            elif isinstance(effect, (Acked, Refused)):
                self.send(node.id, effect.client, effect)
            elif isinstance(effect, ReadEpochRecord):
                self._store_read(node, effect.log_id, seq)
            elif isinstance(effect, SetEpochRecord):
                self._store_cas(node, effect, seq)
            else:
                raise AssertionError(f"unknown effect {effect!r}")

    def _disk_write(self, node: _Node) -> None:
        generation = node.generation
        start = max(self.now, node.disk_free_ms)
        node.disk_free_ms = start + self.rng.expovariate(1.0 / self.faults.disk_ms)

        def done() -> None:
            if node.generation != generation or not node.alive:
                return
            if node.paused:  # the write is done; its effects wait for the process
                node.held.append((-2, None))
                return
            assert node.replica is not None
            self._node_effects(node, node.replica.written(), None)

        self._at(node.disk_free_ms, done)

    def _store_read(self, node: _Node, log_id: int, seq: ClusterSequencer | None) -> None:
        generation = node.generation

        def answer() -> None:
            if seq is None and self.faults.store_crashes and not self.healed \
                    and self._store_rng.random() < self.faults.store_crashes:  # the read fails
                if node.generation == generation and node.alive and node.replica is not None:
                    node.replica.record_unreadable(log_id)
                return
            record, version = self.store[log_id]
            self._after(self.rng.uniform(0.5, 3), lambda: self._to_role(node, generation, seq,
                                                                         EpochRecordRead(log_id, record, version)))

        self._after(self.rng.uniform(0.5, 3), answer)

    def _store_cas(self, node: _Node, effect: SetEpochRecord, seq: ClusterSequencer | None) -> None:
        generation = node.generation

        def apply() -> None:
            record, version = self.store[effect.log_id]
            if self._store_crash(node, generation):  # the node dies at the call; the write may land
                if version == effect.version and self._store_rng.random() < 0.5:
                    self.store[effect.log_id] = (effect.record, version + 1)
                return
            if version != effect.version:
                reply = EpochRecordSet(effect.log_id, False)
            else:
                if effect.record.epoch < record.epoch or effect.record.lce < record.lce:
                    self.failures.append(f"epoch record went back: {record} -> {effect.record}")
                self.store[effect.log_id] = (effect.record, version + 1)
                reply = EpochRecordSet(effect.log_id, True, version + 1)
            self._after(self.rng.uniform(0.5, 3), lambda: self._to_role(node, generation, seq, reply))

        self._after(self.rng.uniform(0.5, 3), apply)

    def _store_crash(self, node: _Node, generation: int) -> bool:
        if not self.faults.store_crashes or self.healed or node.generation != generation or not node.alive \
                or node.lost or self._store_rng.random() >= self.faults.store_crashes:
            return False
        self._crash(node)
        self._after(self._store_rng.uniform(20, 1500), lambda: self._restart(node))
        return True

    def _to_role(self, node: _Node, generation: int, seq: ClusterSequencer | None, message: object) -> None:
        if node.generation != generation or not node.alive:
            return
        if node.paused:
            node.held.append((-3, (seq, message)))
            return
        if seq is not None:
            if node.sequencers.get(seq.log_id) is seq:
                self._node_effects(node, seq.handle(-1, message, self.now), seq)
        else:
            assert node.replica is not None
            self._node_effects(node, node.replica.handle(-1, message), None)

    def _tick(self, node: _Node) -> None:
        if node.alive and not node.paused:
            for seq in list(node.sequencers.values()):
                self._node_effects(node, seq.tick(self.now), seq)
        if not node.lost:
            self._after(TICK_MS, lambda: self._tick(node))

    # --- faults -----------------------------------------------------------------------------------

    def _schedule_faults(self) -> None:
        f, cfg = self.faults, self.config
        span = cfg.fault_ms - 200
        for _ in range(f.crashes):
            self._at(self.rng.uniform(50, span), self._crash_one)
        for _ in range(f.pauses):
            self._at(self.rng.uniform(50, span), self._pause_one)
        for _ in range(f.partitions):
            self._at(self.rng.uniform(50, span), self._partition)
        for node_id in self._lost_pool:
            self._at(self.rng.uniform(50, span), lambda n=node_id: self._lose(n))  # type: ignore[misc]
        for _ in range(f.node_set_changes):
            self._at(self.rng.uniform(50, span), self._change_node_set)
        for _ in range(f.trims):
            self._at(self.rng.uniform(span / 2, span), self._trim)

    def _crash(self, node: _Node) -> None:
        node.alive = False
        node.generation += 1
        node.replica = None
        node.sequencers.clear()
        node.held.clear()
        node.paused = False
        node.disk_free_ms = 0.0

    def _restart(self, node: _Node) -> None:
        if node.alive or node.lost:
            return
        node.alive = True
        node.replica = Replica(node.id, node.disk)

    def _crash_one(self) -> None:
        node = self.nodes[self.rng.choice(sorted(self.nodes))]
        if node.alive and not node.lost:
            self._crash(node)
            self._after(self.rng.uniform(20, 1500), lambda: self._restart(node))

    def _pause_one(self) -> None:
        node = self.nodes[self.rng.choice(sorted(self.nodes))]
        if node.alive and not node.paused:
            node.paused = True
            self._after(self.rng.uniform(100, 2000), lambda: self._resume(node))

    def _resume(self, node: _Node) -> None:
        if not node.paused:
            return
        node.paused = False
        held, node.held = node.held, []
        for src, message in held:
            if not node.alive:
                return
            if src == -2:
                assert node.replica is not None
                self._node_effects(node, node.replica.written(), None)
            elif src == -3:
                assert isinstance(message, tuple)
                role: ClusterSequencer | None = message[0]
                self._to_role(node, node.generation, role, message[1])
            else:
                self._node_receive(node, src, message)

    def _partition(self) -> None:
        ids = sorted(self.nodes)
        side = set(self.rng.sample(ids, self.rng.randint(1, len(ids) // 2)))
        others = set(ids) - side
        for cid in self.clients:
            (side if self.rng.random() < 0.3 else others).add(cid)
        for rid in self.readers:
            (side if self.rng.random() < 0.3 else others).add(rid)
        self.partition = (side, others)
        self._after(self.rng.uniform(100, 1500), self._unpartition)

    def _unpartition(self) -> None:
        self.partition = None

    def _lose(self, node_id: int) -> None:
        node = self.nodes[node_id]
        self._crash(node)
        node.lost = True

    def _change_node_set(self) -> None:
        keep = [n for n in sorted(self.nodes) if n not in self._lost_pool]
        size = self.rng.randint(self.config.replication, len(keep))
        chosen = tuple(sorted(self.rng.sample(keep, size)))
        log_id = self.rng.choice(sorted(self.store))
        target = self.rng.choice(keep)
        node = self.nodes[target]
        if node.alive and not node.paused:  # a new sequencer there, with the new node set
            node.sequencers.pop(log_id, None)
            self.send(ADMIN, target, Activate(log_id, chosen, self.config.replication))

    def _trim(self) -> None:
        log_id = self.rng.choice(sorted(self.store))
        acked = sorted(self.acked[log_id])
        if len(acked) < 4:
            return
        point = acked[self.rng.randrange(len(acked) // 2)]
        self.trim_points[log_id] = max(self.trim_points[log_id], point)
        for node_id in self.nodes:
            self.send(ADMIN, node_id, Trim(log_id, point))

    def _heal(self) -> None:
        self.healed = True
        self.partition = None
        for node in self.nodes.values():
            if node.paused:
                self._resume(node)
            self._restart(node)
        for cid in self.clients:
            self._after(1, lambda c=cid: self._client_fill(c))  # type: ignore[misc]
        self._after(2, self._start_finals)

    # --- clients ----------------------------------------------------------------------------------

    def _client_fill(self, cid: int) -> None:
        client = self.clients[cid]
        while client.todo and len(client.pending) < self.config.in_flight:
            log_id, payload = client.todo.pop(0)
            self._client_send(client, log_id, payload)

    def _client_send(self, client: _Client, log_id: int, payload: bytes) -> None:
        request_id = self._next_request
        self._next_request += 1
        node = client.preferred[log_id]
        client.pending[request_id] = _Request(log_id, payload, node, self.now + REQUEST_TIMEOUT_MS)
        self.send(client.id, node, Append(log_id, request_id, payload, client.id))
        self._after(REQUEST_TIMEOUT_MS, lambda: self._client_timeout(client, request_id))

    def _client_timeout(self, client: _Client, request_id: int) -> None:
        request = client.pending.pop(request_id, None)
        if request is None:
            return
        if client.preferred[request.log_id] == request.node:
            client.preferred[request.log_id] = self._next_node(request.node)
        self._client_send(client, request.log_id, request.payload)

    def _client_receive(self, client: _Client, message: object) -> None:
        if isinstance(message, Acked):
            request = client.pending.pop(message.request_id, None)
            if request is None:
                return
            log_acked = self.acked[request.log_id]
            other = log_acked.get(message.lsn)
            if other is not None and other != request.payload:
                self.failures.append(f"log {request.log_id}: LSN {message.lsn:#x} acknowledged for two appends")
            log_acked[message.lsn] = request.payload
            client.done.add(request.payload)
            self._client_fill(client.id)
            if self.healed and not client.wanted - client.done:
                self._start_finals()
        elif isinstance(message, Refused):
            request = client.pending.pop(message.request_id, None)
            if request is None:
                return
            if client.preferred[request.log_id] == request.node:
                client.preferred[request.log_id] = self._next_node(request.node)
            self._after(self.rng.uniform(5, 50), lambda: self._client_send(client, request.log_id, request.payload))

    # --- readers ----------------------------------------------------------------------------------

    def _start_finals(self) -> None:
        if not self.healed or any(c.wanted - c.done for c in self.clients.values()):
            return
        if any(r.final for r in self.readers.values()):
            return
        for log_id in self.store:
            last = max(self.acked[log_id], default=0)
            for i in range(self.config.final_readers):
                self._start_reader(READER_BASE + 100 * log_id + 50 + i, log_id, final=True, until=last)

    def _start_reader(self, rid: int, log_id: int, final: bool, until: int = 0) -> None:
        record, _ = self.store[log_id]
        reader = MergeReader(log_id, record, 1, until if final else 2**64 - 1, reader_id=rid)
        self.readers[rid] = _Reader(rid, log_id, reader, final=final)
        self._after(self.rng.uniform(0, READ_POLL_MS), lambda: self._reader_poll(self.readers[rid]))

    def _reader_poll(self, r: _Reader) -> None:
        if r.reader.done:
            return
        for node, asked in list(r.asked_ms.items()):
            if self.now - asked > READ_TIMEOUT_MS:
                del r.asked_ms[node]
                r.reader.lost(node)
        for node, request in r.reader.requests(max_copies=self.rng.choice([4, 64, 256])):
            r.asked_ms[node] = self.now
            self.send(r.id, node, request)
        self._reader_take(r)
        if r.reader.next_lsn != r.progress_lsn:
            r.progress_lsn, r.progress_ms = r.reader.next_lsn, self.now
        elif self.now - r.progress_ms > STALL_MS:  # ask for the sequencer: it releases again, or one starts
            r.progress_ms = self.now
            r.pokes += 1
            self.send(r.id, self._placement(r.log_id), Activate(r.log_id))
        if r.reader.needs_record and not r.refreshing:
            r.refreshing = True

            def refresh() -> None:
                r.reader.update_record(self.store[r.log_id][0])
                r.refreshing = False

            self._after(self.rng.uniform(1, 5), refresh)
        self._after(READ_POLL_MS, lambda: self._reader_poll(r))

    def _reader_take(self, r: _Reader) -> None:
        r.items.extend(r.reader.take(self.now))

    # --- checks -----------------------------------------------------------------------------------

    def _check(self) -> SimReport:
        failures = self.failures
        for client in self.clients.values():
            missing = client.wanted - client.done
            if missing:
                failures.append(f"client {client.id}: {len(missing)} appends never acknowledged after healing")
        gaps: dict[str, int] = {}
        read = 0
        for log_id in self.store:
            finals = [r for r in self.readers.values() if r.final and r.log_id == log_id]
            if not finals:
                failures.append(f"log {log_id}: no final reader ran")
                continue
            trim = self.trim_points[log_id]
            reference = _above(finals[0].items, trim)
            for r in finals:
                if not r.reader.done:
                    failures.append(f"log {log_id}: final reader {r.id} stalled at {r.reader.next_lsn:#x}")
                if _above(r.items, trim) != reference:
                    failures.append(f"log {log_id}: final readers {finals[0].id} and {r.id} differ")
            for r in self.readers.values():
                if r.log_id == log_id and not r.final:
                    mine = _above(r.items, trim)
                    if mine[:len(reference)] != reference[:len(mine)]:
                        failures.append(f"log {log_id}: tailing reader {r.id} is not a prefix of the final read")
            got = {item.lsn: item.payload for item in finals[0].items if isinstance(item, Record)}
            read += len(got)
            for lsn, payload in self.acked[log_id].items():
                if lsn > trim and got.get(lsn) != payload:
                    failures.append(f"log {log_id}: acknowledged LSN {lsn:#x} read as {got.get(lsn)!r}")
                    break
            for r in self.readers.values():
                if r.log_id != log_id:
                    continue
                for item in r.items:
                    if isinstance(item, Gap):
                        gaps[item.type.value] = gaps.get(item.type.value, 0) + 1
                        if item.type is GapType.DATALOSS:
                            failures.append(f"log {log_id}: reader {r.id} saw DATALOSS at {item.lsn_lo:#x}"
                                            f" with {len(self._lost_pool)} nodes lost")
                            break
        return SimReport(self.seed, self.faults, failures, sum(len(a) for a in self.acked.values()), read, gaps,
                         {log_id: rec.epoch for log_id, (rec, _) in self.store.items()}, self.now)


def _above(items: list[ReadItem], trim: int) -> list[tuple[object, ...]]:
    """Items as comparable tuples, from the first one past the trim point."""
    out: list[tuple[object, ...]] = []
    for item in items:
        if isinstance(item, Record):
            if item.lsn > trim:
                out.append(("R", item.lsn, item.payload))
        elif item.lsn_hi > trim:
            out.append(("G", item.type.value, max(item.lsn_lo, trim + 1), item.lsn_hi))
    return out


def run_seed(seed: int, config: ClusterSimConfig | None = None) -> SimReport:
    return ClusterSim(seed, config).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seaway.testing.cluster_sim",
                                     description="Run seeds of the cluster simulation; print the first failing one.")
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds to run")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    for seed in range(args.first, args.first + args.seeds):
        report = run_seed(seed)
        if args.verbose:
            print(f"seed {seed}: {'ok' if report.ok else 'FAIL'} acked={report.acked} read={report.read} "
                  f"gaps={report.gaps} epochs={report.epochs} t={report.time_ms}ms {report.faults}")
        if not report.ok:
            print(f"seed {seed} FAILED ({report.faults}):")
            for failure in report.failures[:20]:
                print(f"  {failure}")
            return 1
    print(f"{args.seeds} seeds passed ({args.first}..{args.first + args.seeds - 1})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
