"""A change and its ledger entry never exist one without the other: for each control-plane
operation made of several metadata batches, the store "crashes" at each of its named crash points
in turn (:class:`seaway.testing.CrashingMeta`: before or just after each batch applies, the write
fails or is made but its caller never hears of it, and nothing after it happens), then
reopens, which finishes what was left half-done. Each change is then either made and recorded once,
or neither. The changes of :data:`KILLED` are also crashed for real at each point: a child process
kills itself with SIGKILL there."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import seaway
from seaway._errors import StorageError, UnknownStreamError
from seaway.log import EmbeddedLogStore, Logs
from seaway.queues._records import NAMESPACE as QUEUES
from seaway.queues._records import GroupRecord, groups_prefix, queue_key
from seaway.streams import RetentionByTime
from seaway.streams._metadata import StreamMetadata
from seaway.testing import CrashingMeta, CrashPoint, FakeClock
from seaway.testing._named_crash import CHANGES, CONFIG, Change, arm
from tests.ledger.helpers import entries, head


def _streams(sw: seaway.Seaway) -> list[str]:
    return sw.streams.controller.list_streams("s")


def _truncated(sw: seaway.Seaway) -> bool:
    stream = sw.streams.get("s/x")
    return stream.head().positions == {s.id: 3 for s in stream.current_segments()}


def _updated(sw: seaway.Seaway) -> bool:
    return sw.streams.get("s/x").config.retention == RetentionByTime(3600)


def _notify_replaced(sw: seaway.Seaway) -> bool:
    checkpoint = sw.notify.checkpoint("n")
    assert checkpoint is not None, "the replaced configuration's plugin lost its position"
    return sw.notify.get("n").prefix == "log/nothing."


@dataclass(frozen=True)
class Case:
    change: Change
    made: dict[str, Callable[[seaway.Seaway], int]]
    """Each ledger operation the case may record -> how many of its changes are there after
    reopening (each must be recorded once)."""

    def setup(self, sw: seaway.Seaway) -> object:
        return self.change.setup(sw)

    def operation(self, sw: seaway.Seaway) -> object:
        return self.change.make(sw)


CASES = {
    "create stream": Case(CHANGES["create stream"], {"stream.created": lambda sw: _streams(sw) == ["x"]}),
    "scale": Case(CHANGES["scale"],
                  {"stream.scaled": lambda sw: sw.streams.get("s/x").describe().generation == 1}),
    "seal": Case(CHANGES["seal"], {"stream.sealed": lambda sw: sw.streams.get("s/x").describe().state == "sealed"}),
    "delete stream": Case(CHANGES["delete stream"], {"stream.deleted": lambda sw: _streams(sw) == []}),
    "truncate": Case(CHANGES["truncate"], {"stream.truncated": _truncated}),
    "update stream config": Case(CHANGES["update stream config"], {"stream.updated": _updated}),
    "replace notify config": Case(CHANGES["replace notify config"], {"notify.configured": _notify_replaced}),
    "reader group": Case(CHANGES["reader group"],
                         {"reader_group.created": lambda sw: sw.meta.get("streams", b"rg/g/conf") is not None}),
    "create consumer group": Case(CHANGES["create consumer group"],
                                  {"consumer_group.created": lambda sw: sw.queues.groups("q") == ["a"]}),
    "resize": Case(CHANGES["resize"],
                   {"consumer_group.resized": lambda sw: sw.queues.describe_group("q", "a").generation == 2}),
    "delete queue": Case(CHANGES["delete queue"], {
        "consumer_group.deleted": lambda sw: 2 - len(sw.queues.groups("q")) if "q" in sw.queues.list() else 2,
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
        arm(sw, crashing)
        if point is None:
            case.operation(sw)
        else:
            with pytest.raises(StorageError, match="injected"):
                case.operation(sw)
    return crashing, _check(path, case, mark, "no crash" if point is None else f"crash at {point.name}", clock)


def _check(path: Path, case: Case, mark: int, where: str, clock: FakeClock | None = None) -> int:
    """Reopen the store (which finishes what was left half-done) and check that each change is
    there exactly when its entry is; how many changes are made."""
    with seaway.Seaway(path, CONFIG, clock=clock) as sw:
        recorded = [e.operation for e in entries(sw, mark + 1)]
        made_all = 0
        for operation, made in case.made.items():
            assert recorded.count(operation) == int(made(sw)), \
                f"{where}: {int(made(sw))} {operation} made, {recorded.count(operation)} recorded"
            made_all += int(made(sw))
    return made_all


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


def _segment_logs_as_left(path: Path) -> tuple[set[int], set[int]]:
    """What a crash left on disk, read at the log layer before any recovery runs: the ids of the
    logs named as stream ``s/x``'s segments, and the log ids its records name (its generations'
    segments and a scaling's new ones)."""
    store = EmbeddedLogStore(path, CONFIG.logs)
    try:
        logs = Logs(store)
        made = {int(log.id) for log in logs.list() if log.name.startswith("seg/s/x/")}
        meta = StreamMetadata(logs.metadata_store(), "s", "x")
        named: set[int] = set()
        with contextlib.suppress(UnknownStreamError):
            current, _, _ = meta.current()
            for g in range(current.generation + 1):
                named |= {s.log_id for s in meta.generation(g).segments}
            transition = meta.transition()
            if transition is not None:
                named |= {s.log_id for s in transition[0].created if s.log_id}
        return made, named
    finally:
        store.close()


def _queue_logs_as_left(path: Path) -> tuple[set[int], set[int]]:
    """As :func:`_segment_logs_as_left`, for queue ``q``'s partition logs and its groups' layouts."""
    store = EmbeddedLogStore(path, CONFIG.logs)
    try:
        logs = Logs(store)
        made = {int(log.id) for log in logs.list() if log.name.startswith("queue/q/")}
        named: set[int] = set()
        for _, found in logs.metadata_store().scan(QUEUES, prefix=groups_prefix("q")):
            record = GroupRecord.decode(found.value)
            named |= set(record.current.logs) | (set(record.previous.logs) if record.previous else set())
        queue = logs.metadata_store().get(QUEUES, queue_key("q"))  # its data log (payloads stored once)
        if queue is not None and json.loads(queue.value).get("data_log") is not None:
            named.add(int(json.loads(queue.value)["data_log"]))
        return made, named
    finally:
        store.close()


LEFT = {"create stream": _segment_logs_as_left, "scale": _segment_logs_as_left,
        "create consumer group": _queue_logs_as_left, "resize": _queue_logs_as_left}
"""The changes that create logs, each with a batch of theirs: what a kill left of those logs."""
KILLED = ["create stream", "scale", "truncate", "update stream config", "replace notify config", "seal",
          "reader group", "create consumer group", "resize"]
"""The changes whose every crash point is also tested by killing a process there."""


@pytest.mark.parametrize("name", KILLED)
def test_a_process_killed_at_each_crash_point_leaves_the_change_made_once_or_not_at_all(
        tmp_path: Path, name: str) -> None:
    """A real crash: a child process (:mod:`seaway.testing._named_crash`) makes the change and
    kills itself with SIGKILL at the crash point, one child per point, all at once. Each store is
    then reopened: the change is made and recorded once, or neither, and it can then be made."""
    case = CASES[name]
    whole_run, whole = _run(tmp_path / "whole", case, None)  # the change's crash points
    template = tmp_path / "template"
    with seaway.Seaway(template, CONFIG) as sw:
        case.setup(sw)
        mark = head(sw)
    children: list[tuple[CrashPoint, Path, subprocess.Popen[bytes]]] = []
    for point in whole_run.points():
        path = tmp_path / f"{point.commit}-{int(point.applied)}"
        shutil.copytree(template, path)
        children.append((point, path, subprocess.Popen(
            [sys.executable, "-m", "seaway.testing._named_crash", str(path), name, str(point.commit),
             str(int(point.applied))], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    outcomes = set()
    for point, path, child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, \
            f"killed at {point.name}: the child ended with {child.returncode}, not killed: {err[-3000:]!r}"
        if name in LEFT:  # logs created by a batch of the change
            logs, named = LEFT[name](path)
            assert logs == named, f"killed at {point.name}: logs {sorted(logs - named)} named by nothing, " \
                                  f"logs {sorted(named - logs)} named but missing"
        made = _check(path, case, mark, f"killed at {point.name}")
        outcomes.add(made)
        if made != whole:  # the store works: the change is made now, and recorded once
            with seaway.Seaway(path, CONFIG) as sw:
                case.operation(sw)
            assert _check(path, case, mark, f"made again after a kill at {point.name}") == whole
    assert outcomes == {0, whole}, f"the kills left the change made {outcomes} times, not both 0 and {whole}"


def test_a_crash_point_that_creates_logs_says_so(tmp_path: Path) -> None:
    crashing, _ = _run(tmp_path, CASES["create stream"], None)
    assert crashing.steps == ["creates 2 logs, records stream.created"], crashing.steps
