"""Streams' control plane and queries, embedded and through a server, with one API."""

from __future__ import annotations

import pytest

from seaway import (
    ByEventRate,
    InvalidArgumentError,
    InvalidStreamCutError,
    ScaleConflictError,
    ScopeExistsError,
    ScopeNotEmptyError,
    StreamCut,
    StreamExistsError,
    StreamNotSealedError,
    StreamSealedError,
    UnknownScopeError,
    UnknownStreamError,
)
from seaway.log import LSN_OLDEST
from tests.api.conftest import Api

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""


def test_streams_are_created_scaled_queried_sealed_and_deleted(api: Api) -> None:
    scope = api.name("scope")
    api.sw.streams.create_scope(scope)
    with pytest.raises(ScopeExistsError):
        api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", scaling=ByEventRate(100, min_segments=2))
    with pytest.raises(StreamExistsError):
        api.sw.streams.create(f"{scope}/s")
    first = [s.id for s in stream.current_segments()]
    assert len(first) == 2
    split = stream.split(first[0], 2)
    assert split.generation == 1 and len(split.segments) == 3
    created = [s.id for s in split.segments if s.generation == 1]
    assert set(stream.successors(first[0])) == {s for s in split.segments if s.generation == 1}
    assert [p.id for p in stream.predecessors(created[0])] == [first[0]]
    merged = stream.merge(created)
    assert [s.id for s in stream.predecessors(merged.segments[0].id)] == created
    with pytest.raises(ScaleConflictError):
        stream.split(first[0])  # sealed by the first scaling
    with pytest.raises(InvalidArgumentError):
        stream.scale([merged.segments[0].id], [(0.0, 0.2)])  # does not cover the sealed range
    assert [d.generation for d in stream.history()] == [1, 2]
    head, tail = stream.head(), stream.tail()
    assert stream.compare(head, tail) == -1
    assert len(stream.segments_between(head, tail)) == 5
    with pytest.raises(InvalidStreamCutError):
        stream.truncate(StreamCut(stream.name, {first[0]: LSN_OLDEST}))  # covers half the key space
    stream.truncate(tail)
    assert stream.head() == tail
    with pytest.raises(ScopeNotEmptyError):
        api.sw.streams.delete_scope(scope)
    with pytest.raises(StreamNotSealedError):
        stream.delete()
    stream.seal()
    with pytest.raises(StreamSealedError):
        stream.split(stream.current_segments()[0].id)
    stream.delete()
    with pytest.raises(UnknownStreamError):
        api.sw.streams.get(f"{scope}/s")
    api.sw.streams.delete_scope(scope)
    with pytest.raises(UnknownScopeError):
        api.sw.streams.create(f"{scope}/again")


def test_get_or_create_forms_return_what_exists(api: Api) -> None:
    scope = api.name("scope")
    api.sw.streams.create_scope(scope, exist_ok=True)
    api.sw.streams.create_scope(scope, exist_ok=True)
    with pytest.raises(ScopeExistsError):
        api.sw.streams.create_scope(scope)
    made = api.sw.streams.get_or_create(f"{scope}/s", segments=3)
    again = api.sw.streams.get_or_create(f"{scope}/s", segments=3)
    assert made.name == again.name and len(again.current_segments()) == 3
    with pytest.raises(StreamExistsError, match="a fixed 3 segments, not 5"):  # it says what differs
        api.sw.streams.get_or_create(f"{scope}/s", segments=5)
    assert len(api.sw.streams.get_or_create(f"{scope}/s").current_segments()) == 3  # nothing asked: as it is
    group = api.sw.streams.get_or_create_reader_group(f"g-{scope}", again)
    assert api.sw.streams.get_or_create_reader_group(f"g-{scope}", again).describe() == group.describe()
