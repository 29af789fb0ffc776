"""Helpers of the tests that drive a plugin over the real ledger of an embedded store."""

from __future__ import annotations

from pathlib import Path

import seaway
from seaway import LedgerConfig, LogsDBConfig, LogStoreConfig, SeawayConfig
from seaway.ledger import CHANGE_BYTES_MAX, StreamUpdated, encode_change

HARD = 20
"""The ledger's hard bound in the pruning tests: a write past it drops the oldest tenth at once."""


def open_store(path: Path, hard: int = 1_000_000) -> seaway.Seaway:
    return seaway.open(path, SeawayConfig(logs=LogStoreConfig(logsdb=LogsDBConfig(ledger_hard_entries_max=hard)),
                                          ledger=LedgerConfig(soft_entries_max=hard, prune_interval_s=None),
                                          notify=None))  # no plugins of its own: the test drives one


def at_limit(stream: str) -> StreamUpdated:
    """A change whose encoding takes exactly ``CHANGE_BYTES_MAX`` bytes."""
    base = len(encode_change(StreamUpdated(stream, "")))
    change = StreamUpdated(stream, "x" * (CHANGE_BYTES_MAX - base))
    assert len(encode_change(change)) == CHANGE_BYTES_MAX
    return change


def covered_by(ids: list[str]) -> list[tuple[int, int]]:
    """What a target was told (the ids of its messages, in order): each delivered index, and each
    missed range."""
    out = []
    for id_ in ids:
        if id_.startswith("missed-"):  # the missed notice's id: missed-<first>-<last>
            first, last = id_.removeprefix("missed-").split("-")
            out.append((int(first), int(last)))
        else:
            out.append((int(id_), int(id_)))
    return out


def assert_partition(covered: list[tuple[int, int]], start: int, head: int) -> None:
    """``covered`` is ``start + 1 .. head``, each index once, in order."""
    expected_first = start + 1
    for first, last in covered:
        assert first == expected_first and last >= first, f"{(first, last)} after {expected_first - 1}: {covered}"
        expected_first = last + 1
    assert expected_first == head + 1, f"covered up to {expected_first - 1}, the head is {head}"

