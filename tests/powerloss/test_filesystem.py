"""The power-loss filesystem itself: after a cut, the disk holds exactly what was synced (file data
and sizes by fsync of the file, names by fsync of their directory), and until then the processes
above see every write."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from seaway.testing import PAGE_BYTES, CutMode, CutReport, PowerLossFS
from seaway.testing._powerloss_state import Extents


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, data: bytes, *, sync: bool, flags: int = os.O_CREAT | os.O_TRUNC) -> None:
    fd = os.open(path, os.O_WRONLY | flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file's content and every directory (None) under ``root``, by relative path."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = Path(dirpath, name).read_bytes()
    return out


@pytest.mark.slow
def test_the_filesystem_keeps_exactly_what_was_synced(fs: PowerLossFS) -> None:
    (fs.backing / "old").mkdir(parents=True)
    (fs.backing / "old" / "kept").write_bytes(b"before")
    (fs.backing / "old" / "CURRENT").write_bytes(b"MANIFEST-1")
    (fs.backing / "old" / "unlinked").write_bytes(b"still here")
    (fs.backing / "old" / "truncated").write_bytes(b"0123456789")
    fs.mount()
    mnt = fs.mountpoint
    # A new file, synced, in a directory synced: durable. Bytes appended later and not synced: not.
    (mnt / "new").mkdir()
    _write(mnt / "new" / "synced", b"synced", sync=True)
    _fsync_dir(mnt / "new")
    _fsync_dir(mnt)
    _write(mnt / "new" / "synced", b" and not", sync=False, flags=os.O_APPEND)
    assert (mnt / "new" / "synced").read_bytes() == b"synced and not"  # the process sees its writes
    # A new file, synced, whose directory is not: gone.
    _write(mnt / "old" / "orphan", b"data", sync=True)
    # A directory made durable in itself, but not in its parent: gone, with what it holds.
    (mnt / "lost").mkdir()
    _write(mnt / "lost" / "inner", b"x", sync=True)
    _fsync_dir(mnt / "lost")
    # A rename over a file: durable only with the directory's fsync (as RocksDB's CURRENT is).
    _write(mnt / "new" / "tmp", b"MANIFEST-2", sync=True)
    os.rename(mnt / "new" / "tmp", mnt / "new" / "CURRENT")
    _fsync_dir(mnt / "new")
    _write(mnt / "old" / "tmp", b"MANIFEST-2", sync=True)
    os.rename(mnt / "old" / "tmp", mnt / "old" / "CURRENT")
    # An unlink and a truncation never synced; a file unlinked while open stays usable.
    fd = os.open(mnt / "old" / "unlinked", os.O_RDWR)
    os.unlink(mnt / "old" / "unlinked")
    os.pwrite(fd, b"STILL", 0)
    assert os.pread(fd, 100, 0) == b"STILL here"
    os.close(fd)
    os.truncate(mnt / "old" / "truncated", 4)
    assert (mnt / "old" / "truncated").read_bytes() == b"0123"
    assert sorted(os.listdir(mnt / "old")) == ["CURRENT", "kept", "orphan", "truncated"]
    report = fs.cut_power()
    assert report.files >= 2 and report.directories >= 2, report
    fs.unmount()
    assert _tree(fs.backing) == {
        "old": None, "old/kept": b"before", "old/CURRENT": b"MANIFEST-1", "old/unlinked": b"still here",
        "old/truncated": b"0123456789",
        "new": None, "new/synced": b"synced", "new/CURRENT": b"MANIFEST-2",
    }
    fs.mount()  # and a new mount shows the same
    assert _tree(fs.mountpoint) == _tree(fs.backing)
    (fs.mountpoint / "new" / "late").write_bytes(b"made durable by sync()")
    fs.sync()
    assert fs.cut_power() == CutReport(0, 0, 0)
    fs.unmount()
    assert (fs.backing / "new" / "late").read_bytes() == b"made durable by sync()"


@pytest.mark.slow
def test_file_contents_match_a_reference_through_random_writes_and_a_cut(fs: PowerLossFS, seed: int) -> None:
    """Random writes, truncations and syncs on a few files, every read checked against plain byte
    strings; after the cut, each file holds what it held at its last sync."""
    rng = random.Random(seed)
    fs.mount()
    mnt = fs.mountpoint
    names = [f"f{i}" for i in range(4)]
    current: dict[str, bytearray] = {n: bytearray() for n in names}
    synced: dict[str, bytes] = {n: b"" for n in names}
    fds = {n: os.open(mnt / n, os.O_RDWR | os.O_CREAT, 0o644) for n in names}
    _fsync_dir(mnt)
    try:
        for step in range(600):
            name = rng.choice(names)
            fd, ref = fds[name], current[name]
            op = rng.random()
            if op < 0.55:
                offset = rng.randrange(len(ref) + 5000)
                data = rng.randbytes(rng.choice([1, 7, 100, 4096, 70_000]))
                assert os.pwrite(fd, data, offset) == len(data)
                if offset > len(ref):
                    ref.extend(bytes(offset - len(ref)))
                ref[offset:offset + len(data)] = data
            elif op < 0.65:
                size = rng.randrange(len(ref) + 100)
                os.ftruncate(fd, size)
                del ref[size:]
                ref.extend(bytes(size - len(ref)))
            elif op < 0.75:
                os.fsync(fd)
                synced[name] = bytes(ref)
            else:
                offset = rng.randrange(len(ref) + 10)
                size = rng.randrange(1, 90_000)
                assert os.pread(fd, size, offset) == bytes(ref[offset:offset + size]), (
                    f"seed {seed}: step {step}: {name} [{offset}, +{size})")
            assert os.fstat(fd).st_size == len(ref), f"seed {seed}: step {step}: size of {name}"
    finally:
        for fd in fds.values():
            os.close(fd)
    fs.cut_power()
    fs.unmount()
    for name in names:
        assert (fs.backing / name).read_bytes() == synced[name], f"seed {seed}: {name} after the cut"


def test_unsynced_extents_match_a_reference(seed: int) -> None:
    """The daemon's overlay of unsynced writes, alone: random writes, truncations and reads
    against a plain byte string (with a synced base of zeros, as over a file of that size)."""
    rng = random.Random(seed)
    extents, ref, size = Extents(), bytearray(), 0
    for step in range(5000):
        op = rng.random()
        if op < 0.6:
            offset = rng.randrange(size + 300)
            data = rng.randbytes(rng.randrange(1, 200))
            extents.write(offset, data)
            ref.extend(bytes(max(0, offset + len(data) - len(ref))))
            ref[offset:offset + len(data)] = data
            size = max(size, offset + len(data))
        elif op < 0.7:
            size = rng.randrange(size + 50)
            extents.truncate(size)
            del ref[size:]
            ref.extend(bytes(size - len(ref)))
        else:
            offset, length = rng.randrange(size + 10), rng.randrange(1, 400)
            out = bytearray(max(0, min(length, size - offset)))
            extents.overlay(offset, out)
            assert out == ref[offset:offset + length], f"seed {seed}: step {step}"
        starts = [start for start, _ in extents.items()]
        ends = [start + len(buf) for start, buf in extents.items()]
        assert all(end < start for end, start in zip(ends, starts[1:], strict=False)), (
            f"seed {seed}: step {step}: extents overlap or touch")


@pytest.mark.slow
def test_through_the_mount_a_cut_tears_reorders_or_falls_at_a_call(fs: PowerLossFS, seed: int) -> None:
    """The control channel's cuts, through a real mount: each mode, and a cut at the Nth call."""
    rng = random.Random(seed)
    synced = rng.randbytes(PAGE_BYTES + 100)
    later = [rng.randbytes(3 * PAGE_BYTES) for _ in range(4)]

    def write_file() -> None:
        fd = os.open(fs.mountpoint / "f", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, synced)
            os.fsync(fd)
            _fsync_dir(fs.mountpoint)
            for data in later:
                os.write(fd, data)
        finally:
            os.close(fd)

    for mode in (CutMode.TORN, CutMode.REORDERED):
        fs.mount()
        write_file()
        report = fs.cut_power(mode, seed)
        fs.unmount()
        content = (fs.backing / "f").read_bytes()
        assert content.startswith(synced), f"seed {seed}: {mode.value}: synced bytes lost"
        assert report.kept_writes and (report.torn_writes if mode is CutMode.TORN else report.reordered_files), (
            f"seed {seed}: {mode.value}: {report}")
        tail = b"".join(later)
        if mode is CutMode.TORN:
            assert tail.startswith(content[len(synced):]) and len(content) % PAGE_BYTES == 0, f"seed {seed}"
        else:
            assert content[len(synced):] != tail[:len(content) - len(synced)], f"seed {seed}: kept in order"
        (fs.backing / "f").unlink()
    # At a call: the 5th of create, write, fsync, fsyncdir, write, ...: the first later write.
    fs.mount()
    fs.cut_at_call(5)
    with pytest.raises(OSError):
        write_file()
    report = fs.wait_for_cut(10)
    assert report is not None and fs.calls() == 5, report
    with pytest.raises(OSError):
        (fs.mountpoint / "f").stat()
    fs.unmount()
    assert (fs.backing / "f").read_bytes() == synced
