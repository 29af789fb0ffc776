"""Order and exactly-once checkers shared by the fault suites (writers, reader groups, the ledger,
notification plugins; the next suites run transactions, queues and the Spark sink over them).

Events are ``<key>:<n>`` with ``n`` counting up from 0 per key in the order a producer made them.
:class:`Sent` notes what producers attempted and what was acknowledged to them; the checks compare
that with what a store holds or a reader read, and say which key or event broke which rule:

- per-key order: a key's events are seen in the order they were made (:func:`check_key_order`);
- exactly once: every acknowledged event is seen once, nothing (acknowledged or not) twice, and
  nothing that was never attempted (:func:`check_exactly_once`);
- at least once, in order per resource: every expected item is seen, and each resource's first
  sightings are in the expected order (:func:`check_at_least_once_in_order`), for deliveries that
  may repeat after a failure (notifications).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def event(key: str, n: int) -> bytes:
    return f"{key}:{n:06d}".encode()


def parse(payload: bytes) -> tuple[str, int]:
    key, _, n = payload.decode().rpartition(":")
    return key, int(n)


@contextmanager
def replayable(faults: Any) -> Iterator[None]:
    """A failure inside says the seed that replays it and the first faults injected."""
    try:
        yield
    except BaseException as exc:
        exc.add_note(f"replay with AppendFaults(seed={faults.seed}, ...): {faults!r}, "
                     f"first faults injected: {faults.injected[:8]}")
        raise


class Sent:
    """What producers attempted and what was acknowledged to them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.attempted: set[bytes] = set()
        self.acknowledged: set[bytes] = set()

    def attempt(self, payload: bytes) -> None:
        with self._lock:
            self.attempted.add(payload)

    def acknowledge(self, payload: bytes) -> None:
        with self._lock:
            self.acknowledged.add(payload)


def check_key_order(payloads: Iterable[bytes], what: str = "stored") -> dict[str, list[int]]:
    """Each key's events appear in the order they were made (strictly increasing ``n``); returns
    them by key."""
    by_key: dict[str, list[int]] = defaultdict(list)
    for payload in payloads:
        key, n = parse(payload)
        by_key[key].append(n)
    for key, seen in by_key.items():
        bad = next((i for i in range(1, len(seen)) if seen[i] <= seen[i - 1]), None)
        assert bad is None, f"key {key!r} {what} out of order (or twice): ... {seen[max(0, bad - 3):bad + 3]} ..."
    return by_key


def check_exactly_once(payloads: Iterable[bytes], sent: Sent, what: str = "stored") -> None:
    """Every acknowledged event appears once; no event (acknowledged or not) appears twice; none
    appears that was never attempted."""
    counts = Counter(payloads)
    twice = sorted(p for p, c in counts.items() if c > 1)
    assert not twice, f"{len(twice)} events {what} more than once, e.g. {twice[:5]}"
    missing = sorted(sent.acknowledged - counts.keys())
    assert not missing, f"{len(missing)} acknowledged events never {what}, e.g. {missing[:5]}"
    invented = sorted(counts.keys() - sent.attempted)
    assert not invented, f"{len(invented)} events {what} that nobody wrote, e.g. {invented[:5]}"


def check_at_least_once_in_order(seen: Sequence[tuple[Hashable, Hashable]],
                                 expected: Sequence[tuple[Hashable, Hashable]]) -> None:
    """``seen`` and ``expected`` are (resource, item) pairs. Every expected item is seen at least
    once; nothing unexpected is seen; each resource's items, at their first sighting, are in the
    expected order."""
    missing = [pair for pair in expected if pair not in set(seen)]
    assert not missing, f"{len(missing)} items never delivered, e.g. {missing[:5]}"
    unexpected = [pair for pair in seen if pair not in set(expected)]
    assert not unexpected, f"{len(unexpected)} items delivered that were not expected, e.g. {unexpected[:5]}"
    rank = {pair: i for i, pair in enumerate(expected)}
    first: dict[Hashable, list[int]] = defaultdict(list)
    for pair in dict.fromkeys(seen):  # first sightings, in order
        first[pair[0]].append(rank[pair])
    for resource, ranks in first.items():
        assert ranks == sorted(ranks), f"resource {resource!r} delivered out of order: {ranks}"
