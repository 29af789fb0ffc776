"""A byte flipped in a RocksDB data block: the keys RocksDB cannot read are damaged, the rest is read.

Readers starting anywhere must agree on every LSN: the same records, and the same LSNs damaged.
Which keys are lost is told by point lookups (a lookup of a key in a damaged block fails), which
share no code with the reads under test.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from seaway import CorruptionError
from seaway.logsdb import (
    CorruptEntry,
    Entry,
    HolePlugEntry,
    LogsDB,
    PutHolePlug,
    PutRecords,
    RecordsEntry,
)

E1, E2 = 1 << 32, 2 << 32
LOG, OTHER = 1, 2
LSN_MAX = 2**64 - 1


@dataclass
class Stored:
    """What was written to ``LOG``: each entry's first and last LSN, and each record's payload."""

    entries: list[tuple[int, int]]
    payloads: dict[int, bytes]


def write_log(db: LogsDB, rng: random.Random) -> Stored:
    """Two epochs of ``LOG``: single records, batches and a hole plug; ``OTHER`` around it."""
    stored = Stored([], {})
    for epoch, count in ((E1, 120), (E2, 80)):
        lsn = epoch + 1
        for i in range(count):
            if i == 40:
                db.write([PutHolePlug(LOG, lsn, 3, 1)])
                stored.entries.append((lsn, lsn + 2))
                lsn += 3
                continue
            batch = [b"%02d-%010d:" % (LOG, lsn + j) + rng.randbytes(rng.randint(100, 500))
                     for j in range(rng.choice((1, 1, 1, 4)))]
            db.write([PutRecords(LOG, lsn, 1, tuple(batch)),
                      PutRecords(OTHER, E1 + 1 + len(stored.entries), 1, (rng.randbytes(200),))])
            stored.entries.append((lsn, lsn + len(batch) - 1))
            stored.payloads.update(zip(range(lsn, lsn + len(batch)), batch, strict=True))
            lsn += len(batch)
    return stored


def damage(path: Path, stored: Stored, rng: random.Random) -> int:
    """Flip a bit of a random record's payload in the SST file holding it; return its LSN."""
    ssts = list((path / "rocksdb").glob("*.sst"))
    lsn = rng.choice(sorted(stored.payloads))
    marker = stored.payloads[lsn][:14]
    holding = [p for p in ssts if marker in p.read_bytes()]
    assert len(holding) == 1, "the record's bytes are stored once, uncompressed"
    data = bytearray(holding[0].read_bytes())
    data[data.index(marker) + 14 + rng.randrange(100)] ^= 1 << rng.randrange(8)
    holding[0].write_bytes(bytes(data))
    return lsn


def build(path: Path, seed: int) -> tuple[Stored, int]:
    rng = random.Random(seed)
    with LogsDB(path) as db:
        stored = write_log(db, rng)
        db.flush()
    return stored, damage(path, stored, rng)


def expected(db: LogsDB, stored: Stored) -> list[Entry]:
    """What every read must see, told by point lookups: each readable entry as written, and each run
    of unreadable keys as one CorruptEntry from the end of the readable entry before it to the
    first readable key after it."""
    readable: dict[int, bool] = {}
    for first, _ in stored.entries:
        try:
            db.raw_value(LOG, first)
            readable[first] = True
        except Exception:  # rocksdict's bare Exception: the key's block fails its checksum
            readable[first] = False
    assert not all(readable.values()), "the flipped bit went unnoticed by RocksDB"
    out: list[Entry] = []
    lost_from: int | None = None
    for first, last in stored.entries:
        if not readable[first]:
            if lost_from is None:
                lost_from = out[-1].last_lsn + 1 if out else stored.entries[0][0]
            continue
        if lost_from is not None:
            out.append(CorruptEntry(LOG, lost_from, first - 1))
            lost_from = None
        if first in stored.payloads:
            payloads: list[bytes | None] = [stored.payloads[lsn] for lsn in range(first, last + 1)]
            out.append(RecordsEntry(LOG, first, 1, payloads))
        else:
            out.append(HolePlugEntry(LOG, first, last, 1))
    if lost_from is not None:
        out.append(CorruptEntry(LOG, lost_from, stored.entries[-1][1]))
    return out


def seen_from(entries: list[Entry], lsn_from: int) -> list[tuple[str, int, int, object]]:
    """Entries as a reader from ``lsn_from`` sees them: records one by one, the rest as ranges,
    nothing below ``lsn_from``, adjacent damaged ranges joined."""
    out: list[tuple[str, int, int, object]] = []
    for entry in entries:
        if entry.last_lsn < lsn_from:
            continue
        if isinstance(entry, RecordsEntry):
            out += [("record", lsn, lsn, payload) for lsn, payload in enumerate(entry.payloads, entry.first_lsn)
                    if lsn >= lsn_from]
            continue
        kind = "lost" if isinstance(entry, CorruptEntry) else "hole"
        lo = max(lsn_from, entry.first_lsn)
        if out and out[-1][0] == kind == "lost" and out[-1][2] + 1 == lo:
            lo = out.pop()[1]
        out.append((kind, lo, entry.last_lsn, None))
    return out


def read_in_chunks(db: LogsDB, lsn_from: int, bytes_max: int) -> list[tuple[str, int, int, object]]:
    """Read as the log layer does: a chunk at a time, each from where the last one's coverage ended."""
    out: list[tuple[str, int, int, object]] = []
    lsn = lsn_from
    for _ in range(10_000):
        entries, covered_to = db.read(LOG, lsn, LSN_MAX, bytes_max)
        for kind, lo, hi, payload in seen_from(entries, lsn):
            if lo > covered_to:
                break
            joined = out and out[-1][0] == kind == "lost" and out[-1][2] + 1 == lo
            out.append((kind, out.pop()[1] if joined else lo, min(hi, covered_to), payload))
        if covered_to == LSN_MAX or not entries:
            return out
        lsn = covered_to + 1
    raise AssertionError("the chunks do not progress")


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LogsDB, Stored, list[Entry]]]:
    path = tmp_path_factory.mktemp("damaged")
    stored, _ = build(path, 7)
    with LogsDB(path) as db:
        yield db, stored, expected(db, stored)


@pytest.mark.parametrize("seed", range(12))
def test_readers_from_any_lsn_see_only_the_unreadable_keys_lost(tmp_path: Path, seed: int) -> None:
    stored, flipped = build(tmp_path, seed)
    with LogsDB(tmp_path) as db:
        want = expected(db, stored)
        lost = [e for e in want if isinstance(e, CorruptEntry)]
        assert any(e.first_lsn <= flipped <= e.last_lsn for e in lost), f"seed {seed}: the flip is not reported"
        assert len(lost) == 1, f"seed {seed}: one block is damaged, {lost}"
        starts = {1, flipped - 1, flipped, flipped + 1, lost[0].first_lsn, lost[0].last_lsn,
                  lost[0].last_lsn + 1, lost[0].first_lsn - 1, E2, E2 + 1}
        starts |= {first for first, _ in stored.entries} | {last for _, last in stored.entries}
        for lsn_from in sorted(starts):
            entries, covered_to = db.read(LOG, lsn_from, LSN_MAX, 1 << 30)
            assert covered_to == LSN_MAX
            assert seen_from(entries, lsn_from) == seen_from(want, lsn_from), f"seed {seed}, from {lsn_from:#x}"
        for bytes_max in (1, 2000):
            assert read_in_chunks(db, 1, bytes_max) == seen_from(want, 1), f"seed {seed}, chunks of {bytes_max}"


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_random_start_sees_what_a_read_from_the_oldest_sees(
        damaged: tuple[LogsDB, Stored, list[Entry]], data: st.DataObject) -> None:
    db, stored, want = damaged
    near = [lsn for e in want if isinstance(e, CorruptEntry) for lsn in range(e.first_lsn - 8, e.last_lsn + 9)]
    lsn_from = data.draw(st.one_of(st.sampled_from(near), st.integers(1, stored.entries[-1][1] + 1)))
    bytes_max = data.draw(st.sampled_from([1, 700, 5000, 1 << 30]))
    assert read_in_chunks(db, lsn_from, bytes_max) == seen_from(want, lsn_from)


def test_the_next_entry_after_a_damaged_range_is_where_the_damage_starts(
        damaged: tuple[LogsDB, Stored, list[Entry]]) -> None:
    """A reader that ends a chunk before the damage classifies the LSNs up to it by the next entry:
    it must be where the damaged range starts, as a read over it reports."""
    db, _, want = damaged
    at = next(i for i, e in enumerate(want) if isinstance(e, CorruptEntry))
    lost = want[at]
    for after in range(lost.first_lsn - 1, lost.last_lsn):
        assert db.next_entry_lsn(LOG, after) == after + 1
    assert db.next_entry_lsn(LOG, lost.last_lsn) == (want[at + 1].first_lsn if at + 1 < len(want) else None)


def test_a_time_search_over_a_damaged_block_answers_or_raises_a_typed_error(tmp_path: Path) -> None:
    """Every entry is stamped 1, so the answer is the first LSN; with the first block damaged the
    search cannot vouch for it."""
    stored, _ = build(tmp_path, 3)
    with LogsDB(tmp_path) as db:
        want = expected(db, stored)
        if isinstance(want[0], CorruptEntry):
            with pytest.raises(CorruptionError):
                db.find_time(LOG, 1)
        else:
            assert db.find_time(LOG, 1) == E1 + 1
