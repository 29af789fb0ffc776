"""The ordered append pipeline's bounds, producer replacement and close, one case each (the order
contract under faults is checked against a model in test_pipeline_model.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import pytest

from seaway import (
    BufferFullError,
    ClosedError,
    LogSealedError,
    OverloadedError,
    SequenceGapError,
    StorageError,
    TimedOutError,
)
from seaway.log import OrderedAppends, PipelineConfig, ProducerMark, RetryPolicy


class _Sent:
    """A send that keeps each batch's future for the test to answer."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[bytes], ProducerMark, Future[range]]] = []
        self.changed = threading.Condition()

    def __call__(self, payloads: Sequence[bytes], mark: ProducerMark, if_tail: int | None) -> Future[range]:
        future: Future[range] = Future()
        with self.changed:
            self.batches.append((list(payloads) + ([] if if_tail is None else [b"if_tail=%d" % if_tail]), mark, future))
            self.changed.notify_all()
        return future


def _ids() -> Callable[[], bytes]:
    count = iter(range(1, 100))
    return lambda: b"p%d" % next(count)


def test_units_waiting_are_joined_within_the_bounds_and_numbered_as_they_go_out() -> None:
    sent = _Sent()
    appends = OrderedAppends(sent, PipelineConfig(batches_in_flight_max=1, join_records_max=3), new_producer=_ids())
    futures = [appends.put([b"%d" % i] * n) for i, n in enumerate((1, 2, 1, 1, 1))]
    assert [(p, m.sequence) for p, m, _ in sent.batches] == [([b"0"], 0)]
    sent.batches[0][2].set_result(range(1, 2))
    assert [(p, m.sequence) for p, m, _ in sent.batches[1:]] == [([b"1", b"1", b"2"], 1)]  # 3 records at most
    sent.batches[1][2].set_result(range(2, 5))
    assert [(p, m.sequence) for p, m, _ in sent.batches[2:]] == [([b"3", b"4"], 2)]
    sent.batches[2][2].set_result(range(5, 7))
    assert [f.result(0) for f in futures] == [range(1, 2), range(2, 4), range(4, 5), range(5, 6), range(6, 7)]
    assert appends.held_bytes == 0


def test_put_blocks_at_the_byte_bound_then_raises_buffer_full_and_a_lone_large_unit_goes() -> None:
    sent = _Sent()
    appends = OrderedAppends(sent, PipelineConfig(held_bytes_max=4, room_wait_s=0))
    first = appends.put([b"abcd"])
    with pytest.raises(BufferFullError) as full:
        appends.put([b"e"])
    assert full.value.retriable
    sent.batches[0][2].set_result(range(1, 2))
    assert first.result(0) == range(1, 2)
    large = appends.put([b"x" * 10])  # nothing held: it goes, however large
    assert sent.batches[1][0] == [b"x" * 10]
    sent.batches[1][2].set_result(range(2, 3))
    assert large.result(0) == range(2, 3)


def test_a_new_producer_goes_on_from_0_only_once_the_old_ones_batches_are_answered() -> None:
    sent = _Sent()
    appends = OrderedAppends(sent, PipelineConfig(batches_in_flight_max=4, retry=RetryPolicy(attempts_max=1)),
                             new_producer=_ids())
    doomed, behind = appends.put([b"a"]), appends.put([b"b"])
    sent.batches[0][2].set_exception(StorageError("final"))  # refused for good; "b" is in flight
    with pytest.raises(StorageError):
        doomed.result(0)
    later = appends.put([b"c"])
    assert len(sent.batches) == 2, "nothing of the new producer goes out before the old one's answers"
    sent.batches[1][2].set_exception(SequenceGapError("before 0"))
    with pytest.raises(StorageError):  # refused for the failed batch's sake: that batch's error
        behind.result(0)
    assert [(p, m) for p, m, _ in sent.batches[2:]] == [([b"c"], ProducerMark(b"p2", 0))]
    sent.batches[2][2].set_result(range(1, 2))
    assert later.result(0) == range(1, 2)


def test_close_fails_what_was_not_sent_and_what_waits_to_be_sent_again_with_its_own_error() -> None:
    sent = _Sent()
    retries: list[Callable[[], None]] = []
    appends = OrderedAppends(sent, PipelineConfig(batches_in_flight_max=1),
                             later=lambda _delay, run: retries.append(run))
    refused, queued = appends.put([b"a"]), appends.put([b"b"])
    sent.batches[0][2].set_exception(OverloadedError("busy"))  # to be sent again, after a backoff
    appends.close()
    with pytest.raises(OverloadedError):
        refused.result(0)
    with pytest.raises(ClosedError):
        queued.result(0)
    with pytest.raises(ClosedError):
        appends.put([b"late"])
    assert appends.held_bytes == 0 and len(sent.batches) == 1
    appends.flush(0)


def test_a_batch_waiting_to_be_sent_again_ahead_of_one_that_fails_for_good_fails_with_its_own_error() -> None:
    """Found by the fault suite (stream writers under scaling through a server, seed 2): batch 0's
    answer was lost (it may be stored) and batch 1 of the same producer was refused for good because
    the log was sealed. Batch 0 failed with LogSealedError, which says "not stored": the stream
    writer sent it to the next segment, and it was stored twice. It fails with its own error; the
    unit waiting behind fails with the final one, and so does the one in flight once the store
    refuses it (as it must, for the failed batch's sake)."""
    sent = _Sent()
    retries: list[Callable[[], None]] = []
    appends = OrderedAppends(sent, PipelineConfig(batches_in_flight_max=3, retry=RetryPolicy(attempts_max=3)),
                             later=lambda _delay, run: retries.append(run))
    ahead, sealed, in_flight, waiting = (appends.put([p]) for p in (b"a", b"b", b"c", b"d"))
    sent.batches[0][2].set_exception(TimedOutError("the answer was lost"))
    sent.batches[1][2].set_exception(LogSealedError("log 1 is sealed"))
    assert isinstance(ahead.exception(0), TimedOutError), "a batch that may be stored was said not to be"
    assert isinstance(sealed.exception(0), LogSealedError)
    assert isinstance(waiting.exception(0), LogSealedError)  # never sent: it cannot overtake a retry
    assert not in_flight.done()
    sent.batches[2][2].set_exception(SequenceGapError("batch 2 before 1"))
    assert isinstance(in_flight.exception(0), LogSealedError)
    assert len(sent.batches) == 3, "nothing is sent again behind the caller's back"
