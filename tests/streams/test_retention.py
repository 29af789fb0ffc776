"""Retention of streams by time, by size and by consumption, pass by pass with a fake clock; and
readers that meet truncated events. In one store, and in a split store (its segments' logs in
another store's logs)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import InvalidArgumentError, SeawayConfig, StreamTruncatedError
from seaway.log import LSN_OLDEST
from seaway.streams import ReaderConfig, RetentionBySize, RetentionByTime, Stream, StreamCut, key_position, segment_str
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.streams._retention import RetentionConfig, StreamRetention
from seaway.testing import FakeClock
from seaway.testing._split import USER_CONFIG

MINUTE_S = 60
EVENTS_PER_BATCH = 5


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["one", "split"])
def sw(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[seaway.Seaway]:
    """A store; ``split``: its segments' logs in a second store's logs (a control node's shape), on
    the same clock."""
    config = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None),
                          retention=RetentionConfig(interval_s=None, cut_interval_s=MINUTE_S))  # passes by hand
    with contextlib.ExitStack() as stack:
        user_logs = None
        if request.param == "split":
            user_logs = stack.enter_context(seaway.Seaway(tmp_path / "user", USER_CONFIG, clock=clock)).logs
        store = stack.enter_context(seaway.Seaway(tmp_path / "data", config, clock=clock, user_logs=user_logs))
        store.streams.create_scope("sc")
        yield store


def retention(sw: seaway.Seaway) -> StreamRetention:
    assert sw.retention is not None
    return sw.retention


def write(sw: seaway.Seaway, stream: Stream, tag: str, count: int = EVENTS_PER_BATCH) -> list[bytes]:
    """``count`` events ``tag:i`` appended to the segments their keys route to."""
    segments = stream.current_segments()
    payloads = [f"{tag}:{i}".encode() for i in range(count)]
    for i, payload in enumerate(payloads):
        segment = next(s for s in segments if s.holds(key_position(f"k{i}")))
        sw.logs.get(segment.log_id).append_batch_async([payload]).result()
    return payloads


def read_all(sw: seaway.Seaway, stream: Stream) -> set[bytes]:
    """Every event from the head to the tail, by a fresh (unsubscribed) group."""
    name = f"all-{len(sw.streams.controller.list_streams('sc'))}-{stream.stream}"
    group = sw.streams.create_reader_group(name, stream, end=stream.tail())
    found: set[bytes] = set()
    with group.reader("r") as reader:
        while (event := reader.read_next(1.0)) is not None:
            found.add(event.payload)
    sw.streams.delete_reader_group(name)
    return found


def minutes(sw: seaway.Seaway, clock: FakeClock, stream: Stream, first: int, count: int) -> dict[int, list[bytes]]:
    """Minute by minute: a batch of events tagged with the minute, then a retention pass."""
    batches = {}
    for minute in range(first, first + count):
        batches[minute] = write(sw, stream, f"m{minute}")
        retention(sw).run_once()
        clock.advance(MINUTE_S)
    return batches


def events_of(batches: dict[int, list[bytes]], minutes_: range) -> set[bytes]:
    return {e for m in minutes_ for e in batches[m]}


def test_by_time_events_older_than_min_go_and_newer_stay(sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/t", retention=RetentionByTime(min_s=5 * MINUTE_S))
    kept_forever = sw.streams.create("sc/none")  # no policy: never truncated
    batches = minutes(sw, clock, stream, 0, 3)
    write(sw, kept_forever, "x")
    assert read_all(sw, stream) == events_of(batches, range(3))  # nothing is 5 minutes old yet
    batches |= minutes(sw, clock, stream, 3, 9)  # minutes 0-11; the clock is now at minute 12
    # A pass at minute 12: the batch of minute m is 12 - m minutes old. The cut recorded just after
    # minute 7's batch is exactly 5 minutes old: minutes 0-7 go, 8-11 (and the new 12) stay.
    batches[12] = write(sw, stream, "m12")
    done = retention(sw).run_once()
    assert [t.stream for t in done] == [stream.name]
    assert read_all(sw, stream) == events_of(batches, range(8, 13))
    assert read_all(sw, kept_forever) == {f"x:{i}".encode() for i in range(EVENTS_PER_BATCH)}
    assert kept_forever.head().positions == {s.id: LSN_OLDEST for s in kept_forever.current_segments()}


def test_a_tail_cut_is_recorded_once_per_cut_interval(sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/c", retention=RetentionByTime(min_s=3600))
    for _ in range(12):  # passes every 20 s for 4 minutes: a cut at 0, 60, 120 and 180 s
        write(sw, stream, "e", 1)
        retention(sw).run_once()
        clock.advance(20)
    times = [t for t, _ in stream.metadata.retention_set()]
    assert [t - times[0] for t in times] == [0, 60_000, 120_000, 180_000]


def test_by_size_keeps_at_least_min_bytes_and_no_more_than_a_cut_beyond(sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/z", retention=RetentionBySize(min_bytes=2_000))
    batches = {}
    for minute in range(20):
        batches[minute] = write(sw, stream, f"m{minute}:" + "x" * 100)  # ~500 payload bytes a batch
        retention(sw).run_once()
        clock.advance(MINUTE_S)
    cuts = stream.metadata.retention_set()
    newest_size = cuts[-1][1]
    assert newest_size >= 20 * 500
    head = stream.head()
    at = [t for t, _ in cuts if StreamCut(stream.name, stream.metadata.recorded_cut(t)[1]) == head]
    assert len(at) == 1, "the head is at a recorded cut"
    i = [t for t, _ in cuts].index(at[0])
    # Truncated at the newest cut that keeps min_bytes: the next newer one keeps less.
    assert newest_size - cuts[i][1] >= 2_000 > newest_size - cuts[i + 1][1]
    kept = read_all(sw, stream)
    first_kept = min(int(e.split(b":")[0][1:]) for e in kept)
    assert kept == events_of(batches, range(first_kept, 20))
    batch_bytes = newest_size / 20  # as stored: the payloads and each entry's overhead
    assert 2_000 <= (20 - first_kept) * batch_bytes < 2_000 + batch_bytes  # whole batches: one cut a batch


def test_a_subscribed_group_holds_the_data_until_max_then_its_checkpoint_frees_it_down_to_min(
        sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/q", retention=RetentionByTime(min_s=2 * MINUTE_S, max_s=10 * MINUTE_S))
    group = sw.streams.create_reader_group("slow", stream, retention_subscribed=True)
    assert group.describe().retention_subscribed
    sw.streams.create_reader_group("other", stream)  # not subscribed: does not hold anything back
    batches = minutes(sw, clock, stream, 0, 9)
    assert read_all(sw, stream) == events_of(batches, range(9))  # the group read nothing: all kept
    batches |= minutes(sw, clock, stream, 9, 6)  # minutes 0-14, the clock at 15
    # Past max: at the last pass (minute 14) the cut after minute 4's batch is 10 minutes old:
    # the stream is truncated there, and keeps minutes 5-14.
    assert read_all(sw, stream) == events_of(batches, range(5, 15))
    reader = group.reader("r")
    with pytest.raises(StreamTruncatedError, match="truncated"):
        while reader.read_next(0.5) is not None:
            pass
    seen: set[bytes] = set()
    while (event := reader.read_next(0.5)) is not None:
        seen.add(event.payload)
    assert seen == events_of(batches, range(5, 15))
    reader.checkpoint()  # at the tail: the group has read everything
    batches[15] = write(sw, stream, "m15")
    retention(sw).run_once()
    # Down to min_s, not below it: at minute 15 the cut after minute 13's batch is 2 minutes old,
    # and the group's checkpoint is past it: minutes 14 and 15 stay.
    assert read_all(sw, stream) == events_of(batches, range(14, 16))
    reader.close()


def test_a_subscribed_group_that_checkpointed_lets_retention_truncate_only_what_it_read(
        sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/p", retention=RetentionByTime(min_s=0))
    group = sw.streams.create_reader_group("g", stream, retention_subscribed=True)
    batches = minutes(sw, clock, stream, 0, 3)
    with group.reader("r", ReaderConfig(batch_items_max=1, buffered_items_max=1)) as reader:
        read = [reader.read_next(1.0) for _ in range(2 * EVENTS_PER_BATCH)]  # minutes 0 and 1
        assert all(e is not None for e in read)
        reader.checkpoint()
        batches[3] = write(sw, stream, "m3")
        clock.advance(MINUTE_S)
        retention(sw).run_once()
        # The newest recorded cut at or before the checkpoint is the one after minute 1's batch.
        assert read_all(sw, stream) == events_of(batches, range(2, 4))
    sw.streams.delete_reader_group("g")  # unsubscribed: nothing holds retention back now
    assert stream.metadata.meta.scan("streams", prefix=b"rgsub/", limit=10) == []
    clock.advance(MINUTE_S)
    retention(sw).run_once()
    assert read_all(sw, stream) == set()  # min 0: down to the cut just recorded at the tail


def test_the_head_never_moves_back(sw: seaway.Seaway, clock: FakeClock) -> None:
    stream = sw.streams.create("sc/h", retention=RetentionByTime(min_s=5 * MINUTE_S))
    batches = minutes(sw, clock, stream, 0, 3)  # cuts after minutes 0, 1 and 2's batches
    batches[-1] = write(sw, stream, "extra")
    stream.truncate(stream.tail())  # by hand, past every cut recorded so far
    head = stream.head()
    for minute in range(3, 8):  # the cuts of minutes 0-2 come of age: all below the head
        batches[minute] = write(sw, stream, f"m{minute}")
        assert retention(sw).run_once() == []
        assert stream.head() == head
        clock.advance(MINUTE_S)
    assert read_all(sw, stream) == events_of(batches, range(3, 8))
    batches[8] = write(sw, stream, "m8")
    done = retention(sw).run_once()  # minute 3's cut is 5 minutes old, and past the head
    assert [t.cut for t in done] == [stream.head()]
    assert stream.compare(stream.head(), head) == 1
    assert read_all(sw, stream) == events_of(batches, range(4, 9))


def test_a_group_cannot_start_below_the_head(sw: seaway.Seaway) -> None:
    stream = sw.streams.create("sc/b", segments=2)
    old_head = stream.head()
    write(sw, stream, "a")
    stream.truncate(stream.tail())
    with pytest.raises(StreamTruncatedError, match="start there or later"):
        sw.streams.create_reader_group("g", stream, start=old_head)
    half = dict(stream.head().positions)  # ahead in one segment, below the head in the other
    first = min(half)
    half[first] = LSN_OLDEST
    with pytest.raises(StreamTruncatedError):
        sw.streams.create_reader_group("g", stream, start=StreamCut(stream.name, half))
    with pytest.raises(InvalidArgumentError):
        sw.streams.create_reader_group("g", stream, retention_subscribed="yes")  # type: ignore[arg-type]
    assert sw.streams.create_reader_group("g", stream).describe().start == stream.head()


def test_a_reader_in_a_trimmed_segment_gets_the_error_once_then_reads_on(sw: seaway.Seaway) -> None:
    stream = sw.streams.create("sc/r")
    write(sw, stream, "a", 10)
    group = sw.streams.create_reader_group("g", stream)  # at the head: the first event
    write(sw, stream, "b", 10)
    stream.truncate(stream.tail())  # the group is behind it now
    after = write(sw, stream, "c", 3)
    segment = stream.current_segments()[0]
    with group.reader("r") as reader:
        with pytest.raises(StreamTruncatedError, match=f"segment {segment_str(segment.id)} lost positions"):
            reader.read_next(1.0)
        got = [reader.read_next(1.0) for _ in range(3)]
        assert [e.payload for e in got if e is not None] == after
        assert reader.read_next(0) is None


def test_a_reader_in_a_deleted_segment_gets_the_error_then_reads_the_successors(sw: seaway.Seaway) -> None:
    stream = sw.streams.create("sc/d")
    write(sw, stream, "a", 10)
    old = stream.current_segments()[0]
    group = sw.streams.create_reader_group("g", stream)
    with group.reader("r", ReaderConfig(batch_items_max=1, buffered_items_max=1)) as reader:
        assert reader.read_next(1.0) is not None
        stream.split(old.id)
        write(sw, stream, "b", 10)
        stream.truncate(stream.tail())  # the old segment is wholly below the head: deleted
        after = write(sw, stream, "c", 10)
        errors: list[str] = []
        got: list[bytes] = []
        for _ in range(40):
            try:
                event = reader.read_next(0.5)
            except StreamTruncatedError as exc:
                errors.append(str(exc))
                continue
            if event is None:
                break
            got.append(event.payload)
        assert errors and f"segment {segment_str(old.id)} from position" in errors[0]
        assert any("lost" in e for e in errors[1:])  # the successors were trimmed under it too
        assert sorted(p for p in got if p.startswith(b"c")) == sorted(after)
        assert not [p for p in got if p.startswith(b"b")]


def test_retention_config_is_checked() -> None:
    with pytest.raises(InvalidArgumentError):
        RetentionConfig(cut_interval_s=0)
    with pytest.raises(InvalidArgumentError):
        RetentionConfig(interval_s=-1)
    assert RetentionConfig(interval_s=None).interval_s is None


def test_the_store_runs_retention_in_the_background_unless_disabled(tmp_path: Path) -> None:
    # A cut each pass: a pass may record the tail before the write below, and with the default
    # (a cut a minute) none after it would come within the wait (this test failed so, now and then).
    config = SeawayConfig(retention=RetentionConfig(interval_s=0.05, cut_interval_s=0.05))
    with seaway.Seaway(tmp_path / "on", config) as sw:
        sw.streams.create_scope("sc")
        stream = sw.streams.create("sc/bg", retention=RetentionByTime(min_s=0))  # everything may go
        write(sw, stream, "a")
        tail = stream.tail()  # a pass may truncate at a cut recorded amid the writes: wait for the whole
        deadline = time.monotonic() + 20
        while stream.head() != tail and time.monotonic() < deadline:
            time.sleep(0.05)  # a real background thread: there is no pass to wait on but its effect
        assert stream.head() == tail, "no background retention pass truncated the stream"
        assert read_all(sw, stream) == set()
    with seaway.Seaway(tmp_path / "off", SeawayConfig(retention=None)) as sw:
        assert sw.retention is None


def test_a_time_window_longer_than_the_retention_set_covers_at_full_rate_still_truncates(
        sw: seaway.Seaway, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    # A set of 24 cuts stands for the 20,000 (13.9 days at one a minute): a cut every two hours for
    # 12 days is 144 cuts, six times what the set holds (a year of cuts a minute is 26 times).
    monkeypatch.setattr("seaway.streams._controller.RETENTION_CUTS_MAX", 24)
    window_s = 10 * 86_400
    stream = sw.streams.create("sc/s", segments=1, retention=RetentionByTime(min_s=window_s))
    written: list[tuple[int, list[bytes]]] = []
    for hours in range(0, 12 * 24, 2):
        written.append((clock.now_ms(), write(sw, stream, f"h{hours}", 1)))
        retention(sw).run_once()
        clock.advance(2 * 3600)
    cuts = stream.metadata.retention_set()
    assert len(cuts) <= 24
    now_ms = clock.now_ms()
    kept = read_all(sw, stream)
    assert written[0][1][0] not in kept, "nothing was truncated: no recorded cut was old enough"
    for at_ms, payloads in written:
        if now_ms - at_ms <= window_s * 1000:
            assert payloads[0] in kept, f"an event {(now_ms - at_ms) / 86_400_000:.1f} days old is gone"
    # The oldest kept is not far beyond the window: the thinned cuts are near in proportion to age.
    oldest = min(at for at, payloads in written if payloads[0] in kept)
    assert (now_ms - oldest) / 1000 <= window_s * 1.3, f"{(now_ms - oldest) / 86_400_000:.1f} days kept"
