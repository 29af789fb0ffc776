"""Transactional writes to streams, and what reader groups deliver of them (embedded)."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import InvalidArgumentError, TransactionNotInProgressError, TransactionTimedOutError
from seaway._seaway import SeawayConfig
from seaway.log import Record
from seaway.streams import EventReader, EventWriter, ReaderConfig, Stream, key_position
from seaway.streams._framing import frame, unframe
from seaway.testing._clock import FakeClock
from seaway.txn import TxnConfig, TxnStatus
from tests.streams.writer_check import Gate

QUICK = ReaderConfig(sync_interval_s=0.05, txn_poll_s_max=0.02)


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[Any]:
    with seaway.open(tmp_path / "data") as store:
        yield store


def make_stream(sw: Any, segments: int = 1, name: str = "s/events", transactional: bool = True) -> Stream:
    sw.streams.create_scope(name.partition("/")[0], exist_ok=True)
    stream: Stream = sw.streams.create(name, segments=segments, transactional=transactional)
    return stream


def reader_of(sw: Any, stream: Stream, group: str = "g", reader: str = "r") -> EventReader:
    made: EventReader = sw.streams.create_reader_group(group, stream).reader(reader, QUICK)
    return made


def drain(reader: EventReader, idle_s: float = 0.3) -> list[bytes]:
    """Events until none comes for ``idle_s``."""
    out = []
    while (event := reader.read_next(idle_s)) is not None:
        out.append(event.payload)
    return out


def read_count(reader: EventReader, count: int, timeout_s: float = 10.0) -> list[bytes]:
    out: list[bytes] = []
    while len(out) < count:
        event = reader.read_next(timeout_s)
        assert event is not None, f"only {len(out)} of {count} events came: {out}"
        out.append(event.payload)
    return out


def keys_over(stream: Stream, count: int) -> list[str]:
    """Routing keys landing in every one of the stream's current segments (``count`` of them)."""
    segments = stream.current_segments()
    keys: dict[int, str] = {}
    for i in range(10_000):
        key = f"k{i}"
        position = key_position(key)
        owner = next(s.id for s in segments if s.holds(position))
        keys.setdefault(owner, key)
        if len(keys) == count:
            break
    return list(keys.values())


# --- framing and configuration ---------------------------------------------------------------------


def test_the_header_round_trips_and_garbage_is_corruption() -> None:
    assert unframe(frame(b"e", 0)) == (0, b"e")
    assert unframe(frame(b"", 2**64 - 1)) == (2**64 - 1, b"")
    for bad in (b"", b"\x02e", b"\x01short", b"\x01" + bytes(8) + b"e"):
        with pytest.raises(seaway.CorruptionError):
            unframe(bad)


def test_plain_streams_store_events_as_they_are_and_refuse_transactions(sw: Any) -> None:
    plain = make_stream(sw, transactional=False)
    framed = make_stream(sw, name="s/framed")
    assert not plain.config.transactional and framed.config.transactional
    with plain.writer() as writer, framed.writer() as other:
        ack = writer.write(b"raw", "k").result(10)
        framed_ack = other.write(b"raw", "k").result(10)
        with sw.transaction() as tx, pytest.raises(InvalidArgumentError, match="not created transactional"):
            writer.write(b"x", "k", txn=tx)
    stored = next(i for i in sw.logs.get(plain.current_segments()[0].log_id).read(ack.lsn, ack.lsn))
    assert isinstance(stored, Record) and stored.payload == b"raw"  # no header on a plain stream
    stored = next(i for i in sw.logs.get(framed.current_segments()[0].log_id).read(framed_ack.lsn, framed_ack.lsn))
    # a transactional stream's header holds the key: flags (key, as text), its length, its bytes
    assert isinstance(stored, Record) and stored.payload == b"\x06\x00\x01kraw"
    with pytest.raises(InvalidArgumentError, match="fixed"):
        sw.streams.controller.update(framed.metadata, seaway.StreamConfig(transactional=False))
    framed.update(retention=seaway.RetentionByTime(60))  # other changes keep the flag
    assert framed.config.transactional
    with pytest.raises(InvalidArgumentError):
        seaway.StreamConfig(transactional=1)  # type: ignore[arg-type]


# --- commit, abort, timeout ------------------------------------------------------------------------


def test_a_commit_makes_every_segment_s_events_visible_and_before_it_none(sw: Any) -> None:
    stream = make_stream(sw, segments=4)
    keys = keys_over(stream, 4)
    reader = reader_of(sw, stream)
    with stream.writer() as writer:
        tx = sw.transaction()
        acks = [writer.write(f"t-{key}".encode(), key, txn=tx) for key in keys]
        writer.write_batch([b"plain-1", b"plain-2"], keys[0]).result(10)
        writer.flush(10)
        assert len({a.result(0).segment for a in acks}) == 4
        registered = next(t for t in sw.txn.list() if t.id == tx.id).logs
        assert set(registered) == {s.log_id for s in stream.current_segments()}
        # Three segments hold only the transaction's events; the fourth stops at it, before the plain ones.
        assert drain(reader) == []
        tx.commit()
    got = read_count(reader, 6)
    assert sorted(got) == sorted([f"t-{k}".encode() for k in keys] + [b"plain-1", b"plain-2"])
    assert got.index(f"t-{keys[0]}".encode()) < got.index(b"plain-1") < got.index(b"plain-2")
    assert drain(reader, 0.1) == []
    late = reader_of(sw, stream, group="late")
    assert sorted(read_count(late, 6)) == sorted(got)


def test_an_abort_makes_none_visible(sw: Any) -> None:
    stream = make_stream(sw, segments=2)
    keys = keys_over(stream, 2)
    with stream.writer() as writer:
        with pytest.raises(RuntimeError), sw.transaction() as tx:  # an exception in the block aborts
            for key in keys:
                writer.write_batch([b"gone-1", b"gone-2"], key, txn=tx)
            raise RuntimeError("changed my mind")
        assert tx.status is TxnStatus.ABORTED
        with pytest.raises(TransactionNotInProgressError):
            writer.write(b"late", keys[0], txn=tx)
        for key in keys:
            writer.write(f"after-{key}".encode(), key).result(10)
    assert sorted(drain(reader_of(sw, stream))) == sorted(f"after-{k}".encode() for k in keys)


def test_a_transaction_that_times_out_is_never_visible(tmp_path: Path) -> None:
    clock = FakeClock()
    config = SeawayConfig(txn=TxnConfig(timeout_s=30, tick_s=0.01))
    with seaway.open(tmp_path / "data", config, clock) as sw:
        stream = make_stream(sw)
        reader = reader_of(sw, stream)
        with stream.writer() as writer:
            tx = sw.transaction()
            writer.write_batch([b"t1", b"t2"], "k", txn=tx).result(10)
            writer.write(b"plain", "k").result(10)
            assert drain(reader, 0.2) == []  # stopped at the transaction
            clock.advance(31)  # the manager times it out
            assert read_count(reader, 1) == [b"plain"]
            assert sw.txn.status(tx.id) is TxnStatus.TIMED_OUT
            with pytest.raises(TransactionTimedOutError):
                tx.commit()


# --- the stable position ---------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_a_reader_stops_at_a_transaction_in_progress_until_it_ends(sw: Any, outcome: str) -> None:
    stream = make_stream(sw)
    reader = reader_of(sw, stream)
    with stream.writer() as writer:
        writer.write(b"before", "k").result(10)
        tx = sw.transaction()
        inside = writer.write(b"inside", "k", txn=tx).result(10)
        writer.write(b"after", "k").result(10)
        assert read_count(reader, 1) == [b"before"]
        assert reader.read_next(0.3) is None  # "after" is stored, but comes after the open transaction
        segment = stream.current_segments()[0].id
        assert reader.checkpoint().positions == {segment: inside.lsn}  # never past what was not delivered
        if outcome == "commit":
            tx.commit()
        else:
            tx.abort()
    expected = [b"inside", b"after"] if outcome == "commit" else [b"after"]
    assert read_count(reader, len(expected)) == expected
    assert drain(reader, 0.1) == []


def test_a_stopped_segment_goes_back_to_the_pool_at_the_transaction(sw: Any) -> None:
    stream = make_stream(sw)
    first = reader_of(sw, stream)
    with stream.writer() as writer:
        tx = sw.transaction()
        writer.write(b"inside", "k", txn=tx).result(10)
        writer.write(b"after", "k").result(10)
    assert drain(first, 0.2) == []
    first.close()
    tx.commit()
    second = sw.streams.reader_group("g").reader("r2", QUICK)
    assert read_count(second, 2) == [b"inside", b"after"]


def test_a_sealed_segment_is_not_finished_before_its_transactions_end(sw: Any) -> None:
    """The successors of a segment stopped at an open transaction are not read meanwhile, so a
    key's events stay in order across the scaling."""
    stream = make_stream(sw)
    reader = reader_of(sw, stream)
    with stream.writer() as writer:
        tx = sw.transaction()
        writer.write(b"old", "k", txn=tx).result(10)
        stream.split(stream.current_segments()[0].id)
        writer.write(b"new", "k").result(10)  # to a successor
        assert drain(reader, 0.3) == []
        tx.commit()
    assert read_count(reader, 2) == [b"old", b"new"]


# --- scaling during a transaction ------------------------------------------------------------------


def test_per_key_order_across_a_scaling_in_the_middle_of_a_transaction(sw: Any) -> None:
    stream = make_stream(sw)
    gate = Gate(sw.logs)
    writer = EventWriter(stream, gate, "w")
    tx = sw.transaction()
    first = [writer.write(f"{i:03d}".encode(), "k", txn=tx) for i in range(5)]
    first[-1].result(10)
    gate.close()  # appends wait: the split seals the segment under them, so they are rerouted
    held = [writer.write(f"{i:03d}".encode(), "k", txn=tx) for i in range(5, 20)]
    old = stream.current_segments()[0]
    stream.split(old.id)
    gate.open()
    rest = [writer.write(f"{i:03d}".encode(), "k", txn=tx) for i in range(20, 30)]
    acks = [f.result(10) for f in [*first, *held, *rest]]
    assert {a.segment for a in acks[5:]} != {old.id}, "nothing was rerouted"
    registered = set(next(t for t in sw.txn.list() if t.id == tx.id).logs)
    assert {s.log_id for s in stream.current_segments()} <= registered, "a successor was written unregistered"
    tx.commit()
    writer.close()
    assert read_count(reader_of(sw, stream), 30) == [f"{i:03d}".encode() for i in range(30)]


def test_a_commit_waits_for_its_writes_and_fails_if_one_failed(sw: Any) -> None:
    stream = make_stream(sw)
    gate = Gate(sw.logs)
    writer = EventWriter(stream, gate, "w")
    gate.close()
    tx = sw.transaction()
    pending = writer.write(b"slow", "k", txn=tx)
    stream.seal()  # the write cannot be stored: the commit must not succeed without it
    gate.open()
    with pytest.raises(seaway.StreamSealedError):
        tx.commit()
    assert pending.exception(0) is not None
    assert sw.txn.status(tx.id) is TxnStatus.ABORTED
    writer.close()


# --- a model: readers deliver exactly the committed events, in per-key order -------------------------


@pytest.mark.parametrize("seed", range(4))
def test_random_interleavings_deliver_exactly_the_committed_events_in_key_order(sw: Any, seed: int) -> None:
    rng = random.Random(seed)
    stream = make_stream(sw, segments=2)
    reader = reader_of(sw, stream)
    keys = [f"key{k}" for k in range(4)]
    written: dict[str, list[tuple[bytes, int]]] = defaultdict(list)  # key -> (event, txn id or 0), in order
    open_txns: list[Any] = []
    ended: dict[int, bool] = {}  # txn id -> committed
    delivered: list[bytes] = []
    made = 0
    with stream.writer() as writer:
        for _ in range(150):
            roll = rng.random()
            if roll < 0.15 and len(open_txns) < 4:
                open_txns.append(sw.transaction())
            elif roll < 0.3 and open_txns:
                tx = open_txns.pop(rng.randrange(len(open_txns)))
                committed = rng.random() < 0.6
                tx.commit() if committed else tx.abort()
                ended[tx.id] = committed
            elif roll < 0.35:
                current = stream.current_segments()
                if len(current) > 1 and rng.random() < 0.5:
                    pair = sorted(current, key=lambda s: s.key_lo)[:2]
                    stream.merge([pair[0].id, pair[1].id])
                else:
                    stream.split(rng.choice(current).id)
            elif roll < 0.45:
                while (event := reader.read_next(0)) is not None:
                    delivered.append(event.payload)
            else:
                key = rng.choice(keys)
                tx = rng.choice(open_txns) if open_txns and rng.random() < 0.6 else None
                payload = f"{key}:{made}".encode()
                made += 1
                writer.write(payload, key, txn=tx)
                written[key].append((payload, 0 if tx is None else tx.id))
            for payload in delivered:  # nothing uncommitted is ever delivered
                key = payload.decode().split(":")[0]
                txn_id = dict(written[key])[payload]
                assert txn_id == 0 or ended.get(txn_id) is True, f"seed {seed}: {payload!r} delivered uncommitted"
        for tx in open_txns:
            tx.commit()
            ended[tx.id] = True
        writer.flush(10)
    expected = {key: [p for p, t in events if t == 0 or ended[t]] for key, events in written.items()}
    total = sum(map(len, expected.values()))
    delivered += read_count(reader, total - len(delivered))
    assert reader.read_next(0.2) is None, f"seed {seed}: more events than committed"
    by_key: dict[str, list[bytes]] = defaultdict(list)
    for payload in delivered:
        by_key[payload.decode().split(":")[0]].append(payload)
    assert dict(by_key) == {k: v for k, v in expected.items() if v}, f"seed {seed}"


def test_a_commit_waits_until_its_writes_are_stored(sw: Any) -> None:
    stream = make_stream(sw)
    gate = Gate(sw.logs)
    writer = EventWriter(stream, gate, "w")
    tx = sw.transaction()
    writer.write(b"early", "k", txn=tx).result(10)
    gate.close()
    held = writer.write(b"held", "k", txn=tx)
    committing = threading.Thread(target=tx.commit)
    committing.start()
    committing.join(0.3)
    assert committing.is_alive() and sw.txn.status(tx.id) is TxnStatus.IN_PROGRESS, "committed before its write"
    gate.open()
    committing.join(10)
    assert held.done() and sw.txn.status(tx.id) is TxnStatus.COMMITTED
    writer.close()
    assert read_count(reader_of(sw, stream), 2) == [b"early", b"held"]
