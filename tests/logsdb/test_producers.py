"""LogsDB: each log's producers, at the bounds on them (finding 8: short-lived producers)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from seaway.logsdb import LogsDB, LogsDBConfig, ProducerMark, PutRecords
from seaway.testing import FakeClock

E1 = 1 << 32


def append_once(db: LogsDB, log_id: int, producer_id: bytes, clock: FakeClock) -> int:
    """Append one record as ``producer_id``'s first batch (sequence 0); its LSN."""
    lsn = db.last_lsn(log_id) + 1 if db.last_lsn(log_id) else E1 + 1
    db.write([PutRecords(log_id, lsn, clock.now_ms(), (producer_id,), ProducerMark(producer_id, 0))], sync=False)
    return lsn


def test_a_log_takes_new_producers_at_its_bounds_rate_for_ever_and_recognizes_their_retries(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogsDBConfig(producers_per_log_max=50, producer_idle_s_min=5)
    with LogsDB(tmp_path, config, clock) as db:
        stored: dict[bytes, int] = {}
        for n in range(500):  # one new producer every 0.1 s: producers_per_log_max / producer_idle_s_min a second
            producer = b"p%d" % n
            assert db.producer_admitted(1, producer), n
            stored[producer] = append_once(db, 1, producer, clock)
            for earlier in range(max(0, n - 49), n + 1):  # a retry within the grace is recognized
                lsn = stored[b"p%d" % earlier]
                assert db.produced(1, b"p%d" % earlier, 0) == range(lsn, lsn + 1)
            clock.advance(0.1)
        assert db.produced(1, b"p0", 0) is None  # forgotten: the one retry not recognized (sequence 0)
        assert db.produced(1, b"p0", 1) is False  # any later batch of a forgotten producer is refused
        # Faster than that, the bound holds: a new producer waits until one has been idle long enough.
        for n in range(500, 550):
            if not db.producer_admitted(1, b"p%d" % n):
                break
            append_once(db, 1, b"p%d" % n, clock)
        else:
            raise AssertionError("50 producers in no time were all admitted beside 50 active ones")


def test_a_producer_that_appended_once_is_remembered_in_a_few_hundred_bytes(tmp_path: Path) -> None:
    """Short-lived producers are most of them: each costs the memory of its id and one batch."""
    clock = FakeClock()
    with LogsDB(tmp_path, LogsDBConfig(), clock) as db:
        append_once(db, 1, b"warm-up", clock)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for n in range(4000):
                append_once(db, 1, b"producer-%06d-pad" % n, clock)  # 20 bytes, a UUID's 16 and some
            per_producer = (tracemalloc.get_traced_memory()[0] - before) / 4000
        finally:
            tracemalloc.stop()
        assert per_producer < 400, per_producer
        assert db.produced(1, b"producer-000000-pad", 0) is not None


def test_a_window_keeps_the_newest_batches_in_sequence_order_whatever_order_they_came_in(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogsDBConfig(producer_window=4)
    lsn = E1 + 1
    with LogsDB(tmp_path, config, clock) as db:
        for sequence in [0, 1, 2, 3, 4, 5, 7, 6, 9, 8]:  # two out of order (a caller of write may)
            db.write([PutRecords(1, lsn + sequence, 1, (b"x",), ProducerMark(b"p", sequence))], sync=False)
        check_window(db, lsn)
    with LogsDB(tmp_path, config, clock) as db:  # as stored
        check_window(db, lsn)


def check_window(db: LogsDB, lsn: int) -> None:
    assert [db.produced(1, b"p", s) for s in (6, 7, 8, 9)] == [range(lsn + s, lsn + s + 1) for s in (6, 7, 8, 9)]
    assert db.produced(1, b"p", 5) is False  # older than every batch remembered
    assert db.produced(1, b"p", 10) is None and db.next_sequence(1, b"p") == 10
