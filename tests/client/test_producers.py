"""The client's per-log producers: consecutive sequence numbers, a new id after a failure, and a
bounded memory that never forgets a log with a batch in flight nor reuses an id from 0."""

from __future__ import annotations

import itertools

from seaway.client._producers import ProducerSequences
from seaway.logsdb import ProducerMark


def _ids() -> ProducerSequences:
    counter = itertools.count()
    return ProducerSequences(logs_max=3, new_id=lambda: b"p%d" % next(counter))


def test_each_log_has_its_own_producer_with_consecutive_sequences() -> None:
    producers = _ids()
    assert [producers.take(1), producers.take(1), producers.take(2)] == [
        ProducerMark(b"p0", 0), ProducerMark(b"p0", 1), ProducerMark(b"p1", 0)]
    producers.failed(1, ProducerMark(b"p0", 0))
    assert producers.take(1) == ProducerMark(b"p2", 0)
    producers.failed(1, ProducerMark(b"p0", 1))  # an old producer's failure changes nothing now
    assert producers.take(1) == ProducerMark(b"p2", 1)


def test_the_least_recently_used_idle_log_is_forgotten_beyond_the_bound() -> None:
    producers = _ids()
    busy = producers.take(1)  # in flight
    for log_id in (2, 3):
        producers.answered(log_id, producers.take(log_id))
    producers.answered(2, producers.take(2))  # 3 is now the least recently used idle log
    producers.take(4)
    assert len(producers) == 3 and 3 not in producers and 1 in producers
    assert producers.take(3) == ProducerMark(b"p4", 0)  # a new id, never p2 from 0 again
    assert 2 not in producers and len(producers) == 3
    producers.take(5)  # every log left has a batch in flight: the bound gives rather than the order
    assert len(producers) == 4 and 1 in producers
    producers.answered(1, busy)
    producers.forget(5)
    assert 5 not in producers
