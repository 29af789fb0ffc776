"""The change ledger's primitive in LogsDB: entries written in the same batch as their change."""

from __future__ import annotations

from pathlib import Path

import pytest

from seaway import ConditionFailedError, CorruptionError, StoreFailedError
from seaway.ledger import LedgerEntry, LogTrimmed, ScopeCreated, decode_change, encode_change
from seaway.logsdb import KvCheck, KvPut, LogsDB
from seaway.testing import FakeClock, failing_wal_syncs


def _changes(db: LogsDB, index_from: int = 0) -> list[tuple[int, object]]:
    return [(i, LedgerEntry.decode(i, raw).change) for i, raw in db.ledger_read(index_from, 100, 1 << 20)]


def test_entries_go_with_their_change_and_survive_a_reopen(tmp_path: Path, clock: FakeClock) -> None:
    a, b, c = ScopeCreated("a"), ScopeCreated("b"), LogTrimmed(7, "l", 10)
    with LogsDB(tmp_path, clock=clock) as db:
        assert db.ledger_bounds() == (1, 0)
        db.kv_commit([], [KvPut(b"k", b"v")], ledger=encode_change(a))
        with pytest.raises(ConditionFailedError):
            db.kv_commit([KvCheck(b"k", version=0)], [KvPut(b"k", b"w")], ledger=encode_change(b))
        db.put_meta(b"conf", b"1", ledger=encode_change(b))
        db.trim(7, 10, ledger=encode_change(c))
        db.trim(7, 5, ledger=encode_change(c))  # lowering is a no-op: no change, no entry
        db.kv_commit([], [KvPut(b"k", b"x")])  # no entry asked for
        assert _changes(db) == [(1, a), (2, b), (3, c)]
        assert db.get_meta(b"conf") == b"1" and db.trim_point(7) == 10
    with LogsDB(tmp_path, clock=clock) as db:
        assert db.ledger_bounds() == (1, 3)
        assert db.ledger_append(encode_change(a)) == 4
        assert _changes(db, 3) == [(3, c), (4, a)]
        entry = LedgerEntry.decode(*db.ledger_read(4, 1, 1 << 20)[0])
        assert entry.time_ms == clock.now_ms() and entry.resource == "scope/a"


def test_pruning_is_by_range_and_indexes_never_go_back(tmp_path: Path, clock: FakeClock) -> None:
    with LogsDB(tmp_path, clock=clock) as db:
        for i in range(10):
            db.ledger_append(encode_change(ScopeCreated(f"s{i}")))
        assert db.ledger_prune(4) == 5
        assert [i for i, _ in db.ledger_read(0, 100, 1 << 20)] == [5, 6, 7, 8, 9, 10]
        assert db.ledger_prune(2) == 5  # already gone
        assert db.ledger_prune(99) == 11  # no further than the head
        assert db.ledger_bounds() == (11, 10) and db.ledger_read(0, 100, 1 << 20) == []
    with LogsDB(tmp_path, clock=clock) as db:
        assert db.ledger_bounds() == (11, 10)
        assert db.ledger_append(encode_change(ScopeCreated("next"))) == 11


def test_a_change_this_version_does_not_know_is_corruption_not_a_guess() -> None:
    with pytest.raises(CorruptionError, match="not a ledger change"):
        decode_change(b'{"op":"stream.renamed","f":{}}')
    with pytest.raises(CorruptionError):
        decode_change(b'{"op":"scope.created","f":{"scope":7}}')
    assert decode_change(encode_change(ScopeCreated("x"))) == ScopeCreated("x")


@pytest.mark.parametrize("change", ["trim", "seal", "append"])
def test_a_read_never_returns_an_entry_that_is_not_durable(tmp_path: Path, clock: FakeClock, change: str) -> None:
    """Finding 18: an entry is applied, then published, then synced. A reader in between must not
    get it: a power cut could still take it, and its index would go to another change. Here the
    sync fails, so the entry never becomes durable; a read must not return it."""
    with LogsDB(tmp_path, clock=clock) as db:
        db.ledger_append(encode_change(ScopeCreated("durable")))
        with failing_wal_syncs(db), pytest.raises(StoreFailedError):
            body = encode_change(LogTrimmed(7, "l", 10))
            if change == "trim":
                db.trim(7, 10, ledger=body)
            elif change == "seal":
                db.seal_log(7, 10, ledger=body)
            else:
                db.ledger_append(body)
        try:
            read = _changes(db)
        except StoreFailedError:
            read = None  # the store takes no writes, nor syncs: it cannot say what is durable
        assert read in (None, [(1, ScopeCreated("durable"))]), read
