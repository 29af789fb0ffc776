"""Each payload stored once per queue, in its data log, with small pointer chunks per group; the data
log evicted by ranges below what every group acknowledged, never below a chunk a producer still in
progress may point at; entries of the earlier format (payloads in the partitions' logs) still read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import TxnConfig
from seaway.log import Record
from seaway.log import _linked as linked_module
from seaway.queues import Consumer, Entry, Position
from seaway.queues import _producer as producer_module
from seaway.queues._data import DataChunks
from seaway.queues._records import NAMESPACE, Chunk, decode_chunk, hash_key, queue_key

ENTRY = 1024
WAIT_S = 10.0
"""A bound for a stalled thread, not a timing."""


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    config = seaway.SeawayConfig(txn=TxnConfig(timeout_s=30.0, tick_s=0.05))
    with seaway.Seaway(tmp_path / "data", config) as store:
        yield store


def drain(sw: Any, consumer: Consumer) -> list[Entry]:
    got: list[Entry] = []
    for _ in range(50):
        with sw.transaction() as tx:
            batch = consumer.dequeue(tx, 500)
        got.extend(batch)
        if not batch:
            break
    return got


def stored_bytes(sw: Any, log_ids: list[int]) -> int:
    return sum(len(item.payload) for log_id in log_ids for item in sw.logs.get(log_id).read()
               if isinstance(item, Record))


def partition_logs(sw: Any, queue: str) -> list[int]:
    return [p.log_id for group in sw.queues.groups(queue) for p in sw.queues.describe_group(queue, group).partitions]


def payloads(n: int, tag: bytes = b"") -> list[bytes]:
    return [tag + b"%06d" % i + bytes([i % 251]) * (ENTRY - 7 - len(tag)) for i in range(n)]


def make_queue(sw: Any, queue: str) -> None:
    sw.queues.create(queue)
    sw.queues.create_group(queue, "hash", 2, "HASH", key="k")
    sw.queues.create_group(queue, "fifo", 1, "FIFO")
    sw.queues.create_group(queue, "rr", 3, "ROUND_ROBIN")


def consumers(sw: Any, queue: str) -> dict[str, list[Consumer]]:
    return {"hash": [sw.queues.consumer(queue, "hash", c) for c in range(2)],
            "fifo": [sw.queues.consumer(queue, "fifo", 0)],
            "rr": [sw.queues.consumer(queue, "rr", c) for c in range(3)]}


def test_each_payload_is_stored_once_whatever_the_number_of_groups(sw: seaway.Seaway) -> None:
    make_queue(sw, "q")
    sent = payloads(300)
    producer = sw.queues.producer("q")
    for part in (sent[:100], sent[100:]):
        with sw.transaction() as tx:
            producer.enqueue_batch(tx, part, [{"k": i % 7} for i in range(len(part))])
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    written = stored_bytes(sw, [data_log, *partition_logs(sw, "q")])
    # Three groups: one payload per entry, plus pointers of a few bytes per entry and group (the
    # format before stored 3 payloads per entry).
    assert len(sent) * ENTRY <= written < 1.1 * len(sent) * ENTRY, written
    for group, members in consumers(sw, "q").items():
        got = [e for c in members for e in drain(sw, c)]
        assert sorted(e.payload for e in got) == sorted(sent), group
        for c in members:
            c.close()


def test_the_data_log_is_trimmed_below_what_every_group_acknowledged(sw: seaway.Seaway) -> None:
    make_queue(sw, "q")
    producer = sw.queues.producer("q")
    for n in range(3):
        with sw.transaction() as tx:
            producer.enqueue_batch(tx, payloads(20, b"%d" % n), [{"k": i} for i in range(20)])
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    last = sw.logs.get(data_log).tail_lsn()
    groups = consumers(sw, "q")
    for group in ("hash", "rr"):
        for c in groups[group]:
            assert len(drain(sw, c)) > 0
            c.close()  # trims its partition below what it acknowledged
    assert sw.queues.evict_data("q") < last  # the FIFO group has acknowledged nothing yet
    assert sw.logs.get(data_log).trim_point() < last
    fifo = groups["fifo"][0]
    assert len(drain(sw, fifo)) == 60
    sw.queues.evict_claimed("q", "fifo", 1, sw.queues.describe_group("q", "fifo").partitions[0].log_id)
    assert sw.queues.evict_data("q") >= last
    assert sw.logs.get(data_log).trim_point() >= last
    fifo.close()
    # Entries sent after the eviction are read as ever.
    with sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"after"], [{"k": 1}])
    for group, members in consumers(sw, "q").items():
        assert [e.payload for c in members for e in drain(sw, c)] == [b"after"], group


@pytest.mark.parametrize("path", ["commit step", "flush"])
def test_eviction_keeps_the_data_of_a_producer_whose_pointers_are_not_written_yet(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """A producer appends its payloads, then its pointer chunks: an eviction in between (every
    partition fully acknowledged, so no pointer holds the chunk) must keep the data chunk. Paused
    there: in the commit's step, where the linked append fills the pointer chunks with the data
    chunks' LSNs; in a flush, where the producer builds them."""
    make_queue(sw, "q")
    producer = sw.queues.producer("q")
    with sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"first"], [{"k": 0}])
    for members in consumers(sw, "q").values():
        for c in members:
            drain(sw, c)
            c.close()
    sw.queues.evict_claimed("q", "fifo", 1, sw.queues.describe_group("q", "fifo").partitions[0].log_id)
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    assert sw.queues.evict_data("q") == sw.logs.get(data_log).tail_lsn()  # every group acknowledged "first"
    appended, release = threading.Event(), threading.Event()
    module: Any = linked_module if path == "commit step" else producer_module
    name = "fill_lsns" if path == "commit step" else "_pointer_chunks"
    pointers = getattr(module, name)

    def paused(*args: Any) -> Any:  # the data chunk is appended, the pointers not yet
        appended.set()
        assert release.wait(WAIT_S)
        return pointers(*args)

    monkeypatch.setattr(module, name, paused)
    failed: list[BaseException] = []

    def send() -> None:
        try:
            with sw.transaction() as tx:
                producer.enqueue_batch(tx, [b"late"], [{"k": 0}])
                if path == "flush":
                    producer.flush(tx)
        except BaseException as exc:  # reported below
            failed.append(exc)

    thread = threading.Thread(target=send)
    thread.start()
    assert appended.wait(WAIT_S)
    tail = sw.logs.get(data_log).tail_lsn()  # the in-progress producer's data chunk
    sw.queues.evict_data("q")
    assert sw.logs.get(data_log).trim_point() < tail
    release.set()
    thread.join(WAIT_S)
    assert not failed
    monkeypatch.setattr(module, name, pointers)
    for group, members in consumers(sw, "q").items():
        assert [e.payload for c in members for e in drain(sw, c)] == [b"late"], group


def test_a_queue_of_the_earlier_format_is_still_read_and_gets_a_data_log(sw: seaway.Seaway) -> None:
    """A queue created before data logs: its record names none, and its chunks hold their payloads
    (version 1). They are delivered as before; its first send makes its data log."""
    sw.queues.create("old")
    sw.queues.create_group("old", "g", 1, "ROUND_ROBIN")
    found = sw.meta.get(NAMESPACE, queue_key("old"))
    assert found is not None
    record = json.loads(found.value)
    sw.logs.delete(record.pop("data_log"))
    sw.meta.put(NAMESPACE, queue_key("old"), json.dumps(record).encode())
    log_id = sw.queues.describe_group("old", "g").partitions[0].log_id
    with sw.transaction() as tx:  # what a producer of the earlier format wrote
        tx.register_logs([log_id])
        sw.logs.get(log_id).append(Chunk(tx.id, [0, 1], [b"old-0", b"old-1"]).encode())
    producer = sw.queues.producer("old")
    with sw.transaction() as tx:
        producer.enqueue(tx, b"new")
    assert sw.queues.data_log("old") is not None
    got = sw.queues.read_committed("old", "g", 1, 0, Position(1, 0))
    assert [e.payload for e in got.entries] == [b"old-0", b"old-1", b"new"]
    with sw.queues.consumer("old", "g", 0) as consumer:
        assert [e.payload for e in drain(sw, consumer)] == [b"old-0", b"old-1", b"new"]


def test_deleting_a_queue_deletes_its_data_log(sw: seaway.Seaway) -> None:
    make_queue(sw, "q")
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    sw.queues.delete("q")
    with pytest.raises(seaway.UnknownLogError):
        sw.logs.get(data_log)


def test_a_chunk_whose_data_is_gone_raises_rather_than_being_stepped_over(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    producer = sw.queues.producer("q")
    for payload in (b"a", b"b"):
        with sw.transaction() as tx:
            producer.enqueue(tx, payload)
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    sw.logs.get(data_log).trim(sw.logs.get(data_log).tail_lsn() - 1)  # by hand: "a"'s data chunk
    with pytest.raises(seaway.LsnOutOfRangeError):
        sw.queues.read_committed("q", "g", 1, 0, Position(1, 0))
    with sw.queues.consumer("q", "g", 0) as consumer:
        for _ in range(2):  # and again at the next dequeue: never a silent skip
            with sw.transaction() as tx, pytest.raises(seaway.LsnOutOfRangeError):
                consumer.dequeue(tx, 10)


def test_data_chunks_hold_one_share_each_so_a_consumer_reads_its_own_payloads(sw: seaway.Seaway) -> None:
    """A send's data chunks are split by where the groups placed the entries: every data chunk holds
    entries of one partition of each group, so no consumer reads another's payloads."""
    sw.queues.create("q")
    sw.queues.create_group("q", "two", 2, "HASH", key="a")
    sw.queues.create_group("q", "three", 3, "HASH", key="b")
    producer = sw.queues.producer("q")
    with sw.transaction() as tx:
        producer.enqueue_batch(tx, [b"%d" % i for i in range(120)], [{"a": i, "b": i * 7} for i in range(120)])
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    chunks = [decode_chunk(item.payload) for item in sw.logs.get(data_log).read() if isinstance(item, Record)]
    assert len(chunks) == 6  # 2 x 3 combinations, each met by some of the 120 entries
    for _, _, chunk_payloads in chunks:
        places = {(hash_key(int(p)) % 2, hash_key(int(p) * 7) % 3) for p in chunk_payloads}
        assert len(places) == 1, places
    assert sorted(int(p) for _, _, c in chunks for p in c) == list(range(120))


def test_eviction_keeps_data_that_a_later_pointer_names_below_an_earlier_one(
        sw: seaway.Seaway, monkeypatch: pytest.MonkeyPatch) -> None:
    """Producer A stores its data, then producer B sends whole, then A writes its pointers: A's
    pointer comes after B's in the partition but names a lower data chunk. Evictions before and
    after (the second goes on from what the first read) keep A's data until it is consumed."""
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 1, "ROUND_ROBIN")
    data_log = sw.queues.data_log("q")
    assert data_log is not None
    appended, release = threading.Event(), threading.Event()
    pointers = linked_module.fill_lsns  # the commit's step fills A's pointer chunks once its data is stored
    calls: list[int] = []

    def paused(*args: Any) -> Any:  # only the first send (A's) waits between its data and pointers
        calls.append(1)
        if len(calls) == 1:
            appended.set()
            assert release.wait(WAIT_S)
        return pointers(*args)

    monkeypatch.setattr(linked_module, "fill_lsns", paused)
    failed: list[BaseException] = []

    def send_a() -> None:
        try:
            with sw.transaction() as tx:
                sw.queues.producer("q").enqueue(tx, b"A")
        except BaseException as exc:  # reported below
            failed.append(exc)

    thread = threading.Thread(target=send_a)
    thread.start()
    assert appended.wait(WAIT_S)
    a_data = sw.logs.get(data_log).tail_lsn()
    with sw.transaction() as tx:
        sw.queues.producer("q").enqueue(tx, b"B")
    assert sw.logs.get(data_log).tail_lsn() > a_data
    sw.queues.evict_data("q")  # A in progress: its data kept by its begin time
    release.set()
    thread.join(WAIT_S)
    assert not failed
    assert sw.queues.evict_data("q") < a_data  # now by A's pointer, after B's
    assert sw.logs.get(data_log).trim_point() < a_data
    with sw.queues.consumer("q", "g", 0) as consumer:
        assert [e.payload for e in drain(sw, consumer)] == [b"B", b"A"]


def test_a_consumers_commit_does_not_wait_for_the_data_logs_eviction(sw: seaway.Seaway) -> None:
    """The data log's eviction (through a server, a few dozen calls) runs on a thread of its own
    after a consumer's commit: the commit, and so the consumer's next dequeue, do not wait for it."""
    make_queue(sw, "q")
    with sw.transaction() as tx:
        sw.queues.producer("q").enqueue_batch(tx, payloads(10), [{"k": i} for i in range(10)])
    entered, release, committed = threading.Event(), threading.Event(), threading.Event()
    evict_data = sw.queues.evict_data

    def held(queue: str) -> int:
        entered.set()
        release.wait(60.0)
        return evict_data(queue)

    sw.queues.evict_data = held  # type: ignore[method-assign]
    got: list[Entry] = []

    def consume() -> None:
        consumer = sw.queues.consumer("q", "hash", 0)
        with sw.transaction() as tx:
            got.extend(consumer.dequeue(tx, 500))
        committed.set()
        consumer.close()

    thread = threading.Thread(target=consume)
    thread.start()
    try:
        assert entered.wait(WAIT_S)  # the commit asked for an eviction, which is held
        assert committed.wait(WAIT_S), "the consumer's commit waited for the data log's eviction"
        assert got
    finally:
        release.set()
        thread.join(WAIT_S)


class _GatedReader:
    """A reader of the store's that holds reads starting at or above ``gate_lsn`` until ``release``."""

    def __init__(self, reader: Any, gate_lsn: int, release: threading.Event) -> None:
        self._reader, self._gate_lsn, self._release = reader, gate_lsn, release
        self._held = False

    def start_reading(self, log: Any, first: int, last: int) -> None:
        self._held = first >= self._gate_lsn
        self._reader.start_reading(log, first, last)

    def read(self, items_max: int, timeout_s: float) -> Any:
        if self._held:
            self._release.wait(60.0)
        return self._reader.read(items_max, timeout_s)

    def close(self) -> None:
        self._reader.close()


class _GatedLogs:
    def __init__(self, logs: Any, gate_lsn: int, release: threading.Event) -> None:
        self._logs, self._gate_lsn, self._release = logs, gate_lsn, release

    def get(self, log_id: int) -> Any:
        return self._logs.get(log_id)

    def reader(self, *args: Any, **kwargs: Any) -> _GatedReader:
        return _GatedReader(self._logs.reader(*args, **kwargs), self._gate_lsn, self._release)


def test_data_chunks_asked_for_ahead_are_each_handed_over_as_they_come(sw: seaway.Seaway) -> None:
    """A consumer asks for the data chunks of every pointer chunk it read ahead at once, and
    delivers a chunk as soon as its own data came: not after the data of all it read ahead (a
    read far ahead held the first delivery, and through a server each fill waited its round trip)."""
    log = sw.logs.create("data")
    lsns = [log.append(Chunk(7, [0], [b"chunk %d" % i]).encode()) for i in range(12)]
    release = threading.Event()
    chunks = DataChunks(_GatedLogs(sw.logs, lsns[8], release))  # type: ignore[arg-type]
    try:
        chunks.prefetch([(log.id, lsns[0]), (log.id, lsns[11])])  # two reads: far apart
        got = chunks.chunks([(log.id, lsns[0])])  # the second read is held: this is not
        assert got == {(log.id, lsns[0]): [b"chunk 0"]}
    finally:
        release.set()
    assert chunks.chunks([(log.id, lsns[11])]) == {(log.id, lsns[11]): [b"chunk 11"]}
