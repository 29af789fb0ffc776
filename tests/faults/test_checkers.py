"""The checkers see each rule broken (negative controls), and pass what keeps them."""

from __future__ import annotations

import pytest

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
