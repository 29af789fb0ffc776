"""Snapshots: the visibility rule, and their encoding (what crosses the wire to remote readers)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seaway import CorruptionError
from seaway.txn import Snapshot, Visibility

pointers = st.integers(1, 2**64 - 1)
snapshots = st.builds(Snapshot, pointers, st.lists(pointers, max_size=5).map(tuple),
                      st.lists(pointers, max_size=5).map(tuple), st.integers(0, 2**64 - 1))


@given(snapshots)
def test_a_snapshot_decodes_to_itself(snapshot: Snapshot) -> None:
    again = Snapshot.decode(snapshot.encode())
    assert again == snapshot
    for wp in (*snapshot.in_progress, *snapshot.invalid, snapshot.read_pointer, snapshot.write_pointer):
        assert again.visibility(wp) is snapshot.visibility(wp)


@given(snapshots, st.data())
def test_a_cut_off_or_extended_snapshot_is_corruption(snapshot: Snapshot, data: st.DataObject) -> None:
    raw = snapshot.encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(CorruptionError):
        Snapshot.decode(raw[:cut])
    with pytest.raises(CorruptionError):
        Snapshot.decode(raw + data.draw(st.binary(min_size=1, max_size=16)))


@given(snapshots, st.integers(0, 255).filter(lambda v: v != 1))
def test_an_unknown_version_is_corruption(snapshot: Snapshot, version: int) -> None:
    with pytest.raises(CorruptionError):
        Snapshot.decode(bytes([version]) + snapshot.encode()[1:])


@given(st.binary(max_size=80))
def test_garbled_bytes_decode_or_are_corruption(raw: bytes) -> None:
    """Nothing but CorruptionError escapes, whatever the bytes (a count that claims more values
    than there are bytes, say)."""
    try:
        snapshot = Snapshot.decode(raw)
    except CorruptionError:
        return
    assert snapshot.encode() == raw


def test_counts_that_claim_more_than_there_is_are_corruption() -> None:
    raw = struct.pack(">BQQII", 1, 10, 0, 2**32 - 1, 0) + struct.pack(">Q", 5)
    with pytest.raises(CorruptionError):
        Snapshot.decode(raw)


def test_the_visibility_rule() -> None:
    snapshot = Snapshot(read_pointer=10, in_progress=(4, 7), invalid=(5,), write_pointer=7)
    assert snapshot.visibility(3) is Visibility.VISIBLE  # committed before the snapshot
    assert snapshot.visibility(4) is Visibility.WAIT  # in progress: may still commit
    assert snapshot.visibility(5) is Visibility.SKIP  # aborted or timed out: never visible
    assert snapshot.visibility(7) is Visibility.VISIBLE  # its own writes
    assert snapshot.visibility(10) is Visibility.VISIBLE
    assert snapshot.visibility(11) is Visibility.WAIT  # began after the snapshot
    outside = Snapshot(read_pointer=10, in_progress=(4, 7), invalid=(5,))
    assert outside.visibility(7) is Visibility.WAIT
    assert [outside.visible(wp) for wp in (3, 4, 5, 7, 11)] == [True, False, False, False, False]
