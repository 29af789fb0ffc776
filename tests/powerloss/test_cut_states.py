"""The states a power cut leaves besides "everything unsynced lost": a write torn at a page, writes
kept out of order, and a cut at the Nth call. The model alone (:func:`surviving`), then the daemon's
operations driven directly (no FUSE: :class:`PowerLossOps` is plain Python over a directory).

Each mode has a negative control: over many seeds it really produces the state it names (a torn
write, a later page kept while an earlier one is lost), which neither the strict model nor a
disk that keeps writes in order could.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
from pathlib import Path

import pytest

from seaway.testing import PAGE_BYTES, CutMode, CutReport
from seaway.testing._powerloss_fuse import PowerLossOps
from seaway.testing._powerloss_state import Op, Resize, Write, replay, surviving


def _random_ops(rng: random.Random, count: int, *, resizes: bool = True) -> list[Op]:
    """Appends and overwrites of a file, now and then a size change, with writes of every size
    around a page."""
    ops: list[Op] = []
    size = rng.randrange(3 * PAGE_BYTES)
    for _ in range(count):
        if resizes and rng.random() < 0.1:
            size = rng.randrange(size + PAGE_BYTES)
            ops.append(Resize(size))
            continue
        length = rng.choice([1, 100, PAGE_BYTES - 1, PAGE_BYTES, PAGE_BYTES + 1, 3 * PAGE_BYTES + 17, 20_000])
        offset = size if rng.random() < 0.7 else rng.randrange(size + 1)
        ops.append(Write(offset, rng.randbytes(length)))
        size = max(size, offset + length)
    return ops


def _boundaries(op: Op) -> range:
    """The page boundaries strictly inside a write (none for a size change)."""
    if isinstance(op, Resize):
        return range(0)
    return range((op.offset // PAGE_BYTES + 1) * PAGE_BYTES, op.end, PAGE_BYTES)


def _whole_prefix_states(base: bytes, ops: list[Op]) -> set[bytes]:
    """What a disk that keeps writes whole and in order can leave: every prefix of ``ops``."""
    return {replay(base, ops[:i]) for i in range(len(ops) + 1)}


def _page_prefix_states(base: bytes, ops: list[Op]) -> set[bytes]:
    """What a disk that keeps pages in order can leave: every prefix of the writes' pages (with the
    size changes among them)."""
    units: list[Op] = []
    for op in ops:
        if isinstance(op, Resize):
            units.append(op)
            continue
        cuts = [op.offset, *_boundaries(op), op.end]
        units += [Write(lo, op.data[lo - op.offset:hi - op.offset]) for lo, hi in itertools.pairwise(cuts)]
    return {replay(base, units[:i]) for i in range(len(units) + 1)}


def test_lose_keeps_nothing(seed: int) -> None:
    ops = _random_ops(random.Random(seed), 10)
    assert surviving(ops, CutMode.LOSE, random.Random(seed)).ops == []


def test_torn_keeps_the_writes_in_order_up_to_one_cut_at_a_page_boundary(seed: int) -> None:
    rng = random.Random(seed)
    for trial in range(300):
        ops = _random_ops(rng, rng.randrange(1, 12))
        kept = surviving(ops, CutMode.TORN, rng)
        where = f"seed {seed}: trial {trial}"
        if not kept.torn:
            assert kept.ops == ops[:len(kept.ops)], f"{where}: not a prefix"
            assert not any(_boundaries(op) for op in ops), f"{where}: a write crossing a page was not torn"
            continue
        *whole, last = kept.ops
        assert whole == ops[:len(whole)], f"{where}: the writes before the torn one are not a prefix"
        original = ops[len(whole)]
        assert isinstance(original, Write) and isinstance(last, Write), where
        assert last.offset == original.offset and original.data.startswith(last.data), where
        assert 0 < len(last.data) < len(original.data), f"{where}: torn to nothing, or not torn"
        assert last.end % PAGE_BYTES == 0, f"{where}: torn at {last.end}, not at a page boundary"


def test_torn_states_are_neither_lost_nor_whole_writes(seed: int) -> None:
    """Negative control: the torn mode leaves files no whole-write disk could."""
    rng = random.Random(seed)
    torn_states = 0
    for _ in range(50):
        base = rng.randbytes(rng.randrange(2 * PAGE_BYTES))
        ops = _random_ops(rng, rng.randrange(1, 6), resizes=False)
        state = replay(base, surviving(ops, CutMode.TORN, rng).ops)
        torn_states += state not in _whole_prefix_states(base, ops)
    assert torn_states >= 20, f"seed {seed}: only {torn_states} of 50 cuts tore a write"


def test_reordered_keeps_pages_but_not_a_prefix_of_them(seed: int) -> None:
    rng = random.Random(seed)
    for trial in range(300):
        ops = _random_ops(rng, rng.randrange(1, 12))
        kept = surviving(ops, CutMode.REORDERED, rng)
        where = f"seed {seed}: trial {trial}"
        pages = [op for op in kept.ops if isinstance(op, Write)]
        assert all(p.offset // PAGE_BYTES == (p.end - 1) // PAGE_BYTES for p in pages), f"{where}: more than a page"
        resizes = [op for op in ops if isinstance(op, Resize)]
        kept_resizes = [op for op in kept.ops if isinstance(op, Resize)]
        assert kept_resizes == resizes[:len(kept_resizes)], f"{where}: size changes kept out of order"
        page_count = sum(len(_boundaries(op)) + 1 for op in ops if isinstance(op, Write))
        assert kept.reordered == (page_count >= 2), f"{where}: {page_count} pages, reordered={kept.reordered}"


def test_reordered_states_are_not_what_an_ordered_disk_leaves(seed: int) -> None:
    """Negative control: the reordered mode leaves files that keeping pages in order could not."""
    rng = random.Random(seed)
    reordered_states = 0
    for _ in range(50):
        base = rng.randbytes(rng.randrange(2 * PAGE_BYTES))
        ops = [Write(len(base) + i * 100, rng.randbytes(100)) for i in range(rng.randrange(2, 8))]  # appends
        state = replay(base, surviving(ops, CutMode.REORDERED, rng).ops)
        reordered_states += state not in _page_prefix_states(base, ops)
    assert reordered_states >= 45, f"seed {seed}: only {reordered_states} of 50 cuts left writes out of order"


# --- The daemon's operations, driven directly -------------------------------------------------


class _Files:
    """:class:`PowerLossOps` over ``tmp_path/disk`` without a mount: the calls FUSE would make."""

    def __init__(self, tmp_path: Path) -> None:
        self.backing = tmp_path / "disk"
        self.backing.mkdir(parents=True, exist_ok=True)
        self.ops = PowerLossOps(self.backing, tmp_path / ".disk.powerloss", on_ready=lambda: None)

    def create(self, name: str) -> int:
        fh = self.ops.create(f"/{name}", 0o644, os.O_RDWR)
        self.ops.fsyncdir("/", 0, self.ops.opendir("/"))
        return fh


_MODES = [CutMode.LOSE, CutMode.TORN, CutMode.REORDERED]


@pytest.mark.parametrize("mode", _MODES, ids=[m.value for m in _MODES])
def test_a_cut_never_reorders_across_an_fsync(tmp_path: Path, seed: int, mode: CutMode) -> None:
    """Whatever a cut keeps of the writes after an fsync, everything before it is there whole, and
    the rest of the file is made only of bytes written after it (or zeros, in a hole)."""
    rng = random.Random(seed)
    for trial in range(20):
        files = _Files(tmp_path / str(trial))
        fh = files.create("log")
        synced = rng.randbytes(rng.randrange(1, 5 * PAGE_BYTES))
        files.ops.write("/log", synced, 0, fh)
        files.ops.fsync("/log", 0, fh)
        later = [rng.randbytes(rng.choice([10, PAGE_BYTES, 3 * PAGE_BYTES + 5])) for _ in range(rng.randrange(1, 6))]
        offset = len(synced)
        for data in later:
            files.ops.write("/log", data, offset, fh)
            offset += len(data)
        report = files.ops.cut(mode, rng.randrange(2**32))
        content = (files.backing / "log").read_bytes()
        where = f"seed {seed}: trial {trial}: {mode.value}"
        assert content[:len(synced)] == synced, f"{where}: synced bytes lost or changed"
        tail = b"".join(later)
        for i, byte in enumerate(content[len(synced):]):
            assert byte in (0, tail[i]), f"{where}: byte {len(synced) + i} was never written there"
        if mode is CutMode.LOSE:
            assert content == synced and report.kept_writes == 0, where


def test_the_same_seed_leaves_the_same_state(tmp_path: Path, seed: int) -> None:
    def run(where: Path, mode: CutMode) -> tuple[bytes, bytes, CutReport]:
        rng = random.Random(seed)
        files = _Files(where)
        handles = {name: files.create(name) for name in ("a", "b")}
        for _ in range(12):
            name = rng.choice(["a", "b"])
            files.ops.write(f"/{name}", rng.randbytes(rng.randrange(1, 3 * PAGE_BYTES)),
                            rng.randrange(4 * PAGE_BYTES), handles[name])
        report = files.ops.cut(mode, seed)
        return (files.backing / "a").read_bytes(), (files.backing / "b").read_bytes(), report

    for mode in (CutMode.TORN, CutMode.REORDERED):
        first = run(tmp_path / f"{mode.value}-1", mode)
        assert first == run(tmp_path / f"{mode.value}-2", mode), f"seed {seed}: {mode.value} is not replayable"
        assert first[2].kept_writes > 0, f"seed {seed}: {mode.value} kept nothing of 12 writes"


def test_a_cut_at_the_nth_call_falls_just_before_it(tmp_path: Path, seed: int) -> None:
    """The Nth call that changes the disk fails with EIO, the power cut before it: the calls before
    it took effect (what they synced is on the disk), it and every later one did not."""
    rng = random.Random(seed)
    for n in range(1, 9):
        files = _Files(tmp_path / str(n))
        fh = files.create("f")
        chunks = [rng.randbytes(100) for _ in range(4)]
        files.ops.cut_at_call(n, CutMode.LOSE, seed)
        calls_made = 0
        try:
            for chunk in chunks:  # write, fsync, write, fsync, ...: 8 calls
                files.ops.write("/f", chunk, calls_made // 2 * 100, fh)
                calls_made += 1
                files.ops.fsync("/f", 0, fh)
                calls_made += 1
        except OSError as exc:
            assert exc.errno == errno.EIO, exc
        assert calls_made == n - 1, f"call {n}: {calls_made} calls went through"
        report = files.ops.wait_for_cut(0)
        assert report is not None, f"call {n}: no cut"
        synced = b"".join(chunks[:calls_made // 2])
        assert (files.backing / "f").read_bytes() == synced, f"call {n}: the disk is not as of call {n - 1}"
        with pytest.raises(OSError) as failed:
            files.ops.getattr("/f")
        assert failed.value.errno == errno.EIO


def test_a_cut_at_a_call_in_torn_mode_tears_the_write_in_flight_before_it(tmp_path: Path, seed: int) -> None:
    """Cut at the fsync that follows a multi-page write: the torn mode keeps its first pages."""
    files = _Files(tmp_path)
    fh = files.create("f")
    data = random.Random(seed).randbytes(5 * PAGE_BYTES + 10)
    files.ops.cut_at_call(2, CutMode.TORN, seed)  # the write, then the fsync: cut there
    files.ops.write("/f", data, 0, fh)
    with pytest.raises(OSError):
        files.ops.fsync("/f", 0, fh)
    report = files.ops.wait_for_cut(0)
    assert report is not None and report.torn_writes == 1, report
    content = (files.backing / "f").read_bytes()
    assert 0 < len(content) < len(data) and len(content) % PAGE_BYTES == 0, f"seed {seed}: {len(content)} bytes"
    assert data.startswith(content), f"seed {seed}"


def test_a_punched_hole_reads_as_zeros_and_is_lost_unsynced(tmp_path: Path) -> None:
    """``fallocate(PUNCH_HOLE | KEEP_SIZE)`` (how segment files give back deleted entries' space)."""
    files = _Files(tmp_path)
    fh = files.create("seg")
    files.ops.write("/seg", b"x" * 3 * PAGE_BYTES, 0, fh)
    files.ops.fsync("/seg", 0, fh)
    files.ops.fallocate("/seg", 0x03, PAGE_BYTES, PAGE_BYTES, fh)
    assert files.ops.read("/seg", 3 * PAGE_BYTES, 0, fh) == (
        b"x" * PAGE_BYTES + bytes(PAGE_BYTES) + b"x" * PAGE_BYTES)
    assert files.ops.getattr("/seg", fh)["st_size"] == 3 * PAGE_BYTES
    files.ops.cut()
    assert (files.backing / "seg").read_bytes() == b"x" * 3 * PAGE_BYTES
