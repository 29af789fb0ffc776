"""The invalid list sent as changes (review finding 25): a client's copy, brought up to date from
any version it holds, or from pages read at different versions, equals the manager's list."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seaway import Seaway
from seaway.errors import InvalidArgumentError
from seaway.txn import InvalidChanges, InvalidCopy, InvalidVersion
from seaway.txn._invalid import InvalidJournal

EPOCH = 7


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, 10**6)), min_size=1, max_size=80),
       data=st.data())
def test_changes_from_any_version_or_a_mix_of_pages_give_the_list(steps: list[tuple[bool, int]],
                                                                   data: st.DataObject) -> None:
    journal = InvalidJournal(journal_max=1000)
    listed: set[int] = set()
    history = [frozenset()]  # the list at each version
    fresh = itertools.count(1)
    for add, pick in steps:
        if add or not listed:
            wp = next(fresh)
            listed.add(wp)
            journal.added(wp)
        else:
            wp = sorted(listed)[pick % len(listed)]
            listed.discard(wp)
            journal.removed(wp)
        history.append(frozenset(listed))
    assert journal.version == len(history) - 1
    start = data.draw(st.integers(0, journal.version), label="the copy's version")
    # The copy: the list at ``start``, or pages read one after another from ``start`` on (the ids
    # up to a split as they were then, those above as they were at a later version).
    split = data.draw(st.integers(0, next(fresh)), label="where the later pages begin")
    later = data.draw(st.integers(start, journal.version), label="the later pages' version")
    paged = data.draw(st.booleans(), label="read in pages")
    held = ({i for i in history[start] if i <= split} | {i for i in history[later] if i > split}) if paged \
        else set(history[start])
    copy = InvalidCopy()
    copy.load(EPOCH, start, held)
    changes = journal.since(start, ids_max=10_000)
    assert changes is not None
    assert copy.apply(InvalidChanges(EPOCH, journal.version, added=changes[0], removed=changes[1]))
    assert copy.ids() == tuple(sorted(listed))
    assert copy.known == InvalidVersion(EPOCH, journal.version)


def test_a_version_out_of_reach_or_too_many_changes_get_no_changes() -> None:
    journal = InvalidJournal(journal_max=4)
    for wp in range(1, 11):
        journal.added(wp)
    assert journal.since(5, ids_max=100) is None  # older than the journal keeps
    assert journal.since(11, ids_max=100) is None  # not a version of this list
    assert journal.since(6, ids_max=100) == ((7, 8, 9, 10), ())
    assert journal.since(6, ids_max=3) is None


def test_a_copy_ignores_older_replies_and_changes_of_another_incarnation() -> None:
    copy = InvalidCopy()
    assert copy.apply(InvalidChanges(EPOCH, 5, reset=True, added=(3, 1)))
    assert copy.ids() == (1, 3)
    assert copy.apply(InvalidChanges(EPOCH, 4, added=(9,)))  # an older reply: the copy is newer
    assert copy.ids() == (1, 3)
    assert not copy.apply(InvalidChanges(EPOCH + 1, 2, added=(9,)))  # not a reset: read in pages
    assert not copy.apply(InvalidChanges(EPOCH, 6, fetch=True))
    assert copy.apply(InvalidChanges(EPOCH + 1, 1, reset=True, added=(2,)))
    assert copy.ids() == (2,) and copy.known == InvalidVersion(EPOCH + 1, 1)


def _abort_with_a_log(sw: Seaway, log_id: int) -> int:
    snapshot = sw.txn.api.begin()
    sw.txn.api.register(snapshot.write_pointer, [log_id])
    sw.txn.api.abort(snapshot.write_pointer)
    return snapshot.write_pointer


def test_the_manager_answers_changes_the_whole_list_or_pages(tmp_path: Path) -> None:
    with Seaway(tmp_path / "data") as sw:
        manager = sw.txn_manager
        log_id = sw.logs.create("data").id
        first = [_abort_with_a_log(sw, log_id) for _ in range(5)]
        whole = manager.invalid_changes(InvalidVersion())
        assert whole.reset and whole.added == tuple(first)
        known = InvalidVersion(whole.epoch, whole.version)
        later = [_abort_with_a_log(sw, log_id) for _ in range(3)]
        changes = manager.invalid_changes(known)
        assert not changes.reset and changes.added == tuple(later) and changes.version == whole.version + 3
        assert manager.invalid_changes(known, ids_max=2).fetch  # too far behind, the list too long
        assert manager.invalid_changes(InvalidVersion(whole.epoch + 1, 1)).reset  # another incarnation's
        ids, version, more = manager.invalid_page(0, 3)
        assert ids == tuple(first[:3]) and more and version.version == changes.version
        ids, _, more = manager.invalid_page(ids[-1], 100)
        assert ids == tuple(first[3:] + later) and not more
        for bad in ((0, 0), (-1, 5), (0, 10**9)):
            with pytest.raises(InvalidArgumentError):
                manager.invalid_page(*bad)
        epoch = manager.invalid_changes(InvalidVersion()).epoch
    with Seaway(tmp_path / "data") as sw:  # a restart: another incarnation, the same list
        again = sw.txn_manager.invalid_changes(InvalidVersion(epoch, changes.version))
        assert again.epoch != epoch and again.reset and again.added == tuple(first + later)


def test_a_copy_built_aside_replaces_the_copy_only_when_newer() -> None:
    copy = InvalidCopy()
    assert copy.apply(InvalidChanges(EPOCH, 10, reset=True, added=(1, 2, 3)))
    staged = InvalidCopy()
    staged.load(EPOCH, 8, [1])  # pages older than the copy: not taken
    copy.take(staged)
    assert copy.ids() == (1, 2, 3) and copy.known == InvalidVersion(EPOCH, 10)
    staged.load(EPOCH, 12, [1, 2, 3, 4])
    copy.take(staged)
    assert copy.ids() == (1, 2, 3, 4) and copy.known == InvalidVersion(EPOCH, 12)
    staged.load(EPOCH + 1, 1, [5])  # another incarnation's: taken
    copy.take(staged)
    assert copy.ids() == (5,) and copy.known == InvalidVersion(EPOCH + 1, 1)
