"""A notification plugin whose target is a stream of the store, with the store's appends faulted
(refusals before and after the store took a batch, lost replies, delays; by seed, embedded and in
a server's process): every selected ledger entry is delivered at least once, each resource's in
ledger order, nothing is dropped or missed, and every change the test made is recorded once."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from seaway import FixedSegments
from seaway.notify import DeliveryRetry, NotifyConfig, SeawayStream
from seaway.testing import AppendFaults
from tests.faults.checkers import check_at_least_once_in_order, replayable
from tests.faults.conftest import Faultable

LOGS = 6


def _changes(sw: Any) -> None:
    """Control-plane changes, several per resource: created, sealed, deleted (and unselected ones)."""
    for i in range(LOGS):
        sw.logs.create(f"app.l{i}")
        sw.logs.create(f"other.l{i}")
    for i in range(LOGS):
        log = sw.logs.get(f"app.l{i}")
        log.seal()
        if i % 2:
            sw.logs.delete(log)


def _read_feed(sw: Any, ids: set[str], timeout_s: float = 30.0) -> list[tuple[str, str]]:
    """(subject, id) of the feed's events, in the order read, until every one of ``ids`` is seen."""
    sw.streams.create_reader_group("check", "feed/changes")
    seen: list[tuple[str, str]] = []
    with sw.streams.reader_group("check").reader("r") as reader:
        deadline = time.monotonic() + timeout_s
        while not ids <= {i for _, i in seen}:
            assert time.monotonic() < deadline, f"not delivered: {sorted(ids - {i for _, i in seen})[:10]}"
            got = reader.read_next(0.5)
            if got is not None:
                body = json.loads(got.payload)
                seen.append((body["subject"], body["id"]))
    return seen


@pytest.mark.parametrize("seed", range(3))
def test_a_stream_target_delivers_at_least_once_in_resource_order_over_faulted_appends(
        store: Faultable, seed: int) -> None:
    sw = store.sw
    faults = AppendFaults(seed, refuse=0.15, refuse_later=0.15, lose_reply=0.1, delay=0.1, limit=25,
                          marked_only=True)
    sw.streams.create_scope("feed")
    sw.streams.create("feed/changes", scaling=FixedSegments(2))  # a resource's events keep to one
    with replayable(faults), faults.applied(store.target):
        sw.notify.set(NotifyConfig("feed", SeawayStream("feed/changes"), prefix="log/app.",
                                   retry=DeliveryRetry(backoff_initial_s=0.01, backoff_max_s=0.05)))
        start = sw.ledger.bounds()[1]
        _changes(sw)
        selected = [e for e in sw.ledger.read(start + 1, 1000) if e.resource.startswith("log/app.")]
        # Each change recorded once: a creation and a seal per log, a deletion of every other one.
        assert len(selected) == 2 * LOGS + LOGS // 2, [e.operation for e in selected]
        expected = [(e.resource, str(e.index)) for e in selected]
        seen = _read_feed(sw, {i for _, i in expected})
        check_at_least_once_in_order(seen, expected)
        assert faults.injected, faults
        (status,) = sw.notify.status()
        assert status.counters["dropped"] == 0 and status.counters["missed"] == 0, status
