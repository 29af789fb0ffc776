"""The client's append queue against a simple model: each log's batches go out in the order they were
queued, a log in one call at a time; calls stay within their bounds; nothing waits while a call slot
is free and its log is not busy; and every batch ends once, as its call said. (Retries and what
happens behind a failed batch are the producer's: see tests/log/test_pipeline*.py.)"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from seaway import (
    BufferFullError,
    ClientError,
    ClosedError,
    InvalidArgumentError,
    SeawayError,
    ServerError,
    UnavailableError,
)
from seaway.client import AppendQueueConfig
from seaway.client._append import AppendQueue
from seaway.logsdb import ProducerMark
from seaway.wire import seaway_pb2

pb = seaway_pb2
RETRIABLE = pb.Error(code="UNAVAILABLE", message="try again", retriable=True)
REFUSED = pb.Error(code="INVALID_ARGUMENT", message="no", retriable=False)


class AppendQueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[int], Future[Any]]] = []  # (batch ids, the call's future)
        self.pending: dict[int, deque[int]] = {1: deque(), 2: deque()}  # per log, in the order they must go
        self.busy: set[int] = set()  # logs in a call
        self.log_of: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.futures: dict[int, Future[range]] = {}
        self.expected: dict[int, object] = {}  # a range, or the error class the batch must end with
        self.ids = itertools.count(1)
        self.lsns = itertools.count(1)
        self.closed = False

    @initialize(calls_max=st.integers(1, 3), batches_max=st.integers(1, 3), bytes_max=st.sampled_from([150, 5000]))
    def start(self, calls_max: int, batches_max: int, bytes_max: int) -> None:
        self.config = AppendQueueConfig(calls_max=calls_max, batches_per_call_max=batches_max,
                                        bytes_per_call_max=bytes_max)
        self.queue = AppendQueue(self._call, self.config)

    def _call(self, request: pb.AppendManyRequest) -> Future[Any]:
        ids = [b.sequence for b in request.batches]
        for log in {self.log_of[n] for n in ids}:
            mine = [n for n in ids if self.log_of[n] == log]
            assert log not in self.busy, f"log {log} is in two calls at once"
            assert mine == list(itertools.islice(self.pending[log], len(mine))), \
                f"sent {mine} of log {log}, but its next were {list(self.pending[log])}"
            for _ in mine:
                self.pending[log].popleft()
            self.busy.add(log)
        assert len(ids) <= self.config.batches_per_call_max
        assert len(ids) == 1 or sum(self.size[i] for i in ids) <= self.config.bytes_per_call_max
        future: Future[Any] = Future()
        self.calls.append((ids, future))
        return future

    @rule(size=st.sampled_from([1, 100, 3000]), log_id=st.sampled_from([1, 2]))
    def put(self, size: int, log_id: int) -> None:
        n = next(self.ids)
        self.size[n], self.log_of[n] = size, log_id
        if not self.closed:
            self.pending[log_id].append(n)
        else:
            self.expected[n] = ClosedError
        self.futures[n] = self.queue.put(log_id, [b"x" * size], ProducerMark(b"p", n), timeout_s=5)

    def _answer(self, ids: list[int], outcomes: list[str], error: type[SeawayError],
                refused: type[SeawayError] = InvalidArgumentError) -> None:
        """The model's side of a call's end: ``outcomes`` per batch, "ok", "retriable" or "refused"."""
        for n, kind in zip(ids, outcomes, strict=True):
            if kind == "ok":
                first = next(self.lsns)
                self.expected[n] = range(first, first + 1)
            else:
                self.expected[n] = error if kind == "retriable" else refused
        for n in ids:
            self.busy.discard(self.log_of[n])

    @precondition(lambda self: self.calls)
    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        ids, future = self.calls.pop(data.draw(st.integers(0, len(self.calls) - 1)))
        kinds = [data.draw(st.sampled_from(["ok", "ok", "retriable", "refused"])) for _ in ids]
        self._answer(ids, kinds, UnavailableError)
        results = []
        for n, kind in zip(ids, kinds, strict=True):
            lsns = self.expected.get(n)
            if kind == "ok" and isinstance(lsns, range):
                results.append(pb.AppendResult(appended=pb.AppendReply(first_lsn=lsns.start, count=1)))
            else:
                results.append(pb.AppendResult(error=RETRIABLE if kind == "retriable" else REFUSED))
        future.set_result(pb.AppendManyReply(results=results))

    @precondition(lambda self: self.calls)
    @rule(data=st.data(), how=st.sampled_from(["unavailable", "refused", "short reply"]))
    def fail(self, data: st.DataObject, how: str) -> None:
        ids, future = self.calls.pop(data.draw(st.integers(0, len(self.calls) - 1)))
        if how == "unavailable":
            self._answer(ids, ["retriable"] * len(ids), UnavailableError)
            future.set_exception(UnavailableError("down"))
        elif how == "short reply":  # a server that answers fewer results than batches
            self._answer(ids, ["refused"] * len(ids), InvalidArgumentError, refused=ServerError)
            future.set_result(pb.AppendManyReply(results=[]))
        else:
            self._answer(ids, ["refused"] * len(ids), InvalidArgumentError)
            future.set_exception(InvalidArgumentError("bad"))

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        self.closed = True
        for log in self.pending:
            for n in self.pending[log]:
                self.expected[n] = ClosedError
            self.pending[log].clear()
        self.queue.close()

    @invariant()
    def calls_within_bounds_and_no_idle_slot(self) -> None:
        if not hasattr(self, "queue"):
            return
        assert len(self.calls) <= self.config.calls_max
        if any(self.pending[log] and log not in self.busy for log in self.pending):
            assert len(self.calls) == self.config.calls_max, "a batch waits while a call slot is free"

    @invariant()
    def batches_end_as_their_calls_said(self) -> None:
        for n, want in self.expected.items():
            future = self.futures.get(n)
            if future is None or not future.done():
                continue
            if isinstance(want, range):
                assert future.result() == want
            else:
                error = future.exception()
                assert isinstance(error, want) and isinstance(error, SeawayError), (n, want, error)
        for n, future in self.futures.items():
            if future.done():
                assert n in self.expected, f"batch {n} ended though nothing said so"


AppendQueueMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestAppendQueue = AppendQueueMachine.TestCase


def test_a_full_queue_blocks_appends_then_refuses_them() -> None:
    calls: list[Future[Any]] = []

    def call(_request: pb.AppendManyRequest) -> Future[Any]:
        calls.append(Future())
        return calls[-1]

    queue = AppendQueue(call, AppendQueueConfig(calls_max=1, waiting_bytes_max=100))
    mark = itertools.count()
    sent = queue.put(1, [b"a" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # goes out at once
    waiting = queue.put(1, [b"b" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # waits for the call
    with pytest.raises(BufferFullError, match="waiting_bytes_max") as raised:
        queue.put(1, [b"c" * 60], ProducerMark(b"p", next(mark)), timeout_s=0.2)
    assert isinstance(raised.value, ClientError) and raised.value.retriable  # this client's bound, not the server's
    unblocked: list[Future[range]] = []
    thread = threading.Thread(target=lambda: unblocked.append(
        queue.put(1, [b"d" * 60], ProducerMark(b"p", next(mark)), timeout_s=10)))
    thread.start()
    calls[0].set_result(pb.AppendManyReply(results=[pb.AppendResult(appended=pb.AppendReply(first_lsn=1, count=1))]))
    thread.join(10)
    assert sent.result(1) == range(1, 2) and unblocked and not waiting.done()
    assert len(calls) == 2  # the waiting batch went out, and made room for the blocked one
    queue.close()
    assert isinstance(unblocked[0].exception(1), ClosedError)
    with pytest.raises(InvalidArgumentError):
        AppendQueueConfig(calls_max=0)


def test_a_call_that_cannot_start_fails_its_batches_and_frees_its_slot() -> None:
    started: list[pb.AppendManyRequest] = []

    def call(request: pb.AppendManyRequest) -> Future[Any]:
        started.append(request)
        if len(started) == 1:
            raise RuntimeError("Cannot invoke RPC on closed channel!")
        future: Future[Any] = Future()
        future.set_result(pb.AppendManyReply(results=[pb.AppendResult(appended=pb.AppendReply(first_lsn=7, count=1))]))
        return future

    queue = AppendQueue(call, AppendQueueConfig(calls_max=1))
    failed = queue.put(1, [b"a"], ProducerMark(b"p", 0), timeout_s=1)
    assert isinstance(failed.exception(1), ServerError)
    assert queue.put(1, [b"b"], ProducerMark(b"p", 1), timeout_s=1).result(1) == range(7, 8)


def test_a_logs_later_batches_wait_for_its_call_and_go_out_together_in_order() -> None:
    calls: list[tuple[list[int], Future[Any]]] = []

    def call(request: pb.AppendManyRequest) -> Future[Any]:
        calls.append(([b.sequence for b in request.batches], Future()))
        return calls[-1][1]

    queue = AppendQueue(call, AppendQueueConfig(calls_max=2))
    first = queue.put(1, [b"a"], ProducerMark(b"p", 1), timeout_s=1)
    later = queue.put(1, [b"b"], ProducerMark(b"p", 2), timeout_s=1)  # waits: its log is in a call
    other = queue.put(2, [b"c"], ProducerMark(b"p", 3), timeout_s=1)  # another log takes the free slot
    last = queue.put(1, [b"d"], ProducerMark(b"p", 4), timeout_s=1)
    assert [ids for ids, _ in calls] == [[1], [3]]
    calls[0][1].set_exception(UnavailableError("down"))  # the producer retries, not the queue
    assert isinstance(first.exception(1), UnavailableError)
    assert [ids for ids, _ in calls][2:] == [[2, 4]]
    reply = pb.AppendManyReply(results=[pb.AppendResult(appended=pb.AppendReply(first_lsn=n, count=1))
                                        for n in (11, 12)])
    calls[2][1].set_result(reply)
    assert [f.result(1) for f in (later, last)] == [range(11, 12), range(12, 13)]
    assert not other.done()
