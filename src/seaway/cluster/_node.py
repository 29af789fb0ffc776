"""A cluster node: the replica and the sequencers of :mod:`seaway.log.replication` over gRPC, with
its copies in RocksDB and the epoch records and membership in ZooKeeper.

One thread (the loop) runs every role of the node: it takes events from one queue (messages from
peers, clients' appends and reads, epoch-store answers, ticks), hands them to the roles, and carries
out their effects. Disk writes of one turn of the loop go into one synced RocksDB batch, and the
answers they earned leave only after it (group commit). Messages to a peer go through a sender
thread per peer, in batches (``Deliver``); a message to a peer that is down is lost, which the
sequencer's timers make up for. Calls to ZooKeeper run in a small pool, never in the loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import queue
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from seaway._net import is_loopback
from seaway.cluster._channels import CHANNEL_OPTIONS, MESSAGE_MAX, TokenCheck, open_channel
from seaway.cluster._codec import from_msg, read_reply_to_msg, to_msg
from seaway.cluster._control import ControlRole
from seaway.cluster._disk import RocksDisk
from seaway.cluster._zk import ZooKeeperCluster
from seaway.errors import (
    InvalidArgumentError,
    LogDeletedError,
    OverloadedError,
    PayloadTooLargeError,
    PreemptedError,
    SeawayError,
    TimedOutError,
    TrimPastTailError,
    UnavailableError,
    UnknownLogError,
)
from seaway.log import LOG_ID_MAX, PRODUCER_ID_BYTES_MAX, Durability, LogAttributes, check_name
from seaway.log.replication import (
    NODES_MAX,
    REPLICATION_MAX,
    Acked,
    Activate,
    Append,
    AppendBatch,
    Cleaned,
    ClusterSequencer,
    ClusterSequencerConfig,
    ClusterSequencerState,
    DiskWrite,
    EpochRecord,
    EpochRecordRead,
    EpochRecordSet,
    Finish,
    NodeSet,
    ReadEpochRecord,
    ReadFrom,
    ReadReply,
    Refused,
    Replica,
    Sealed,
    Send,
    SetEpochRecord,
    Stored,
    TailQuery,
    Trim,
)
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc
from seaway.wire import error_metadata, status_of

_log = logging.getLogger("seaway.cluster")

PAYLOAD_MAX = 1 << 20
BATCH_MAX = 4096
EVENTS_PER_TURN = 2048
PEER_QUEUE_MAX = 100_000
"""Messages waiting for one peer; past that they are dropped (the peer is too slow or gone)."""
PENDING_APPENDS_MAX = 100_000
INBOX_MESSAGES_MAX = 200_000
"""Messages from peers a node holds for its loop; past that a peer's batch is refused."""
SERVICE_THREADS = 16
APPENDS_AT_ONCE = 12
BATCH_RECORDS_MAX = 100_000
"""Records of one batch (the single store's bound)."""
BATCH_BYTES_MAX = 16 << 20
"""Payload bytes of one batch: what a sequencer stores at once (its window), so that a digest stays
well within a message."""
PRODUCER_WINDOW = 16
"""Batches of each producer whose outcome a sequencer node remembers (idempotent appends)."""
PRODUCERS_MAX = 10_000
"""Producers a node remembers per log (the least recently seen are forgotten first)."""
DELETED_TRIM = 2**64 - 1
"""The trim point a deleted log's copies are dropped up to."""
"""Append calls one node serves at once: each holds a service thread until it is acknowledged, and
the other threads must stay free for peers' messages (a recovery's seals and stores) and readers."""


@dataclass(frozen=True)
class NodeConfig:
    node_id: int
    data_dir: Path
    cluster: str
    """``zk://HOST:PORT/PATH``: the ZooKeeper ensemble and the cluster's root in it."""
    listen: str = "127.0.0.1:0"
    tick_ms: int = 10
    sequencer: ClusterSequencerConfig = field(default_factory=ClusterSequencerConfig)
    append_timeout_s: float = 10.0
    zk_timeout_s: float = 6.0
    """ZooKeeper's session timeout: how long a dead node stays in the membership (appends do not
    wait for it: a client that cannot reach a sequencer moves it at once)."""
    token: str | None = None
    """The cluster's shared secret: every call to a node, from a client or another node, carries it.
    Required beyond loopback."""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    """The node's certificate and key (PEM): its port speaks TLS. Required beyond loopback."""
    tls_root_cert: Path | None = None
    """What a node trusts in the other nodes' certificates (PEM); default: its own certificate (one
    certificate for the whole cluster, or one CA that signed each node's)."""
    control_listen: str | None = None
    """host:port: this node is also the cluster's control node, serving the Seaway API there (its
    metadata, transactions, ledger and notifications on this node's disk, under ``control/``; the
    users' logs in the cluster). One per cluster; None: an ordinary node."""

    def __post_init__(self) -> None:
        if not 1 <= self.node_id <= NODES_MAX:
            raise InvalidArgumentError(f"a node id is in [1, {NODES_MAX}], got {self.node_id}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidArgumentError("TLS needs both a certificate and a key")
        host = self.listen.rsplit(":", 1)[0].strip("[]")
        if not is_loopback(host) and (not self.token or self.tls_cert is None):
            raise InvalidArgumentError(
                f"a cluster node listening beyond loopback ({self.listen}) needs a token and TLS: without them "
                f"anyone who reached it could write and read every log (docs/cluster.md)")



class _Peer:
    """Batches of messages to one peer, from a thread of its own."""

    def __init__(self, node: ClusterNode, peer_id: int, address: str) -> None:
        self._node = node
        self.peer_id = peer_id
        self.address = address
        self._queue: queue.Queue[pb.Message | None] = queue.Queue(PEER_QUEUE_MAX)
        self._channel = node.channel(address)
        self._stub = pb_grpc.SeawayClusterStub(self._channel)  # type: ignore[no-untyped-call]
        self._thread = threading.Thread(target=self._run, name=f"seaway-peer-{peer_id}", daemon=True)
        self._thread.start()

    def send(self, message: pb.Message) -> None:
        with contextlib.suppress(queue.Full):  # lost, as if the network had lost it
            self._queue.put_nowait(message)

    def close(self) -> None:
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            size = first.ByteSize()
            while len(batch) < BATCH_MAX and size < MESSAGE_MAX // 2:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._channel.close()
                    return
                batch.append(more)
                size += more.ByteSize()
            envelope = pb.Envelope(sender=self._node.config.node_id, cluster=self._node.root, messages=batch)
            try:
                self._stub.Deliver(envelope, timeout=5.0)
            except grpc.RpcError:  # the peer is down or slow: the messages are lost
                time.sleep(0.01)
        self._channel.close()


class ClusterNode:
    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self._inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._inbox_lock = threading.Lock()
        self._inbox_messages = 0
        self._running = False
        self._zk: ZooKeeperCluster | None = None
        self._disk: RocksDisk | None = None
        self._replica: Replica | None = None
        self._sequencers: dict[int, ClusterSequencer] = {}
        self._pending: dict[int, Future[int]] = {}
        self._deadlines: deque[tuple[int, int]] = deque()
        """(deadline in ms, request id) of the appends in ``_pending``, in the order they came."""
        self._activations: list[tuple[ClusterSequencer, Future[None]]] = []
        """Sequencers started by a node-set change, and the call waiting for them to be active."""
        self._next_request = 1
        self._request_counts: dict[int, tuple[int, int, int]] = {}
        """(log id, records, payload bytes) of the appends in ``_pending``, counted once acknowledged."""
        self._counts: dict[int, tuple[int, int]] = {}
        """Per log, the records and payload bytes its sequencers here acknowledged since the node started."""
        self._producers: dict[int, OrderedDict[bytes, OrderedDict[int, tuple[int, Future[int]]]]] = {}
        """Per log and producer, the last batches sequenced here: sequence -> (records, outcome)."""
        self._producers_lock = threading.Lock()
        self._wall_offset_ms = int(time.time() * 1000) - int(time.monotonic() * 1000)
        self._members: dict[int, str] = {}
        self._peers: dict[int, _Peer] = {}
        self._peers_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="seaway-zk")
        self._server: grpc.Server | None = None
        self._threads: list[threading.Thread] = []
        self._control: ControlRole | None = None
        self.address = ""
        self.root = ""
        self.instance = ""
        """The node's data directory's own id (see ``_instance``)."""

    # --- start and stop ---------------------------------------------------------------------------

    def start(self) -> ClusterNode:
        cfg = self.config
        self._disk = RocksDisk(Path(cfg.data_dir) / "replica")
        self._replica = Replica(cfg.node_id, self._disk)
        self._zk = ZooKeeperCluster(cfg.cluster, timeout_s=cfg.zk_timeout_s)
        self.root = self._zk.root
        server = grpc.server(ThreadPoolExecutor(SERVICE_THREADS, thread_name_prefix="seaway-cluster-rpc"),
                             options=[*CHANNEL_OPTIONS, ("grpc.so_reuseport", 0)],
                             interceptors=[TokenCheck(cfg.token)])
        pb_grpc.add_SeawayClusterServicer_to_server(_Service(self), server)  # type: ignore[no-untyped-call]
        if cfg.tls_cert is not None and cfg.tls_key is not None:
            credentials = grpc.ssl_server_credentials([(cfg.tls_key.read_bytes(), cfg.tls_cert.read_bytes())])
            port = server.add_secure_port(cfg.listen, credentials)
        else:
            port = server.add_insecure_port(cfg.listen)
        if port == 0:
            raise UnavailableError(f"cannot listen on {cfg.listen}")
        host = cfg.listen.rsplit(":", 1)[0]
        self.address = f"{host}:{port}"
        self._server = server
        self._running = True
        for target, name in ((self._loop, "seaway-node-loop"), (self._ticker, "seaway-node-tick")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        server.start()
        self.instance = self._instance(Path(cfg.data_dir))
        self._zk.stay_registered(cfg.node_id, self.address, self.instance)
        self._zk.watch_members(self._on_members)
        _log.info("node %d of %s serving on %s", cfg.node_id, cfg.cluster, self.address)
        if cfg.control_listen is not None:
            try:
                self._control = ControlRole(self, cfg.control_listen)
            except BaseException:
                self.stop()
                raise
        return self

    @property
    def control_address(self) -> str | None:
        """Where this node serves the Seaway API as the control node (None: it is not one)."""
        return None if self._control is None else self._control.address

    def control(self) -> tuple[int, str] | None:
        """The cluster's control node and its address, as ZooKeeper says (None: none is up)."""
        assert self._zk is not None
        return self._zk.control()

    def channel(self, address: str) -> grpc.Channel:
        """A channel to another node, with the cluster's token and TLS."""
        cfg = self.config
        root = cfg.tls_root_cert or cfg.tls_cert
        return open_channel(address, token=cfg.token, root_cert=root.read_bytes() if root else None,
                            tls=cfg.tls_cert is not None)

    @staticmethod
    def _instance(data_dir: Path) -> str:
        """This data directory's own id, made once (it tells this node's previous process apart from
        another node given the same id)."""
        path = data_dir / "instance"
        if not path.exists():
            tmp = data_dir / "instance.tmp"
            tmp.write_text(uuid.uuid4().hex)
            os.replace(tmp, path)
        return path.read_text().strip()

    def stop(self) -> None:
        if not self._running:
            return
        if self._control is not None:  # first: it appends and reads through this node
            self._control.stop()
            self._control = None
        self._running = False
        if self._zk is not None:
            self._zk.close()
        if self._server is not None:
            self._server.stop(1.0).wait()
        self._inbox.put(("stop",))
        for thread in self._threads:
            thread.join(5.0)
        with self._peers_lock:
            for peer in self._peers.values():
                peer.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        waiting: list[Future[Any]] = [*self._pending.values(), *(f for _, f in self._activations)]
        for future in waiting:
            if not future.done():
                future.set_exception(UnavailableError("the node stopped"))
        if self._disk is not None:
            self._disk.close()

    def __enter__(self) -> ClusterNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _on_members(self, members: dict[int, str]) -> None:
        with self._peers_lock:
            self._members = dict(members)
            for node_id, address in members.items():
                peer = self._peers.get(node_id)
                if node_id != self.config.node_id and (peer is None or peer.address != address):
                    if peer is not None:
                        peer.close()
                    self._peers[node_id] = _Peer(self, node_id, address)

    def members(self) -> dict[int, str]:
        with self._peers_lock:
            return dict(self._members)

    # --- the loop ---------------------------------------------------------------------------------

    def _ticker(self) -> None:
        interval = self.config.tick_ms / 1000
        while self._running:
            time.sleep(interval)
            self._inbox.put(("tick",))

    def _loop(self) -> None:
        while True:
            events = [self._inbox.get()]
            with contextlib.suppress(queue.Empty):
                while len(events) < EVENTS_PER_TURN:
                    events.append(self._inbox.get_nowait())
            writes = 0
            later: list[tuple[Any, list[object]]] = []
            for event in events:
                if event[0] == "stop":
                    return
                try:
                    writes += self._handle(event, later)
                except Exception:  # a bug in a role must not stop the node's loop
                    _log.exception("node %d: event %s failed", self.config.node_id, event[0])
            if writes:
                assert self._replica is not None and self._disk is not None
                answers: list[object] = []
                for _ in range(writes):
                    answers.extend(self._replica.written())
                try:
                    self._disk.flush()
                except SeawayError:
                    _log.exception("node %d: a disk write failed; its answers are not sent", self.config.node_id)
                    continue
                later.append((None, answers))
            for source, effects in later:
                self._effects(source, effects)
            if self._activations:
                self._activations = [(seq, f) for seq, f in self._activations if not self._settled(seq, f)]

    @staticmethod
    def _settled(seq: ClusterSequencer, future: Future[None]) -> bool:
        """Whether a node-set change is done (its sequencer active) or failed; its caller is told."""
        if future.done():
            return True
        if seq.state is ClusterSequencerState.ACTIVE:
            future.set_result(None)
        elif seq.error is not None:
            future.set_exception(seq.error)
        else:
            return False
        return True

    def _handle(self, event: tuple[Any, ...], later: list[tuple[Any, list[object]]]) -> int:
        """One event; the disk writes it queued. Effects other than disk writes go to ``later``."""
        kind = event[0]
        now = int(time.monotonic() * 1000)
        assert self._replica is not None
        if kind == "deliver":
            _, sender, messages = event
            with self._inbox_lock:
                self._inbox_messages -= len(messages)
            writes = 0
            for message in messages:
                if isinstance(message, (Stored, Sealed, Cleaned)):
                    seq = self._sequencers.get(message.log_id)
                    if seq is not None:
                        later.append((seq, seq.handle(sender, message, now)))
                else:
                    effects = self._replica.handle(sender, message)
                    writes += sum(1 for e in effects if isinstance(e, DiskWrite))
                    later.append((None, [e for e in effects if not isinstance(e, DiskWrite)]))
            return writes
        if kind == "request":
            _, log_id, make, future, counts = event
            if len(self._pending) >= PENDING_APPENDS_MAX:
                future.set_exception(UnavailableError("the node has too many appends in progress"))
                return 0
            request_id = self._next_request
            self._next_request += 1
            self._pending[request_id] = future
            self._deadlines.append((now + int(self.config.append_timeout_s * 1000), request_id))
            if counts is not None:
                self._request_counts[request_id] = (log_id, *counts)
            seq = self._sequencer(log_id)
            later.append((seq, seq.handle(0, make(request_id), now)))
            return 0
        if kind == "activate":  # a new sequencer here, with a new node set from its epoch on
            _, log_id, nodes, replication, future = event
            old = self._sequencers.get(log_id)
            if old is not None and old.error is None:
                later.append((old, old.fail(PreemptedError(f"log {log_id}: its node set is being changed"))))
            self._sequencers.pop(log_id, None)
            seq = self._sequencer(log_id)
            later.append((seq, seq.handle(0, Activate(log_id, nodes, replication), now)))
            self._activations.append((seq, future))
            return 0
        if kind == "call":  # a question about the replica's state, asked from another thread
            _, fn, future = event
            try:
                future.set_result(fn())
            except Exception as exc:  # the asker raises it
                future.set_exception(exc)
            return 0
        if kind == "read":
            _, request, future = event
            (reply,) = self._replica.handle(0, request)
            assert isinstance(reply, Send)
            future.set_result(reply.message)
            return 0
        if kind == "record":  # an epoch store's answer, for a sequencer or the replica
            _, target, message = event
            if target is None:
                effects = self._replica.handle(0, message)
                later.append((None, [e for e in effects if not isinstance(e, DiskWrite)]))
                return sum(1 for e in effects if isinstance(e, DiskWrite))
            owner: ClusterSequencer = target
            if self._sequencers.get(owner.log_id) is owner:
                later.append((owner, owner.handle(0, message, now)))
            return 0
        if kind == "record-failed":
            failed: ClusterSequencer = event[1]
            error = event[2]
            if self._sequencers.get(failed.log_id) is failed:
                later.append((failed, failed.fail(error)))
                if isinstance(error, UnknownLogError):  # keep nothing for a log id that is not one
                    del self._sequencers[failed.log_id]
            return 0
        if kind == "record-unreadable":
            self._replica.record_unreadable(event[1])
            return 0
        if kind == "tick":
            while self._deadlines and self._deadlines[0][0] <= now:  # its caller has given up: forget it
                _, request_id = self._deadlines.popleft()
                expired = self._pending.pop(request_id, None)
                self._request_counts.pop(request_id, None)
                if expired is not None and not expired.done():
                    expired.set_exception(TimedOutError("the append was not acknowledged in time; it may still land"))
            for seq in list(self._sequencers.values()):
                later.append((seq, seq.tick(now)))
            return 0
        if kind == "forget-counts":
            self._counts.pop(event[1], None)
            return 0
        if kind == "status":
            _, future = event
            future.set_result([(log_id, seq.state.value, seq.epoch, seq.last_known_good)
                               for log_id, seq in sorted(self._sequencers.items())])
            return 0
        raise AssertionError(f"unknown event {kind}")

    def _sequencer(self, log_id: int) -> ClusterSequencer:
        """The log's sequencer here: a new one if there is none or it ended."""
        seq = self._sequencers.get(log_id)
        if seq is None or seq.error is not None:
            seq = self._sequencers[log_id] = ClusterSequencer(log_id, self.config.node_id, self.config.sequencer)
            seq.stamp_offset_ms = self._wall_offset_ms  # records are stamped with the wall clock
        return seq

    def _effects(self, source: ClusterSequencer | None, effects: list[object]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self.send(effect.to, effect.message)
            elif isinstance(effect, Acked):
                future = self._pending.pop(effect.request_id, None)
                counted = self._request_counts.pop(effect.request_id, None)
                if counted is not None:
                    log_id, records, size = counted
                    old_records, old_size = self._counts.get(log_id, (0, 0))
                    self._counts[log_id] = (old_records + records, old_size + size)
                if future is not None and not future.done():
                    future.set_result(effect.lsn)
            elif isinstance(effect, Refused):
                self._request_counts.pop(effect.request_id, None)
                future = self._pending.pop(effect.request_id, None)
                if future is not None and not future.done():
                    future.set_exception(effect.error)
            elif isinstance(effect, ReadEpochRecord):
                self._pool.submit(self._read_record, source, effect.log_id)
            elif isinstance(effect, SetEpochRecord):
                self._pool.submit(self._set_record, source, effect)
            else:
                raise AssertionError(f"unknown effect {effect!r}")

    def send(self, to: int, message: object) -> None:
        if to == self.config.node_id:
            with self._inbox_lock:  # to itself: never refused, but counted as the loop uncounts it
                self._inbox_messages += 1
            self._inbox.put(("deliver", to, [message]))
            return
        with self._peers_lock:
            peer = self._peers.get(to)
        if peer is not None:
            peer.send(to_msg(message))

    def _read_record(self, target: ClusterSequencer | None, log_id: int) -> None:
        assert self._zk is not None
        try:
            record, version = self._zk.get_record(log_id)
        except SeawayError as exc:
            if target is None:  # the replica asks again at the next release
                _log.warning("node %d: cannot read log %d's epoch record: %s", self.config.node_id, log_id, exc)
                self._inbox.put(("record-unreadable", log_id))
            else:
                self._inbox.put(("record-failed", target, exc))
            return
        self._inbox.put(("record", target, EpochRecordRead(log_id, record, version)))

    def _set_record(self, target: ClusterSequencer | None, effect: SetEpochRecord) -> None:
        assert self._zk is not None and target is not None
        try:
            version = self._zk.set_record(effect.log_id, effect.record, effect.version)
        except SeawayError as exc:  # its outcome unknown: this sequencer gives up, the next reads again
            self._inbox.put(("record-failed", target, exc))
            return
        answer = EpochRecordSet(effect.log_id, version is not None, -1 if version is None else version)
        self._inbox.put(("record", target, answer))

    # --- what the service calls -------------------------------------------------------------------

    def append(self, log_id: int, payload: bytes, timeout_s: float | None = None) -> int:
        if len(payload) > PAYLOAD_MAX:
            raise PayloadTooLargeError(f"a record is at most {PAYLOAD_MAX} bytes, got {len(payload)}")
        future = self._submit(log_id, lambda rid: Append(log_id, rid, payload), (1, len(payload)))
        return self._wait(log_id, future, timeout_s)

    def _submit(self, log_id: int, make: Callable[[int], object], counts: tuple[int, int] | None) -> Future[int]:
        future: Future[int] = Future()
        self._inbox.put(("request", log_id, make, future, counts))
        return future

    def _wait(self, log_id: int, future: Future[int], timeout_s: float | None) -> int:
        try:
            return future.result(timeout_s or self.config.append_timeout_s)
        except TimeoutError:
            raise TimedOutError(f"log {log_id}: the append was not acknowledged in time; it may still land") \
                from None

    def append_batch(self, log_id: int, payloads: tuple[bytes, ...], mark: tuple[bytes, int] | None,
                     if_tail: int | None, timeout_s: float | None = None) -> range:
        """Append a batch at consecutive LSNs of one epoch; their LSNs. With ``mark`` (producer id,
        sequence), a batch this node sequenced (or is sequencing) under the same mark is not
        stored again: its LSNs are answered."""
        if not payloads:
            raise InvalidArgumentError("an append batch needs at least one record")
        if len(payloads) > BATCH_RECORDS_MAX:
            raise PayloadTooLargeError(f"a batch holds at most {BATCH_RECORDS_MAX} records, got {len(payloads)}")
        longest = max(map(len, payloads))
        if longest > PAYLOAD_MAX:
            raise PayloadTooLargeError(f"a record is at most {PAYLOAD_MAX} bytes, got {longest}")
        size = sum(map(len, payloads))
        if size > BATCH_BYTES_MAX:
            raise PayloadTooLargeError(f"a batch holds at most {BATCH_BYTES_MAX} payload bytes, got {size}")
        count = len(payloads)

        def make(rid: int) -> AppendBatch:
            return AppendBatch(log_id, rid, payloads, if_tail=if_tail)

        if mark is None:
            last = self._wait(log_id, self._submit(log_id, make, (count, size)), timeout_s)
            return range(last - count + 1, last + 1)
        producer, sequence = mark
        with self._producers_lock:
            producers = self._producers.setdefault(log_id, OrderedDict())
            window = producers.get(producer)
            if window is None:
                window = producers[producer] = OrderedDict()
                if len(producers) > PRODUCERS_MAX:
                    producers.popitem(last=False)
            producers.move_to_end(producer)
            seen = window.get(sequence)
            if seen is not None and seen[0] != count:
                raise InvalidArgumentError(f"producer {producer.hex()} sequence {sequence} named a batch of "
                                           f"{seen[0]} records, not {count}: a retry is the same batch again")
            if seen is None or (seen[1].done() and seen[1].exception() is not None):
                seen = window[sequence] = (count, self._submit(log_id, make, (count, size)))  # new, or its retry
                window.move_to_end(sequence)
                while len(window) > PRODUCER_WINDOW:
                    window.popitem(last=False)
            future = seen[1]
        last = self._wait(log_id, future, timeout_s)
        return range(last - count + 1, last + 1)

    def finish(self, log_id: int, delete: bool) -> int:
        """Seal the log for good (or delete it) once the appends before are decided; its final LSN."""
        record, _ = self.epoch_record(log_id)
        if record.deleted:
            raise LogDeletedError(f"log {log_id} was deleted")
        if record.final is not None and not delete:
            return record.final
        if record.final is not None:  # a sealed log: no sequencer takes an epoch, the record is changed here
            final = self._mark_record_deleted(log_id)
        else:
            final = self._wait(log_id, self._submit(log_id, lambda rid: Finish(log_id, rid, delete), None), None)
        if delete:
            assert self._zk is not None
            self._zk.mark_deleted(log_id)
            self._zk.raise_trim_point(log_id, DELETED_TRIM)
            for node in sorted({n for entry in record.history for n in entry.nodes}):
                self.send(node, Trim(log_id, DELETED_TRIM))  # each node drops the log's copies
            with self._producers_lock:
                self._producers.pop(log_id, None)
            self._inbox.put(("forget-counts", log_id))  # the loop owns the counts
        return final

    def _mark_record_deleted(self, log_id: int) -> int:
        """Mark a sealed log's epoch record deleted (by compare-and-set); its final LSN."""
        for _ in range(32):
            record, version = self.epoch_record(log_id)
            if record.deleted:
                raise LogDeletedError(f"log {log_id} was deleted")
            assert record.final is not None
            if self.zk.set_record(log_id, dataclasses.replace(record, deleted=True), version) is not None:
                return record.final
        raise UnavailableError(f"log {log_id}: its epoch record is contended")

    def tail(self, log_id: int) -> int:
        """The log's tail as its sequencer (here) knows it; the final LSN of a sealed log."""
        return self._wait(log_id, self._submit(log_id, lambda rid: TailQuery(log_id, rid), None), None)

    def append_counts(self, log_ids: list[int]) -> list[tuple[int, int]]:
        return [self._counts.get(log_id, (0, 0)) for log_id in log_ids]

    def create_named_log(self, name: str, log_id: int | None, group: str | None,
                         attributes: dict[str, Any]) -> int:
        assert self._zk is not None
        record = EpochRecord(history=(NodeSet(1, tuple(sorted(self.members())), self._zk.default_replication()),))
        return self._zk.create_named_log(name, log_id, group, attributes, record)

    @property
    def zk(self) -> ZooKeeperCluster:
        assert self._zk is not None
        return self._zk

    def reconfigure(self, log_id: int, replication: int, nodes: tuple[int, ...]) -> None:
        """Give the log a new node set (and R) from a new epoch on, with this node its sequencer."""
        record, _ = self.epoch_record(log_id)
        NodeSet(record.epoch + 1, tuple(sorted(nodes)), replication or record.history[-1].replication)  # checks
        future: Future[None] = Future()
        self._inbox.put(("activate", log_id, tuple(sorted(nodes)), replication or None, future))
        try:
            future.result(10.0)  # until its sequencer is active: the new node set is in the epoch record
        except TimeoutError:
            raise TimedOutError(f"log {log_id}: the new node set's sequencer did not recover in time; the change "
                                f"may still land") from None

    def read(self, request: ReadFrom) -> ReadReply:
        future: Future[ReadReply] = Future()
        self._inbox.put(("read", request, future))
        return future.result(10.0)

    def status(self) -> list[tuple[int, str, int, int]]:
        future: Future[list[tuple[int, str, int, int]]] = Future()
        self._inbox.put(("status", future))
        return future.result(10.0)

    def create_log(self, log_id: int, replication: int, nodes: tuple[int, ...]) -> tuple[EpochRecord, int]:
        assert self._zk is not None
        if replication == 0:
            replication = self._zk.default_replication()
        if not 1 <= replication <= REPLICATION_MAX:
            raise InvalidArgumentError(f"replication must be in [1, {REPLICATION_MAX}], got {replication}")
        chosen = tuple(sorted(nodes)) if nodes else tuple(sorted(self.members()))
        record = EpochRecord(history=(NodeSet(1, chosen, replication),))
        return record, self._zk.create_log(log_id, record)

    def cluster_logs(self) -> tuple[list[int], int]:
        assert self._zk is not None
        return self._zk.logs(), self._zk.default_replication()

    def epoch_record(self, log_id: int) -> tuple[EpochRecord, int]:
        assert self._zk is not None
        return self._zk.get_record(log_id)

    def trim_point(self, log_id: int) -> int:
        assert self._zk is not None
        return self._zk.trim_point(log_id)

    def trim(self, log_id: int, lsn: int) -> None:
        """Trim the log up to ``lsn``: first in ZooKeeper (every reader starts past it from then on),
        then on each node, which drops its copies up to it."""
        assert self._zk is not None and self._replica is not None
        record, _ = self.epoch_record(log_id)
        if lsn >> 32 > record.epoch:
            raise TrimPastTailError(f"log {log_id}: LSN {lsn:#x} is past its current epoch {record.epoch}")
        # Past the released tail, the trim would drop records acknowledged after it. This node's
        # release point is the tail as far as it knows (a node of the log's node set hears each one).
        # On the loop: the replica and its disk are the loop's alone (rocksdict refuses a call made
        # while another thread's call on the same database is in progress).
        replica = self._replica
        asked: Future[int] = Future()
        self._inbox.put(("call", lambda: replica.released(log_id), asked))
        released = asked.result(10.0)
        if lsn > released:
            raise TrimPastTailError(f"log {log_id}: LSN {lsn:#x} is past its tail {released:#x} as node "
                                    f"{self.config.node_id} knows it (ask a node of the log's node set)")
        lsn = self._zk.raise_trim_point(log_id, lsn)
        for node in sorted({n for entry in record.history for n in entry.nodes}):
            self.send(node, Trim(log_id, lsn))

    def deliver(self, sender: int, messages: list[object]) -> None:
        """Messages from a peer, for the loop; refused (OVERLOADED: the sender loses them, and its
        timers send again) while the loop has ``INBOX_MESSAGES_MAX`` of them waiting."""
        with self._inbox_lock:
            if self._inbox_messages + len(messages) > INBOX_MESSAGES_MAX:
                raise OverloadedError(f"node {self.config.node_id} has {self._inbox_messages} messages waiting")
            self._inbox_messages += len(messages)
        self._inbox.put(("deliver", sender, messages))


class _Service(pb_grpc.SeawayClusterServicer):
    def __init__(self, node: ClusterNode) -> None:
        self._node = node
        self._appends = threading.BoundedSemaphore(APPENDS_AT_ONCE)

    def _call(self, context: grpc.ServicerContext, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except SeawayError as exc:
            context.set_trailing_metadata(error_metadata(exc))
            context.abort(status_of(exc), str(exc))
        except ValueError as exc:  # a field out of range
            error = InvalidArgumentError(str(exc))
            context.set_trailing_metadata(error_metadata(error))
            context.abort(status_of(error), str(error))

    def Deliver(self, request: pb.Envelope, context: grpc.ServicerContext) -> pb.Ack:
        def deliver() -> pb.Ack:
            if request.cluster != self._node.root:
                raise InvalidArgumentError(f"a message for cluster {request.cluster!r:.100}, not this one")
            if len(request.messages) > BATCH_MAX:
                raise InvalidArgumentError(f"a batch of at most {BATCH_MAX} messages")
            self._node.deliver(request.sender, [from_msg(m) for m in request.messages])
            return pb.Ack()
        return self._call(context, deliver)  # type: ignore[no-any-return]

    def Append(self, request: pb.AppendRequest, context: grpc.ServicerContext) -> pb.AppendReply:
        remaining = context.time_remaining()
        timeout = None if remaining is None else max(0.01, remaining - 0.05)
        if not self._appends.acquire(blocking=False):
            return self._call(context, self._busy)  # type: ignore[no-any-return]
        try:
            return pb.AppendReply(lsn=self._call(context, self._node.append, request.log_id, request.payload,
                                                 timeout))
        finally:
            self._appends.release()

    @staticmethod
    def _busy() -> pb.AppendReply:
        raise UnavailableError(f"the node serves {APPENDS_AT_ONCE} appends at once; try again")

    def Read(self, request: pb.ReadFrom, context: grpc.ServicerContext) -> pb.ReadReply:
        reply = self._call(context, self._node.read, ReadFrom(request.log_id, request.lsn, request.max_copies or 256))
        return read_reply_to_msg(reply)

    def CreateLog(self, request: pb.CreateLogRequest, context: grpc.ServicerContext) -> pb.EpochRecordReply:
        record, version = self._call(context, self._node.create_log, request.log_id, request.replication,
                                     tuple(request.nodes))
        return pb.EpochRecordReply(record=record.encode(), version=version)

    def GetEpochRecord(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.EpochRecordReply:
        record, version = self._call(context, self._node.epoch_record, request.log_id)
        trim = self._call(context, self._node.trim_point, request.log_id)
        return pb.EpochRecordReply(record=record.encode(), version=version, trim_point=trim)

    def Trim(self, request: pb.TrimRequest, context: grpc.ServicerContext) -> pb.Ack:
        self._call(context, self._node.trim, request.log_id, request.lsn)
        return pb.Ack()

    def Reconfigure(self, request: pb.CreateLogRequest, context: grpc.ServicerContext) -> pb.Ack:
        self._call(context, self._node.reconfigure, request.log_id, request.replication, tuple(request.nodes))
        return pb.Ack()

    def GetControl(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.ControlReply:
        found = self._call(context, self._node.control)
        return pb.ControlReply() if found is None else pb.ControlReply(node=found[0], address=found[1])

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusReply:
        reply = pb.StatusReply(node=self._node.config.node_id, address=self._node.address)
        for node_id, address in sorted(self._node.members().items()):
            reply.members.add(node=node_id, address=address)
        if request.members_only:
            return reply
        sequencers = self._call(context, self._node.status)
        for log_id, state, epoch, lng in sequencers:
            reply.sequencers.add(log_id=log_id, state=state, epoch=epoch, last_known_good=lng)
        logs, replication = self._call(context, self._node.cluster_logs)
        reply.logs.extend(logs)
        reply.default_replication = replication
        return reply

    # --- the logs API (seaway.cluster.ClusterLogs) ------------------------------------------------

    def AppendBatch(self, request: pb.AppendBatchRequest, context: grpc.ServicerContext) -> pb.AppendBatchReply:
        remaining = context.time_remaining()
        timeout = None if remaining is None else max(0.01, remaining - 0.05)
        if not self._appends.acquire(blocking=False):
            return self._call(context, self._busy)  # type: ignore[no-any-return]
        try:
            lsns: range = self._call(context, self._append_batch, request, timeout)
            return pb.AppendBatchReply(first_lsn=lsns.start, count=len(lsns))
        finally:
            self._appends.release()

    def _append_batch(self, request: pb.AppendBatchRequest, timeout: float | None) -> range:
        mark = None
        if request.producer_id:
            if len(request.producer_id) > PRODUCER_ID_BYTES_MAX or request.sequence >= 2**63:
                raise InvalidArgumentError(f"a producer id is 1-{PRODUCER_ID_BYTES_MAX} bytes and a sequence "
                                           f"below 2**63")
            mark = (bytes(request.producer_id), request.sequence)
        _check_log_id(request.log_id)
        return self._node.append_batch(request.log_id, tuple(request.payloads), mark,
                                       request.if_tail if request.has_if_tail else None, timeout)

    def CreateNamedLog(self, request: pb.LogConfig, context: grpc.ServicerContext) -> pb.LogConfig:
        def create() -> pb.LogConfig:
            name = check_name(request.name, "log")
            group = check_name(request.group, "log group") if request.group else None
            attributes = _attributes(request.attributes)
            log_id = self._node.create_named_log(name, request.log_id or None, group, attributes)
            return pb.LogConfig(name=name, log_id=log_id, group=request.group, attributes=request.attributes)
        return self._call(context, create)  # type: ignore[no-any-return]

    def CreateGroup(self, request: pb.GroupConfig, context: grpc.ServicerContext) -> pb.GroupConfig:
        def create() -> pb.GroupConfig:
            name = check_name(request.name, "log group")
            if not 1 <= request.first_id <= request.last_id <= LOG_ID_MAX:
                raise InvalidArgumentError(f"a group's ids must satisfy 1 <= first <= last <= 2**62, got "
                                           f"[{request.first_id}, {request.last_id}]")
            self._node.zk.create_group(name, request.first_id, request.last_id, _attributes(request.attributes))
            return request
        return self._call(context, create)  # type: ignore[no-any-return]

    def GetLog(self, request: pb.LogLookup, context: grpc.ServicerContext) -> pb.LogConfig:
        def get() -> pb.LogConfig:
            if request.name:
                meta = self._node.zk.get_log(request.name)
            else:
                if not 1 <= request.log_id <= LOG_ID_MAX:
                    raise UnknownLogError(f"no log {request.log_id}")
                meta = self._node.zk.get_log(request.log_id)
            return _log_config(meta)
        return self._call(context, get)  # type: ignore[no-any-return]

    def ListLogs(self, request: pb.ListLogsRequest, context: grpc.ServicerContext) -> pb.LogConfigs:
        def page() -> pb.LogConfigs:
            limit = min(max(request.limit, 1), LIST_PAGE_MAX)
            return pb.LogConfigs(logs=[_log_config(m) for m in self._node.zk.list_logs(request.after_id, limit)])
        return self._call(context, page)  # type: ignore[no-any-return]

    def ListGroups(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.GroupConfigs:
        def groups() -> pb.GroupConfigs:
            return pb.GroupConfigs(groups=[pb.GroupConfig(name=g["name"], first_id=int(g["first_id"]),
                                                          last_id=int(g["last_id"]),
                                                          attributes=json.dumps(g["attributes"]))
                                           for g in self._node.zk.groups()])
        return self._call(context, groups)  # type: ignore[no-any-return]

    def SealLog(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.LsnReply:
        return pb.LsnReply(lsn=self._call(context, self._finish, request.log_id, False))

    def DeleteLog(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.Ack:
        self._call(context, self._finish, request.log_id, True)
        return pb.Ack()

    def _finish(self, log_id: int, delete: bool) -> int:
        _check_log_id(log_id)
        return self._node.finish(log_id, delete)

    def GetBounds(self, request: pb.LogRef, context: grpc.ServicerContext) -> pb.Bounds:
        def bounds() -> pb.Bounds:
            _check_log_id(request.log_id)
            record, _ = self._node.epoch_record(request.log_id)
            if record.deleted:
                raise LogDeletedError(f"log {request.log_id} was deleted")
            trim = self._node.trim_point(request.log_id)
            if record.final is not None:
                return pb.Bounds(log_id=request.log_id, tail_lsn=record.final, sealed=True,
                                 final_lsn=record.final, trim_point=trim)
            tail = self._node.tail(request.log_id)
            record, _ = self._node.epoch_record(request.log_id)  # sealed meanwhile: the tail is its final LSN
            if record.final is not None:
                return pb.Bounds(log_id=request.log_id, tail_lsn=record.final, sealed=True,
                                 final_lsn=record.final, trim_point=trim)
            return pb.Bounds(log_id=request.log_id, tail_lsn=tail, trim_point=trim)
        return self._call(context, bounds)  # type: ignore[no-any-return]

    def AppendCounts(self, request: pb.LogIds, context: grpc.ServicerContext) -> pb.AppendCountsReply:
        def counts() -> pb.AppendCountsReply:
            if len(request.log_ids) > LOG_IDS_MAX:
                raise InvalidArgumentError(f"at most {LOG_IDS_MAX} log ids a call, got {len(request.log_ids)}")
            found = self._node.append_counts(list(request.log_ids))
            return pb.AppendCountsReply(records=[r for r, _ in found], payload_bytes=[b for _, b in found])
        return self._call(context, counts)  # type: ignore[no-any-return]


LIST_PAGE_MAX = 1_000
LOG_IDS_MAX = 20_000
ATTRIBUTES_BYTES_MAX = 4096


def _check_log_id(log_id: int) -> None:
    if not 1 <= log_id <= LOG_ID_MAX:
        raise UnknownLogError(f"no log {log_id}")


def _attributes(raw: str) -> dict[str, Any]:
    """A log's or group's own attributes, as JSON, checked."""
    if len(raw) > ATTRIBUTES_BYTES_MAX:
        raise InvalidArgumentError(f"attributes are at most {ATTRIBUTES_BYTES_MAX} bytes of JSON")
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise InvalidArgumentError(f"attributes are a JSON object: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidArgumentError("attributes are a JSON object")
    try:
        attributes = LogAttributes().with_overrides(
            {k: (Durability(v) if k == "durability" else v) for k, v in doc.items()})
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"bad attributes: {exc}") from None
    if attributes.payload_bytes_max > PAYLOAD_MAX:
        raise InvalidArgumentError(f"a cluster stores records of at most {PAYLOAD_MAX} bytes: payload_bytes_max "
                                   f"{attributes.payload_bytes_max} is more")
    return doc


def _log_config(meta: dict[str, Any]) -> pb.LogConfig:
    return pb.LogConfig(name=str(meta["name"]), log_id=int(meta["log_id"]), group=meta.get("group") or "",
                        attributes=json.dumps(meta.get("attributes") or {}))
