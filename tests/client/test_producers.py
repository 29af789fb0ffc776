"""The client's per-log producers (each an ordered append pipeline): consecutive sequence numbers
per log, a new id after a failure, and a bounded memory that never forgets a log with a batch in
flight nor reuses an id from 0."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from seaway import StorageError, UnavailableError
from seaway.client._producers import LogProducers
from seaway.log import OrderedAppends, PipelineConfig, RetryPolicy
from seaway.logsdb import ProducerMark


class _Sends:
    def __init__(self) -> None:
        self.sent: list[tuple[int, ProducerMark, Future[range]]] = []

    def make(self, log_id: int, new_id: Callable[[], bytes]) -> OrderedAppends:
        def send(payloads: Sequence[bytes], mark: ProducerMark, _if_tail: int | None) -> Future[range]:
            future: Future[range] = Future()
            self.sent.append((log_id, mark, future))
            return future

        return OrderedAppends(send, PipelineConfig(retry=RetryPolicy(attempts_max=1)), new_producer=new_id)

    def marks(self) -> list[tuple[int, ProducerMark]]:
        return [(log_id, mark) for log_id, mark, _ in self.sent]

    def answer_all(self) -> None:
        for _, _, future in self.sent:
            if not future.done():
                future.set_result(range(1, 2))


def _producers(sends: _Sends) -> LogProducers:
    counter = itertools.count()
    return LogProducers(sends.make, logs_max=3, new_id=lambda: b"p%d" % next(counter))


def test_each_log_has_its_own_producer_with_consecutive_sequences_and_a_new_one_after_a_failure() -> None:
    sends = _Sends()
    producers = _producers(sends)
    for log_id in (1, 1, 2):
        producers.get(log_id).put([b"x"])
    assert sends.marks() == [(1, ProducerMark(b"p0", 0)), (1, ProducerMark(b"p0", 1)), (2, ProducerMark(b"p1", 0))]
    sends.sent[0][2].set_exception(StorageError("final"))  # log 1's batch 0 failed for good
    sends.sent[1][2].set_result(range(1, 2))
    producers.get(1).put([b"y"])
    assert sends.marks()[3] == (1, ProducerMark(b"p2", 0))


def test_the_least_recently_used_idle_log_is_forgotten_beyond_the_bound() -> None:
    sends = _Sends()
    producers = _producers(sends)
    busy = producers.get(1).put([b"x"])  # in flight
    for log_id in (2, 3, 2):
        producers.get(log_id).put([b"x"])
        sends.sent[-1][2].set_result(range(1, 2))
    producers.get(4).put([b"x"])  # 3 is the least recently used idle log; 4's batch stays in flight
    assert len(producers) == 3 and 3 not in producers and 1 in producers
    producers.get(3).put([b"x"])
    assert sends.marks()[-1] == (3, ProducerMark(b"p4", 0))  # a new id, never p2 from 0 again
    assert 2 not in producers and len(producers) == 3
    producers.get(5)  # every log left has a batch in flight: the bound gives rather than the order
    assert len(producers) == 4 and 1 in producers
    sends.answer_all()
    assert busy.result(1) == range(1, 2)
    producers.forget(5)
    assert 5 not in producers


def test_a_log_forgotten_between_looking_up_its_producer_and_putting_keeps_one_producer() -> None:
    """The client's append looks the log's producer up, then puts. If another log's first append
    forgot that idle producer in between, the put went to the forgotten one and the log's next
    append to a new producer: while the first batch waited for its retry, the next one went out
    under the new id and was stored before it. Looking up and queueing are one step now."""
    sent: list[tuple[bytes, ProducerMark]] = []
    futures: list[Future[range]] = []
    retries: list[Callable[[], None]] = []
    counter = itertools.count()
    evicted = threading.Event()
    producers: LogProducers

    def evict_log_1() -> None:
        producers.get(2)  # another log's first append, at the bound: forgets log 1's idle producer
        evicted.set()

    class _Racing(OrderedAppends):
        race = True

        def put_unit(self, *args: Any, **kwargs: Any) -> None:
            if _Racing.race:  # the other thread gets its chance between looking up and queueing
                _Racing.race = False
                threading.Thread(target=evict_log_1, daemon=True).start()
                evicted.wait(1.0)  # cannot happen while the unit is being queued: then times out
            super().put_unit(*args, **kwargs)

    def make(log_id: int, new_id: Callable[[], bytes]) -> OrderedAppends:
        def send(payloads: Sequence[bytes], mark: ProducerMark, _if_tail: int | None) -> Future[range]:
            future: Future[range] = Future()
            sent.append((bytes(payloads[0]), mark))
            futures.append(future)
            return future

        return _Racing(send, PipelineConfig(retry=RetryPolicy(attempts_max=3)), new_producer=new_id,
                       later=lambda _delay, run: retries.append(run))

    producers = LogProducers(make, logs_max=1, new_id=lambda: b"p%d" % next(counter))
    first = producers.put(1, [b"x"])
    assert evicted.wait(5.0)
    futures[0].set_exception(UnavailableError("lost"))  # x waits for its retry
    second = producers.put(1, [b"y"])
    assert [payload for payload, _ in sent] == [b"x"], "y went out while x waited for its retry"
    for run in retries:
        run()
    assert [payload for payload, _ in sent] == [b"x", b"x", b"y"]
    assert sent[1][1] == sent[0][1] and sent[2][1] == ProducerMark(sent[0][1].producer_id, 1)
    futures[1].set_result(range(1, 2))
    futures[2].set_result(range(2, 3))
    assert first.result(1.0) == range(1, 2) and second.result(1.0) == range(2, 3)
