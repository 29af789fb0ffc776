"""The client's append queue against a simple model: batches go out in order, calls stay within their
bounds, nothing waits while a call slot is free, and every batch ends once, as its call said."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from seaway import ClosedError, InvalidArgumentError, OverloadedError, RetryPolicy, SeawayError, ServerError
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
        self.retries: list[Callable[[], None]] = []
        self.retrying: list[int] = []  # the model: whose retries are scheduled, in order
        self.waiting: deque[int] = deque()  # the model: batch ids in the order they must go out
        self.size: dict[int, int] = {}
        self.attempts: dict[int, int] = {}
        self.futures: dict[int, Future[range]] = {}
        self.expected: dict[int, object] = {}  # a range, or the error class the batch must end with
        self.ids = itertools.count(1)
        self.lsns = itertools.count(1)
        self.closed = False

    @initialize(calls_max=st.integers(1, 3), batches_max=st.integers(1, 3), bytes_max=st.sampled_from([150, 5000]))
    def start(self, calls_max: int, batches_max: int, bytes_max: int) -> None:
        self.config = AppendQueueConfig(calls_max=calls_max, batches_per_call_max=batches_max,
                                        bytes_per_call_max=bytes_max)
        self.retry = RetryPolicy(attempts_max=3)
        self.queue = AppendQueue(self._call, self.retry, self.config, lambda _s, run: self.retries.append(run))

    def _call(self, request: pb.AppendManyRequest) -> Future[Any]:
        ids = [b.sequence for b in request.batches]
        expected = list(itertools.islice(self.waiting, len(ids)))
        assert ids == expected, f"sent {ids}, but the next waiting were {list(self.waiting)}"
        for _ in ids:
            self.waiting.popleft()
        assert len(ids) <= self.config.batches_per_call_max
        total = sum(self.size[i] for i in ids)
        assert len(ids) == 1 or total <= self.config.bytes_per_call_max
        if self.waiting and len(ids) < self.config.batches_per_call_max:  # took all that fit
            assert total + self.size[self.waiting[0]] > self.config.bytes_per_call_max
        future: Future[Any] = Future()
        self.calls.append((ids, future))
        return future

    @rule(size=st.sampled_from([1, 100, 3000]), log_id=st.sampled_from([1, 2]))
    def put(self, size: int, log_id: int) -> None:
        n = next(self.ids)
        self.size[n], self.attempts[n] = size, 1
        if not self.closed:
            self.waiting.append(n)
        else:
            self.expected[n] = ClosedError
        self.futures[n] = self.queue.put(log_id, [b"x" * size], ProducerMark(b"p", n), timeout_s=5)

    def _failed(self, n: int, error: type[SeawayError], retriable: bool) -> None:
        if retriable and not self.closed and self.attempts[n] < self.retry.attempts_max:
            self.attempts[n] += 1  # queued again, through the scheduler
            self.retrying.append(n)
        else:
            self.expected[n] = error

    @precondition(lambda self: self.calls)
    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        ids, future = self.calls.pop(data.draw(st.integers(0, len(self.calls) - 1)))
        results = []
        for n in ids:
            kind = data.draw(st.sampled_from(["ok", "ok", "retriable", "refused"]))
            if kind == "ok":
                first = next(self.lsns)
                self.expected[n] = range(first, first + 1)
                results.append(pb.AppendResult(appended=pb.AppendReply(first_lsn=first, count=1)))
            else:
                results.append(pb.AppendResult(error=RETRIABLE if kind == "retriable" else REFUSED))
                self._failed(n, SeawayError if kind == "retriable" else InvalidArgumentError, kind == "retriable")
        future.set_result(pb.AppendManyReply(results=results))

    @precondition(lambda self: self.calls)
    @rule(data=st.data(), how=st.sampled_from(["unavailable", "refused", "short reply"]))
    def fail(self, data: st.DataObject, how: str) -> None:
        ids, future = self.calls.pop(data.draw(st.integers(0, len(self.calls) - 1)))
        for n in ids:
            self._failed(n, {"unavailable": SeawayError, "refused": InvalidArgumentError,
                             "short reply": ServerError}[how], how == "unavailable")
        if how == "short reply":  # a server that answers fewer results than batches
            future.set_result(pb.AppendManyReply(results=[]))
        else:
            from seaway import UnavailableError  # noqa: PLC0415
            future.set_exception(UnavailableError("down") if how == "unavailable" else InvalidArgumentError("bad"))

    @precondition(lambda self: self.retries)
    @rule()
    def retry_one(self) -> None:
        n = self.retrying.pop(0)
        if self.closed:
            self.expected[n] = ClosedError
        else:
            self.waiting.append(n)
        self.retries.pop(0)()

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        self.closed = True
        for n in self.waiting:
            self.expected[n] = ClosedError
        self.waiting.clear()
        self.queue.close()

    @invariant()
    def calls_within_bounds_and_no_idle_slot(self) -> None:
        if not hasattr(self, "queue"):
            return
        assert len(self.calls) <= self.config.calls_max
        if self.waiting:
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

    queue = AppendQueue(call, RetryPolicy(), AppendQueueConfig(calls_max=1, waiting_bytes_max=100))
    mark = itertools.count()
    sent = queue.put(1, [b"a" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # goes out at once
    waiting = queue.put(1, [b"b" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # waits for the call
    with pytest.raises(OverloadedError, match="waiting_bytes_max"):
        queue.put(1, [b"c" * 60], ProducerMark(b"p", next(mark)), timeout_s=0.2)
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

    queue = AppendQueue(call, RetryPolicy(attempts_max=1), AppendQueueConfig(calls_max=1))
    failed = queue.put(1, [b"a"], ProducerMark(b"p", 0), timeout_s=1)
    assert isinstance(failed.exception(1), ServerError)
    assert queue.put(1, [b"b"], ProducerMark(b"p", 1), timeout_s=1).result(1) == range(7, 8)
