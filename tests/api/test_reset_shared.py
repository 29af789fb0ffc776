"""Resetting a group's position (to the head, the tail, a time or a cut), embedded and through a
server: reader groups and consumer groups."""

from __future__ import annotations

import pytest

from seaway import InvalidArgumentError, ReaderOfflineError
from seaway.streams import ReaderConfig, Stream
from tests.api.conftest import Api

QUICK = ReaderConfig(batch_items_max=1, sync_interval_s=0.05)


def _stream(api: Api, count: int) -> Stream:
    scope = api.name("reset")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/s", segments=2)
    with stream.writer() as writer:
        for i in range(count):
            writer.write(b"%d" % i, f"k{i}").result(10)
    return stream


def test_a_reader_group_resets_to_the_head_the_tail_a_time_and_a_cut(api: Api) -> None:
    stream = _stream(api, 6)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    reader = group.reader("r", QUICK)
    events = [reader.read_next(10) for _ in range(6)]
    assert all(e is not None for e in events)
    reader.checkpoint()
    assert group.lag() == 0
    head = group.reset("head")
    assert head == stream.head() and group.lag() == 6
    assert group.describe().readers == ()  # removed by the reset
    with pytest.raises(ReaderOfflineError):
        for _ in range(10):  # at most the batch it held, then it finds itself gone
            reader.read_next(0.1)
    group.reset("tail")
    assert group.lag() == 0
    group.reset(time_ms=0)
    assert group.lag() == 6
    late = sorted(e.timestamp_ms for e in events if e is not None)[3]
    group.reset(time_ms=late)
    assert group.lag() == sum(1 for e in events if e is not None and e.timestamp_ms >= late)
    group.reset(head)
    again = group.reader("r2", QUICK)
    read = [again.read_next(10) for _ in range(6)]
    assert sorted(e.payload for e in read if e is not None) == sorted(b"%d" % i for i in range(6))
    again.close()
    with pytest.raises(InvalidArgumentError):
        group.reset("oldest")
