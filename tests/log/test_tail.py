"""The tail cache: runs of consecutive entries per log, bounded in bytes, oldest out first."""

from __future__ import annotations

from seaway.log._tail import ENTRY_OVERHEAD_BYTES, TailCache

E1 = 1 << 32


def lsns(entries: list[object] | None) -> list[int] | None:
    return None if entries is None else [e.first_lsn for e in entries]  # type: ignore[attr-defined]


def test_take_follows_the_run_from_an_entry_start() -> None:
    cache = TailCache(1 << 20)
    cache.add(7, E1 + 1, 100, (b"a", b"b"))
    cache.add(7, E1 + 3, 101, (b"c",))
    cache.add(7, E1 + 4, 102, (b"d", b"e", b"f"))
    assert lsns(cache.take(7, E1 + 1, E1 + 9, 1 << 20)) == [E1 + 1, E1 + 3, E1 + 4]
    assert lsns(cache.take(7, E1 + 3, E1 + 3, 1 << 20)) == [E1 + 3]  # entries starting at or below lsn_to
    assert lsns(cache.take(7, E1 + 1, E1 + 9, 1)) == [E1 + 1]  # the budget is passed after one entry
    assert cache.take(7, E1 + 2, E1 + 9, 1 << 20) is None  # not where an entry starts
    assert cache.take(8, E1 + 1, E1 + 9, 1 << 20) is None
    entry = cache.take(7, E1 + 4, E1 + 9, 1 << 20)
    assert entry is not None and entry[0].payloads == [b"d", b"e", b"f"] and entry[0].timestamp_ms == 102


def test_an_entry_that_does_not_follow_starts_a_new_run() -> None:
    cache = TailCache(1 << 20)
    cache.add(7, E1 + 1, 100, (b"a",))
    cache.add(7, 2 * E1 + 1, 101, (b"b",))  # a new epoch
    assert cache.take(7, E1 + 1, 3 * E1, 1 << 20) is None
    assert lsns(cache.take(7, 2 * E1 + 1, 3 * E1, 1 << 20)) == [2 * E1 + 1]
    assert cache.size_bytes == 1 + ENTRY_OVERHEAD_BYTES
    cache.forget(7)
    assert cache.take(7, 2 * E1 + 1, 3 * E1, 1 << 20) is None and cache.size_bytes == 0


def test_the_bound_evicts_the_oldest_entries_of_any_log() -> None:
    size = 100 + ENTRY_OVERHEAD_BYTES
    cache = TailCache(3 * size)
    for n in range(5):
        cache.add(1 + n % 2, E1 + 1 + n // 2, n, (bytes(100),))
    assert cache.size_bytes == 3 * size
    # Added: log 1 at +1, log 2 at +1, log 1 at +2, log 2 at +2, log 1 at +3; the first two went.
    assert cache.take(1, E1 + 1, E1 + 9, 1 << 20) is None and cache.take(2, E1 + 1, E1 + 9, 1 << 20) is None
    assert lsns(cache.take(1, E1 + 2, E1 + 9, 1 << 20)) == [E1 + 2, E1 + 3]
    assert lsns(cache.take(2, E1 + 2, E1 + 9, 1 << 20)) == [E1 + 2]
    cache.add(3, E1 + 1, 9, (bytes(10 * size),))  # larger than the bound: nothing stays
    assert cache.size_bytes == 0 and cache.take(3, E1 + 1, E1 + 9, 1 << 20) is None


def test_dropped_runs_do_not_pile_up() -> None:
    cache = TailCache(1 << 30)
    for n in range(5000):
        cache.add(7, E1 + 1 + 2 * n, n, (b"x",))  # never consecutive: each add drops the run before
    assert cache.size_bytes == 1 + ENTRY_OVERHEAD_BYTES
    assert len(cache._order) <= 2 * 1 + 1024 + 1


def test_a_zero_bound_caches_nothing() -> None:
    cache = TailCache(0)
    cache.add(7, E1 + 1, 100, (b"a",))
    assert cache.take(7, E1 + 1, E1 + 1, 1 << 20) is None and cache.size_bytes == 0
