"""A notification configuration replaced while its plugin runs, crashing at each named crash point
of the replacement (before its batch applies, or just after, the caller never told): after
reopening, the configuration is the old or the new one, recorded once if new, and the plugin goes
on from the old one's position: every selected change is delivered at least once, in order per
resource, nothing dropped or missed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import FixedSegments
from seaway._errors import StorageError
from seaway.notify import DeliveryRetry, Notifications, NotifyConfig, NotifyServiceConfig, SeawayStream
from seaway.streams import AutoScalingConfig
from seaway.testing import CrashingMeta, CrashPoint
from tests.faults.checkers import check_at_least_once_in_order

CONFIG = seaway.SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None),
                             notify=NotifyServiceConfig(config_poll_s=0.05, idle_s=0.05))


def _config(backoff_s: float) -> NotifyConfig:
    """The replacement differs only in its retry policy: it selects the same changes."""
    return NotifyConfig("feed", SeawayStream("feed/changes"), prefix="log/app.",
                        retry=DeliveryRetry(backoff_initial_s=backoff_s, backoff_max_s=0.1))


def _changes(sw: Any, first: int, n: int) -> None:
    for i in range(first, first + n):
        sw.logs.create(f"app.l{i}")
        sw.logs.create(f"other.l{i}")
        sw.logs.get(f"app.l{i}").seal()


def _caught_up(sw: Any, timeout_s: float = 30.0) -> None:
    head = sw.ledger.bounds()[1]
    deadline = time.monotonic() + timeout_s
    while (sw.notify.status()[0].position or 0) < head:
        assert time.monotonic() < deadline, f"the plugin is stuck: {sw.notify.status()}"
        time.sleep(0.02)


def _feed(sw: Any, group: str, ids: set[str], timeout_s: float = 30.0) -> list[tuple[str, str]]:
    sw.streams.create_reader_group(group, "feed/changes")
    seen: list[tuple[str, str]] = []
    with sw.streams.reader_group(group).reader("r") as reader:
        deadline = time.monotonic() + timeout_s
        while not ids <= {i for _, i in seen}:
            assert time.monotonic() < deadline, f"not delivered: {sorted(ids - {i for _, i in seen})[:10]}"
            got = reader.read_next(0.2)
            if got is not None:
                body = json.loads(got.payload)
                seen.append((body["subject"], body["id"]))
    return seen


def _replace(path: Path, point: CrashPoint | None) -> CrashingMeta:
    """Set the old configuration, deliver some changes, replace it crashing at ``point``, reopen,
    make more changes: check what the plugin delivered and what the ledger recorded."""
    with seaway.Seaway(path, CONFIG) as sw:
        sw.streams.create_scope("feed")
        sw.streams.create("feed/changes", scaling=FixedSegments(2))
        start = sw.ledger.bounds()[1]
        sw.notify.set(_config(0.01))
        _changes(sw, 0, 3)
        _caught_up(sw)
        mark = sw.ledger.bounds()[1]
        _changes(sw, 3, 3)  # some delivered before the replacement, some after
        crashing = CrashingMeta(sw.meta, point)
        replacing = Notifications(crashing, sw.ledger)
        if point is None:
            replacing.set(_config(0.02))
        else:
            with pytest.raises(StorageError, match="injected"):
                replacing.set(_config(0.02))
    where = "no crash" if point is None else f"crash at {point.name}"
    with seaway.Seaway(path, CONFIG) as sw:
        replaced = sw.notify.get("feed").retry.backoff_initial_s == 0.02
        recorded = [e.operation for e in sw.ledger.read(mark + 1, 1000) if e.resource == "notify/feed"]
        assert recorded.count("notify.configured") == int(replaced), f"{where}: {replaced=}, {recorded}"
        _changes(sw, 6, 3)
        _caught_up(sw)
        selected = [e for e in sw.ledger.read(start + 1, 1000) if e.resource.startswith("log/app.")]
        assert len(selected) == 2 * 9, f"{where}: {[e.operation for e in selected]}"
        expected = [(e.resource, str(e.index)) for e in selected]
        check_at_least_once_in_order(_feed(sw, "check", {i for _, i in expected}), expected)
        (status,) = sw.notify.status()
        assert status.counters["dropped"] == 0 and status.counters["missed"] == 0, f"{where}: {status}"
    return crashing


def test_a_crash_at_each_point_of_a_replacement_keeps_the_plugins_deliveries(tmp_path: Path) -> None:
    whole = _replace(tmp_path / "whole", None)
    assert whole.steps == ["records notify.configured"], whole.steps
    for point in whole.points():
        _replace(tmp_path / f"{point.commit}-{point.applied}", point)
