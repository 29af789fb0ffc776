"""The checkers see each rule broken (negative controls), and pass what keeps them."""

from __future__ import annotations

import pytest

import seaway
from seaway import OverloadedError, Record, TimedOutError
from seaway.testing import AppendFaults
from tests.faults.checkers import Sent, check_at_least_once_in_order, check_exactly_once, check_key_order, event


def _sent(*payloads: bytes, acknowledged: tuple[bytes, ...] = ()) -> Sent:
    sent = Sent()
    for p in payloads:
        sent.attempt(p)
    for p in acknowledged:
        sent.acknowledge(p)
    return sent


def test_key_order() -> None:
    a0, a1, b0 = event("a", 0), event("a", 1), event("b", 0)
    assert check_key_order([a0, b0, a1]) == {"a": [0, 1], "b": [0]}
    with pytest.raises(AssertionError, match="'a' stored out of order"):
        check_key_order([a1, b0, a0])
    with pytest.raises(AssertionError, match="out of order \\(or twice\\)"):
        check_key_order([a0, a0])


def test_exactly_once() -> None:
    a0, a1, a2 = event("a", 0), event("a", 1), event("a", 2)
    sent = _sent(a0, a1, a2, acknowledged=(a0, a1))
    check_exactly_once([a0, a1], sent)
    check_exactly_once([a0, a1, a2], sent)  # an unacknowledged event may be stored, once
    with pytest.raises(AssertionError, match="more than once"):
        check_exactly_once([a0, a1, a2, a2], sent)  # unacknowledged, twice
    with pytest.raises(AssertionError, match="never stored"):
        check_exactly_once([a0], sent)
    with pytest.raises(AssertionError, match="nobody wrote"):
        check_exactly_once([a0, a1, event("b", 0)], sent)


def test_at_least_once_in_order() -> None:
    expected = [("r1", 1), ("r2", 2), ("r1", 3)]
    check_at_least_once_in_order([("r1", 1), ("r2", 2), ("r1", 1), ("r1", 3)], expected)
    with pytest.raises(AssertionError, match="never delivered"):
        check_at_least_once_in_order([("r1", 1), ("r2", 2)], expected)
    with pytest.raises(AssertionError, match="'r1' delivered out of order"):
        check_at_least_once_in_order([("r1", 3), ("r2", 2), ("r1", 1)], expected)
    with pytest.raises(AssertionError, match="not expected"):
        check_at_least_once_in_order([*expected, ("r3", 4)], expected)


def test_the_checkers_catch_a_naive_retry_over_faulted_appends(sw: seaway.Seaway) -> None:
    """A producer that resends a refused or unanswered append with no producer mark: a lost reply
    makes it store an event twice, and a refusal before a later success stores a key out of order.
    The checkers must see it (a negative control for the fault suites)."""
    log = sw.logs.create("naive")
    sent = Sent()
    faults = AppendFaults(3, refuse_later=0.2, lose_reply=0.2, limit=20)
    with faults.applied(sw):
        pending = []
        for n in range(100):
            payload = event("k", n)
            sent.attempt(payload)
            pending.append((payload, log.append_async(payload)))  # many in flight, no mark
        while pending:
            retry = []
            for payload, future in pending:
                try:
                    future.result(10)
                    sent.acknowledge(payload)
                except (OverloadedError, TimedOutError):
                    retry.append((payload, log.append_async(payload)))
            pending = retry
    stored = [r.payload for r in log.read(1, log.tail_lsn()) if isinstance(r, Record)]
    kinds = {f.kind for f in faults.injected}
    assert {"refuse_later", "lose_reply"} <= kinds, faults
    with pytest.raises(AssertionError, match="more than once"):
        check_exactly_once(stored, sent)
    with pytest.raises(AssertionError, match="out of order"):
        check_key_order(stored)
