"""The stream controller's changes under races and crashes between their steps: a scope deleted
while a stream is created in it, a crash between making a stream's logs and committing it, and the
typed conflicts a change meets when another process changed the stream first."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

import seaway
from seaway import SeawayConfig
from seaway._errors import (
    ScaleConflictError,
    ScopeNotEmptyError,
    StorageError,
    StreamChangedError,
    StreamConflictError,
    UnknownScopeError,
)
from seaway.log import MetaApi, MetaBatch, Versioned
from seaway.streams import StreamCut
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.testing import CrashingMeta, FakeClock

CONFIG = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None), retention=None)


class RacingMeta(MetaApi):
    """A metadata store that runs ``before`` once, just before the first commit made through it:
    another process's change landing between this one's reads and its write."""

    def __init__(self, meta: MetaApi, before: Callable[[], object]) -> None:
        self._meta = meta
        self._before: Callable[[], object] | None = before

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        return self._meta.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        return self._meta.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)

    @property
    def revision(self) -> int:
        return self._meta.revision

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        before, self._before = self._before, None
        if before is not None:
            before()
        return self._meta.commit(batch, sync=sync)


def _segment_logs(sw: seaway.Seaway, stream: str) -> list[str]:
    return [log.name for log in sw.logs.list() if log.name.startswith(f"seg/{stream}/")]


def test_a_stream_created_while_its_scope_is_deleted_is_never_left_in_a_deleted_scope(tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        controller = sw.streams.controller
        # The delete has read the scope (no streams) when the create commits, then writes.
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.create("s/x", segments=2))
        with contextlib.suppress(ScopeNotEmptyError):
            controller.delete_scope("s")
        controller.meta = sw.meta
        assert sw.streams.scopes() == ["s"], "the scope of a live stream was deleted"
        assert sw.streams.list("s") == ["s/x"]


def test_a_scope_deleted_while_a_stream_is_created_in_it_refuses_the_stream(tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        controller = sw.streams.controller
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.delete_scope("s"))
        with pytest.raises(UnknownScopeError):
            controller.create_stream("s", "x", seaway.StreamConfig(), 2)
        controller.meta = sw.meta
        assert sw.streams.scopes() == []
        assert _segment_logs(sw, "s/x") == [], "the refused stream's logs were left behind"


def test_streams_created_at_once_in_one_scope_are_all_created(tmp_path: Path) -> None:
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        controller = sw.streams.controller
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.create("s/a", segments=1))
        controller.create_stream("s", "b", seaway.StreamConfig(), 1)
        controller.meta = sw.meta
        assert sorted(sw.streams.list("s")) == ["s/a", "s/b"]


def test_a_crash_between_making_a_streams_logs_and_committing_it_leaves_no_orphan_logs(tmp_path: Path) -> None:
    clock = FakeClock()
    with seaway.Seaway(tmp_path, CONFIG, clock=clock) as sw:
        sw.streams.create_scope("s")
        counting = CrashingMeta(sw.meta)
        sw.streams.controller.meta = counting
        sw.streams.create("s/whole", segments=3)
    assert counting.commits >= 1
    for n, point in enumerate(counting.points()):
        with seaway.Seaway(tmp_path, CONFIG, clock=clock) as sw:
            sw.streams.controller.meta = CrashingMeta(sw.meta, point)
            with pytest.raises(StorageError, match="injected"):
                sw.streams.create(f"s/x{n}", segments=3)
        with seaway.Seaway(tmp_path, CONFIG, clock=clock) as sw:  # opening recovers
            made = f"s/x{n}" in sw.streams.list("s")
            logs = _segment_logs(sw, f"s/x{n}")
            assert len(logs) == (3 if made else 0), f"crash at {point.name}: {made=}, logs {logs}"


def test_conflicts_are_named_by_what_changed_and_share_one_base(tmp_path: Path) -> None:
    assert issubclass(ScaleConflictError, StreamConflictError)
    assert issubclass(StreamChangedError, StreamConflictError)
    assert StreamChangedError.retriable and not ScaleConflictError.retriable
    with seaway.Seaway(tmp_path, CONFIG, clock=FakeClock()) as sw:
        sw.streams.create_scope("s")
        stream = sw.streams.create("s/x", segments=2)
        for segment in stream.current_segments():
            sw.logs.get(segment.log_id).append_batch([b"e"] * 3)
        cut = StreamCut("s/x", {s.id: 2 for s in stream.current_segments()})
        controller = sw.streams.controller
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.get("s/x").truncate(cut))
        with pytest.raises(StreamChangedError, match="truncated meanwhile"):
            controller.truncate(stream.metadata, StreamCut("s/x", {s.id: 3 for s in stream.current_segments()}))
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.get("s/x").update(retention=None))
        with pytest.raises(StreamChangedError, match="changed meanwhile"):
            controller.update(stream.metadata, stream.config)
        controller.meta = RacingMeta(sw.meta, lambda: sw.streams.get("s/x").record_cut())
        with pytest.raises(StreamChangedError, match="another cut"):
            controller.record_cut(stream.metadata, stream.tail())
        controller.meta = sw.meta
        with pytest.raises(ScaleConflictError):
            stream.split(stream.current_segments()[0].id)
            stream.split(0)  # 0.0, sealed by the split before
