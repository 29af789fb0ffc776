"""Lag (events or entries left to read, counted without reading them) of reader groups and consumer
groups, embedded and through a server, at known points: after writes, reads, a scaling, a resize, a
trim, and with a transaction open."""

from __future__ import annotations

from seaway.streams import ReaderConfig, Stream
from tests.api.conftest import Api

QUICK = ReaderConfig(batch_items_max=1, sync_interval_s=0.05, txn_poll_s_max=0.02)


def _stream(api: Api, segments: int, *, transactional: bool = False) -> Stream:
    scope = api.name("lag")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/s", segments=segments, transactional=transactional)
    return stream


def _write(stream: Stream, count: int, start: int = 0) -> None:
    with stream.writer() as writer:
        for i in range(start, start + count):
            writer.write(b"%d" % i, f"k{i}").result(10)


def test_a_reader_groups_lag_counts_the_events_it_has_not_read(api: Api) -> None:
    stream = _stream(api, 2)
    _write(stream, 10)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    info = group.describe()
    assert info.lag == 10 == sum(info.lags.values())
    assert set(info.lags) == {s.id for s in stream.current_segments()}
    with group.reader("r", QUICK) as reader:
        for _ in range(4):
            assert reader.read_next(10) is not None
        reader.checkpoint()
        assert group.describe().lag == 6 == group.lag()
        # A scaling: the sealed segments keep what is left in them; the new one counts from its start.
        stream.merge([s.id for s in stream.current_segments()])
        _write(stream, 5, 10)
        info = group.describe()
        assert info.lag == 11 and len(info.lags) == 3
        (merged,) = stream.current_segments()
        assert info.lags[merged.id] == 5
        for _ in range(11):
            assert reader.read_next(10) is not None
        reader.checkpoint()
    assert group.describe().lag == 0


def test_a_reader_groups_lag_counts_a_transactions_events_once_written(api: Api) -> None:
    stream = _stream(api, 1, transactional=True)
    group = api.sw.streams.create_reader_group(api.name("g"), stream)
    with stream.writer() as writer:
        tx = api.sw.transaction()
        writer.write_batch([b"a", b"b"], "k", txn=tx).result(10)
        # Stored, not yet visible: counted all the same (telling them apart would mean reading them).
        assert group.describe().lag == 2
        tx.abort()
    assert group.describe().lag == 2
