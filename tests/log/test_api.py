"""The embedded log API: attributes and groups, bad input, async appends, readers, writers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

import seaway
from seaway import (
    ClosedError,
    DataDirLockedError,
    Durability,
    GapType,
    InvalidArgumentError,
    LogExistsError,
    LsnOutOfRangeError,
    PayloadTooLargeError,
    Record,
    RetryPolicy,
    SeawayConfig,
    StorageError,
    TrimPastTailError,
    UnknownLogError,
)
from seaway.log import BatchingWriter, DiskWrite, LogStoreConfig, StorageConfig
from seaway.logsdb import PutRecords
from seaway.testing import FakeClock, failing_wal_syncs


def records(items: list[object]) -> list[bytes]:
    return [i.payload for i in items if isinstance(i, Record)]


def test_groups_give_ids_and_inherited_attributes(sw: seaway.Seaway) -> None:
    sw.logs.create_group("web", 1000, 1999, backlog_s=3600, payload_bytes_max=100)
    a = sw.logs.create("web/clicks", group="web")
    b = sw.logs.create("web/views", group="web", payload_bytes_max=200)
    c = sw.logs.create("audit", durability=Durability.ASYNC)
    assert (a.id, b.id, c.id) == (1000, 1001, 1)
    assert a.attributes.backlog_s == 3600 and a.attributes.payload_bytes_max == 100
    assert b.attributes.payload_bytes_max == 200 and b.attributes.backlog_s == 3600
    assert c.attributes.durability is Durability.ASYNC and c.attributes.backlog_s is None
    with pytest.raises(PayloadTooLargeError):
        a.append(b"x" * 101)
    assert b.append(b"x" * 150) > 0
    with pytest.raises(LogExistsError):
        sw.logs.create_group("web2", 1500, 2500)
    with pytest.raises(LogExistsError):
        sw.logs.create("web/clicks")
    with pytest.raises(InvalidArgumentError):
        sw.logs.create("outside", group="web", log_id=5)
    with pytest.raises(UnknownLogError):
        sw.logs.create("x", group="nope")


def test_configuration_survives_reopen(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        sw.logs.create_group("g", 10, 20, backlog_s=60)
        sw.logs.create("one", group="g").append(b"1")
    with seaway.open(tmp_path) as sw:
        log = sw.logs.get("one")
        assert log.id == 10 and log.attributes.backlog_s == 60
        assert sw.logs.get(10) == log
        assert [g.name for g in sw.logs.groups()] == ["g"]
        assert records(list(log.read())) == [b"1"]


@pytest.mark.parametrize("bad", ["", "-x", "a b", "x" * 300, 7])
def test_bad_log_names(sw: seaway.Seaway, bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        sw.logs.create(bad)  # type: ignore[arg-type]


def test_bad_input_is_a_typed_error_and_loses_nothing(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l", payload_bytes_max=10)
    lsn = log.append(b"kept")
    with pytest.raises(UnknownLogError):
        sw.logs.get("missing")
    with pytest.raises(PayloadTooLargeError):
        log.append(b"x" * 11)
    with pytest.raises(PayloadTooLargeError):
        log.append_batch([b"ok", b"y" * 11])
    with pytest.raises(InvalidArgumentError):
        log.append_batch([])
    with pytest.raises(InvalidArgumentError):
        log.append("text")  # type: ignore[arg-type]
    with pytest.raises(TrimPastTailError):
        log.trim(lsn + 1)
    with pytest.raises(LsnOutOfRangeError):
        log.trim(-1)
    with pytest.raises(LsnOutOfRangeError):
        sw.logs.reader().start_reading(log, 10, 5)
    with pytest.raises(LsnOutOfRangeError):
        sw.logs.reader().start_reading(log, 2**64)
    with pytest.raises(InvalidArgumentError):
        log.find_time(-5)
    with pytest.raises(seaway.InvalidArgumentError):
        seaway.LogAttributes(payload_bytes_max=0)
    assert records(list(log.read())) == [b"kept"]


def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    sw = seaway.open(tmp_path)
    log = sw.logs.create("l")
    sw.close()
    sw.close()
    with pytest.raises(ClosedError):
        log.append(b"x")
    with pytest.raises(ClosedError):
        log.tail_lsn()
    with pytest.raises(ClosedError):
        sw.logs.create("m")


def test_second_process_cannot_open_the_data_directory(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        sw.logs.create("l").append(b"safe")
        probe = ("import seaway, sys\ntry:\n    seaway.open(sys.argv[1])\nexcept seaway.DataDirLockedError as e:\n"
                 "    print(e.code)\n")
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True,
                             timeout=60, check=True)
        assert out.stdout.strip() == "DATA_DIR_LOCKED"
        with pytest.raises(DataDirLockedError):
            seaway.open(tmp_path)
        assert records(list(sw.logs.get("l").read())) == [b"safe"]


def test_async_appends_share_disk_writes(tmp_path: Path) -> None:
    writes: list[int] = []

    def count(write: DiskWrite) -> None:
        writes.append(len(write.ops))

    with seaway.Seaway(tmp_path, disk_fault=count) as sw:
        log = sw.logs.create("l")
        futures = [log.append_async(str(i).encode()) for i in range(300)]
        lsns = [f.result(30) for f in futures]
        assert lsns == sorted(lsns) and len(set(lsns)) == 300
        assert records(list(log.read())) == [str(i).encode() for i in range(300)]
    assert len(writes) < 300 and max(writes) > 1  # group commit: several appends per write


def test_failed_disk_write_fails_the_append_and_leaves_a_hole(tmp_path: Path) -> None:
    fail_next = threading.Event()

    def fault(write: DiskWrite) -> StorageError | None:
        if fail_next.is_set() and any(isinstance(op, PutRecords) for op in write.ops):
            fail_next.clear()
            return StorageError("injected")
        return None

    with seaway.Seaway(tmp_path, disk_fault=fault) as sw:
        log = sw.logs.create("l")
        first = log.append(b"before")
        fail_next.set()
        with pytest.raises(StorageError) as info:
            log.append_batch([b"lost", b"lost too"])
        assert info.value.retriable
        after = log.append(b"after")
        items = list(log.read(first))
        assert [type(i).__name__ for i in items] == ["Record", "Gap", "Record"]
        gap = items[1]
        assert isinstance(gap, seaway.Gap) and gap.type is GapType.HOLE
        assert (gap.lsn_lo, gap.lsn_hi) == (first + 1, after - 1) == (first + 1, first + 2)


@pytest.mark.parametrize("writes_in_flight", [1, 2])
def test_failed_disk_sync_stops_appends_until_reopened(tmp_path: Path, writes_in_flight: int) -> None:
    # One write in flight: each disk write's result comes back within the writer's own loop, which
    # must still stop (it once spun there for ever, resending a seal that failed at once).
    config = SeawayConfig(LogStoreConfig(storage=StorageConfig(writes_in_flight_max=writes_in_flight)))
    with seaway.open(tmp_path, config) as sw:
        log = sw.logs.create("l")
        first = log.append(b"before")
        with failing_wal_syncs(sw._store.logsdb), pytest.raises(StorageError, match="injected"):
            log.append_async(b"unknown").result(10)
        # Retrying would only spin the sequencer through plugs and epochs: appends fail at once.
        started = time.monotonic()
        with pytest.raises(StorageError, match="reopen"):
            log.append(b"refused")
        assert time.monotonic() - started < 1
        assert "injected" in (sw.write_failure or "")
        assert records(list(log.read(first, first))) == [b"before"]
    with seaway.open(tmp_path) as sw:
        assert sw.write_failure is None
        log = sw.logs.get("l")
        after = log.append(b"after")
        got = records(list(log.read(first, after)))  # the unsynced append may or may not be there
        assert got[0] == b"before" and got[-1] == b"after" and set(got) <= {b"before", b"unknown", b"after"}


def test_tailing_reader_wakes_on_append_without_polling(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    reader = sw.logs.reader()
    reader.start_reading(log)
    assert reader.read(timeout_s=0.05) == []
    got: list[object] = []
    started = threading.Event()

    def consume() -> None:
        started.set()
        while len([g for g in got if isinstance(g, Record)]) < 3:
            got.extend(reader.read(timeout_s=10))

    t = threading.Thread(target=consume)
    t.start()
    started.wait()
    for p in (b"1", b"2", b"3"):
        log.append(p)
    t.join(20)
    assert records(got) == [b"1", b"2", b"3"]
    assert not reader.done


def test_a_tailing_reader_is_woken_by_its_own_logs_only(sw: seaway.Seaway) -> None:
    mine, other = sw.logs.create("mine"), sw.logs.create("other")
    with sw.logs.reader() as reader:
        reader.start_reading(mine)
        assert reader.read(timeout_s=0.01) == []
        other.append(b"not for this reader")
        assert not reader._wake.is_set()
        mine.append(b"x")
        assert reader._wake.is_set()
        assert records(reader.read(timeout_s=1)) == [b"x"]
        reader.stop_reading(mine)
        mine.append(b"y")
        assert not reader._wake.is_set()


def test_reader_over_many_logs_ends_at_until(sw: seaway.Seaway) -> None:
    a, b = sw.logs.create("a"), sw.logs.create("b")
    a.append_batch([b"a1", b"a2"])
    b.append(b"b1")
    items = list(sw.logs.read({a: seaway.OLDEST, "b": seaway.OLDEST}))
    assert sorted(records(items)) == [b"a1", b"a2", b"b1"]
    for log in (a, b):
        mine = [i for i in items if i.log_id == log.id and isinstance(i, Record)]
        assert [r.lsn for r in mine] == sorted(r.lsn for r in mine)


def test_reader_buffer_is_bounded(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    for _ in range(5):
        log.append_batch([b"x" * 10] * 200)
    reader = sw.logs.reader(buffered_items_max=50)
    reader.start_reading(log, 1, log.tail_lsn())
    first = reader.read(items_max=10)
    assert len(first) == 10 and len(reader._buffer) <= 50
    rest = list(reader)
    assert len(records(first + rest)) == 1000


def test_is_empty_data_size_and_trim(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    assert log.is_empty() and log.tail_lsn() == 0 and log.data_size() == 0
    lsns = log.append_batch([b"a", b"b"])
    assert not log.is_empty() and log.data_size() > 0
    log.trim(lsns[0])
    assert not log.is_empty()
    log.trim(lsns[1])
    assert log.is_empty()
    assert [i.type for i in log.read() if isinstance(i, seaway.Gap)] == [GapType.TRIM]


def test_retention_drops_partitions_and_readers_see_trim(tmp_path: Path, clock: FakeClock) -> None:
    config = seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=seaway.LogsDBConfig(partition_duration_s=60)))
    with seaway.open(tmp_path, config, clock) as sw:
        log = sw.logs.create("l", backlog_s=600)
        forever = sw.logs.create("forever")
        for minute in range(20):
            log.append(f"m{minute}".encode())
            clock.advance(61)
        forever.trim(0)
        assert len(sw.logs.partitions()) == 20
        dropped = sw.logs.run_retention()
        # Now is 20 * 61 s in; minute m's record is (20 - m) * 61 s old: m <= 10 is past 600 s.
        assert len(dropped) == 11 and len(sw.logs.partitions()) == 9
        items = list(log.read())
        assert isinstance(items[0], seaway.Gap) and items[0].type is GapType.TRIM
        assert records(items) == [f"m{m}".encode() for m in range(11, 20)]


def test_batching_writer_flushes_on_count_bytes_and_time(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    with log.writer(flush_records_max=3, flush_bytes_max=1000, flush_interval_s=30) as w:
        futures = [w.write(b"c") for _ in range(3)]  # count
        lsns = [f.result(10) for f in futures]
        assert lsns == list(range(lsns[0], lsns[0] + 3))
        big = [w.write(b"y" * 600), w.write(b"y" * 600)]  # bytes
        assert [f.result(10) for f in big] == [lsns[2] + 1, lsns[2] + 2]
    with log.writer(flush_records_max=1000, flush_interval_s=0.05) as w:
        f = w.write(b"t")
        assert f.result(10) > lsns[2] + 2  # time: nothing else would flush it


def _flaky(log: seaway.Log, failures: dict[bytes, int]) -> object:
    """An append_batch that fails retriably the first times it sees a batch's first payload."""

    def append(payloads: list[bytes], sequence: int) -> Future[range]:
        if failures.get(payloads[0], 0) > 0:
            failures[payloads[0]] -= 1
            f: Future[range] = Future()
            f.set_exception(StorageError("flaky"))
            return f
        return log.append_batch_async(payloads)

    return append


def _failing_like_a_store(log: seaway.Log, failures: int) -> object:
    """An append_batch that fails the batch starting with b"first" retriably ``failures`` times, and,
    as Seaway's append paths do, every batch sent after a failed one until it is sent again."""
    state = {"left": failures, "failing": False}

    def append(payloads: list[bytes], sequence: int) -> Future[range]:
        if payloads[0] == b"first":
            state["failing"] = state["left"] > 0
            state["left"] -= 1
        if state["failing"]:
            f: Future[range] = Future()
            f.set_exception(StorageError("flaky"))
            return f
        return log.append_batch_async(payloads)

    return append


def test_batching_writer_retries_keep_order(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    writer = BatchingWriter(_failing_like_a_store(log, 2), flush_records_max=1, flush_interval_s=10,  # type: ignore[arg-type]
                            retry=RetryPolicy(attempts_max=5, backoff_s=0.05), in_flight_batches_max=4)
    futures = [writer.write(p) for p in (b"first", b"second", b"third")]
    writer.close()
    assert all(f.result(10) for f in futures)
    assert records(list(log.read())) == [b"first", b"second", b"third"]


def test_batching_writer_fails_the_batches_waiting_behind_one_that_failed_for_good(sw: seaway.Seaway) -> None:
    """The contract (docs/ordering.md): stored in the order written, or the later ones fail. A
    batch waiting behind one that failed for good must not be stored after it was given up (the
    caller's own retry of the failed one would land after it)."""
    log = sw.logs.create("l")
    gate = threading.Event()
    sent: list[bytes] = []

    def append(payloads: list[bytes], sequence: int) -> Future[range]:
        sent.append(payloads[0])
        if payloads[0] == b"doomed":
            failed: Future[range] = Future()
            threading.Thread(target=lambda: (gate.wait(10), failed.set_exception(StorageError("final"))),
                             daemon=True).start()
            return failed
        return log.append_batch_async(payloads)

    writer = BatchingWriter(append, flush_records_max=1, flush_interval_s=10, in_flight_batches_max=1,
                            retry=RetryPolicy(attempts_max=1))
    doomed = writer.write(b"doomed")
    behind = writer.write(b"behind")  # waits: one batch in flight at most
    gate.set()
    with pytest.raises(StorageError):
        doomed.result(10)
    with pytest.raises(StorageError):
        behind.result(10)
    after = writer.write(b"after")  # written once the failure is known: a new producer, stored
    writer.close()
    assert after.result(10) > 0
    assert records(list(log.read())) == [b"after"]
    assert b"behind" not in sent


def test_batching_writer_gives_up_after_the_policy(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")

    writer = BatchingWriter(_flaky(log, {b"doomed": 99}), flush_records_max=1, flush_interval_s=10,  # type: ignore[arg-type]
                            retry=RetryPolicy(attempts_max=2, backoff_s=0.01))
    doomed = writer.write(b"doomed")
    behind = writer.write(b"behind")
    with pytest.raises(StorageError):
        doomed.result(10)
    with pytest.raises(StorageError):  # behind it, not in flight: fails with it (docs/ordering.md)
        behind.result(10)
    fine = writer.write(b"fine")
    writer.close()
    assert fine.result(10) > 0
    assert records(list(log.read())) == [b"fine"]


def test_async_durability_is_acknowledged_without_a_sync(sw: seaway.Seaway) -> None:
    # Acknowledged with no write-ahead log sync at all: while every sync fails, appends go on (a sync
    # log's would fail, and stop appends: test_failed_disk_sync_stops_appends_until_reopened). The
    # first append takes the log's epoch, which is synced whatever the durability.
    log = sw.logs.create("fast", durability=Durability.ASYNC)
    assert log.append(b"first")
    with failing_wal_syncs(sw._store.logsdb):
        assert log.append_batch([b"x"] * 10)
        assert log.append(b"y")
    assert sw.write_failure is None
    assert records(list(log.read())) == [b"first"] + [b"x"] * 10 + [b"y"]


def test_idempotent_append_is_stored_once_even_across_a_reopen(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("l")
        first = log.append_batch([b"a", b"b"], producer_id=b"p1", sequence=0)
        assert log.append_batch([b"a", b"b"], producer_id=b"p1", sequence=0) == first
        other = log.append_batch([b"a", b"b"], producer_id=b"p2", sequence=0)  # another producer
        assert other != first
    with seaway.open(tmp_path) as sw:
        log = sw.logs.get("l")
        assert log.append_batch([b"a", b"b"], producer_id=b"p1", sequence=0) == first  # remembered on disk
        with pytest.raises(seaway.SequenceGapError):  # and so is where its sequence stands
            log.append_batch([b"c"], producer_id=b"p1", sequence=2)
        assert records(list(log.read())) == [b"a", b"b", b"a", b"b"]


def test_idempotent_retry_while_the_original_is_in_flight_gets_its_answer(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    futures = [log.append_batch_async([b"x"], producer_id=b"p", sequence=0) for _ in range(5)]
    results = {f.result(10)[0] for f in futures}
    assert len(results) == 1
    assert records(list(log.read())) == [b"x"]


def test_idempotent_sequence_older_than_the_window_is_refused(tmp_path: Path) -> None:
    config = seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=seaway.LogsDBConfig(producer_window=4)))
    with seaway.Seaway(tmp_path, config) as sw:
        log = sw.logs.create("l")
        for seq in range(6):
            log.append_batch([bytes([seq])], producer_id=b"p", sequence=seq)
        with pytest.raises(seaway.SequenceTooOldError):
            log.append_batch([b"?"], producer_id=b"p", sequence=1)
        assert log.append_batch([b"late"], producer_id=b"p", sequence=6)  # new ones are fine
        with pytest.raises(InvalidArgumentError):
            log.append_batch([b"x"], producer_id=b"p")  # a sequence without... needs both
        with pytest.raises(InvalidArgumentError):
            log.append_batch([b"x"], producer_id=b"", sequence=1)


def test_batching_writer_retry_after_a_lost_acknowledgement_stores_once(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    lost = {"left": 1}

    def append(payloads: list[bytes], sequence: int) -> Future[range]:
        stored = log.append_batch_async(payloads, producer_id=b"w", sequence=sequence)
        if lost["left"]:
            lost["left"] -= 1
            stored.result(10)  # stored, but the caller hears only that it timed out
            failed: Future[range] = Future()
            failed.set_exception(seaway.TimedOutError("acknowledgement lost"))
            return failed
        return stored

    writer = BatchingWriter(append, flush_records_max=2, flush_interval_s=10,
                            retry=RetryPolicy(attempts_max=3, backoff_s=0.01))
    futures = [writer.write(p) for p in (b"a", b"b", b"c", b"d")]
    writer.close()
    assert [f.result(10) for f in futures] == sorted(f.result(10) for f in futures)
    assert records(list(log.read())) == [b"a", b"b", b"c", b"d"]


def test_reader_in_runs_mode_delivers_the_same_records_and_gaps(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    for size in (1, 7, 300, 2, 1000, 5):
        log.append_batch([f"{size}/{i}".encode() for i in range(size)])
    log.trim(3)
    plain = list(log.read())
    runs = sw.logs.reader(buffered_items_max=250, runs=True)
    runs.start_reading(log, 1, log.tail_lsn())
    flattened: list[object] = []
    while items := runs.read(100):
        assert sum(seaway.log.weight(i) for i in items) <= 100 or len(items) == 1
        for item in items:
            flattened.extend(item.records() if isinstance(item, seaway.RecordRun) else [item])
    assert flattened == plain
    assert any(isinstance(i, Record) for i in plain) and plain[0].type is GapType.TRIM  # type: ignore[union-attr]


def test_each_log_remembers_a_bounded_number_of_producers_and_never_stores_a_retry_twice(tmp_path: Path) -> None:
    from seaway.testing import FakeClock  # noqa: PLC0415

    config = seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=seaway.LogsDBConfig(
        producers_per_log_max=2, producer_idle_s_min=10)))
    clock = FakeClock()
    with seaway.open(tmp_path, config, clock) as sw:
        log = sw.logs.create("l")
        first = {}
        for p in (b"a", b"b"):
            log.append_batch([p], producer_id=p, sequence=0)
            first[p] = log.append_batch([p], producer_id=p, sequence=1)
        with pytest.raises(seaway.OverloadedError):  # both remembered producers are active: none forgotten
            log.append_batch([b"c"], producer_id=b"c", sequence=0)
        clock.advance(11)
        first[b"c"] = log.append_batch([b"c"], producer_id=b"c", sequence=0)  # "a", idle longest, is forgotten
        with pytest.raises(seaway.SequenceTooOldError):  # a retry of a forgotten producer: refused, not stored
            log.append_batch([b"a"], producer_id=b"a", sequence=1)
        assert log.append_batch([b"b"], producer_id=b"b", sequence=1) == first[b"b"]  # remembered
        assert log.append_batch([b"c"], producer_id=b"c", sequence=0) == first[b"c"]
        clock.advance(11)
        first[b"d"] = log.append_batch([b"d"], producer_id=b"d", sequence=0)  # a new producer starts at 0
    with seaway.open(tmp_path, config, clock) as sw:  # what the log forgot stays forgotten
        log = sw.logs.get("l")
        with pytest.raises(seaway.SequenceTooOldError):
            log.append_batch([b"a"], producer_id=b"a", sequence=1)
        assert log.append_batch([b"d"], producer_id=b"d", sequence=0) == first[b"d"]
        stored = [r.payload for r in log.read() if isinstance(r, Record)]
        assert sorted(stored) == [b"a", b"a", b"b", b"b", b"c", b"d"]  # each once


def test_short_lived_producers_are_not_refused_at_the_default_bounds(tmp_path: Path) -> None:
    """Finding 8: each connection, writer or CLI append is a new producer; at ten new producers a
    second, a log must go on taking them, and still recognize the retry of the first one."""
    clock = FakeClock()
    with seaway.open(tmp_path, seaway.SeawayConfig(), clock) as sw:
        log = sw.logs.create("l")
        first = log.append_batch([b"0"], producer_id=b"p0", sequence=0)
        for n in range(1, 1025):
            clock.advance(0.1)
            log.append_batch([b"%d" % n], producer_id=b"p%d" % n, sequence=0)  # none refused
        assert log.append_batch([b"0"], producer_id=b"p0", sequence=0) == first  # a retry: not stored twice
        assert sum(isinstance(r, Record) for r in log.read()) == 1025


def test_wake_makes_a_read_that_would_wait_return_empty(sw: seaway.Seaway) -> None:
    log = sw.logs.create("woken")
    log.append(b"one")
    with sw.logs.reader() as reader:
        reader.start_reading(log, 1, seaway.LSN_MAX)
        reader.wake()  # a read with something to return is not cut short
        assert [i.payload for i in reader.read(10) if isinstance(i, seaway.Record)] == [b"one"]
        assert reader.read(10) == []  # would wait forever for a new record: the earlier wake ends it
        log.append(b"two")
        assert [i.payload for i in reader.read(10) if isinstance(i, seaway.Record)] == [b"two"]


def test_batching_writer_raises_seaway_errors_when_full_or_late() -> None:
    pending: list[Future[range]] = []
    sent = threading.Event()

    def never_answered(payloads: list[bytes], sequence: int) -> Future[range]:
        pending.append(Future())
        sent.set()
        return pending[-1]

    writer = BatchingWriter(never_answered, flush_records_max=1, flush_interval_s=10, buffered_bytes_max=4,
                            room_wait_s=0)
    first = writer.write(b"abcd")
    with pytest.raises(seaway.BufferFullError) as full:  # the caller's own bound: a client-side error
        writer.write(b"e")
    assert isinstance(full.value, seaway.ClientError) and full.value.retriable
    with pytest.raises(seaway.TimedOutError):  # was a bare TimeoutError
        writer.flush(timeout_s=0)
    assert sent.wait(10)
    pending[0].set_result(range(1, 2))
    assert first.result(10) == 1
    writer.close()
    with pytest.raises(seaway.ClosedError):
        writer.write(b"late")


def test_batching_writer_keeps_several_batches_in_flight_and_joins_those_that_waited() -> None:
    sent: list[tuple[list[bytes], Future[range]]] = []
    changed = threading.Condition()

    def append(payloads: list[bytes], sequence: int) -> Future[range]:
        with changed:
            sent.append((list(payloads), Future()))
            changed.notify_all()
            return sent[-1][1]

    writer = BatchingWriter(append, flush_records_max=1, flush_interval_s=10, in_flight_batches_max=3)
    futures = [writer.write(bytes([i])) for i in range(5)]
    with changed:
        assert changed.wait_for(lambda: len(sent) >= 3, 10)
        assert len(sent) == 3  # three in flight, the rest wait for one to end
    for i, (_, future) in enumerate(sent[:3]):
        future.set_result(range(i + 1, i + 2))
    with changed:
        assert changed.wait_for(lambda: len(sent) == 4, 10)
    assert sent[3][0] == [b"\x03", b"\x04"]  # the two that waited go out as one batch
    sent[3][1].set_result(range(4, 6))
    writer.close()
    assert [f.result(10) for f in futures] == [1, 2, 3, 4, 5]
