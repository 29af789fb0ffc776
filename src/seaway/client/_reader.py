"""The remote reader: any number of logs over one ``ReadMany`` stream, with one thread to receive.

The reader grants the server room in items and payload bytes (see ``ReadControl`` in
``seaway.proto``) and grants again as the application consumes, so what it holds stays within
``buffered_items_max`` and ``buffered_bytes_max`` (plus one record) however many logs it reads, and
a reader that stops reading stops the server. A stream that fails retriably (the server restarted,
say) is opened again and every log started from the LSN after the last one received, with the
client's retry policy; the application sees an error only once that gives up.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from seaway.errors import ClosedError, InvalidArgumentError, LsnOutOfRangeError, SeawayError, UnavailableError
from seaway.log import (
    BUFFERED_BYTES_MAX_DEFAULT,
    LSN_MAX,
    LSN_OLDEST,
    Gap,
    LogHandle,
    ReadItem,
    RecordRun,
    check_buffer_bounds,
    check_lsn,
    lsn_str,
    payload_bytes,
    take_within,
    weight,
)
from seaway.wire import error_from_msg, error_from_status, items_from_msg, seaway_pb2

if TYPE_CHECKING:
    from seaway.client._client import RemoteLogs

pb = seaway_pb2


def translate(exc: grpc.RpcError) -> SeawayError:
    call: Any = exc
    return error_from_status(call.code(), call.details(), call.trailing_metadata())


def _last_lsn(item: Any) -> int:
    if type(item) is Gap:
        return int(item.lsn_hi)
    return int(item.last_lsn) if type(item) is RecordRun else int(item.lsn)


@dataclass(slots=True)
class _Read:
    log_id: int
    tag: int
    next_lsn: int
    lsn_until: int


CONTROLS_PER_MESSAGE_MAX = 10_000
"""Controls sent in one message (a start is about 30 bytes: far below any message bound)."""


class _Controls:
    """The client's side of a stream: controls the reader queues, sent by gRPC's sending thread,
    all those queued meanwhile in one message.

    Not bounded: each control stands for a call of the application (a start, a stop) or for room
    it made by consuming (a grant, at most one per quarter of the reader's bounds)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[pb.ReadControl | None] = queue.SimpleQueue()

    def put(self, msg: pb.ReadControl) -> None:
        self._queue.put(msg)

    def close(self) -> None:
        self._queue.put(None)

    def __iter__(self) -> Iterator[pb.ReadControls]:
        while (first := self._queue.get()) is not None:
            batch = [first]
            while len(batch) < CONTROLS_PER_MESSAGE_MAX:
                try:
                    msg = self._queue.get_nowait()
                except queue.Empty:
                    break
                if msg is None:
                    yield pb.ReadControls(controls=batch)
                    return
                batch.append(msg)
            yield pb.ReadControls(controls=batch)


@dataclass(eq=False)
class _Stream:
    call: Any
    controls: _Controls
    items_out: int = 0
    """Granted on this stream and not received yet (negative: the server sent a large record)."""
    bytes_out: int = 0


class RemoteReader:
    """Reads many logs of a server at once; the same contract as :class:`seaway.Reader`.

    All its logs share one stream and one receiving thread, whatever their number.
    """

    def __init__(self, logs: RemoteLogs, buffered_items_max: int = 2_000, *, runs: bool = False,
                 buffered_bytes_max: int = BUFFERED_BYTES_MAX_DEFAULT) -> None:
        check_buffer_bounds(buffered_items_max, buffered_bytes_max)
        self._logs = logs
        self._client = logs._client
        self._runs = runs
        self._items_max = buffered_items_max
        self._bytes_max = buffered_bytes_max
        self._cv = threading.Condition()
        self._reads: dict[int, _Read] = {}
        self._buffer: list[ReadItem] = []
        self._buffered = 0  # records and gaps (a run counts its records)
        self._buffered_bytes = 0
        self._errors: deque[SeawayError] = deque()  # reads that failed, raised by read() in turn
        self._stream: _Stream | None = None
        self._attempt = 0  # failed streams in a row
        self._tags = itertools.count(1)
        self._closed = False
        self._woken = False

    # --- starting and stopping logs -------------------------------------------------------------

    def start_reading(self, log: LogHandle | int | str, lsn_from: int = LSN_OLDEST, lsn_until: int = LSN_MAX) -> None:
        log_id = self._logs._resolve(log).id
        check_lsn(lsn_from, "lsn_from")
        check_lsn(lsn_until, "lsn_until")
        if lsn_from < LSN_OLDEST or lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_str(lsn_from)} until {lsn_str(lsn_until)}")
        with self._cv:
            self._check_open()
            self._drop(log_id)
            read = self._reads[log_id] = _Read(log_id, next(self._tags), lsn_from, lsn_until)
            if self._stream is None:
                self._open()
            else:
                self._stream.controls.put(_start_msg(read))

    def stop_reading(self, log: LogHandle | int | str) -> None:
        log_id = log if isinstance(log, int) else self._logs._resolve(log).id
        with self._cv:
            if self._reads.pop(log_id, None) is not None and self._stream is not None:
                self._stream.controls.put(pb.ReadControl(stop=pb.ReadStop(log_id=log_id)))
            self._drop(log_id)

    def _drop(self, log_id: int) -> None:
        if any(i.log_id == log_id for i in self._buffer):
            self._buffer = [i for i in self._buffer if i.log_id != log_id]
            self._buffered = sum(map(weight, self._buffer))
            self._buffered_bytes = payload_bytes(self._buffer)
            self._grant()

    # --- reading --------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        with self._cv:
            return not self._reads and not self._buffer and not self._errors

    def read(self, items_max: int = 1000, timeout_s: float | None = None, *,
             bytes_max: int | None = None) -> list[ReadItem]:
        """As :meth:`seaway.Reader.read`. A read that failed (an unknown log, or a stream that could
        not be opened again) raises its error here, after the items received before it."""
        if items_max < 1:
            raise InvalidArgumentError("items_max must be at least 1")
        if bytes_max is not None and bytes_max < 1:
            raise InvalidArgumentError("bytes_max must be at least 1")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cv:
            while True:
                self._check_open()
                if self._buffer:
                    taken, count, size = take_within(self._buffer, items_max, bytes_max)
                    self._buffered -= count
                    self._buffered_bytes -= size
                    self._grant()
                    return taken
                if self._errors:
                    raise self._errors.popleft()
                if not self._reads:
                    return []
                if self._woken:
                    self._woken = False
                    return []
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return []
                self._cv.wait(remaining)

    def wake(self) -> None:
        """As :meth:`seaway.Reader.wake`: a :meth:`read` that waits now (or the next one that
        would wait) returns at once, with nothing."""
        with self._cv:
            self._woken = True
            self._cv.notify_all()

    def __iter__(self) -> Iterator[ReadItem]:
        while True:
            items = self.read()
            if not items:
                return
            yield from items

    def close(self) -> None:
        """Stop reading every log; idempotent."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._reads.clear()
            stream, self._stream = self._stream, None
            self._cv.notify_all()
        if stream is not None:
            stream.controls.close()
            stream.call.cancel()

    def __enter__(self) -> RemoteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the reader is closed")

    # --- the stream (with self._cv held) ---------------------------------------------------------

    def _open(self) -> None:
        """A new stream: every read started from where it is, and the room there is granted."""
        controls = _Controls()
        for read in list(self._reads.values()):
            if read.next_lsn > read.lsn_until:  # all received (its end is always sent with its last items)
                del self._reads[read.log_id]
            else:
                controls.put(_start_msg(read))
        call = self._client._read_stream(controls)
        stream = self._stream = _Stream(call, controls)
        self._grant()
        threading.Thread(target=self._receive_all, args=(stream,), daemon=True, name="seaway-reader").start()

    def _grant(self) -> None:
        """Grant the server the room the reader has, once it is a quarter of a bound or more."""
        stream = self._stream
        if stream is None:
            return
        items = self._items_max - self._buffered - stream.items_out
        size = self._bytes_max - self._buffered_bytes - stream.bytes_out
        if items >= max(1, self._items_max // 4) or size >= max(1, self._bytes_max // 4):
            items, size = max(0, items), max(0, size)
            stream.items_out += items
            stream.bytes_out += size
            stream.controls.put(pb.ReadControl(grant=pb.ReadGrant(items=items, bytes=size)))

    # --- the receiving thread -------------------------------------------------------------------

    def _receive_all(self, stream: _Stream) -> None:
        try:
            for reply in stream.call:
                parts = [(part, items_from_msg(part, self._runs)) for part in reply.logs]
                with self._cv:
                    if self._stream is not stream:
                        return
                    self._receive(stream, parts)
            error: SeawayError = UnavailableError("the server ended the read stream")
        except grpc.RpcError as exc:
            error = translate(exc)
        except SeawayError as exc:  # a reply that does not decode
            error = exc
        self._failed(stream, error)

    def _receive(self, stream: _Stream, parts: list[tuple[pb.ReadItems, list[ReadItem]]]) -> None:
        self._attempt = 0
        for part, items in parts:
            count, size = sum(map(weight, items)), payload_bytes(items)
            stream.items_out -= count  # the server counted them against the grants, wanted or not
            stream.bytes_out -= size
            read = self._reads.get(part.log_id)
            if read is None or read.tag != part.tag:
                continue  # stopped, or started again: what was sent before is not wanted
            if items:
                self._buffer.extend(items)
                self._buffered += count
                self._buffered_bytes += size
                read.next_lsn = _last_lsn(items[-1]) + 1
            if part.HasField("error"):
                del self._reads[part.log_id]
                self._errors.append(error_from_msg(part.error))
            elif part.ended:
                del self._reads[part.log_id]
        self._grant()  # room of items not wanted
        self._cv.notify_all()

    def _failed(self, stream: _Stream, error: SeawayError) -> None:
        """The stream ended: open another after a pause, or fail every read once retries give up."""
        with self._cv:
            if self._stream is not stream:
                return  # closed, or replaced
            self._stream = None
            stream.controls.close()
            self._attempt += 1
            retry = self._client._retry
            if not self._reads:
                return  # nothing to read: the next start opens a stream
            if not error.retriable or self._attempt >= retry.attempts_max or self._client.closed:
                self._reads.clear()
                self._errors.append(error)
                self._cv.notify_all()
                return
            delay_s = retry.delay_s(self._attempt)
        time.sleep(delay_s)  # this thread's stream is gone: nothing else waits for it
        with self._cv:
            if self._closed or self._stream is not None or not self._reads:
                return
            try:
                self._open()
            except SeawayError as exc:  # the client was closed meanwhile
                self._reads.clear()
                self._errors.append(exc)
                self._cv.notify_all()


def _start_msg(read: _Read) -> pb.ReadControl:
    return pb.ReadControl(start=pb.ReadStart(log_id=read.log_id, lsn_from=read.next_lsn,
                                             lsn_until=read.lsn_until, tag=read.tag))
