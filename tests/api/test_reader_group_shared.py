"""Reader groups over the same API embedded and through a server."""

from __future__ import annotations

import time

import pytest

from seaway import InvalidArgumentError, StreamTruncatedError
from seaway.streams import ReaderConfig, key_position
from tests.api.conftest import Api

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""


def test_a_reader_group_reads_every_event_once_in_key_order_across_a_scaling(api: Api) -> None:
    scope = api.name("sc")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", segments=2)
    written: list[bytes] = []

    def write(count: int) -> None:
        segments = stream.current_segments()
        for i in range(count):
            key = f"k{i % 8}"
            payload = f"{key}:{len(written)}".encode()
            segment = next(s for s in segments if s.holds(key_position(key)))
            api.sw.logs.get(segment.log_id).append_batch_async([payload]).result()
            written.append(payload)

    write(40)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    readers = [group.reader(name, ReaderConfig(batch_items_max=5)) for name in ("a", "b")]
    read: list[bytes] = []
    for _ in range(8):
        for reader in readers:
            event = reader.read_next(0.1)
            if event is not None:
                read.append(event.payload)
    stream.merge([s.id for s in stream.current_segments()])
    write(40)
    stream.seal()
    idle = 0
    while idle < 3 and len(read) <= len(written):
        events = [reader.read_next(0) for reader in readers]
        if all(e is None for e in events):  # wait only when nobody has anything at hand
            events = [reader.read_next(0.1) for reader in readers]
        read.extend(e.payload for e in events if e is not None)
        idle = idle + 1 if all(e is None for e in events) else 0
    assert sorted(read) == sorted(written) and len(read) == len(set(read))
    last: dict[str, int] = {}
    for payload in read:
        key, _, n = payload.decode().partition(":")
        assert int(n) > last.get(key, -1)
        last[key] = int(n)
    info = group.describe()
    assert not info.unassigned and not any(info.assignments.values())  # the sealed stream is read to its end
    started = time.monotonic()
    assert readers[0].read_next(5.0) is None
    assert time.monotonic() - started < 2.5  # at once, not after the timeout: nothing is left to read
    for reader in readers:
        reader.close()
    api.sw.streams.delete_reader_group(group.name)


def test_a_reader_group_below_the_head_gets_stream_truncated(api: Api) -> None:
    scope = api.name("sc")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s")
    log = api.sw.logs.get(stream.current_segments()[0].log_id)
    log.append_batch_async([b"a0", b"a1"]).result()
    old_head = stream.head()
    behind = api.sw.streams.create_reader_group(api.name("g"), stream, retention_subscribed=True)
    assert behind.describe().retention_subscribed
    log.append_batch_async([b"b0", b"b1"]).result()
    stream.truncate(stream.tail())
    with pytest.raises(StreamTruncatedError, match="start there or later"):
        api.sw.streams.create_reader_group(api.name("g"), stream, start=old_head)
    log.append_batch_async([b"c0"]).result()
    with behind.reader("r") as reader:
        with pytest.raises(StreamTruncatedError, match="lost positions"):
            reader.read_next(5.0)
        event = reader.read_next(5.0)
        assert event is not None and event.payload == b"c0"
    api.sw.streams.delete_reader_group(behind.name)


def test_list_reader_groups_names_every_group_once_in_name_order(api: Api) -> None:
    scope = api.name("sc")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", segments=1)
    names = [api.name("lg") for _ in range(3)]
    for name in reversed(names):
        api.sw.streams.create_reader_group(name, stream)
    listed = api.sw.streams.list_reader_groups()
    assert [n for n in listed if n in names] == sorted(names)
    assert len(listed) == len(set(listed))
    assert api.sw.streams.list_reader_groups(limit=2) == listed[:2]
    with pytest.raises(InvalidArgumentError):
        api.sw.streams.list_reader_groups(limit=0)
    api.sw.streams.delete_reader_group(names[1])
    assert names[1] not in api.sw.streams.list_reader_groups()
    assert {names[0], names[2]} <= set(api.sw.streams.list_reader_groups())


def test_a_reader_is_iterable_to_the_end_of_a_sealed_stream_and_again_from_where_it_is(api: Api) -> None:
    scope = api.name("sc")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", segments=2)
    with stream.writer() as writer:
        for i in range(30):
            writer.write(f"e{i}".encode(), routing_key=f"k{i % 5}")
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    with group.reader("only") as reader:
        first = []
        for event in reader:  # waits for more while the stream is open
            first.append(event.payload)
            if len(first) == 10:
                break
        stream.seal()
        rest = [event.payload for event in reader]  # goes on from where it stopped, ends at the seal
    assert sorted(first + rest) == sorted(f"e{i}".encode() for i in range(30))
    assert len(first) == 10 and len(rest) == 20
