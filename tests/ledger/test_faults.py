"""A change and its ledger entry never exist one without the other: for each control-plane
operation made of several metadata batches, the store "crashes" at each of its batches in turn
(the write fails, or is made but its caller never hears of it, and nothing after it happens), then
reopens, which finishes what was left half-done. Each change is then either made and recorded once,
or neither."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import seaway
from seaway import SeawayConfig
from seaway._errors import StorageError
from seaway.streams import StreamCut
from seaway.streams._autoscaling import AutoScalingConfig
from seaway.testing import FakeClock
from tests.ledger.helpers import CrashingMeta, entries, head

CONFIG = SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None), retention=None)


def _streams(sw: seaway.Seaway) -> list[str]:
    return sw.streams.controller.list_streams("s")


def _stream_setup(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/x", segments=2)
    for segment in stream.current_segments():
        sw.logs.get(segment.log_id).append_batch([b"e"] * 3)


def _sealed_setup(sw: seaway.Seaway) -> None:
    _stream_setup(sw)
    sw.streams.get("s/x").seal()


def _truncate(sw: seaway.Seaway) -> None:
    stream = sw.streams.get("s/x")
    stream.truncate(StreamCut("s/x", {s.id: 3 for s in stream.current_segments()}))


def _truncated(sw: seaway.Seaway) -> bool:
    stream = sw.streams.get("s/x")
    return stream.head().positions == {s.id: 3 for s in stream.current_segments()}


def _queue_setup(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "a", 2, "ROUND_ROBIN")
    sw.queues.create_group("q", "b")


@dataclass(frozen=True)
class Case:
    setup: Callable[[seaway.Seaway], None]
    operation: Callable[[seaway.Seaway], object]
    made: dict[str, Callable[[seaway.Seaway], int]]
    """Each ledger operation the case may record -> how many of its changes are there after
    reopening (each must be recorded once)."""


CASES = {
    "create stream": Case(
        lambda sw: sw.streams.create_scope("s"), lambda sw: sw.streams.create("s/x", segments=2),
        {"stream.created": lambda sw: _streams(sw) == ["x"]}),
    "scale": Case(
        _stream_setup, lambda sw: sw.streams.get("s/x").split("0.0", 3),
        {"stream.scaled": lambda sw: sw.streams.get("s/x").describe().generation == 1}),
    "seal": Case(
        _stream_setup, lambda sw: sw.streams.get("s/x").seal(),
        {"stream.sealed": lambda sw: sw.streams.get("s/x").describe().state == "sealed"}),
    "delete stream": Case(
        _sealed_setup, lambda sw: sw.streams.get("s/x").delete(),
        {"stream.deleted": lambda sw: _streams(sw) == []}),
    "truncate": Case(_stream_setup, _truncate, {"stream.truncated": _truncated}),
    "reader group": Case(
        _stream_setup, lambda sw: sw.streams.create_reader_group("g", "s/x"),
        {"reader_group.created": lambda sw: sw.meta.get("streams", b"rg/g/conf") is not None}),
    "resize": Case(
        _queue_setup, lambda sw: sw.queues.resize_group("q", "a", 3, wait_s=None),
        {"consumer_group.resized": lambda sw: sw.queues.describe_group("q", "a").generation == 2}),
    "delete queue": Case(
        _queue_setup, lambda sw: sw.queues.delete("q"),
        {"consumer_group.deleted": lambda sw: 2 - len(sw.queues.groups("q")) if "q" in sw.queues.list() else 2,
         "queue.deleted": lambda sw: "q" not in sw.queues.list()}),
}


def _run(path: Path, case: Case, crash_at: int | None, applied: bool) -> tuple[int, int]:
    """Set up, run the operation crashing at its ``crash_at``-th metadata commit, reopen; check that
    every change is there exactly when its entry is. Returns the operation's metadata commits and
    the changes made."""
    clock = FakeClock()
    with seaway.Seaway(path, CONFIG, clock=clock) as sw:
        case.setup(sw)
        mark = head(sw)
        crashing = CrashingMeta(sw.meta, crash_at, applied=applied)
        sw.streams.controller.meta = crashing
        sw.queues.meta = crashing
        if crash_at is None:
            case.operation(sw)
        else:
            with pytest.raises(StorageError, match="injected"):
                case.operation(sw)
    with seaway.Seaway(path, CONFIG, clock=clock) as sw:  # opening finishes what was left half-done
        recorded = [e.operation for e in entries(sw, mark + 1)]
        made_all = 0
        where = f"crash at commit {crash_at} ({'after' if applied else 'before'} it is applied)"
        for operation, made in case.made.items():
            assert recorded.count(operation) == int(made(sw)), \
                f"{where}: {int(made(sw))} {operation} made, {recorded.count(operation)} recorded"
            made_all += int(made(sw))
    return crashing.commits, made_all


@pytest.mark.parametrize("name", list(CASES))
def test_a_crash_at_any_batch_leaves_a_change_and_its_entry_together(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    commits, whole = _run(tmp_path / "whole", case, None, False)
    assert commits >= 1 and whole == sum(1 for _ in case.made) + (name == "delete queue")  # two groups
    outcomes = {_run(tmp_path / f"{crash_at}-{applied}", case, crash_at, applied)[1]
                for crash_at in range(1, commits + 1) for applied in (False, True)}
    assert 0 in outcomes and whole in outcomes, "the crashes left the change both made and not"
