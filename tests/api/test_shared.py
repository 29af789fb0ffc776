"""The log API's contract, run against the embedded store and against a server through the client."""

from __future__ import annotations

import threading
import time

import pytest

from seaway import (
    LSN_MAX,
    Gap,
    GapType,
    InvalidArgumentError,
    LogExistsError,
    LsnOutOfRangeError,
    PayloadTooLargeError,
    Record,
    RecordRun,
    TrimPastTailError,
    UnknownLogError,
)
from tests.api.conftest import Api


def payloads(items: list[object]) -> list[bytes]:
    return [i.payload for i in items if isinstance(i, Record)]


def test_append_and_read_back(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    first = log.append(b"one")
    lsns = log.append_batch([b"two", b"three"])
    assert list(lsns) == [first + 1, first + 2]
    assert log.append_async(b"four").result(30) == first + 3
    assert list(log.append_batch_async([b"five"]).result(30)) == [first + 4]
    assert log.tail_lsn() == first + 4
    items = list(log.read())
    assert payloads(items) == [b"one", b"two", b"three", b"four", b"five"]
    assert [i.lsn for i in items if isinstance(i, Record)] == list(range(first, first + 5))
    assert isinstance(items[0], Gap) and items[0].type is GapType.BRIDGE  # e0 up to the first epoch


def test_logs_are_found_by_name_and_id_and_listed(api: Api) -> None:
    name = api.name()
    log = api.sw.logs.create(name, backlog_s=60, payload_bytes_max=1000)
    again = api.sw.logs.get(name)
    assert again == log and api.sw.logs.get(log.id) == log
    assert again.attributes.backlog_s == 60 and again.attributes.payload_bytes_max == 1000
    assert name in [x.name for x in api.sw.logs.list()]
    with pytest.raises(LogExistsError):
        api.sw.logs.create(name)
    with pytest.raises(UnknownLogError):
        api.sw.logs.get(api.name("missing"))


def test_groups_pass_attributes_to_their_logs(api: Api) -> None:
    base = 1_000_000 + api.number() * 1000
    group = api.sw.logs.create_group(api.name("group"), base, base + 99, backlog_s=3600)
    log = api.sw.logs.create(api.name(), group=group.name)
    assert base <= log.id <= base + 99 and log.attributes.backlog_s == 3600
    listed = {g.name: g for g in api.sw.logs.groups()}
    assert listed[group.name].first_id == base and listed[group.name].overrides == {"backlog_s": 3600}


def test_partitions_and_retention(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    log.append(b"x")
    partitions = api.sw.logs.partitions()
    assert partitions and log.id in partitions[-1].log_ids and partitions[-1].size_bytes > 0
    assert api.sw.logs.run_retention() == []  # nothing has a backlog that expired
    assert payloads(list(log.read())) == [b"x"]


def test_bad_input_is_a_typed_error_and_loses_nothing(api: Api) -> None:
    log = api.sw.logs.create(api.name(), payload_bytes_max=10)
    lsn = log.append(b"kept")
    with pytest.raises(PayloadTooLargeError):
        log.append(b"x" * 11)
    with pytest.raises(InvalidArgumentError):
        log.append_batch([])
    with pytest.raises(InvalidArgumentError):
        log.append("text")  # type: ignore[arg-type]
    with pytest.raises(TrimPastTailError):
        log.trim(lsn + 100)
    with pytest.raises(LsnOutOfRangeError):
        log.trim(-1)
    with pytest.raises(InvalidArgumentError):
        log.find_time(-5)
    with pytest.raises(InvalidArgumentError):
        api.sw.logs.create("bad name")
    assert payloads(list(log.read())) == [b"kept"]


def test_trim_find_time_and_state(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    assert log.is_empty() and log.tail_lsn() == 0
    lsns = log.append_batch([b"a", b"b", b"c"])
    assert not log.is_empty() and log.data_size() > 0
    log.trim(lsns[1])
    assert log.trim_point() == lsns[1]
    items = list(log.read())
    assert items[0] == Gap(log.id, GapType.TRIM, 1, lsns[1])
    assert payloads(items) == [b"c"]
    assert log.find_time(0) == lsns[2]
    assert log.find_time(2**62) == lsns[2] + 1
    log.trim(lsns[2])
    assert log.is_empty()


def test_reader_over_many_logs_and_tailing(api: Api) -> None:
    a, b = api.sw.logs.create(api.name()), api.sw.logs.create(api.name())
    a.append_batch([b"a1", b"a2"])
    b.append(b"b1")
    with api.sw.logs.reader() as reader:
        reader.start_reading(a, 1, LSN_MAX)
        reader.start_reading(b, 1, LSN_MAX)
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            seen += payloads(reader.read(100, timeout_s=1))
        assert sorted(seen) == [b"a1", b"a2", b"b1"]
        assert reader.read(100, timeout_s=0.2) == []  # nothing new: waits, then returns empty

        def later() -> None:
            time.sleep(0.2)
            appended.append(b.append(b"b2"))

        # A reader may see the record before its append is answered: join the appender before the
        # connection closes, or its answer would arrive on a closed channel.
        appended: list[int] = []
        appender = threading.Thread(target=later)
        appender.start()
        got: list[bytes] = []
        while not got and time.monotonic() < deadline:
            got = payloads(reader.read(100, timeout_s=5))
        appender.join(30)
        assert got == [b"b2"] and len(appended) == 1
        assert not reader.done


def test_bounded_read_ends(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    lsns = log.append_batch([bytes([i]) * 10 for i in range(50)])
    with api.sw.logs.reader() as reader:
        reader.start_reading(log, lsns[10], lsns[19])
        items = list(reader)
        assert payloads(items) == [bytes([i]) * 10 for i in range(10, 20)]
        assert reader.done


def test_batching_writer(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    with log.writer(flush_records_max=7) as writer:
        futures = [writer.write(f"r{i}".encode()) for i in range(30)]
    lsns = [f.result(30) for f in futures]
    assert lsns == sorted(lsns) and len(set(lsns)) == 30
    assert payloads(list(log.read())) == [f"r{i}".encode() for i in range(30)]


def test_large_batch_in_one_call(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    batch = [i.to_bytes(4, "big") * 256 for i in range(5000)]  # 5 MB in one append
    lsns = log.append_batch(batch)
    assert len(lsns) == 5000
    assert payloads(list(log.read())) == batch


def test_idempotent_appends_are_stored_once(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    producer = f"producer-{api.number()}".encode()
    first = log.append_batch([b"a", b"b"], producer_id=producer, sequence=0)
    again = log.append_batch([b"a", b"b"], producer_id=producer, sequence=0)
    assert again == first
    log.append_batch([b"c"], producer_id=producer, sequence=1)
    assert payloads(list(log.read())) == [b"a", b"b", b"c"]


def test_a_producer_sequence_reused_for_a_batch_of_another_size_is_refused(api: Api) -> None:
    """A retry is the same batch again: a sequence naming a stored batch of another record count is
    a producer's mistake, refused with a typed error rather than answered with the other's LSNs."""
    log = api.sw.logs.create(api.name())
    producer = f"producer-{api.number()}".encode()
    first = log.append_batch([b"a", b"b"], producer_id=producer, sequence=0)
    with pytest.raises(InvalidArgumentError, match="sequence 0"):
        log.append_batch([b"a", b"b", b"c"], producer_id=producer, sequence=0)
    racing = [log.append_batch_async([b"x"] * n, producer_id=producer, sequence=1) for n in (1, 3, 1)]
    outcomes = []
    for future in racing:
        try:
            outcomes.append(len(future.result(30)))
        except InvalidArgumentError:
            outcomes.append("refused")
    assert outcomes == [1, "refused", 1]
    assert log.append_batch([b"a", b"b"], producer_id=producer, sequence=0) == first  # the true retry still is one
    assert payloads(list(log.read())) == [b"a", b"b", b"x"]


def test_runs_reader_delivers_the_same_records(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    for size in (1, 7, 300, 2):
        log.append_batch([f"{size}/{i}".encode() for i in range(size)])
    plain = list(log.read())
    with api.sw.logs.reader(buffered_items_max=100, runs=True) as reader:
        reader.start_reading(log, 1, log.tail_lsn())
        flattened: list[object] = []
        while items := reader.read(50):
            for item in items:
                flattened.extend(item.records() if isinstance(item, RecordRun) else [item])
    assert flattened == plain and len(payloads(plain)) == 310
