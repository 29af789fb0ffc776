"""A client of a replicated cluster: ``ClusterClient("seaway://h1:p1,h2:p2")``.

It learns the live nodes from any node it can reach (their ZooKeeper membership), appends through
each log's sequencer node (rendezvous hashing over the live nodes, the same order on every client)
and reads by merging what every node of the log's node set holds (:class:`MergeReader`). When the
sequencer's node cannot be reached it moves on to the next node of the log's order at once, which
takes a new epoch and recovers: an append stalls for the recovery, not for ZooKeeper's session
timeout.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc

from seaway.cluster._channels import open_channel
from seaway.cluster._codec import read_reply_from_msg
from seaway.errors import InvalidArgumentError, SeawayError, TimedOutError, TrimPastTailError, UnavailableError
from seaway.log import LSN_MAX, ReadItem
from seaway.log.replication import EpochRecord, MergeReader
from seaway.wire import CODE_KEY, error_from_status
from seaway.wire import cluster_pb2 as pb
from seaway.wire import cluster_pb2_grpc as pb_grpc

MEMBERS_REFRESH_S = 1.0
"""How old a client's list of live nodes may be before a call that picks a node reads it again."""


def parse_seeds(url: str) -> list[str]:
    """``seaway://host:port,host:port`` (``seaways://`` for TLS) as its addresses."""
    if not isinstance(url, str) or not url.startswith(("seaway://", "seaways://")):
        raise InvalidArgumentError(f"a cluster address is seaway://HOST:PORT[,HOST:PORT...], got {url!r:.200}")
    seeds = [s.strip() for s in url.split("://", 1)[1].split(",") if s.strip()]
    if not seeds or any(":" not in s for s in seeds):
        raise InvalidArgumentError(f"a cluster address is seaway://HOST:PORT[,HOST:PORT...], got {url!r:.200}")
    return seeds


def placement(log_id: int, nodes: list[int]) -> list[int]:
    """The log's nodes in sequencer order (rendezvous hashing: each client computes the same)."""
    def weight(node: int) -> bytes:
        return hashlib.blake2b(f"{log_id}:{node}".encode(), digest_size=8).digest()
    return sorted(nodes, key=weight, reverse=True)


def _error(exc: grpc.RpcError) -> SeawayError:
    return error_from_status(exc.code(), exc.details(), exc.trailing_metadata())


def _from_node(exc: grpc.RpcError) -> bool:
    """Whether a failed call is the node's own answer (with a Seaway code), not a transport failure."""
    return any(key == CODE_KEY for key, _ in exc.trailing_metadata() or ())


class ClusterClient:
    def __init__(self, url: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
                 timeout_s: float = 30.0, attempt_timeout_s: float = 2.0) -> None:
        """``url``: ``seaway://`` or, for nodes that speak TLS, ``seaways://`` (trusting
        ``tls_root_cert``, or the system's roots); ``token``: the cluster's, if it has one."""
        self._seeds = parse_seeds(url)
        self._token = token
        self._tls = url.startswith("seaways://")
        self._root_cert = tls_root_cert
        self.timeout_s = timeout_s
        self.attempt_timeout_s = attempt_timeout_s
        """How long one node may take to acknowledge an append before the client moves the sequencer
        to the next node (a node that is paused or cut off answers nothing at all)."""
        self._channels: dict[str, tuple[grpc.Channel, pb_grpc.SeawayClusterStub]] = {}
        self._lock = threading.Lock()
        self._members: dict[int, str] = {}
        self._members_at = 0.0
        self._good: str | None = None
        self.refresh_members()

    def _stub(self, address: str) -> pb_grpc.SeawayClusterStub:
        with self._lock:
            entry = self._channels.get(address)
            if entry is None:
                channel = open_channel(address, token=self._token, root_cert=self._root_cert, tls=self._tls)
                entry = self._channels[address] = (channel, pb_grpc.SeawayClusterStub(channel))  # type: ignore[no-untyped-call]
            return entry[1]

    def _addresses(self) -> list[str]:
        """Where to send a call any node answers: the node that answered last first."""
        return list(dict.fromkeys([*([self._good] if self._good else []), *self._members.values(), *self._seeds]))

    def call_any(self, method: str, request: Any, timeout_s: float = 2.0) -> Any:
        """Call ``method`` on the first node that answers (a call any node serves)."""
        return self._any(method, request, timeout_s)

    def stub(self, node: int) -> pb_grpc.SeawayClusterStub | None:
        """A stub for a live member (None if ``node`` is not one)."""
        address = self._members.get(node)
        return None if address is None else self._stub(address)

    def _any(self, method: str, request: Any, timeout_s: float = 2.0) -> Any:
        """Call ``method`` on the first node that answers; a node's own error is raised."""
        last: SeawayError = UnavailableError("no node of the cluster answered")
        for address in self._addresses():
            try:
                reply = getattr(self._stub(address), method)(request, timeout=timeout_s)
                self._good = address
                return reply
            except grpc.RpcError as exc:
                error = _error(exc)
                if _from_node(exc) and not isinstance(error, UnavailableError):
                    raise error from None
                last = error  # that node is down, cut off or stalled: the next one
        raise last

    def refresh_members(self) -> dict[int, str]:
        reply = self._any("Status", pb.StatusRequest(members_only=True))
        self._members = {m.node: m.address for m in reply.members}
        self._members_at = time.monotonic()
        return dict(self._members)

    def _recent_members(self) -> dict[int, str]:
        """The members, read again if the last reading is older than ``MEMBERS_REFRESH_S``: every
        client of a log must agree on its sequencer's node, so a node that joined (or came back)
        must not stay unknown to a client that never met a failure (it would keep another node as
        the sequencer, and each would take the log's sequencer from the other, epoch after epoch)."""
        if time.monotonic() - self._members_at >= MEMBERS_REFRESH_S:
            with contextlib.suppress(SeawayError):
                self.refresh_members()
        return self._members

    @property
    def members(self) -> dict[int, str]:
        return dict(self._members)

    def status(self) -> list[pb.StatusReply]:
        """Every live node's own account (nodes that do not answer are left out)."""
        out = []
        for node_id, address in sorted(self.refresh_members().items()):
            with contextlib.suppress(grpc.RpcError):
                out.append(self._stub(address).Status(pb.StatusRequest(), timeout=5.0))
            del node_id
        return out

    def create_log(self, log_id: int, replication: int = 0, nodes: tuple[int, ...] = ()) -> EpochRecord:
        """Create a log stored on ``nodes`` (default: every live node) with ``replication`` copies
        of each record (0: the cluster's default)."""
        reply = self._any("CreateLog", pb.CreateLogRequest(log_id=log_id, replication=replication, nodes=nodes))
        return EpochRecord.decode(reply.record)

    def reconfigure(self, log_id: int, nodes: tuple[int, ...], replication: int = 0) -> None:
        """Store the log on ``nodes`` with ``replication`` copies (0: as now) from its next epoch on.
        Records written before stay where they are; readers cross the change."""
        live = sorted(self.refresh_members())
        target = placement(log_id, live)[0]
        request = pb.CreateLogRequest(log_id=log_id, replication=replication, nodes=nodes)
        try:
            self._stub(self._members[target]).Reconfigure(request, timeout=15.0)  # the node waits up to 10 s
        except grpc.RpcError as exc:
            raise _error(exc) from None

    def epoch_record(self, log_id: int) -> EpochRecord:
        return self._record_and_trim(log_id)[0]

    def trim_point(self, log_id: int) -> int:
        return self._record_and_trim(log_id)[1]

    def _record_and_trim(self, log_id: int) -> tuple[EpochRecord, int]:
        reply = self._any("GetEpochRecord", pb.LogRef(log_id=log_id))
        return EpochRecord.decode(reply.record), int(reply.trim_point)

    def trim(self, log_id: int, lsn: int) -> None:
        """Trim the log up to ``lsn``, which must not be past its tail (:class:`TrimPastTailError`).
        A node of the log's current node set takes it (it knows the tail)."""
        record = self.epoch_record(log_id)
        request = pb.TrimRequest(log_id=log_id, lsn=lsn)
        last: SeawayError = UnavailableError(f"log {log_id}: no node of its node set answered")
        for node in record.history[-1].nodes:
            address = self._recent_members().get(node)
            if address is None:
                continue
            try:
                self._stub(address).Trim(request, timeout=5.0)
                return
            except grpc.RpcError as exc:
                error = _error(exc)
                if _from_node(exc) and not error.retriable and not isinstance(error, TrimPastTailError):
                    raise error from None
                if not isinstance(last, TrimPastTailError):  # a node that lags: another may know the tail
                    last = error
        raise last

    def append(self, log_id: int, payload: bytes) -> int:
        """Append one record; its LSN once it is on R nodes. After a failure whose outcome is
        unknown (a node died with the append in flight) it is sent again, so a record may be stored
        twice, as with any retried append without an idempotence key."""
        reply = self.sequencer_call(log_id, "Append", pb.AppendRequest(log_id=log_id, payload=payload))
        return int(reply.lsn)

    def sequencer_call(self, log_id: int, method: str, request: Any, attempt_timeout_s: float | None = None) -> Any:
        """Call ``method`` on the log's sequencer node: the first live node of the log's order that
        answers (one that cannot be reached, or does not answer within ``attempt_timeout_s``, the
        client's by default, is skipped, and the next takes over); a node that is busy or was
        preempted is asked again. A node's own error that is not retriable is raised."""
        attempt_s = self.attempt_timeout_s if attempt_timeout_s is None else attempt_timeout_s
        deadline = time.monotonic() + self.timeout_s
        unreachable: set[int] = set()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimedOutError(f"log {log_id}: no sequencer answered in {self.timeout_s} s")
            live = [n for n in self._recent_members() if n not in unreachable]
            if not live:
                unreachable.clear()
                with contextlib.suppress(SeawayError):
                    self.refresh_members()
                time.sleep(0.05)
                continue
            target = placement(log_id, live)[0]
            try:
                return getattr(self._stub(self._members[target]), method)(
                    request, timeout=min(remaining, attempt_s))
            except grpc.RpcError as exc:
                error = _error(exc)
                if not _from_node(exc):
                    unreachable.add(target)  # down, cut off or stalled: the next node of the order takes over
                    continue
                if not error.retriable:
                    raise error from None
                time.sleep(0.01)  # preempted or busy: the same node starts a new sequencer

    def read(self, log_id: int, start: int = 1, until: int = LSN_MAX, *, idle_s: float | None = None,
             poll_s: float = 0.02) -> Iterator[ReadItem]:
        """The log's records and gaps from ``start`` to ``until``; with ``until`` at LSN_MAX it
        follows the tail, ending after ``idle_s`` without anything new (None: never)."""
        record, trim = self._record_and_trim(log_id)
        reader = MergeReader(log_id, record, start, until, trim_point=trim)
        replies: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        in_flight = 0
        last_progress = time.monotonic()
        while not reader.done:
            for node, request in reader.requests():
                address = self._recent_members().get(node)
                if address is None:  # not a live member: asked again at the next turn
                    reader.lost(node)
                    continue
                msg = pb.ReadFrom(log_id=log_id, lsn=request.lsn, max_copies=request.max_copies)
                call = self._stub(address).Read.future(msg, timeout=5.0)
                call.add_done_callback(lambda done, node=node: replies.put((node, done)))
                in_flight += 1
            answered: list[tuple[int, Any]] = []
            with contextlib.suppress(queue.Empty):
                answered.append(replies.get(timeout=poll_s))
                while True:
                    answered.append(replies.get_nowait())
            idle = bool(answered)  # every node answered nothing new (or did not answer)
            for node, done in answered:
                in_flight -= 1
                try:
                    reply = read_reply_from_msg(done.result())
                except grpc.RpcError:
                    reader.lost(node)
                    continue
                idle = idle and not reply.copies
                reader.on_reply(reply)
            if idle:  # asked again after poll_s, not at once (a tailing reader would ask as fast as nodes answer)
                time.sleep(poll_s)
            items = reader.take(int(time.monotonic() * 1000))
            if items:
                last_progress = time.monotonic()
                yield from items
            elif idle_s is not None and time.monotonic() - last_progress > idle_s:
                return
            if reader.needs_record:
                reader.update_record(self.epoch_record(log_id))
                with contextlib.suppress(SeawayError):
                    self.refresh_members()

    def close(self) -> None:
        with self._lock:
            for channel, _ in self._channels.values():
                channel.close()
            self._channels.clear()

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
