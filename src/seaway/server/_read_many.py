"""``ReadMany``: records and gaps of any number of logs over one stream, within what the client grants.

One thread serves a stream however many logs it reads: it reads through one embedded reader, which
waits for new records of all of them at once, without polling, and serves them in turn. Another
thread takes the client's control messages off the stream and hands them over; only the serving
thread touches the reader, so a start or a stop never races with the items being sent.

What the server holds for a stream is bounded in bytes and items, whatever the number of logs: the
reader's read-ahead (``buffer_bytes_max``, ``message_items_max``) and the reply being sent
(``message_bytes_max``), each plus at most one record larger than the bound.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from seaway.errors import (
    InvalidArgumentError,
    LsnOutOfRangeError,
    OverloadedError,
    PermissionDeniedError,
    SeawayError,
)
from seaway.log import LSN_MAX, LSN_OLDEST, Gap, LogsApi, RecordRun, RunItem, lsn_str, payload_bytes, weight
from seaway.txn import WAL_LOG
from seaway.wire import add_items, error_to_msg, seaway_pb2

PRIVATE_LOGS = frozenset({WAL_LOG})
"""Logs clients may not read: the transaction manager's write-ahead log holds the metadata writes of
commits being decided, which may yet fail (clients ask through the Txn* calls)."""

pb = seaway_pb2

GRANT_MAX = 2**63
"""What is left of the grants is capped here: a client may grant more than it could ever hold."""


@dataclass(frozen=True)
class ReadStreamBounds:
    message_items_max: int = 2000
    message_bytes_max: int = 1 << 20
    buffer_bytes_max: int = 1 << 20
    logs_max: int = 100_000
    controls_max: int = 4096
    """Control messages waiting for the serving thread; the control thread waits beyond this
    (and HTTP/2 flow control then holds the client's)."""


@dataclass(slots=True)
class _Read:
    tag: int
    lsn_until: int


def _last_lsn(item: RunItem) -> int:
    return item.lsn_hi if type(item) is Gap else item.last_lsn  # type: ignore[union-attr]


class ReadSession:
    """The state of one ``ReadMany`` stream. :meth:`control` is called from the thread that takes
    the client's messages, :meth:`replies` is iterated by the thread that sends replies, and
    :meth:`close` from anywhere (it ends :meth:`replies`)."""

    def __init__(self, logs: LogsApi, bounds: ReadStreamBounds,
                 on_records: Callable[[int], None] = lambda n: None) -> None:
        self._logs = logs
        self._bounds = bounds
        self._on_records = on_records
        self._reader = logs.reader(buffered_items_max=bounds.message_items_max, runs=True,
                                   buffered_bytes_max=bounds.buffer_bytes_max)
        self._cv = threading.Condition()
        self._controls: deque[pb.ReadControl] = deque()
        self._closing = False
        self.error: SeawayError | None = None
        """Why the session was closed, if not by the client."""
        # The serving thread's own: what is read, and what is left of the grants.
        self._reads: dict[int, _Read] = {}
        self._items_left = 0
        self._bytes_left = 0

    # --- any thread -----------------------------------------------------------------------------

    def control(self, msg: pb.ReadControls) -> bool:
        """Hand the client's controls to the serving thread (waiting while ``controls_max`` wait,
        unless none does). False once the session is closing."""
        with self._cv:
            while self._controls and len(self._controls) + len(msg.controls) > self._bounds.controls_max \
                    and not self._closing:
                self._cv.wait()
            if self._closing:
                return False
            self._controls.extend(msg.controls)
            self._cv.notify_all()
        self._reader.wake()  # a read waiting for records looks at the controls now
        return True

    def close(self, error: SeawayError | None = None) -> None:
        """End the stream: :meth:`replies` returns. With ``error``, the stream is to fail with it."""
        with self._cv:
            if not self._closing:
                self._closing = True
                self.error = error
            self._cv.notify_all()
        self._reader.wake()

    # --- the serving thread ---------------------------------------------------------------------

    def replies(self) -> Iterator[pb.ReadReply]:
        """The replies to send, until :meth:`close`. Raises :class:`InvalidArgumentError` for a
        malformed control message (the client's fault: the stream fails)."""
        try:
            while True:
                with self._cv:
                    while not (self._closing or self._controls or self._can_read()):
                        self._cv.wait()
                    if self._closing:
                        return
                    controls = list(self._controls)
                    self._controls.clear()
                    self._cv.notify_all()
                reply = pb.ReadReply()
                for msg in controls:
                    self._apply(msg, reply)
                if not reply.logs and self._can_read():
                    # Waits for records of any log read here; a control message or close() wakes it.
                    items = self._reader.read(min(self._items_left, self._bounds.message_items_max),
                                              bytes_max=min(self._bytes_left, self._bounds.message_bytes_max))
                    self._pack(items, reply)  # type: ignore[arg-type]
                if reply.logs:
                    yield reply
        finally:
            self._reader.close()

    def _can_read(self) -> bool:
        return self._items_left > 0 and self._bytes_left > 0 and bool(self._reads)

    def _apply(self, msg: pb.ReadControl, reply: pb.ReadReply) -> None:
        which = msg.WhichOneof("control")
        if which == "grant":
            self._items_left = min(GRANT_MAX, self._items_left + msg.grant.items)
            self._bytes_left = min(GRANT_MAX, self._bytes_left + msg.grant.bytes)
        elif which == "start":
            try:
                self._start(msg.start)
            except SeawayError as exc:  # this read fails, the stream goes on
                part = reply.logs.add(log_id=msg.start.log_id, tag=msg.start.tag)
                part.error.CopyFrom(error_to_msg(exc))
        elif which == "stop":
            if self._reads.pop(msg.stop.log_id, None) is not None:
                self._reader.stop_reading(msg.stop.log_id)
        else:
            raise InvalidArgumentError("a read control message carries no start, stop or grant")

    def _start(self, start: pb.ReadStart) -> None:
        log = self._logs.get(start.log_id)
        if log.name in PRIVATE_LOGS:
            raise PermissionDeniedError(f"log {log.name!r} is the store's own and private: clients do not read it")
        lsn_from = start.lsn_from or LSN_OLDEST
        lsn_until = start.lsn_until or LSN_MAX
        if lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_str(lsn_from)} until {lsn_str(lsn_until)}")
        if log.id not in self._reads and len(self._reads) >= self._bounds.logs_max:
            raise OverloadedError(f"a read stream reads at most {self._bounds.logs_max} logs at once")
        self._reader.start_reading(log, lsn_from, lsn_until)
        self._reads[log.id] = _Read(start.tag, lsn_until)

    def _pack(self, items: list[RunItem], reply: pb.ReadReply) -> None:
        """Put ``items`` into ``reply``, a part per log; end the reads they finish."""
        parts: dict[int, pb.ReadItems] = {}
        ended: list[int] = []
        start = 0
        while start < len(items):  # the reader delivers each log's items in runs of LSNs: group them
            log_id = items[start].log_id
            end = start + 1
            while end < len(items) and items[end].log_id == log_id:
                end += 1
            read = self._reads[log_id]
            part = parts.get(log_id)
            if part is None:
                part = parts[log_id] = reply.logs.add(log_id=log_id, tag=read.tag)
            add_items(part, items[start:end])
            if _last_lsn(items[end - 1]) >= read.lsn_until:
                part.ended = True
                ended.append(log_id)
            start = end
        self._items_left -= sum(map(weight, items))
        self._bytes_left -= payload_bytes(items)
        for log_id in ended:
            del self._reads[log_id]
            self._reader.stop_reading(log_id)
        self._on_records(sum(len(i.payloads) for i in items if type(i) is RecordRun))
