"""Counting records without reading them (``logs.count_records``), embedded and through a server."""

from __future__ import annotations

import pytest

from seaway import InvalidArgumentError
from seaway.log import APPEND_COUNTS_LOGS_MAX, LOG_ID_MAX
from tests.api.conftest import Api


def test_counts_after_writes_trims_and_seals(api: Api) -> None:
    logs = api.sw.logs
    log, other, gone = logs.create(api.name()), logs.create(api.name()), logs.create(api.name())
    first = log.append_batch([b"x"] * 10)[0]
    assert logs.count_records({log.id: (0, None), other.id: (0, None)}) == {log.id: 10, other.id: 0}
    assert logs.count_records({log.id: (first + 3, first + 5)}) == {log.id: 3}
    assert logs.count_records({log.id: (first + 10, None)}) == {log.id: 0}
    log.trim(first + 3)  # four records trimmed away: not counted
    assert logs.count_records({log.id: (0, None)}) == {log.id: 6}
    log.append(b"y")
    log.seal()
    assert logs.count_records({log.id: (first + 9, None)}) == {log.id: 2}
    gone.append(b"z")
    logs.delete(gone)
    assert logs.count_records({gone.id: (0, None), LOG_ID_MAX - api.number(): (0, None)}) == {}


@pytest.mark.parametrize("bad", [{1: (0,)}, {"1": (0, None)}, {0: (0, None)}, [1], {1: None}])
def test_bad_ranges_are_refused(api: Api, bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        api.sw.logs.count_records(bad)


def test_at_most_so_many_logs_a_call(api: Api) -> None:
    with pytest.raises(InvalidArgumentError, match="at most"):
        api.sw.logs.count_records({i: (0, None) for i in range(1, APPEND_COUNTS_LOGS_MAX + 2)})
