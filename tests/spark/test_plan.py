"""How a batch of a stream or a log is cut into Spark partitions: about ``minPartitions`` of them,
of the same size whatever the segments hold (pieces of several segments make up one), so that no
core idles while another reads the rest; every LSN in exactly one piece, in order."""

from __future__ import annotations

import itertools
import random

from seaway.log import ESN_MAX
from seaway.spark._plan import PARTITION_EVENTS_MAX, SPLIT_EVENTS_MIN, Range, RangeGroup, pack

E1 = 1 << 32  # the first LSN of epoch 1


def pieces(partition: Range | RangeGroup) -> tuple[Range, ...]:
    return partition.ranges if isinstance(partition, RangeGroup) else (partition,)


def size(partition: Range | RangeGroup) -> int:
    return sum(r.events_max for r in pieces(partition))


def covered(partitions: list[Range | RangeGroup]) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for partition in partitions:
        for r in pieces(partition):
            out.setdefault(r.log_id, []).append((r.lsn_from, r.lsn_until))
    return {log: sorted(spans) for log, spans in out.items()}


def test_two_unequal_segments_make_two_equal_partitions() -> None:
    a = Range("0.0", 1, E1 + 1, E1 + 88_000)
    b = Range("0.1", 2, E1 + 1, E1 + 112_000)
    partitions = pack([a, b], 2)
    assert [size(p) for p in partitions] == [100_000, 100_000]  # not 88,000 + 56,000 + 56,000
    assert covered(partitions) == {1: [(E1 + 1, E1 + 88_000)], 2: [(E1 + 1, E1 + 12_000), (E1 + 12_001, E1 + 112_000)]}


def test_small_batches_keep_a_partition_per_range_and_unknown_sizes_stay_whole() -> None:
    small = [Range("0.0", 1, E1 + 1, E1 + 100), Range("0.1", 2, E1 + 1, E1 + 3_000)]
    assert pack(small, 2) == small
    crossing = Range("0.2", 3, E1 + 1, 2 * E1 + 5)
    assert crossing.events_max == ESN_MAX
    big = Range("0.0", 1, E1 + 1, E1 + 50_000)
    partitions = pack([big, crossing], 2)
    assert partitions[-1] == crossing and [size(p) for p in partitions[:-1]] == [25_000, 25_000]


def test_every_lsn_once_in_balanced_partitions() -> None:
    rng = random.Random(23)
    for _ in range(300):
        ranges = [Range(f"0.{i}", i + 1, E1 + 1, E1 + rng.choice([1, 500, 3_000, 40_000, 300_000, 700_000]))
                  for i in range(rng.randint(1, 6))]
        wanted = rng.randint(1, 8)
        partitions = pack(ranges, wanted)
        assert covered(partitions) == {r.log_id: _spans(covered(partitions)[r.log_id], r) for r in ranges}
        total = sum(r.events_max for r in ranges)
        count = max(wanted, -(-total // PARTITION_EVENTS_MAX))
        if total < count * SPLIT_EVENTS_MIN:
            assert partitions == ranges
            continue
        share = -(-total // count)
        sizes = [size(p) for p in partitions]
        assert len(partitions) <= count + 1 and max(sizes) < share + SPLIT_EVENTS_MIN, (sizes, share)
        for partition in partitions:
            for r in pieces(partition):
                whole = next(x for x in ranges if x.log_id == r.log_id)
                assert r.events_max >= min(SPLIT_EVENTS_MIN, whole.events_max)


def _spans(spans: list[tuple[int, int]], r: Range) -> list[tuple[int, int]]:
    """``spans`` if they tile ``r`` exactly (contiguous, no overlap), else the failing check."""
    assert spans[0][0] == r.lsn_from and spans[-1][1] == r.lsn_until
    for (_, until), (lo, _) in itertools.pairwise(spans):
        assert lo == until + 1
    return spans
