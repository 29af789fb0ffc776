"""Routing keys stored with events (``store_routing_keys``, and on transactional streams), as the
shared suite sees them: every test runs against the embedded store and a server."""

from __future__ import annotations

import pytest

import seaway
from seaway import InvalidArgumentError
from seaway.log import Record
from seaway.streams import Event, ReaderConfig, Stream, unframe_keyed
from tests.api.conftest import Api

QUICK = ReaderConfig(sync_interval_s=0.05, txn_poll_s_max=0.02)


def make(api: Api, segments: int = 1, **flags: bool) -> Stream:
    scope = api.name("keys")
    api.sw.streams.create_scope(scope)
    stream: Stream = api.sw.streams.create(f"{scope}/events", segments=segments, **flags)
    return stream


def read(api: Api, stream: Stream, count: int) -> list[Event]:
    reader = api.sw.streams.create_reader_group(api.name("g"), stream).reader("r", QUICK)
    out: list[Event] = []
    try:
        while len(out) < count:
            event = reader.read_next(10)
            assert event is not None, f"only {len(out)} events came of {count}"
            out.append(event)
        assert reader.read_next(0.2) is None, "more events than expected"
    finally:
        reader.close()
    return out


def test_a_stream_storing_keys_gives_each_event_its_key_as_written(api: Api) -> None:
    stream = make(api, segments=3, store_routing_keys=True)
    config = api.sw.streams.get(stream.name).config
    assert config.store_routing_keys and not config.transactional and config.framed
    with pytest.raises(InvalidArgumentError, match="fixed"):
        api.sw.streams.controller.update(stream.metadata, seaway.StreamConfig())
    written = {b"a": "user-7", b"b": b"\x00\xffraw", b"c": None, b"d": "", b"e": "ключ"}
    with stream.writer() as writer:
        for payload, key in written.items():
            writer.write(payload, key).result(10)
        writer.write_batch([b"f", b"g"], "user-8").result(10)
    got = {e.payload: e.routing_key for e in read(api, stream, len(written) + 2)}
    assert got == {**written, b"f": "user-8", b"g": "user-8"}
    assert type(got[b"b"]) is bytes and type(got[b"a"]) is str


def test_keys_are_stored_across_a_scaling(api: Api) -> None:
    stream = make(api, store_routing_keys=True)
    with stream.writer() as writer:
        writer.write(b"before", "k").result(10)
        stream.split(stream.current_segments()[0].id, 2)
        writer.write(b"after", "k").result(10)  # rerouted to a successor, still with its key
    got = read(api, stream, 2)
    assert [(e.payload, e.routing_key) for e in got] == [(b"before", "k"), (b"after", "k")]


def test_transactional_streams_keep_keys_in_and_out_of_transactions(api: Api) -> None:
    stream = make(api, transactional=True)
    assert stream.config.framed and not stream.config.store_routing_keys
    with stream.writer() as writer:
        with api.sw.transaction() as tx:
            writer.write(b"in", "user-1", txn=tx)
        ack = writer.write(b"out", b"user-2").result(10)
        writer.write(b"none").result(10)
    stored = next(iter(api.sw.logs.get(stream.current_segments()[0].log_id).read(ack.lsn, ack.lsn)))
    assert isinstance(stored, Record) and unframe_keyed(stored.payload) == (0, b"user-2", b"out")
    got = {e.payload: e.routing_key for e in read(api, stream, 3)}
    assert got == {b"in": "user-1", b"out": b"user-2", b"none": None}


def test_a_plain_stream_stores_no_key(api: Api) -> None:
    stream = make(api)
    assert not stream.config.framed
    with stream.writer() as writer:
        ack = writer.write(b"raw", "user-7").result(10)
    stored = next(iter(api.sw.logs.get(stream.current_segments()[0].log_id).read(ack.lsn, ack.lsn)))
    assert isinstance(stored, Record) and stored.payload == b"raw"  # byte-identical: no header
    assert [(e.payload, e.routing_key) for e in read(api, stream, 1)] == [(b"raw", None)]
