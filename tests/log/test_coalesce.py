"""The futures of a batch behave as any Future; the coalescer sends a log's appends in order, joins
those made while batches are in flight, keeps its bounds, and fails what waits behind a failure."""

from __future__ import annotations

import gc
import threading
import weakref
from concurrent.futures import FIRST_COMPLETED, Future, as_completed, wait
from concurrent.futures._base import DoneAndNotDoneFutures
from typing import Any

import pytest

from seaway import BufferFullError, ClosedError, InvalidArgumentError, OverloadedError, StorageError
from seaway._invariant import InvariantViolation
from seaway.log import AppendCoalescer, CoalesceConfig, Coalescers
from seaway.log._futures import BatchFutures
from seaway.logsdb import ProducerMark

# --- the futures of a batch ---------------------------------------------------------------------


def test_batch_futures_work_with_every_future_api() -> None:
    batch: BatchFutures[int] = BatchFutures()
    first, second, third = batch.new(), batch.new(), batch.new()
    assert not first.done() and first.running() and not first.cancel()  # on its way: not cancellable
    with pytest.raises(TimeoutError):
        first.result(timeout=0)
    seen: list[int] = []
    first.add_done_callback(lambda f: seen.append(f.result()))
    waited: list[DoneAndNotDoneFutures[int]] = []
    waiter = threading.Thread(target=lambda: waited.append(wait([second, third], timeout=10)))
    waiter.start()
    completed: list[int] = []
    collector = threading.Thread(target=lambda: completed.extend(f.result() for f in as_completed([first, third], 10)))
    collector.start()
    blocked = threading.Thread(target=lambda: seen.append(second.result(10) * 10))
    blocked.start()
    batch.settle([7, 8, 9])
    for thread in (waiter, collector, blocked):
        thread.join(10)
    assert [f.result() for f in (first, second, third)] == [7, 8, 9]
    assert sorted(seen) == [7, 80]
    done, not_done = waited[0]
    assert done == {second, third} and not not_done
    assert sorted(completed) == [7, 9]
    late: list[int] = []
    third.add_done_callback(lambda f: late.append(f.result()))  # after the fact: called at once
    assert late == [9] and "finished" in repr(third)


def test_batch_futures_fail_together() -> None:
    batch: BatchFutures[int] = BatchFutures()
    futures = [batch.new() for _ in range(3)]
    error = StorageError("disk")
    batch.settle(None, error)
    assert all(f.exception() is error for f in futures)
    done, _ = wait(futures, timeout=0, return_when=FIRST_COMPLETED)
    assert done == set(futures)
    with pytest.raises(StorageError):
        futures[1].result()


# --- the coalescer against a fake store -----------------------------------------------------------


class FakeStore:
    """Records what is sent; answers when told, giving each batch the next LSNs."""

    def __init__(self) -> None:
        self.sent: list[tuple[tuple[bytes, ...], ProducerMark | None, Future[range]]] = []
        self.conditions: list[int | None] = []
        self.next_lsn = 1
        self.refuse: Exception | None = None

    def send(self, payloads: tuple[bytes, ...], mark: ProducerMark | None, if_tail: int | None) -> Future[range]:
        if self.refuse is not None:
            raise self.refuse
        future: Future[range] = Future()
        self.sent.append((payloads, mark, future))
        self.conditions.append(if_tail)
        return future

    def answer(self, index: int, error: Exception | None = None) -> None:
        payloads, _, future = self.sent[index]
        if error is not None:
            future.set_exception(error)
            return
        future.set_result(range(self.next_lsn, self.next_lsn + len(payloads)))
        self.next_lsn += len(payloads)


def test_appends_made_while_batches_are_in_flight_are_joined_in_order() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=2))
    a, b = appends.append_one(b"a"), appends.append_one(b"b")  # both go at once: two may be in flight
    c, d = appends.append_one(b"c"), appends.append_one(b"d")  # wait, joined
    whole = appends.append_batch((b"e", b"f"), None)  # a plain batch: a unit of its own kind
    g = appends.append_one(b"g")
    assert [p for p, _, _ in store.sent] == [(b"a",), (b"b",)]
    store.answer(0)
    assert [p for p, _, _ in store.sent][2:] == [(b"c", b"d")]
    store.answer(1)
    assert [p for p, _, _ in store.sent][3:] == [(b"e", b"f")]
    store.answer(2)
    store.answer(3)
    assert [p for p, _, _ in store.sent][4:] == [(b"g",)]
    store.answer(4)
    assert [f.result(0) for f in (a, b, c, d)] == [1, 2, 3, 4]
    assert whole.result(0) == range(5, 7) and g.result(0) == 7
    assert appends.drain(0)


def test_idempotent_batches_go_alone_and_only_one_sender_at_a_time_keeps_order() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1))
    first = appends.append_batch((b"1",), ProducerMark(b"p", 1))
    second = appends.append_batch((b"2",), ProducerMark(b"p", 2))
    third = appends.append_batch((b"3",), ProducerMark(b"p", 3))
    assert len(store.sent) == 1
    store.answer(0)
    store.answer(1)
    assert [(p, m) for p, m, _ in store.sent] == [((b"1",), ProducerMark(b"p", 1)), ((b"2",), ProducerMark(b"p", 2)),
                                                  ((b"3",), ProducerMark(b"p", 3))]
    store.answer(2)
    assert (first.result(0), second.result(0), third.result(0)) == (range(1, 2), range(2, 3), range(3, 4))


def test_a_failed_batch_fails_what_waits_behind_it_but_not_what_comes_later() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1))
    failed = appends.append_one(b"a")
    behind: list[Future[Any]] = [appends.append_one(b"b"), appends.append_batch((b"c",), None)]
    store.answer(0, StorageError("disk"))
    assert isinstance(failed.exception(0), StorageError)
    assert all(isinstance(f.exception(0), StorageError) for f in behind)
    assert len(store.sent) == 1  # never sent: nothing overtakes a batch that failed
    later = appends.append_one(b"d")
    store.answer(1)
    assert later.result(0) == 1


def test_a_refused_batch_fails_the_ones_after_it_unsent() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=2))
    appends.append_one(b"a")
    appends.append_one(b"b")
    refused = appends.append_one(b"c")  # waits, then is refused at once by the store
    behind = appends.append_batch((b"d",), None)
    store.refuse = OverloadedError("inbox full")
    store.answer(0)
    assert isinstance(refused.exception(0), OverloadedError)
    assert isinstance(behind.exception(0), OverloadedError)  # not sent after it: it could be stored first
    store.refuse = None
    later = appends.append_one(b"e")
    assert [p for p, _, _ in store.sent] == [(b"a",), (b"b",), (b"e",)]
    store.answer(1)
    store.answer(2)
    assert later.result(0) == 3


def test_a_batch_answered_with_the_wrong_number_of_lsns_fails_its_appends_instead_of_leaving_them_waiting() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1))
    wrong = appends.append_batch((b"a", b"b"), ProducerMark(b"p", 1))
    behind = appends.append_one(b"c")
    store.sent[0][2].set_result(range(1, 4))  # three LSNs for two records: a bug below
    assert isinstance(wrong.exception(0), InvariantViolation)
    assert len(store.sent) == 2  # another producer's append (one without an id) goes on
    store.answer(1)
    assert behind.result(0) == 1
    assert appends.drain(0)


def test_a_producers_failed_batch_fails_only_that_producers_appends_behind_it() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1))
    failed = appends.append_batch((b"p0",), ProducerMark(b"p", 0))
    other = appends.append_batch((b"q0",), ProducerMark(b"q", 0))
    same = appends.append_batch((b"p1",), ProducerMark(b"p", 1))
    plain = appends.append_one(b"x")
    store.answer(0, OverloadedError("busy"))
    assert isinstance(failed.exception(0), OverloadedError)
    assert isinstance(same.exception(0), OverloadedError)  # never sent: it must not overtake p0's retry
    assert [m for _, m, _ in store.sent] == [ProducerMark(b"p", 0), ProducerMark(b"q", 0)]
    store.answer(1)
    store.answer(2)
    assert other.result(0) == range(1, 2) and plain.result(0) == 2
    store.refuse = OverloadedError("inbox full")  # refused at once: the same, unsent
    refused = appends.append_batch((b"p0",), ProducerMark(b"p", 0))
    assert isinstance(refused.exception(0), OverloadedError)
    assert appends.drain(0)


def test_a_full_log_blocks_then_refuses_with_a_client_side_error_and_close_fails_the_waiting() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1, waiting_bytes_max=10,
                                                         room_wait_s=0))
    appends.append_one(b"x" * 10)  # sent at once
    waiting = appends.append_one(b"y" * 10)  # waits: the bound is reached, not passed
    with pytest.raises(BufferFullError) as raised:
        appends.append_one(b"z")
    assert raised.value.retriable
    appends.close()
    assert isinstance(waiting.exception(0), ClosedError)
    with pytest.raises(ClosedError):
        appends.append_one(b"after")
    store.answer(0)  # the one in flight still ends as the store says


def test_config_is_checked() -> None:
    with pytest.raises(InvalidArgumentError):
        CoalesceConfig(batches_in_flight_max=0)
    with pytest.raises(InvalidArgumentError):
        CoalesceConfig(room_wait_s=-1)


def test_a_conditional_batch_is_never_joined_and_keeps_its_condition() -> None:
    store = FakeStore()
    appends = AppendCoalescer(store.send, CoalesceConfig(batches_in_flight_max=1))
    appends.append_one(b"a")  # in flight: what follows waits
    appends.append_batch((b"b",), None)
    appends.append_batch((b"c",), None, if_tail=7)
    appends.append_batch((b"d",), None)
    for n in range(3):
        store.answer(n)
    assert [p for p, _, _ in store.sent] == [(b"a",), (b"b",), (b"c",), (b"d",)]
    assert store.conditions == [None, None, 7, None]


# --- the coalescers of a store or connection ---------------------------------------------------------


def test_coalescers_are_kept_while_in_use_and_forgotten_when_their_log_is_deleted() -> None:
    store = FakeStore()
    coalescers = Coalescers(CoalesceConfig(batches_in_flight_max=1))
    held = coalescers.get(1, store.send)  # a handle keeps it
    busy = coalescers.get(2, store.send)
    first = busy.append_one(b"in flight")
    queued = busy.append_one(b"waits behind it")
    del busy  # only the append in flight keeps it now
    unused = [weakref.ref(coalescers.get(log_id, store.send)) for log_id in range(3, 1003)]
    gc.collect()
    assert all(ref() is None for ref in unused) and len(coalescers) == 2
    assert coalescers.get(1, store.send) is held
    busy = coalescers.get(2, store.send)  # the same one, so appends made now go behind the queued one
    later = busy.append_one(b"later")
    store.answer(0)
    store.answer(1)
    assert [p for p, _, _ in store.sent] == [(b"in flight",), (b"waits behind it", b"later")]
    assert (first.result(0), queued.result(0), later.result(0)) == (1, 2, 3)
    coalescers.forget(2)  # deleted: a new handle would get a new one (the store refuses its appends)
    assert 2 not in coalescers and 1 in coalescers
    assert coalescers.get(2, store.send) is not busy
