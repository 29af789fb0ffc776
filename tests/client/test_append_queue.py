"""The client's append queue against a simple model: each log's batches go out in the order they were
queued, a retried batch before the later ones, a log in one call at a time; calls stay within their
bounds; nothing waits while a call slot is free and its log is not busy; and every batch ends once,
as its call said (or as the batch before it that failed for good said)."""

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

from seaway import (
    BufferFullError,
    ClientError,
    ClosedError,
    InvalidArgumentError,
    LogSealedError,
    RetryPolicy,
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
        self.retries: list[Callable[[], None]] = []  # the queue's scheduled retries, in order
        self.retrying: list[tuple[int, list[int]]] = []  # the model: (log, ids) of each, in order
        self.pending: dict[int, deque[int]] = {1: deque(), 2: deque()}  # per log, in the order they must go
        self.busy: set[int] = set()  # logs in a call, or with a retry scheduled
        self.log_of: dict[int, int] = {}
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
        self.size[n], self.attempts[n], self.log_of[n] = size, 1, log_id
        if not self.closed:
            self.pending[log_id].append(n)
        else:
            self.expected[n] = ClosedError
        self.futures[n] = self.queue.put(log_id, [b"x" * size], ProducerMark(b"p", n), timeout_s=5)

    def _doom(self, log: int, error: type[SeawayError], retried: list[int], own: type[SeawayError]) -> None:
        """A batch of ``log`` failed for good: its producer's batches behind it fail with it, unsent
        (the store would refuse them: it takes a producer's batches only in order); those ahead of
        it in the call that were to be retried fail with their own error ``own``."""
        for n in retried:
            self.expected[n] = own
        for n in self.pending[log]:
            self.expected[n] = error
        retried.clear()
        self.pending[log].clear()

    def _answer(self, ids: list[int], outcomes: list[str], error: type[SeawayError],
                refused: type[SeawayError] = InvalidArgumentError) -> None:
        """The model's side of a call's end: ``outcomes`` per batch, "ok", "retriable" or "refused"."""
        retried: dict[int, list[int]] = {}
        doomed: dict[int, type[SeawayError]] = {}  # log -> the error its later batches fail with
        for n, kind in zip(ids, outcomes, strict=True):
            log = self.log_of[n]
            if kind == "ok":
                first = next(self.lsns)
                self.expected[n] = range(first, first + 1)
            elif log in doomed:
                self.expected[n] = doomed[log]
            elif kind == "retriable" and not self.closed and self.attempts[n] < self.retry.attempts_max:
                self.attempts[n] += 1
                retried.setdefault(log, []).append(n)
            else:
                final = error if kind == "retriable" else refused
                self.expected[n] = final
                if final is not InvalidArgumentError:  # not stored: the batches behind it cannot be
                    doomed[log] = final
                    self._doom(log, final, retried.get(log, []), error)
                else:  # refused for its own reason: those ahead of it to be retried fail, those behind wait
                    for m in retried.get(log, []):
                        self.expected[m] = error
                    retried.get(log, []).clear()
        for log in dict.fromkeys(self.log_of[n] for n in ids):  # in call order, as the queue schedules them
            if retried.get(log):
                self.retrying.append((log, retried[log]))
            else:
                self.busy.discard(log)

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

    @precondition(lambda self: self.retries)
    @rule()
    def retry_one(self) -> None:
        log, ids = self.retrying.pop(0)
        if self.closed:
            for n in ids:
                self.expected[n] = ClosedError
        else:
            self.pending[log].extendleft(reversed(ids))
        self.busy.discard(log)
        self.retries.pop(0)()

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

    ended: list[tuple[int, ProducerMark]] = []
    queue = AppendQueue(call, RetryPolicy(), AppendQueueConfig(calls_max=1, waiting_bytes_max=100),
                        failed=lambda log_id, failed_mark: ended.append((log_id, failed_mark)))
    mark = itertools.count()
    sent = queue.put(1, [b"a" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # goes out at once
    waiting = queue.put(1, [b"b" * 60], ProducerMark(b"p", next(mark)), timeout_s=1)  # waits for the call
    with pytest.raises(BufferFullError, match="waiting_bytes_max") as raised:
        queue.put(1, [b"c" * 60], ProducerMark(b"p", next(mark)), timeout_s=0.2)
    assert isinstance(raised.value, ClientError) and raised.value.retriable  # this client's bound, not the server's
    # Its sequence number is never sent: the producer ends, or its next batch would wait for it for ever.
    assert ended == [(1, ProducerMark(b"p", 2))]
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


def test_a_retried_batch_goes_out_before_the_later_batches_of_its_log() -> None:
    calls: list[tuple[list[int], Future[Any]]] = []
    retries: list[Callable[[], None]] = []

    def call(request: pb.AppendManyRequest) -> Future[Any]:
        calls.append(([b.sequence for b in request.batches], Future()))
        return calls[-1][1]

    queue = AppendQueue(call, RetryPolicy(attempts_max=3), AppendQueueConfig(calls_max=2),
                        lambda _s, run: retries.append(run))
    first = queue.put(1, [b"a"], ProducerMark(b"p", 1), timeout_s=1)
    later = queue.put(1, [b"b"], ProducerMark(b"p", 2), timeout_s=1)  # waits: its log is in a call
    other = queue.put(2, [b"c"], ProducerMark(b"p", 3), timeout_s=1)  # another log takes the free slot
    assert [ids for ids, _ in calls] == [[1], [3]]
    calls[0][1].set_exception(UnavailableError("down"))  # the first batch is to be retried...
    assert len(calls) == 2, "a later batch of the log went out while an earlier one waits to be retried"
    last = queue.put(1, [b"d"], ProducerMark(b"p", 4), timeout_s=1)
    retries.pop()()  # ...and goes out first, the later ones of its log behind it, in order
    assert [ids for ids, _ in calls][2:] == [[1, 2, 4]]
    reply = pb.AppendManyReply(results=[pb.AppendResult(appended=pb.AppendReply(first_lsn=n, count=1))
                                        for n in (10, 11, 12)])
    calls[2][1].set_result(reply)
    assert [f.result(1) for f in (first, later, last)] == [range(10, 11), range(11, 12), range(12, 13)]
    assert not other.done()


def test_a_batch_that_fails_for_good_fails_the_later_batches_of_its_log() -> None:
    calls: list[Future[Any]] = []

    def call(_request: pb.AppendManyRequest) -> Future[Any]:
        calls.append(Future())
        return calls[-1]

    queue = AppendQueue(call, RetryPolicy(attempts_max=1), AppendQueueConfig(calls_max=1))
    doomed = queue.put(1, [b"a"], ProducerMark(b"p", 1), timeout_s=1)
    behind = queue.put(1, [b"b"], ProducerMark(b"p", 2), timeout_s=1)
    elsewhere = queue.put(2, [b"c"], ProducerMark(b"p", 3), timeout_s=1)
    calls[0].set_exception(UnavailableError("down"))
    assert isinstance(doomed.exception(1), UnavailableError)
    assert isinstance(behind.exception(1), UnavailableError)  # never sent: it cannot overtake a retry
    assert len(calls) == 2 and not elsewhere.done()  # the other log's batch went out


def test_a_batch_retried_ahead_of_one_that_fails_for_good_fails_with_its_own_error() -> None:
    """Found by the fault suite (tests/faults, writers under scaling through a server, seed 2): in
    one call, batch 1 was refused retriably (its earlier reply was lost: it may be stored) and batch
    2 of the same producer was refused for good because the log was sealed. Batch 1 failed with
    batch 2's LogSealedError, which says "not stored": the stream writer then sent it to the next
    segment, and it was stored twice. It fails with its own error, which says it may be."""
    calls: list[Future[Any]] = []

    def call(_request: pb.AppendManyRequest) -> Future[Any]:
        calls.append(Future())
        return calls[-1]

    queue = AppendQueue(call, RetryPolicy(attempts_max=3), AppendQueueConfig(calls_max=1))
    first = queue.put(1, [b"0"], ProducerMark(b"p", 0), timeout_s=1)
    ahead = queue.put(1, [b"a"], ProducerMark(b"p", 1), timeout_s=1)  # both wait for the first call,
    sealed = queue.put(1, [b"b"], ProducerMark(b"p", 2), timeout_s=1)  # then go out together
    calls[0].set_result(pb.AppendManyReply(results=[pb.AppendResult(appended=pb.AppendReply(first_lsn=1, count=1))]))
    assert first.result(1) == range(1, 2)
    calls[1].set_result(pb.AppendManyReply(results=[
        pb.AppendResult(error=RETRIABLE),
        pb.AppendResult(error=pb.Error(code="LOG_SEALED", message="log 1 is sealed", retriable=False))]))
    assert isinstance(sealed.exception(1), LogSealedError)
    assert isinstance(ahead.exception(1), UnavailableError), "a batch that may be stored was said not to be"
    assert len(calls) == 2, "a batch ahead of one that failed for good is not sent again behind the caller's back"
