"""The log layer's aborted-write entries (what lets the transaction manager drop an aborted
transaction from its invalid list while its records stay), embedded and through a server."""

from __future__ import annotations

import pytest

from seaway.errors import InvalidArgumentError
from seaway.log import ABORTED_PER_LOG_MAX, AbortedView, AbortedWrites
from tests.api.conftest import Api


def _log_with(api: Api, records: int) -> tuple[object, list[int]]:
    log = api.sw.logs.create(api.name())
    return log, [log.append(b"r%d" % i) for i in range(records)]


def test_noted_ids_are_listed_once_in_the_order_noted(api: Api) -> None:
    log, lsns = _log_with(api, 3)
    aborted = AbortedWrites(api.sw.meta)
    assert aborted.note(log.id, [(70, lsns[1]), (50, lsns[0])]) == {50, 70}
    assert aborted.entries(log.id) == [(0, 50, lsns[0]), (1, 70, lsns[1])]  # by last LSN
    assert aborted.note(log.id, [(70, lsns[2]), (90, lsns[2])]) == {70, 90}  # 70 keeps its entry
    assert aborted.entries(log.id) == [(0, 50, lsns[0]), (1, 70, lsns[1]), (2, 90, lsns[2])]
    assert aborted.entries(log.id, after_seq=1) == [(2, 90, lsns[2])]
    other, _ = _log_with(api, 1)
    assert aborted.entries(other.id) == []  # per log
    with pytest.raises(InvalidArgumentError):
        aborted.note(log.id, [(0, 1)])
    with pytest.raises(InvalidArgumentError):
        aborted.note(log.id, [(5, 2**64)])


def test_a_view_reads_only_what_was_noted_since_and_keeps_what_it_read(api: Api) -> None:
    log, lsns = _log_with(api, 4)
    aborted = AbortedWrites(api.sw.meta)
    view = AbortedView(aborted, log.id)
    assert view.refresh() == frozenset()
    aborted.note(log.id, [(11, lsns[0])])
    assert view.ids == frozenset()  # until refreshed
    assert view.refresh() == {11}
    aborted.note(log.id, [(12, lsns[2])])
    log.trim(lsns[1])  # drops 11's entry: its records are gone
    assert [wp for _, wp, _ in aborted.entries(log.id)] == [12]
    assert view.refresh() == {11, 12}  # an id is aborted for ever: what it read stays


def test_entries_go_with_trims_and_with_the_log(api: Api) -> None:
    log, lsns = _log_with(api, 6)
    aborted = AbortedWrites(api.sw.meta)
    aborted.note(log.id, [(1, lsns[1]), (2, lsns[3]), (3, lsns[3]), (4, lsns[5])])
    log.trim(lsns[2])
    assert [wp for _, wp, _ in aborted.entries(log.id)] == [2, 3, 4]
    log.trim(lsns[3])
    assert [wp for _, wp, _ in aborted.entries(log.id)] == [4]
    assert aborted.note(log.id, [(1, lsns[5])]) == {1}  # its index went with its entry: noted anew
    assert [wp for _, wp, _ in aborted.entries(log.id)] == [4, 1]
    api.sw.logs.delete(log.id)
    assert aborted.entries(log.id) == []


def test_a_log_holds_at_most_the_limit(api: Api) -> None:
    log, lsns = _log_with(api, 2)
    aborted = AbortedWrites(api.sw.meta)
    ids = range(1, ABORTED_PER_LOG_MAX + 1)
    assert aborted.note(log.id, ((wp, lsns[0]) for wp in ids)) == set(ids)
    more = ABORTED_PER_LOG_MAX + 1
    assert aborted.note(log.id, [(more, lsns[1]), (1, lsns[1])]) == {1}  # full: the new one is refused
    assert len(aborted.entries(log.id)) == ABORTED_PER_LOG_MAX
    log.trim(lsns[0])  # room again
    assert aborted.note(log.id, [(more, lsns[1])]) == {more}
    assert [wp for _, wp, _ in aborted.entries(log.id)] == [more]
