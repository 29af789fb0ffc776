"""Readers of many logs, embedded and through a server: logs started and stopped while reading,
gaps, reads that end at their ``lsn_until``, bounds in items and bytes, and 1,000 logs on one reader."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent.futures import Future

from seaway import LSN_MAX, Gap, GapType, Record, RecordRun
from tests.api.conftest import Api

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""
SPLIT_EXCEPT = ("test_one_reader_over_a_thousand_logs",)
CLUSTER_EXCEPT = SPLIT_EXCEPT
"""A thousand plain logs of the other store: nothing of the split store's own, at 4 s a run."""


def _read_until(reader: object, count: int, timeout_s: float = 30) -> list[object]:
    """Read until ``count`` records arrived (fails after ``timeout_s``)."""
    got: list[object] = []
    deadline = time.monotonic() + timeout_s
    while sum(isinstance(i, Record) for i in got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} items of {count} records arrived"
        got += reader.read(1000, timeout_s=1)  # type: ignore[attr-defined]
    return got


def _by_log(items: list[object]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = defaultdict(list)
    for item in items:
        if isinstance(item, Record):
            out[item.log_id].append(item.payload)
    return out


def test_logs_start_and_stop_while_the_reader_runs(api: Api) -> None:
    a, b, c = (api.sw.logs.create(api.name()) for _ in range(3))
    a_lsns = a.append_batch([b"a1", b"a2"])
    b.append(b"b1")
    with api.sw.logs.reader() as reader:
        reader.start_reading(a, 1, LSN_MAX)
        assert _by_log(_read_until(reader, 2)) == {a.id: [b"a1", b"a2"]}
        reader.start_reading(b, 1, LSN_MAX)  # while a is tailed
        assert _by_log(_read_until(reader, 1)) == {b.id: [b"b1"]}
        reader.stop_reading(a)
        a.append(b"a3")  # not read any more
        c.append(b"c1")
        reader.start_reading(c, 1, LSN_MAX)
        b.append(b"b2")
        assert _by_log(_read_until(reader, 2)) == {b.id: [b"b2"], c.id: [b"c1"]}
        assert reader.read(100, timeout_s=0.3) == []  # nothing of a
        reader.start_reading(a, a_lsns[1], LSN_MAX)  # a again, from its second record
        assert _by_log(_read_until(reader, 2)) == {a.id: [b"a2", b"a3"]}
        reader.stop_reading(b)
        reader.stop_reading(b)  # stopping a log not read does nothing
        assert not reader.done  # a and c are tailed


def test_starting_a_log_again_drops_what_was_buffered_of_it(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    log.append_batch([b"%d" % i for i in range(100)])
    with api.sw.logs.reader(buffered_items_max=10) as reader:
        reader.start_reading(log, 1, LSN_MAX)
        first = [i.payload for i in _read_until(reader, 5) if isinstance(i, Record)]
        assert first[:5] == [b"0", b"1", b"2", b"3", b"4"]
        reader.start_reading(log, 1, LSN_MAX)  # from the start again
        again = [i.payload for i in _read_until(reader, 100) if isinstance(i, Record)]
        assert again == [b"%d" % i for i in range(100)]  # in order, none skipped, none twice


def test_each_log_ends_at_its_own_lsn_until(api: Api) -> None:
    logs = [api.sw.logs.create(api.name()) for _ in range(3)]
    lsns = [log.append_batch([b"%d-%d" % (n, i) for i in range(20)]) for n, log in enumerate(logs)]
    with api.sw.logs.reader() as reader:
        reader.start_reading(logs[0], lsns[0][0], lsns[0][4])
        reader.start_reading(logs[1], lsns[1][5], lsns[1][5])
        reader.start_reading(logs[2], lsns[2][10], LSN_MAX)
        got = _by_log(_read_until(reader, 5 + 1 + 10))
        assert got == {logs[0].id: [b"0-%d" % i for i in range(5)], logs[1].id: [b"1-5"],
                       logs[2].id: [b"2-%d" % i for i in range(10, 20)]}
        assert not reader.done  # logs[2] is tailed
        reader.stop_reading(logs[2])
        assert reader.read(10, timeout_s=5) == []
        assert reader.done


def test_gaps_are_read_like_records(api: Api) -> None:
    trimmed, whole = api.sw.logs.create(api.name()), api.sw.logs.create(api.name())
    lsns = trimmed.append_batch([b"t%d" % i for i in range(10)])
    trimmed.trim(lsns[3])
    whole.append(b"w")
    with api.sw.logs.reader() as reader:
        reader.start_reading(trimmed, 1, lsns[-1])
        reader.start_reading(whole, 1, whole.tail_lsn())
        items = list(reader)
    of_trimmed = [i for i in items if i.log_id == trimmed.id]
    assert of_trimmed[0] == Gap(trimmed.id, GapType.TRIM, 1, lsns[3])
    assert [i.payload for i in of_trimmed[1:] if isinstance(i, Record)] == [b"t%d" % i for i in range(4, 10)]
    assert [i.payload for i in items if isinstance(i, Record) and i.log_id == whole.id] == [b"w"]


def test_reads_are_bounded_in_bytes(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    log.append_batch([bytes([i]) * 1000 for i in range(20)])
    big = log.append(b"B" * 50_000)
    with api.sw.logs.reader(buffered_bytes_max=4000) as reader:
        reader.start_reading(log, 1, big)
        first = _read_until(reader, 1)
        assert sum(len(i.payload) for i in first if isinstance(i, Record)) <= 4000
        assert len(reader.read(100, timeout_s=10, bytes_max=2500)) == 2
        assert len(reader.read(100, timeout_s=10, bytes_max=1)) == 1  # at least one record, whatever its size
        rest = list(reader)
    payloads = [i.payload for i in first + rest if isinstance(i, Record)]
    assert payloads[-1] == b"B" * 50_000  # larger than the reader's bound: it still arrives
    assert len(payloads) == 21 - 3
    with api.sw.logs.reader(runs=True, buffered_bytes_max=3000) as runs:
        runs.start_reading(log, 1, big - 1)
        taken: list[list[bytes]] = []
        while items := runs.read(100, timeout_s=10, bytes_max=2000):
            taken.append([p for i in items if isinstance(i, RecordRun) for p in i.payloads])
        assert max(sum(map(len, t)) for t in taken) <= 2000  # runs are cut between records to fit
        assert [p for t in taken for p in t] == [bytes([i]) * 1000 for i in range(20)]


def test_one_reader_over_a_thousand_logs(api: Api) -> None:
    logs = [api.sw.logs.create(api.name("many")) for _ in range(1000)]
    pending: list[Future[range]] = [log.append_batch_async([b"%d/0" % log.id, b"%d/1" % log.id]) for log in logs]
    for future in pending:
        future.result(60)
    with api.sw.logs.reader() as reader:
        for log in logs:
            reader.start_reading(log, 1, LSN_MAX)
        caught_up = _by_log(_read_until(reader, 2000, timeout_s=120))
        assert caught_up == {log.id: [b"%d/0" % log.id, b"%d/1" % log.id] for log in logs}
        pending = [log.append_batch_async([b"%d/2" % log.id]) for log in logs[::7]]
        for future in pending:
            future.result(60)
        tailed = _by_log(_read_until(reader, len(pending), timeout_s=120))
        assert tailed == {log.id: [b"%d/2" % log.id] for log in logs[::7]}
        for log in logs[::2]:
            reader.stop_reading(log)
        logs[2].append(b"stopped")
        logs[3].append(b"still read")
        assert _by_log(_read_until(reader, 1)) == {logs[3].id: [b"still read"]}


def test_a_waiting_read_returns_at_once_empty_when_the_reader_is_woken(api: Api) -> None:
    """``wake()`` (part of the reader protocol: a server's read stream wakes the reader of the
    store it serves, whichever store's logs those are) ends a read that waits, or the next one
    that would, with nothing; the reader goes on reading afterwards."""
    log = api.sw.logs.create(api.name())
    with api.sw.logs.reader() as reader:
        reader.start_reading(log, 1, LSN_MAX)  # tailed: a read waits for records
        reader.wake()  # before the read waits: that read returns at once
        assert reader.read(10, timeout_s=30) == []
        answer: Future[list[object]] = Future()
        waiting = threading.Thread(target=lambda: answer.set_result(reader.read(10, timeout_s=30)))
        waiting.start()
        reader.wake()  # now, or before it waits: either way it returns empty, long before 30 s
        assert answer.result(timeout=10) == []
        waiting.join()
        log.append(b"after")
        assert _by_log(_read_until(reader, 1)) == {log.id: [b"after"]}
