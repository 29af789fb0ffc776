"""Per-log counts of what was appended since the store opened, embedded and through a server."""

from __future__ import annotations

import pytest

from seaway import InvalidArgumentError, LogSealedError, TailMismatchError
from seaway.log import APPEND_COUNTS_LOGS_MAX, LOG_ID_MAX, AppendCounts
from tests.api.conftest import Api


def test_counts_records_and_payload_bytes_of_each_log(api: Api) -> None:
    logs = api.sw.logs
    a, b, idle = (logs.create(api.name()) for _ in range(3))
    assert logs.append_counts([a.id, b.id]) == {a.id: (0, 0), b.id: (0, 0)}
    a.append(b"12345")
    a.append_batch([b"", b"xy", b"z" * 100])
    futures = [b.append_async(bytes(10)) for _ in range(20)]  # may go out coalesced: counted alike
    for future in futures:
        future.result(30)
    counts = logs.append_counts([a.id, b.id, idle.id])
    assert counts == {a.id: (4, 107), b.id: (20, 200), idle.id: (0, 0)}
    assert isinstance(counts[a.id], AppendCounts)
    assert (counts[a.id].records, counts[a.id].payload_bytes) == (4, 107)
    assert logs.append_counts([]) == {}
    assert logs.append_counts(iter([b.id, b.id])) == {b.id: (20, 200)}


def test_only_appends_stored_count(api: Api) -> None:
    logs = api.sw.logs
    log = logs.create(api.name())
    producer = f"producer-{api.number()}".encode()
    log.append_batch([b"ab", b"cd"], producer_id=producer, sequence=0)
    log.append_batch([b"ab", b"cd"], producer_id=producer, sequence=0)  # a retry: stored once
    tail = log.tail_lsn()
    with pytest.raises(TailMismatchError):
        log.append_batch([b"nope"], if_tail=tail - 1)
    log.append_batch([b"yes"], if_tail=tail)
    log.seal()
    with pytest.raises(LogSealedError):
        log.append(b"late")
    assert logs.append_counts([log.id]) == {log.id: (3, 7)}


def test_unknown_and_deleted_logs_count_zero(api: Api) -> None:
    logs = api.sw.logs
    log = logs.create(api.name())
    log.append(b"abc")
    unknown = LOG_ID_MAX - api.number()
    assert logs.append_counts([log.id, unknown]) == {log.id: (1, 3), unknown: (0, 0)}
    logs.delete(log)
    assert logs.append_counts([log.id]) == {log.id: (0, 0)}


@pytest.mark.parametrize("bad", [[0], [-1], [LOG_ID_MAX + 1], ["7"], [True], [1.0], "12", 7])
def test_bad_ids_are_refused(api: Api, bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        api.sw.logs.append_counts(bad)


def test_at_most_so_many_logs_a_call(api: Api) -> None:
    logs = api.sw.logs
    assert len(logs.append_counts(range(1, APPEND_COUNTS_LOGS_MAX + 1))) == APPEND_COUNTS_LOGS_MAX
    with pytest.raises(InvalidArgumentError, match="at most"):
        logs.append_counts(range(1, APPEND_COUNTS_LOGS_MAX + 2))
