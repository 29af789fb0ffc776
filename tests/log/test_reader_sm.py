"""The reader state machine's gap classification, without any disk."""

from __future__ import annotations

from seaway import Gap, GapType, Record
from seaway.log import LogReadState, ReadChunk, make_lsn
from seaway.logsdb import CorruptEntry, HolePlugEntry, RecordsEntry

L = 9


def lsn(epoch: int, esn: int) -> int:
    return make_lsn(epoch, esn)


def test_bridge_from_start_and_between_epochs() -> None:
    state = LogReadState(L, 1, lsn(3, 1))
    chunk = ReadChunk([RecordsEntry(L, lsn(1, 1), 5, [b"a"]), RecordsEntry(L, lsn(3, 1), 6, [b"b"])],
                      lsn(3, 1), 0, {1: lsn(1, 1)})
    assert state.on_chunk(chunk) == [
        Gap(L, GapType.BRIDGE, 1, lsn(1, 0)),
        Record(L, lsn(1, 1), 5, b"a"),
        Gap(L, GapType.BRIDGE, lsn(1, 2), lsn(3, 0)),
        Record(L, lsn(3, 1), 6, b"b"),
    ]
    assert state.done


def test_missing_slots_inside_an_epoch_are_dataloss() -> None:
    state = LogReadState(L, lsn(1, 1), lsn(1, 5))
    chunk = ReadChunk([RecordsEntry(L, lsn(1, 1), 5, [b"a"]), RecordsEntry(L, lsn(1, 4), 5, [b"d", b"e"])],
                      lsn(1, 5), 0, {})
    assert state.on_chunk(chunk) == [
        Record(L, lsn(1, 1), 5, b"a"),
        Gap(L, GapType.DATALOSS, lsn(1, 2), lsn(1, 3)),
        Record(L, lsn(1, 4), 5, b"d"),
        Record(L, lsn(1, 5), 5, b"e"),
    ]


def test_missing_below_a_sealed_epoch_end_is_dataloss_above_it_bridge() -> None:
    state = LogReadState(L, lsn(2, 1), lsn(3, 1))
    chunk = ReadChunk([RecordsEntry(L, lsn(2, 1), 1, [b"a"]), RecordsEntry(L, lsn(3, 1), 1, [b"z"])],
                      lsn(3, 1), 0, {2: lsn(2, 3)})
    assert state.on_chunk(chunk)[1:3] == [
        Gap(L, GapType.DATALOSS, lsn(2, 2), lsn(2, 3)),
        Gap(L, GapType.BRIDGE, lsn(2, 4), lsn(3, 0)),
    ]


def test_trim_hole_and_corruption() -> None:
    state = LogReadState(L, 1, lsn(1, 9))
    chunk = ReadChunk([
        RecordsEntry(L, lsn(1, 1), 1, [b"gone", b"kept"]),
        HolePlugEntry(L, lsn(1, 3), lsn(1, 4), 1),
        RecordsEntry(L, lsn(1, 5), 2, [b"ok", None, b"ok2"]),
        CorruptEntry(L, lsn(1, 8), lsn(1, 9)),
    ], lsn(1, 9), lsn(1, 1), {})
    assert state.on_chunk(chunk) == [
        Gap(L, GapType.TRIM, 1, lsn(1, 1)),
        Record(L, lsn(1, 2), 1, b"kept"),
        Gap(L, GapType.HOLE, lsn(1, 3), lsn(1, 4)),
        Record(L, lsn(1, 5), 2, b"ok"),
        Gap(L, GapType.DATALOSS, lsn(1, 6), lsn(1, 6)),
        Record(L, lsn(1, 7), 2, b"ok2"),
        Gap(L, GapType.DATALOSS, lsn(1, 8), lsn(1, 9)),
    ]


def test_a_read_cut_short_classifies_the_tail_like_a_longer_read() -> None:
    state = LogReadState(L, lsn(1, 1), lsn(1, 3))
    chunk = ReadChunk([RecordsEntry(L, lsn(1, 1), 1, [b"a"])], lsn(1, 3), 0, {}, next_entry_lsn=lsn(1, 9))
    assert state.on_chunk(chunk)[-1] == Gap(L, GapType.DATALOSS, lsn(1, 2), lsn(1, 3))


def test_want_waits_for_release_and_respects_until() -> None:
    state = LogReadState(L, lsn(1, 5), lsn(1, 8))
    assert state.want(lsn(1, 4)) is None
    want = state.want(lsn(1, 20))
    assert want is not None and (want.lsn_from, want.lsn_to) == (lsn(1, 5), lsn(1, 8))
