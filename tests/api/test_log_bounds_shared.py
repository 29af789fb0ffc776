"""Tail, final LSN and trim point of many logs in one call, embedded and through a server."""

from __future__ import annotations

import pytest

from seaway import InvalidArgumentError
from seaway.log import APPEND_COUNTS_LOGS_MAX, LOG_ID_MAX, LogBounds
from tests.api.conftest import Api


def test_bounds_of_each_log_agree_with_its_handle(api: Api) -> None:
    logs = api.sw.logs
    empty, written, trimmed, sealed = (logs.create(api.name()) for _ in range(4))
    written.append_batch([b"a", b"b", b"c"])
    trimmed.append_batch([b"x"] * 5)
    trimmed.trim(trimmed.tail_lsn() - 2)
    sealed.append(b"last")
    final = sealed.seal()
    found = logs.bounds([empty.id, written.id, trimmed.id, sealed.id])
    assert found == {log.id: (log.tail_lsn(), log.final_lsn(), log.trim_point())
                     for log in (empty, written, trimmed, sealed)}
    assert found[empty.id] == LogBounds(0, None, 0)
    assert found[written.id].tail_lsn > 0 and found[written.id].final_lsn is None
    assert found[trimmed.id].trim_point == trimmed.tail_lsn() - 2
    assert found[sealed.id] == LogBounds(final, final, 0)
    assert isinstance(found[sealed.id], LogBounds)
    written.append(b"d")
    assert logs.bounds([written.id])[written.id].tail_lsn == written.tail_lsn() > found[written.id].tail_lsn
    assert logs.bounds([]) == {}
    assert logs.bounds(iter([written.id, written.id])) == {written.id: logs.bounds([written.id])[written.id]}


def test_unknown_and_deleted_logs_are_left_out(api: Api) -> None:
    logs = api.sw.logs
    log, gone = logs.create(api.name()), logs.create(api.name())
    log.append(b"abc")
    gone.append(b"abc")
    unknown = LOG_ID_MAX - api.number()
    logs.delete(gone)
    assert logs.bounds([unknown, log.id, gone.id]) == {log.id: (log.tail_lsn(), None, 0)}


@pytest.mark.parametrize("bad", [[0], [-1], [LOG_ID_MAX + 1], ["7"], [True], [1.0], "12", 7])
def test_bad_ids_are_refused(api: Api, bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        api.sw.logs.bounds(bad)


def test_at_most_so_many_logs_a_call(api: Api) -> None:
    logs = api.sw.logs
    log = logs.create(api.name())
    assert logs.bounds([log.id] * APPEND_COUNTS_LOGS_MAX) == {log.id: (0, None, 0)}
    with pytest.raises(InvalidArgumentError, match="at most"):
        logs.bounds(range(1, APPEND_COUNTS_LOGS_MAX + 2))
