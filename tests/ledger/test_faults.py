"""A change and its ledger entry never exist one without the other: for each control-plane
operation made of several metadata batches, the store "crashes" at each of its named crash points
in turn (:class:`seaway.testing.CrashingMeta`: before or just after each batch applies, the write
fails or is made but its caller never hears of it, and nothing after it happens), then
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
from seaway.notify import Notifications, NotifyConfig, SeawayStream
from seaway.streams import AutoScalingConfig, RetentionByTime, StreamCut
from seaway.testing import CrashingMeta, CrashPoint, FakeClock
from tests.ledger.helpers import entries, head

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


def _updated(sw: seaway.Seaway) -> bool:
    return sw.streams.get("s/x").config.retention == RetentionByTime(3600)


def _notify_config(prefix: str) -> NotifyConfig:
    return NotifyConfig("n", SeawayStream("feed/x"), prefix=prefix)  # selects nothing: its plugin writes nothing


def _notify_setup(sw: seaway.Seaway) -> None:
    sw.notify.set(_notify_config("log/none."))


def _notify_replaced(sw: seaway.Seaway) -> bool:
    checkpoint = sw.notify.checkpoint("n")
    assert checkpoint is not None, "the replaced configuration's plugin lost its position"
    return sw.notify.get("n").prefix == "log/nothing."


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
    "update stream config": Case(
        _stream_setup, lambda sw: sw.streams.get("s/x").update(retention=RetentionByTime(3600)),
        {"stream.updated": _updated}),
    "replace notify config": Case(
        _notify_setup, lambda sw: sw.notify.set(_notify_config("log/nothing.")),
        {"notify.configured": _notify_replaced}),
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


def _run(path: Path, case: Case, point: CrashPoint | None) -> tuple[CrashingMeta, int]:
    """Set up, run the operation crashing at ``point``, reopen; check that every change is there
    exactly when its entry is. Returns the crashing store (its :attr:`~CrashingMeta.steps` name the
    operation's batches) and the changes made."""
    clock = FakeClock()
    with seaway.Seaway(path, CONFIG, clock=clock) as sw:
        case.setup(sw)
        mark = head(sw)
        crashing = CrashingMeta(sw.meta, point)
        sw.streams.controller.meta = crashing
        sw.queues.meta = crashing
        sw.notify = Notifications(crashing, sw.ledger)
        if point is None:
            case.operation(sw)
        else:
            with pytest.raises(StorageError, match="injected"):
                case.operation(sw)
    with seaway.Seaway(path, CONFIG, clock=clock) as sw:  # opening finishes what was left half-done
        recorded = [e.operation for e in entries(sw, mark + 1)]
        made_all = 0
        where = "no crash" if point is None else f"crash at {point.name}"
        for operation, made in case.made.items():
            assert recorded.count(operation) == int(made(sw)), \
                f"{where}: {int(made(sw))} {operation} made, {recorded.count(operation)} recorded"
            made_all += int(made(sw))
    return crashing, made_all


@pytest.mark.parametrize("name", list(CASES))
def test_a_crash_at_any_batch_leaves_a_change_and_its_entry_together(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    whole_run, whole = _run(tmp_path / "whole", case, None)
    assert whole_run.commits >= 1 and whole == sum(1 for _ in case.made) + (name == "delete queue")  # two groups
    outcomes = {_run(tmp_path / f"{point.commit}-{point.applied}", case, point)[1] for point in whole_run.points()}
    assert 0 in outcomes and whole in outcomes, "the crashes left the change both made and not"


def test_crash_points_are_named_by_what_each_batch_does(tmp_path: Path) -> None:
    """The batches of a scaling, named: a crash test's failure says which step it crashed at."""
    crashing, _ = _run(tmp_path, CASES["scale"], None)
    assert crashing.steps and "records stream.scaled" in crashing.steps, crashing.steps
    names = [point.name for point in crashing.points()]
    assert len(names) == len(set(names)) == 2 * crashing.commits, names
