"""The manager's edits and saved state on disk: what is encoded decodes to the same thing, and what
is damaged fails with CorruptionError (never with another exception, never as a different edit)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seaway import CorruptionError
from seaway.txn import Visibility
from seaway.txn._state import (
    Abort,
    Begin,
    Commit,
    Edit,
    Prune,
    Register,
    SaveMark,
    Settle,
    TimeOut,
    TxnState,
    TxnStatus,
    Visible,
    decode_edit,
    encode_edit,
)

u64 = st.integers(1, 2**64 - 1)
ms = st.integers(0, 2**48)
lsns = st.lists(st.integers(0, 2**63), max_size=4).map(tuple)
log_ids = st.lists(st.integers(1, 2**32), max_size=4).map(tuple)
keys = st.binary(min_size=1, max_size=8)
writes = st.lists(st.tuples(st.sampled_from(["m", "consumers"]), keys, st.none() | st.binary(max_size=8)),
                  max_size=3).map(tuple)

edits: st.SearchStrategy[Edit] = st.one_of(
    st.builds(Begin, u64, ms, st.integers(1, 3_600_000)),
    st.builds(Register, u64, log_ids),
    st.builds(Commit, u64, st.lists(keys, max_size=3).map(tuple), writes),
    st.builds(Visible, u64, u64),
    st.builds(Abort, u64, ms),
    st.builds(TimeOut, u64, ms),
    st.builds(Settle, u64, lsns),
    st.builds(Prune, st.lists(u64, max_size=4).map(tuple)),
    st.just(SaveMark()),
)


@given(edits)
def test_an_edit_decodes_to_itself(edit: Edit) -> None:
    assert decode_edit(encode_edit(edit)) == edit


@given(edits, st.data())
def test_a_cut_off_edit_is_corruption(edit: Edit, data: st.DataObject) -> None:
    raw = encode_edit(edit)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(CorruptionError):
        decode_edit(raw[:cut])


@given(st.binary(max_size=64))
def test_random_bytes_are_corruption(raw: bytes) -> None:
    with pytest.raises(CorruptionError):
        decode_edit(raw)


_WRONG_VALUES: list[object] = [None, "12", 1.5, -1, True, [], {}, 2**64]


def _numeric_fields(edit: Edit) -> list[str]:
    return [name for name, value in vars(edit).items() if isinstance(value, int)]


@given(edits.filter(lambda e: bool(_numeric_fields(e))), st.data())
def test_a_field_of_the_wrong_type_is_corruption(edit: Edit, data: st.DataObject) -> None:
    """A record that is valid JSON but not a valid edit (a pointer that is a string, negative, a
    float, beyond 64 bits) must not be applied as if it were one."""
    fields: dict[str, Any] = json.loads(encode_edit(edit))
    name = data.draw(st.sampled_from(_numeric_fields(edit)))
    fields[name] = data.draw(st.sampled_from(_WRONG_VALUES))
    with pytest.raises(CorruptionError):
        decode_edit(json.dumps(fields).encode())


@pytest.mark.parametrize("raw", [
    b'{"k":"Register","write_pointer":1,"logs":["x"]}',
    b'{"k":"Register","write_pointer":1,"logs":[1.5]}',
    b'{"k":"Prune","write_pointers":[-3]}',
    b'{"k":"Commit","write_pointer":1,"commit_pointer":1,"conflicts":["zz"],"writes":[]}',
    b'{"k":"Commit","write_pointer":1,"commit_pointer":1,"conflicts":[],"writes":[[5,"00",null]]}',
    b'{"k":"Commit","write_pointer":1,"commit_pointer":1,"conflicts":[],"writes":[["m","00"]]}',
    b'{"k":"SaveMark","extra":1}',
    b'{"k":"Nope"}',
    b'{"write_pointer":1}',
    b'[1,2]',
    b'null',
    b'\xff\xfe',
])
def test_malformed_edits_are_corruption(raw: bytes) -> None:
    with pytest.raises(CorruptionError):
        decode_edit(raw)


def test_a_commit_of_several_transactions_round_trips_and_ends_them_all() -> None:
    edit = Commit(1, (b"c",), (("m", b"k", b"v"),), (3, 2))
    assert decode_edit(encode_edit(edit)) == edit
    assert b"also" not in encode_edit(Commit(1))  # a single commit encodes as it always did
    state = TxnState()
    for wp in (1, 2, 3, 4):
        state.apply(Begin(wp, 1000, 5000))
    state.apply(edit)
    state.apply(Visible(1, 4))
    assert [state.status(wp) for wp in (1, 2, 3, 4)] == [TxnStatus.COMMITTED] * 3 + [TxnStatus.IN_PROGRESS]
    assert state.conflicting(4, frozenset({b"c"})) == b"c"


def _busy_state() -> TxnState:
    state = TxnState(outcomes_max=3)
    for wp in range(1, 8):
        state.apply(Begin(wp, 1000 + wp, 5000))
    state.apply(Register(2, (7, 9)))
    state.apply(Register(3, (4,)))
    state.apply(Commit(1, (b"a",), ((("m", b"k", b"v")),)))
    state.apply(Visible(1, 7))
    state.apply(Abort(2, 2000))
    state.apply(TimeOut(3, 9000))
    state.apply(Commit(4))
    state.apply(Abort(5, 2001))
    state.apply(Settle(2, (10, 11)))
    return state


def test_the_saved_state_decodes_to_the_same_state() -> None:
    state = _busy_state()
    again = TxnState.decode(state.encode(), outcomes_max=3)
    assert again.encode() == state.encode()
    assert again.snapshot() == state.snapshot()
    for wp in range(0, 9):
        assert again.status(wp) is state.status(wp)
    assert state.status(1) is TxnStatus.UNKNOWN  # three outcomes kept: 2, 3 (invalid), 4, 5
    assert again.status(2) is TxnStatus.ABORTED and again.invalid[2].tails == (10, 11)
    assert again.status(3) is TxnStatus.TIMED_OUT
    assert again.conflicting(6, frozenset({b"a"})) == b"a"  # 1 committed after 6 began


@given(st.data())
def test_a_damaged_saved_state_is_corruption(data: st.DataObject) -> None:
    raw = _busy_state().encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(CorruptionError):
        TxnState.decode(raw[:cut])


@pytest.mark.parametrize("raw", [b"{}", b"[]", b'{"last":"x"}', b"\xff", b"null",
                                 b'{"last":1,"in_progress":[[1,2]],"invalid":[],"committed":[],"outcomes":[]}',
                                 b'{"last":1,"in_progress":[],"invalid":[],"committed":[],"outcomes":[[1,"MAYBE"]]}'])
def test_malformed_saved_states_are_corruption(raw: bytes) -> None:
    with pytest.raises(CorruptionError):
        TxnState.decode(raw)


def test_a_commit_logged_before_visible_edits_decodes_and_dates_from_the_end_of_recovery() -> None:
    """A commit record of an older log carries the pointer of when it was logged; its keys date
    from the end of the recovery instead (they count against every transaction then in progress)."""
    edit = decode_edit(b'{"k":"Commit","write_pointer":1,"commit_pointer":1,"conflicts":["61"],"writes":[]}')
    assert edit == Commit(1, (b"a",))
    state = TxnState()
    for wp in (1, 2):
        state.apply(Begin(wp, 1000, 5000))
    state.apply(edit)
    state.apply(Begin(3, 1000, 5000))  # began while it was being logged, or once it was visible
    assert state.conflicting(2, frozenset({b"a"})) is None  # not dated yet: only recovery applies it so
    state.date_commits()
    assert state.conflicting(2, frozenset({b"a"})) == b"a"
    assert state.conflicting(3, frozenset({b"a"})) == b"a"


def test_a_commit_of_transactions_not_in_progress_commits_nothing() -> None:
    """A commit record whose transactions were aborted once its append failed (finding 12)."""
    state = TxnState()
    state.apply(Begin(1, 1000, 5000))
    state.apply(Register(1, (7,)))
    state.apply(Abort(1, 1001))
    state.apply(Commit(1, (b"a",), (("m", b"k", b"v"),)))
    assert state.status(1) is TxnStatus.ABORTED and 1 in state.invalid
    assert not state.undated and not state.committed


def test_a_commit_check_does_not_scan_the_commits_a_long_transaction_keeps() -> None:
    """Finding 23: one transaction left open keeps every later commit's keys (they may conflict
    with it), but checking a commit looks up its own keys only: 50,000 kept commits, then 5,000
    checks, take well under the time one scan each would (about a second per thousand here)."""
    state = TxnState()
    state.apply(Begin(1, 0, 10**9))  # the long one
    wp = 1
    for n in range(50_000):
        wp += 1
        state.apply(Begin(wp, 0, 10**9))
        state.apply(Commit(wp, (b"k%d" % n,)))
        state.apply(Visible(wp, wp))
    assert len(state.committed) == 50_000
    started = time.monotonic()
    for n in range(5_000):
        assert state.conflicting(wp, frozenset({b"other%d" % n})) is None
    assert state.conflicting(1, frozenset({b"k7"})) == b"k7"
    assert state.conflicting(wp, frozenset({b"k49999"})) == b"k49999"  # committed at wp itself
    assert state.conflicting(wp + 1, frozenset({b"k49999"})) is None
    assert time.monotonic() - started < 2.0
    state.apply(Abort(1, 5))  # the long one ends: what only it could conflict with goes
    assert state.committed == [] and state.conflicting(1, frozenset({b"k7"})) is None


def test_the_conflict_index_forgets_a_key_only_with_its_last_commit() -> None:
    state = TxnState()
    for wp in (1, 2, 3, 4):
        state.apply(Begin(wp, 0, 10**9))
    state.apply(Commit(2, (b"a", b"b")))
    state.apply(Visible(2, 4))
    state.apply(Begin(5, 0, 10**9))
    state.apply(Begin(6, 0, 10**9))
    state.apply(Commit(3, (b"a",)))
    state.apply(Visible(3, 6))
    state.apply(Abort(1, 0))  # oldest now 4: both commits kept (4 <= 4 and 6)
    assert state.conflicting(4, frozenset({b"b"})) == b"b"
    state.apply(Abort(4, 0))
    state.apply(Abort(5, 0))  # oldest now 6: the first commit goes, "a" stays with the second
    assert state.conflicting(6, frozenset({b"b"})) is None
    assert state.conflicting(6, frozenset({b"a"})) == b"a"
    again = TxnState.decode(state.encode())
    assert again.conflicting(6, frozenset({b"a"})) == b"a" and again.conflicting(6, frozenset({b"b"})) is None


def test_commits_visible_at_the_same_pointer_are_forgotten_together() -> None:
    state = TxnState()
    for wp in (1, 2, 3):
        state.apply(Begin(wp, 0, 10**9))
    for wp in (2, 3):  # no begin between them: the same commit pointer
        state.apply(Commit(wp, (b"a",)))
        state.apply(Visible(wp, 3))
    assert state.conflicting(1, frozenset({b"a"})) == b"a"
    state.apply(Begin(4, 0, 10**9))
    state.apply(Abort(1, 0))
    assert state.committed == [] and state.conflicting(4, frozenset({b"a"})) is None


def test_ending_a_transaction_does_not_scan_those_in_progress() -> None:
    """Finding 29: the oldest transaction in progress (what conflict keys are kept for) is found
    without a pass over all of them: with 50,000 open, 5,000 commits and aborts take well under
    the time a pass each would (about 0.6 s per thousand here)."""
    state = TxnState()
    for wp in range(1, 50_001):
        state.apply(Begin(wp, 0, 10**9))
    started = time.monotonic()
    for wp in range(50_001, 55_001, 2):  # pointers are issued in increasing order
        state.apply(Begin(wp, 0, 10**9))
        state.apply(Commit(wp, (b"k",)))
        state.apply(Visible(wp, wp))
        state.apply(Begin(wp + 1, 0, 10**9))
        state.apply(Abort(wp + 1, 0))
    assert time.monotonic() - started < 1.5
    assert state.conflicting(1, frozenset({b"k"})) == b"k"
    state.apply(Abort(1, 0))  # the oldest goes: the next is the oldest, still before every commit
    assert state.conflicting(2, frozenset({b"k"})) == b"k"


def test_outcomes_round_trip_through_a_saved_state_and_older_saves_decode() -> None:
    state = TxnState(outcomes_max=10, outcomes_ms=1000)
    for wp in range(1, 13):
        state.apply(Begin(wp, 0, 10**9))
        state.apply(Abort(wp, 100 * wp) if wp % 3 else TimeOut(wp, 100 * wp))
    # 12 ended, at most 10 kept, those older than 1 s before the last (1200 ms) gone: none by time
    assert [state.status(wp) for wp in (1, 2, 3, 12)] == [TxnStatus.UNKNOWN] * 2 + [TxnStatus.TIMED_OUT,
                                                                                   TxnStatus.TIMED_OUT]
    again = TxnState.decode(state.encode(), outcomes_max=10, outcomes_ms=1000)
    assert list(again.outcomes) == list(state.outcomes) and len(again.outcomes) == 10
    state.apply(Begin(20, 0, 10**9))
    state.apply(Abort(20, 2050))  # 1 s after 1050: what ended before then goes
    assert state.status(5) is TxnStatus.UNKNOWN and state.status(11) is TxnStatus.ABORTED
    older = (b'{"last":9000000,"in_progress":[],"invalid":[],"committed":[],'
             b'"outcomes":[[7,"COMMITTED"],[8,"ABORTED"]]}')
    legacy = TxnState.decode(older)
    assert legacy.status(7) is TxnStatus.COMMITTED and legacy.status(8) is TxnStatus.ABORTED


def test_a_begin_does_not_sort_or_copy_the_invalid_list_again() -> None:
    """Finding 28: each begin sorted and copied both lists and built a set of them under the
    manager's lock. A snapshot now holds views of both sets at its version (O(1) to take, see
    seaway.txn._idlog); their sorted ids are built only when asked for, once per version, and
    shared by every snapshot of that version; a visibility question builds no set."""
    state = TxnState()
    for wp in range(1, 50_001):
        state.apply(Begin(wp, 1, 10**9))
        state.apply(Register(wp, (7,)))
        if wp % 2:
            state.apply(Abort(wp, 2))
    first, second = state.snapshot(), state.snapshot()
    assert first.invalid is second.invalid and len(first.invalid) == 25_000
    assert first.invalid == tuple(range(1, 50_001, 2)) and first.in_progress == tuple(range(2, 50_001, 2))
    assert first.visibility(3) is Visibility.SKIP and first.visibility(4) is Visibility.WAIT
    assert first._excluded is None and first._progress_frozen is None and first._invalid_frozen is None
    state.apply(Prune((1,)))
    assert state.snapshot().invalid == tuple(range(3, 50_001, 2))
    state.apply(Abort(4, 3))
    assert state.snapshot().invalid == (3, 4, *range(5, 50_001, 2))
