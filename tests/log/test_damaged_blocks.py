"""A byte flipped in a RocksDB data block, seen by readers of the log, embedded and through a server:
wherever a reader starts, it sees the same records and gaps as a reader from the oldest LSN, the
damaged records as DATALOSS, and every intact record after them."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

import pytest

import seaway
from seaway import LSN_OLDEST, Gap, GapType, Record
from seaway.logsdb import LogsDB
from seaway.server import ServerProcess

Item = tuple[str, int, int, bytes | None]


def write(path: Path, rng: random.Random) -> dict[int, bytes]:
    """Records in two sessions (so two epochs, with a bridge between), flushed to SST files."""
    written: dict[int, bytes] = {}
    for _ in range(2):
        with seaway.open(path) as sw:
            log = sw.logs.get_or_create("l")
            for _ in range(60):
                batch = [rng.randbytes(rng.randint(100, 500)) for _ in range(rng.choice((1, 1, 3)))]
                lsns = log.append_batch(batch)
                written.update(zip(lsns, batch, strict=True))
    with LogsDB(path / "logsdb") as db:
        db.flush()
    return written


def damage(path: Path, written: dict[int, bytes], rng: random.Random) -> int:
    """Flip a bit inside a random record's payload, in the SST file holding it; return its LSN."""
    lsn = rng.choice(sorted(written))
    payload = written[lsn]
    holding = [p for p in (path / "logsdb" / "rocksdb").glob("*.sst") if payload in p.read_bytes()]
    assert len(holding) == 1, "the record's bytes are stored once, uncompressed"
    data = bytearray(holding[0].read_bytes())
    data[data.index(payload) + rng.randrange(len(payload))] ^= 1 << rng.randrange(8)
    holding[0].write_bytes(bytes(data))
    return lsn


def seen(items: Iterable[object], lsn_from: int) -> list[Item]:
    """Records and gaps from ``lsn_from`` on, adjacent gaps of one type joined."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, Record):
            if item.lsn >= lsn_from:
                out.append(("record", item.lsn, item.lsn, item.payload))
            continue
        assert isinstance(item, Gap)
        if item.lsn_hi < lsn_from:
            continue
        lo = max(lsn_from, item.lsn_lo)
        joined = out and out[-1][0] == item.type.value and out[-1][2] + 1 == lo
        out.append((item.type.value, out.pop()[1] if joined else lo, item.lsn_hi, None))
    return out


def check_readers_agree(sw: seaway.Seaway | seaway.RemoteSeaway, written: dict[int, bytes], flipped: int) -> None:
    log = sw.logs.get("l")
    oldest = list(log.read(LSN_OLDEST))
    records = {lsn: payload for kind, lsn, _, payload in seen(oldest, 1) if kind == "record"}
    lost = [(lo, hi) for kind, lo, hi, _ in seen(oldest, 1) if kind == GapType.DATALOSS.value]
    assert all(written[lsn] == payload for lsn, payload in records.items()), "damaged bytes returned"
    assert any(lo <= flipped <= hi for lo, hi in lost), f"the damaged record {flipped:#x} is not DATALOSS"
    missing = [lsn for lsn in written if lsn not in records]
    assert all(any(lo <= lsn <= hi for lo, hi in lost) for lsn in missing), "a record vanished without a gap"
    # One damaged block holds a few kilobytes: the records after it are read.
    assert 0 < len(missing) <= 40, f"{len(missing)} records lost for one flipped bit"
    lsns = sorted(written)
    at = lsns.index(flipped)
    starts = {lsns[0], lsns[-1], *lsns[max(0, at - 15):at + 16]}
    starts |= {lo for lo, _ in lost} | {hi for _, hi in lost} | {hi + 1 for _, hi in lost}
    for lsn_from in sorted(starts):
        assert seen(log.read(lsn_from), lsn_from) == seen(oldest, lsn_from), f"from {lsn_from:#x}"


@pytest.mark.parametrize("seed", range(6))
def test_embedded_readers_from_any_lsn_agree_on_a_damaged_block(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    written = write(tmp_path, rng)
    flipped = damage(tmp_path, written, rng)
    with seaway.open(tmp_path) as sw:
        check_readers_agree(sw, written, flipped)


def test_readers_through_a_server_agree_on_a_damaged_block(tmp_path: Path) -> None:
    rng = random.Random(100)
    written = write(tmp_path, rng)
    flipped = damage(tmp_path, written, rng)
    server = ServerProcess(tmp_path)
    try:
        with seaway.connect(server.url, timeout_s=30) as sw:
            check_readers_agree(sw, written, flipped)
    except BaseException:
        print(server.log_text()[-4000:])
        raise
    finally:
        assert server.stop() == 0, server.log_text()[-4000:]
