"""The power-loss filesystem's state: what the processes above see, and what a power cut leaves.

Every inode has two views. File data: the *synced* content is an object file on the disk (in a
private directory beside the backing one); what was written since is held in memory
(:class:`Extents`) and overlaid on reads, until an fsync of the file writes it through. Names:
each directory keeps the entries the processes see and the *durable* entries as of its last
fsync; the backing directory holds the durable namespace, each file there a hard link of its
object. :meth:`Disk.drop` (the cut) forgets the rest. See :mod:`seaway.testing._powerloss` for
what is modelled and what is not.

Single-threaded: the caller (the FUSE operations) holds one lock around every call.
"""

from __future__ import annotations

import bisect
import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CutReport", "Dir", "Disk", "Extents", "File", "Inode", "Symlink", "os_error"]


def os_error(code: int) -> OSError:
    """The error an operation fails with (FUSE passes its errno to the caller)."""
    return OSError(code, os.strerror(code))


@dataclass(frozen=True, slots=True)
class CutReport:
    """What a power cut dropped."""

    files: int
    """Files that had unsynced data or size."""
    unsynced_bytes: int
    """Bytes written to them since their last sync."""
    directories: int
    """Directories whose entries had changed since their last fsync."""


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

    def drop(self) -> CutReport:
        """Forget everything not synced (the backing directory keeps what was); what was dropped.
        The disk is of no further use."""
        files = [i for i in self.inodes.values() if isinstance(i, File) and i.dirty]
        dirs = [i for i in self.inodes.values() if isinstance(i, Dir) and i.entries != i.durable]
        report = CutReport(len(files), sum(f.extents.total_bytes() for f in files), len(dirs))
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
            view, offset = memoryview(buf), start
            while view:
                written = os.pwrite(f.fd, view, offset)
                view, offset = view[written:], offset + written
        os.ftruncate(f.fd, f.size)
        f.extents.clear()
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

    def truncate(self, f: File, length: int) -> None:
        f.extents.truncate(length)
        f.floor = min(f.floor, length)
        f.size = length
        f.mtime_ns = f.ctime_ns = time.time_ns()

