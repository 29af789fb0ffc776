"""The power-loss filesystem's state: what the processes above see, and what a power cut leaves.

Every inode has two views. File data: the *synced* content is an object file on the disk (in a
private directory beside the backing one); what was written since is held in memory
(:class:`Extents`) and overlaid on reads, until an fsync of the file writes it through. Names:
each directory keeps the entries the processes see and the *durable* entries as of its last
fsync; the backing directory holds the durable namespace, each file there a hard link of its
object. :meth:`Disk.drop` (the cut) forgets the rest. See :mod:`seaway.testing._powerloss` for
what is modelled and what is not.

What a cut keeps of each file's unsynced writes is chosen by a :class:`CutMode` and a seed
(:func:`surviving`, pure): nothing (``lose``), a prefix of them with the last one torn at a page
boundary (``torn``), or a subset of their pages that is not a prefix (``reordered``). Each file
keeps its writes in the order they were made since its last fsync (:attr:`File.pending`): an
fsync empties it, so nothing is ever reordered across one.

Single-threaded: the caller (the FUSE operations) holds one lock around every call.
"""

from __future__ import annotations

import bisect
import enum
import errno
import itertools
import os
import random
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PAGE_BYTES", "CutMode", "CutReport", "Dir", "Disk", "Extents", "File", "Inode", "Resize", "Survivors",
           "Symlink", "Write", "os_error", "replay", "surviving"]

PAGE_BYTES = 4096
"""The unit a disk writes whole: a torn write keeps whole pages of it, never part of one."""


def os_error(code: int) -> OSError:
    """The error an operation fails with (FUSE passes its errno to the caller)."""
    return OSError(code, os.strerror(code))


@dataclass(frozen=True, slots=True)
class CutReport:
    """What a power cut dropped (and, in the modes that keep some of it, kept)."""

    files: int
    """Files that had unsynced data or size."""
    unsynced_bytes: int
    """Bytes written to them since their last sync."""
    directories: int
    """Directories whose entries had changed since their last fsync."""
    kept_writes: int = 0
    """Unsynced writes and size changes kept, whole or in part, in files that have a durable name."""
    torn_writes: int = 0
    """Writes of those kept only in part (their first pages: ``torn``)."""
    reordered_files: int = 0
    """Files that kept a write while losing one made before it (``reordered``)."""


# --- What a cut keeps of a file's unsynced writes (pure) -------------------------------------------


class CutMode(enum.Enum):
    """What a power cut keeps of the writes made to a file since its last fsync. Directory entries
    are kept as of each directory's last fsync in every mode."""

    LOSE = "lose"
    """Nothing: the file is as it was synced."""
    TORN = "torn"
    """The writes in the order they were made, up to one that is kept only in part: its first pages,
    cut at a page boundary (:data:`PAGE_BYTES`). Chosen among the writes that cross a boundary;
    where none does, a prefix of whole writes."""
    REORDERED = "reordered"
    """A subset of the writes' pages, each write split at page boundaries, that is not a prefix of
    them (where there are two pages or more): a later page kept, an earlier one lost, as a disk
    without write barriers may leave them. Size changes (truncations, extensions) are journaled
    metadata: a prefix of them is kept, in order."""


@dataclass(frozen=True, slots=True)
class Write:
    """``data`` written at ``offset`` (a hole punched is a write of zeros)."""

    offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True, slots=True)
class Resize:
    """The file's size set to ``size`` (a truncation, or an extension that reads as zeros)."""

    size: int


Op = Write | Resize


@dataclass(frozen=True, slots=True)
class Survivors:
    """What a cut keeps of one file's unsynced operations, in the order they are applied."""

    ops: list[Op]
    torn: bool = False
    """The last write kept is only its first pages."""
    reordered: bool = False
    """A write was kept and one made before it lost."""


def _page_boundaries(w: Write) -> range:
    """The page boundaries strictly inside the write."""
    return range((w.offset // PAGE_BYTES + 1) * PAGE_BYTES, w.end, PAGE_BYTES)


def _pages(w: Write) -> list[Write]:
    cuts = [w.offset, *_page_boundaries(w), w.end]
    return [Write(lo, w.data[lo - w.offset:hi - w.offset]) for lo, hi in itertools.pairwise(cuts)]


def surviving(ops: Sequence[Op], mode: CutMode, rng: random.Random) -> Survivors:
    """What a cut in ``mode`` keeps of ``ops`` (a file's operations since its last fsync, in the
    order they were made), chosen by ``rng``."""
    if mode is CutMode.LOSE or not ops:
        return Survivors([])
    if mode is CutMode.TORN:
        tearable = [i for i, op in enumerate(ops) if isinstance(op, Write) and _page_boundaries(op)]
        if not tearable:
            return Survivors(list(ops[:rng.randrange(len(ops) + 1)]))
        i = rng.choice(tearable)
        w = ops[i]
        assert isinstance(w, Write)
        cut = rng.choice(_page_boundaries(w))
        return Survivors([*ops[:i], Write(w.offset, w.data[:cut - w.offset])], torn=True)
    units: list[Op] = [page for op in ops for page in (_pages(op) if isinstance(op, Write) else [op])]
    pages = [i for i, op in enumerate(units) if isinstance(op, Write)]
    resizes = [i for i, op in enumerate(units) if isinstance(op, Resize)]
    keep = {i for i in pages if rng.random() < 0.5}
    keep.update(resizes[:rng.randrange(len(resizes) + 1)])
    kept_pages = [i for i in pages if i in keep]
    if len(pages) >= 2 and kept_pages == pages[:len(kept_pages)]:
        # A prefix (or nothing, or everything): lose one page and keep a later one.
        lost, later = sorted(rng.sample(range(len(pages)), 2))
        keep.discard(pages[lost])
        keep.add(pages[later])
    kept_pages = [i for i in pages if i in keep]
    reordered = kept_pages != pages[:len(kept_pages)]
    return Survivors([units[i] for i in sorted(keep)], reordered=reordered)


def replay(base: bytes, ops: Sequence[Op]) -> bytes:
    """``base`` with ``ops`` applied, as a file's content (for checks; :meth:`Disk.drop` applies
    them to the file itself)."""
    out = bytearray(base)
    for op in ops:
        if isinstance(op, Resize):
            del out[op.size:]
            out.extend(bytes(op.size - len(out)))
        else:
            out.extend(bytes(max(0, op.end - len(out))))
            out[op.offset:op.end] = op.data
    return bytes(out)


# --- Unsynced file data ---------------------------------------------------------------------------


class Extents:
    """The byte ranges of one file written since its last sync: sorted, disjoint and not touching
    (adjacent writes merge, so a file appended to holds one buffer)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._bufs: list[bytearray] = []

    def __bool__(self) -> bool:
        return bool(self._starts)

    def total_bytes(self) -> int:
        return sum(map(len, self._bufs))

    def items(self) -> Iterator[tuple[int, bytearray]]:
        return zip(self._starts, self._bufs, strict=True)

    def clear(self) -> None:
        self._starts.clear()
        self._bufs.clear()

    def write(self, offset: int, data: bytes) -> None:
        end = offset + len(data)
        starts, bufs = self._starts, self._bufs
        # [i, j): the extents that overlap or touch [offset, end).
        i = max(bisect.bisect_right(starts, offset) - 1, 0)
        if i < len(starts) and starts[i] + len(bufs[i]) < offset:
            i += 1
        j = bisect.bisect_right(starts, end)
        if i >= j:
            starts.insert(i, offset)
            bufs.insert(i, bytearray(data))
        elif j == i + 1 and starts[i] <= offset:
            rel = offset - starts[i]
            bufs[i][rel:rel + len(data)] = data  # overwrites, or extends past the end
        else:
            lo = min(offset, starts[i])
            hi = max(end, starts[j - 1] + len(bufs[j - 1]))
            merged = bytearray(hi - lo)
            for k in range(i, j):
                merged[starts[k] - lo:starts[k] - lo + len(bufs[k])] = bufs[k]
            merged[offset - lo:end - lo] = data
            starts[i:j] = [lo]
            bufs[i:j] = [merged]

    def truncate(self, size: int) -> None:
        i = bisect.bisect_left(self._starts, size)
        del self._starts[i:], self._bufs[i:]
        if i and self._starts[i - 1] + len(self._bufs[i - 1]) > size:
            del self._bufs[i - 1][size - self._starts[i - 1]:]

    def overlay(self, offset: int, out: bytearray) -> None:
        """Copy what these extents hold of ``[offset, offset + len(out))`` over ``out``."""
        end = offset + len(out)
        k = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        while k < len(self._starts) and self._starts[k] < end:
            start, buf = self._starts[k], self._bufs[k]
            lo, hi = max(start, offset), min(start + len(buf), end)
            if lo < hi:
                out[lo - offset:hi - offset] = buf[lo - start:hi - start]
            k += 1


# --- Inodes -------------------------------------------------------------------------------------


class Inode:
    def __init__(self, ino: int, kind: int, mode: int) -> None:
        self.ino = ino
        self.kind = kind  # stat.S_IFREG, S_IFDIR or S_IFLNK
        self.mode = mode & 0o7777
        self.links = 0  # names in the current namespace
        self.durable_refs = 0  # names in the durable entries of directories still alive
        self.opens = 0
        self.uid, self.gid = os.getuid(), os.getgid()
        self.atime_ns = self.mtime_ns = self.ctime_ns = time.time_ns()


class File(Inode):
    """A regular file: its synced content is the object file ``fd``; what was written since, in
    memory. Reads see ``floor`` bytes of the object (less than its size after an unsynced
    truncation), then zeros up to ``size``, with ``extents`` on top."""

    def __init__(self, ino: int, mode: int, fd: int, size: int) -> None:
        super().__init__(ino, stat.S_IFREG, mode)
        self.fd = fd
        self.size = size
        self.synced_size = size
        self.floor = size
        self.extents = Extents()
        # Every write and size change since the last sync, in order: what a cut may keep part of.
        self.pending: list[Op] = []

    @property
    def dirty(self) -> bool:
        return bool(self.extents) or self.size != self.synced_size or self.floor != self.synced_size


class Dir(Inode):
    def __init__(self, ino: int, mode: int) -> None:
        super().__init__(ino, stat.S_IFDIR, mode)
        self.entries: dict[str, int] = {}  # name -> ino, as the processes above see them
        self.durable: dict[str, int] = {}  # as of this directory's last fsync


class Symlink(Inode):
    def __init__(self, ino: int, target: str) -> None:
        super().__init__(ino, stat.S_IFLNK, 0o777)
        self.target = target


# --- The disk: both namespaces, and syncing one into the other -------------------------------------


class Disk:
    """Every inode, the open handles, and the backing directory they are made durable into.

    Operations on it raise ``OSError`` with the errno the caller should see. ``objects`` is a
    directory of its own on the backing directory's filesystem (emptied first)."""

    def __init__(self, backing: Path, objects: Path) -> None:
        self.backing = backing
        self._objects = objects
        self.inodes: dict[int, Inode] = {}
        self.handles: dict[int, Inode] = {}
        self._next_ino = 1
        self._next_fh = 1
        # Where each directory of the durable namespace is in the backing directory.
        self._backing_dirs: dict[int, Path] = {}
        self.root = self._import(backing)

    # --- building and dropping the model ---------------------------------------------------------

    def new_ino(self) -> int:
        ino, self._next_ino = self._next_ino, self._next_ino + 1
        return ino

    def object_path(self, ino: int) -> Path:
        return self._objects / str(ino)

    def _import(self, backing: Path) -> Dir:
        """Take the backing directory as the synced state: each file hard-linked as its object."""
        if self._objects.exists():
            shutil.rmtree(self._objects)  # left by a daemon that was killed
        self._objects.mkdir(parents=True)
        if os.stat(self._objects).st_dev != os.stat(backing).st_dev:
            raise RuntimeError(f"{self._objects} is not on the filesystem of {backing}")
        files: dict[tuple[int, int], File] = {}

        def load(path: Path) -> Dir:
            d = Dir(self.new_ino(), os.stat(path).st_mode)
            self.inodes[d.ino] = d
            self._backing_dirs[d.ino] = path
            with os.scandir(path) as it:
                for entry in it:
                    child: Inode
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        child = load(Path(entry.path))
                    elif stat.S_ISLNK(st.st_mode):
                        child = Symlink(self.new_ino(), os.readlink(entry.path))
                        self.inodes[child.ino] = child
                    elif stat.S_ISREG(st.st_mode):
                        found = files.get((st.st_dev, st.st_ino))
                        if found is None:
                            ino = self.new_ino()
                            os.link(entry.path, self.object_path(ino))
                            found = File(ino, st.st_mode, os.open(self.object_path(ino), os.O_RDWR), st.st_size)
                            files[(st.st_dev, st.st_ino)] = found
                            self.inodes[ino] = found
                        child = found
                    else:
                        continue  # sockets, devices, fifos: not part of the model
                    d.entries[entry.name] = d.durable[entry.name] = child.ino
                    child.links += 1
                    child.durable_refs += 1
            return d

        root = load(backing)
        root.links = 1  # the mount itself: never collected
        return root

    def drop(self, mode: CutMode = CutMode.LOSE, seed: int = 0) -> CutReport:
        """Forget everything not synced (the backing directory keeps what was), but what ``mode``
        keeps of each file's unsynced writes (chosen by ``seed``, file by file in the order they
        were made); what was dropped. The disk is of no further use."""
        files = [i for i in self.inodes.values() if isinstance(i, File) and i.dirty]
        dirs = [i for i in self.inodes.values() if isinstance(i, Dir) and i.entries != i.durable]
        rng = random.Random(seed)
        kept = torn = reordered = 0
        for f in files:
            if not f.durable_refs:
                continue  # no durable name: gone whatever it held
            survivors = surviving(f.pending, mode, rng)
            for op in survivors.ops:
                if isinstance(op, Resize):
                    os.ftruncate(f.fd, op.size)
                else:
                    _pwrite_all(f.fd, op.data, op.offset)
            kept += len(survivors.ops)
            torn += survivors.torn
            reordered += survivors.reordered
        report = CutReport(len(files), sum(f.extents.total_bytes() for f in files), len(dirs), kept, torn, reordered)
        for inode in self.inodes.values():
            if isinstance(inode, File):
                os.close(inode.fd)
        self.inodes.clear()
        self.handles.clear()
        # The durable names are hard links of their own: the objects can go.
        shutil.rmtree(self._objects, ignore_errors=True)
        return report

    def sync_all(self) -> None:
        """Sync every file, then every directory: everything so far becomes durable."""
        for inode in list(self.inodes.values()):
            if isinstance(inode, File):
                self.sync_file(inode)
        for inode in list(self.inodes.values()):
            if isinstance(inode, Dir) and inode.ino in self.inodes:
                self.sync_dir(inode)

    # --- syncing -----------------------------------------------------------------------------

    def sync_file(self, f: File) -> None:
        if not f.dirty:
            return
        if f.floor < f.synced_size:
            os.ftruncate(f.fd, f.floor)
        for start, buf in f.extents.items():
            _pwrite_all(f.fd, buf, start)
        os.ftruncate(f.fd, f.size)
        f.extents.clear()
        f.pending.clear()
        f.floor = f.synced_size = f.size

    def sync_dir(self, d: Dir) -> None:
        old, new = d.durable, dict(d.entries)
        if old == new:
            return
        gone = [(name, ino) for name, ino in old.items() if new.get(name) != ino]
        came = [(name, ino) for name, ino in new.items() if old.get(name) != ino]
        for _, ino in came:
            self.inodes[ino].durable_refs += 1
        d.durable = new
        where = self._backing_dirs.get(d.ino)
        if where is not None:
            for name, ino in gone:
                self._unmaterialize(where / name, ino)
            for name, ino in came:
                self._materialize(where / name, ino)
        for _, ino in gone:
            self.inodes[ino].durable_refs -= 1
            self.collect(ino)

    def _materialize(self, path: Path, ino: int) -> None:
        """Put the durable state of ``ino`` at ``path`` in the backing directory."""
        inode = self.inodes[ino]
        if isinstance(inode, File):
            os.link(self.object_path(ino), path)
        elif isinstance(inode, Symlink):
            os.symlink(inode.target, path)
        elif isinstance(inode, Dir):
            os.mkdir(path, inode.mode)
            self._backing_dirs[ino] = path
            for name, child in inode.durable.items():
                self._materialize(path / name, child)

    def _unmaterialize(self, path: Path, ino: int) -> None:
        inode = self.inodes[ino]
        if isinstance(inode, Dir):
            def forget(d: Dir) -> None:
                self._backing_dirs.pop(d.ino, None)
                for child in d.durable.values():
                    sub = self.inodes[child]
                    if isinstance(sub, Dir):
                        forget(sub)

            forget(inode)
            shutil.rmtree(path)
        else:
            os.unlink(path)

    def collect(self, ino: int) -> None:
        """Forget an inode that nothing names or holds any more, durable or not."""
        inode = self.inodes.get(ino)
        if inode is None or inode.links or inode.opens or inode.durable_refs:
            return
        del self.inodes[ino]
        if isinstance(inode, File):
            os.close(inode.fd)
            os.unlink(self.object_path(ino))
        elif isinstance(inode, Dir):
            for child in inode.durable.values():
                self.inodes[child].durable_refs -= 1
                self.collect(child)

    # --- lookups --------------------------------------------------------------------------------

    def lookup(self, path: str) -> Inode:
        inode: Inode = self.root
        for name in path.split("/"):
            if not name:
                continue
            if not isinstance(inode, Dir):
                raise os_error(errno.ENOTDIR)
            ino = inode.entries.get(name)
            if ino is None:
                raise os_error(errno.ENOENT)
            inode = self.inodes[ino]
        return inode

    def parent(self, path: str) -> tuple[Dir, str]:
        head, _, name = path.rstrip("/").rpartition("/")
        parent = self.lookup(head)
        if not isinstance(parent, Dir):
            raise os_error(errno.ENOTDIR)
        if not name:
            raise os_error(errno.EINVAL)
        return parent, name

    def inode(self, path: str | None, fh: int | None) -> Inode:
        if fh is not None and fh in self.handles:
            return self.handles[fh]
        if path is None:
            raise os_error(errno.EBADF)
        return self.lookup(path)

    def file(self, fh: int) -> File:
        inode = self.handles.get(fh)
        if not isinstance(inode, File):
            raise os_error(errno.EBADF)
        return inode

    def open_handle(self, inode: Inode) -> int:
        fh, self._next_fh = self._next_fh, self._next_fh + 1
        self.handles[fh] = inode
        inode.opens += 1
        return fh

    def close_handle(self, fh: int) -> None:
        inode = self.handles.pop(fh, None)
        if inode is not None:
            inode.opens -= 1
            self.collect(inode.ino)

    def add(self, parent: Dir, name: str, inode: Inode) -> None:
        self.inodes[inode.ino] = inode
        parent.entries[name] = inode.ino
        inode.links += 1
        parent.mtime_ns = parent.ctime_ns = time.time_ns()

    def remove(self, parent: Dir, name: str) -> None:
        inode = self.inodes[parent.entries.pop(name)]
        inode.links -= 1
        inode.ctime_ns = parent.mtime_ns = parent.ctime_ns = time.time_ns()
        self.collect(inode.ino)

    def write(self, f: File, offset: int, data: bytes) -> None:
        f.extents.write(offset, data)
        f.pending.append(Write(offset, bytes(data)))
        f.size = max(f.size, offset + len(data))
        f.mtime_ns = f.ctime_ns = time.time_ns()

    def truncate(self, f: File, length: int) -> None:
        f.extents.truncate(length)
        f.pending.append(Resize(length))
        f.floor = min(f.floor, length)
        f.size = length
        f.mtime_ns = f.ctime_ns = time.time_ns()

    def extend(self, f: File, size: int) -> None:
        """``fallocate`` past the end: the file grows, reading as zeros."""
        if size > f.size:
            f.pending.append(Resize(size))
            f.size = size

    def punch(self, f: File, offset: int, length: int) -> None:
        """``fallocate(PUNCH_HOLE | KEEP_SIZE)``: the range reads as zeros; the size stays."""
        end = min(offset + length, f.size)
        if end > offset:
            self.write(f, offset, bytes(end - offset))


def _pwrite_all(fd: int, data: bytes | bytearray, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written

