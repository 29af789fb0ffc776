"""The power-loss filesystem's daemon: mfusepy's operations over a :class:`Disk`, and a control
channel on stdin for the parent (:class:`seaway.testing.PowerLossFS`) to sync, cut and unmount.

Run by the parent as ``python -c "...main(argv)" BACKING MOUNTPOINT STATE_DIR``; it answers
``ready`` on stdout once the mount serves requests, then one line per command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Concatenate, ParamSpec, TypeVar

from seaway.testing._powerloss_state import CutMode, CutReport, Dir, Disk, File, Inode, Symlink, os_error

__all__ = ["COUNTED_CALLS", "FUSERMOUNT", "PowerLossOps", "format_report", "fusermount_unmount", "main",
           "parse_report"]

FUSERMOUNT = "fusermount3"
_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
COUNTED_CALLS = frozenset({"write", "truncate", "fallocate", "fsync", "fsyncdir", "create", "mkdir", "rmdir",
                           "unlink", "symlink", "link", "rename"})
"""The operations that change what is or will be on the disk: those a cut "at the Nth call" counts."""
_FUSE_CAP_WRITEBACK_CACHE = 1 << 16
_EXTENT_BYTES_MAX = 1 << 30  # a bound on one unsynced write's offset + length, far above any test's
# Threads serving requests (one at a time: every operation takes the lock). Set, since libfuse 3.14
# complains of the value it would pass itself.
_THREADS_MAX = 8


def fusermount_unmount(mountpoint: Path) -> None:
    """Detach the mount (lazily: processes still inside it keep it until they leave)."""
    subprocess.run([FUSERMOUNT, "-u", "-z", "-q", str(mountpoint)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _op(method: Callable[Concatenate[PowerLossOps, _P], _R]) -> Callable[Concatenate[PowerLossOps, _P], _R]:
    """A filesystem operation: one at a time, and none after the power is cut."""

    counted = method.__name__ in COUNTED_CALLS

    def run(self: PowerLossOps, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._mutex:
            if self.cut_done:
                raise OSError(errno.EIO, "the power is cut")
            if counted:
                self._count_call()
            return method(self, *args, **kwargs)

    # Its signature too: mfusepy counts the parameters of ``create``.
    functools.update_wrapper(run, method)
    return run


class PowerLossOps:
    """The filesystem operations, for mfusepy's high-level API (paths in, ``OSError`` out).

    One lock serialises every operation and the control commands, so a cut falls between two
    operations. Handles (``fh``) name inodes, so operations on an open file do not need its path
    (None once the file is unlinked). ``nullpath_ok`` stays off: mfusepy does not pass the handle
    to ``truncate``, so ``ftruncate`` needs the path.
    """

    use_ns = True  # times in nanoseconds (mfusepy)

    def __init__(self, backing: Path, objects: Path, on_ready: Callable[[], None]) -> None:
        # Not named after a FUSE operation (mfusepy registers every attribute that is: 'lock').
        self._mutex = threading.RLock()
        self.cut_done = False
        self._on_ready = on_ready
        self._disk = Disk(backing, objects)
        self.calls = 0  # of COUNTED_CALLS, since the mount
        self._cut_at: tuple[int, CutMode, int] | None = None  # (call number, mode, seed)
        self._report: CutReport | None = None
        self._cut_event = threading.Event()

    # --- the parent's commands ------------------------------------------------------------------

    def cut(self, mode: CutMode = CutMode.LOSE, seed: int = 0) -> CutReport:
        """The power cut: forget everything not synced but what ``mode`` keeps (chosen by
        ``seed``); every later operation fails with ``EIO``."""
        with self._mutex:
            if self.cut_done:
                return CutReport(0, 0, 0)
            self.cut_done = True
            self._report = self._disk.drop(mode, seed)
            self._cut_event.set()
            return self._report

    def cut_at_call(self, calls: int, mode: CutMode, seed: int) -> None:
        """Cut the power just before the ``calls``-th counted call from now (that call fails with
        ``EIO``, as every one after it)."""
        if calls < 1:
            raise ValueError(f"a cut at call {calls}: the first is 1")
        with self._mutex:
            self._cut_at = (self.calls + calls, mode, seed)

    def wait_for_cut(self, timeout_s: float) -> CutReport | None:
        """The cut's report once the power is cut (within ``timeout_s``), else None."""
        if not self._cut_event.wait(timeout_s):
            return None
        return self._report

    def _count_call(self) -> None:
        self.calls += 1
        if self._cut_at is not None and self.calls >= self._cut_at[0]:
            _, mode, seed = self._cut_at
            self.cut(mode, seed)
            raise OSError(errno.EIO, "the power is cut")

    def sync_all(self) -> None:
        with self._mutex:
            if self.cut_done:
                raise OSError(errno.EIO, "the power is cut")
            self._disk.sync_all()

    # --- mfusepy operations: lifecycle --------------------------------------------------------

    def init_with_config(self, conn: Any, config: Any) -> None:
        # The kernel must cache nothing: every write and every size reaches this process.
        if conn is not None:
            conn.want &= ~_FUSE_CAP_WRITEBACK_CACHE
        if config is not None:
            config.direct_io = 1
            config.entry_timeout = config.attr_timeout = config.negative_timeout = 0.0
            config.hard_remove = 1  # unlink open files for real, not as .fuse_hidden renames
            config.use_ino = 1
        self._on_ready()

    def destroy(self, path: str) -> None:
        self.cut()  # unmounted: what was not synced is lost, as at a cut

    @_op
    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._disk.backing)
        keys = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail",
                "f_flag", "f_namemax")
        return {k: getattr(st, k) for k in keys}

    @_op
    def access(self, path: str, amode: int) -> int:
        self._disk.lookup(path)
        return 0

    # --- attributes ---------------------------------------------------------------------------

    @_op
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        inode = self._disk.inode(path, fh)
        if isinstance(inode, File):
            size = inode.size
        elif isinstance(inode, Symlink):
            size = len(os.fsencode(inode.target))
        else:
            size = 4096
        return {
            "st_mode": inode.kind | inode.mode, "st_ino": inode.ino,
            "st_nlink": inode.links + (1 if isinstance(inode, Dir) else 0),
            "st_uid": inode.uid, "st_gid": inode.gid, "st_size": size,
            "st_blocks": (size + 511) // 512, "st_blksize": 4096,
            "st_atime": inode.atime_ns, "st_mtime": inode.mtime_ns, "st_ctime": inode.ctime_ns,
        }

    @_op
    def chmod(self, path: str | None, mode: int) -> int:
        inode = self._disk.inode(path, None)
        inode.mode = mode & 0o7777
        inode.ctime_ns = time.time_ns()
        return 0

    @_op
    def chown(self, path: str | None, uid: int, gid: int) -> int:
        inode = self._disk.inode(path, None)
        if uid != -1:
            inode.uid = uid
        if gid != -1:
            inode.gid = gid
        inode.ctime_ns = time.time_ns()
        return 0

    @_op
    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        inode = self._disk.inode(path, None)
        now = time.time_ns()
        inode.atime_ns, inode.mtime_ns = times if times is not None else (now, now)
        inode.ctime_ns = now
        return 0

    # --- names --------------------------------------------------------------------------------

    @_op
    def mkdir(self, path: str, mode: int) -> int:
        parent, name = self._disk.parent(path)
        if name in parent.entries:
            raise os_error(errno.EEXIST)
        self._disk.add(parent, name, Dir(self._disk.new_ino(), mode))
        return 0

    @_op
    def rmdir(self, path: str) -> int:
        parent, name = self._disk.parent(path)
        inode = self._disk.lookup(path)
        if not isinstance(inode, Dir):
            raise os_error(errno.ENOTDIR)
        if inode.entries:
            raise os_error(errno.ENOTEMPTY)
        self._disk.remove(parent, name)
        return 0

    @_op
    def unlink(self, path: str) -> int:
        parent, name = self._disk.parent(path)
        if isinstance(self._disk.lookup(path), Dir):
            raise os_error(errno.EISDIR)
        self._disk.remove(parent, name)
        return 0

    @_op
    def symlink(self, target: str, source: str) -> int:
        """mfusepy's order: ``target`` is the new link's path, ``source`` what it points to."""
        parent, name = self._disk.parent(target)
        if name in parent.entries:
            raise os_error(errno.EEXIST)
        self._disk.add(parent, name, Symlink(self._disk.new_ino(), source))
        return 0

    @_op
    def readlink(self, path: str) -> str:
        inode = self._disk.lookup(path)
        if not isinstance(inode, Symlink):
            raise os_error(errno.EINVAL)
        return inode.target

    @_op
    def link(self, target: str, source: str) -> int:
        """mfusepy's order: ``target`` is the new name, ``source`` the existing file."""
        inode = self._disk.lookup(source)
        if isinstance(inode, Dir):
            raise os_error(errno.EPERM)
        parent, name = self._disk.parent(target)
        if name in parent.entries:
            raise os_error(errno.EEXIST)
        self._disk.add(parent, name, inode)
        return 0

    @_op
    def rename(self, old: str, new: str) -> int:
        src_parent, src_name = self._disk.parent(old)
        dst_parent, dst_name = self._disk.parent(new)
        moving = self._disk.lookup(old)
        if isinstance(moving, Dir) and src_parent is not dst_parent:
            raise os_error(errno.EXDEV)  # see the module's docstring: a directory has one durable name
        existing_ino = dst_parent.entries.get(dst_name)
        if existing_ino == moving.ino:
            return 0
        if existing_ino is not None:
            existing = self._disk.inodes[existing_ino]
            if isinstance(existing, Dir):
                if not isinstance(moving, Dir):
                    raise os_error(errno.EISDIR)
                if existing.entries:
                    raise os_error(errno.ENOTEMPTY)
            elif isinstance(moving, Dir):
                raise os_error(errno.ENOTDIR)
        moving.links += 1  # held while moved: neither removal below may collect it
        src_parent.entries.pop(src_name)
        if existing_ino is not None:
            self._disk.remove(dst_parent, dst_name)
        dst_parent.entries[dst_name] = moving.ino
        moving.links -= 1
        src_parent.mtime_ns = dst_parent.mtime_ns = moving.ctime_ns = time.time_ns()
        return 0

    @_op
    def mknod(self, path: str, mode: int, dev: int) -> int:
        raise os_error(errno.EPERM)

    # --- directories -------------------------------------------------------------------------

    @_op
    def opendir(self, path: str) -> int:
        inode = self._disk.lookup(path)
        if not isinstance(inode, Dir):
            raise os_error(errno.ENOTDIR)
        return self._disk.open_handle(inode)

    @_op
    def readdir(self, path: str | None, fh: int) -> list[tuple[str, dict[str, int], int]]:
        inode = self._disk.inode(path, fh)
        if not isinstance(inode, Dir):
            raise os_error(errno.ENOTDIR)
        # With an inode number each: glibc's readdir skips entries whose number is 0.
        out = [(".", {"st_ino": inode.ino, "st_mode": stat.S_IFDIR}, 0),
               ("..", {"st_ino": self._disk.root.ino, "st_mode": stat.S_IFDIR}, 0)]
        for name, ino in inode.entries.items():
            out.append((name, {"st_ino": ino, "st_mode": self._disk.inodes[ino].kind}, 0))
        return out

    @_op
    def releasedir(self, path: str | None, fh: int) -> int:
        self._disk.close_handle(fh)
        return 0

    @_op
    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        inode = self._disk.inode(path, fh)
        if not isinstance(inode, Dir):
            raise os_error(errno.ENOTDIR)
        self._disk.sync_dir(inode)
        return 0

    # --- files --------------------------------------------------------------------------------

    @_op
    def create(self, path: str, mode: int, flags: int) -> int:
        parent, name = self._disk.parent(path)
        ino = parent.entries.get(name)
        if ino is not None:  # lost a race with another creator: open what is there
            if flags & os.O_EXCL:
                raise os_error(errno.EEXIST)
            return self._open_file(self._disk.inodes[ino], flags)
        ino = self._disk.new_ino()
        fd = os.open(self._disk.object_path(ino), os.O_RDWR | os.O_CREAT | os.O_EXCL, mode & 0o7777)
        f = File(ino, mode, fd, 0)
        self._disk.add(parent, name, f)
        return self._disk.open_handle(f)

    @_op
    def open(self, path: str, flags: int) -> int:
        return self._open_file(self._disk.lookup(path), flags)

    def _open_file(self, inode: Inode, flags: int) -> int:
        if isinstance(inode, Dir):
            raise os_error(errno.EISDIR)
        if not isinstance(inode, File):
            raise os_error(errno.ELOOP)
        if flags & os.O_TRUNC and flags & os.O_ACCMODE != os.O_RDONLY:
            self._disk.truncate(inode, 0)
        return self._disk.open_handle(inode)

    @_op
    def flush(self, path: str | None, fh: int) -> int:
        return 0  # close(2) makes nothing durable

    @_op
    def release(self, path: str | None, fh: int) -> int:
        self._disk.close_handle(fh)
        return 0

    @_op
    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        f = self._disk.file(fh)
        if offset >= f.size or size <= 0:
            return b""
        out = bytearray(min(size, f.size - offset))
        synced_end = min(offset + len(out), f.floor)
        if synced_end > offset:
            chunk = os.pread(f.fd, synced_end - offset, offset)
            out[:len(chunk)] = chunk
        f.extents.overlay(offset, out)
        f.atime_ns = time.time_ns()
        return bytes(out)

    @_op
    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        f = self._disk.file(fh)
        if offset < 0 or offset + len(data) > _EXTENT_BYTES_MAX:
            raise os_error(errno.EFBIG)
        self._disk.write(f, offset, data)
        return len(data)

    @_op
    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        inode = self._disk.inode(path, fh)
        if isinstance(inode, Dir):
            raise os_error(errno.EISDIR)
        if not isinstance(inode, File):
            raise os_error(errno.EINVAL)
        if length < 0 or length > _EXTENT_BYTES_MAX:
            raise os_error(errno.EINVAL)
        self._disk.truncate(inode, length)
        return 0

    @_op
    def fallocate(self, path: str | None, mode: int, offset: int, size: int, fh: int) -> int:
        f = self._disk.file(fh)
        if mode & ~(_FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE):
            raise os_error(errno.EOPNOTSUPP)
        if offset < 0 or size <= 0 or offset + size > _EXTENT_BYTES_MAX:
            raise os_error(errno.EINVAL)
        if mode & _FALLOC_FL_PUNCH_HOLE:
            if not mode & _FALLOC_FL_KEEP_SIZE:
                raise os_error(errno.EOPNOTSUPP)  # as Linux: a punched hole keeps the size
            self._disk.punch(f, offset, size)
        elif not mode & _FALLOC_FL_KEEP_SIZE:
            self._disk.extend(f, offset + size)  # reads as zeros: beyond the floor and every extent
        return 0

    @_op
    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self._disk.sync_file(self._disk.file(fh))
        return 0



# --- The daemon -------------------------------------------------------------------------------


def format_report(report: CutReport) -> str:
    return " ".join(map(str, dataclasses.astuple(report)))


def parse_report(words: list[str]) -> CutReport:
    return CutReport(*map(int, words))


def _serve_control(ops: PowerLossOps, mountpoint: Path, commands: IO[bytes], reply: Callable[[str], None],
                   unmounting: threading.Event) -> None:
    """Run the parent's commands, one a line, until its pipe closes (then cut and unmount, so that a
    parent that died leaves no mount behind)."""
    for raw in commands:
        command = raw.strip().decode()
        verb, *args = command.split() or [""]
        try:
            if verb == "sync":
                ops.sync_all()
                reply("ok")
            elif verb == "cut":  # cut MODE SEED
                reply(f"ok {format_report(ops.cut(CutMode(args[0]), int(args[1])))}")
            elif verb == "cutat":  # cutat CALLS MODE SEED
                ops.cut_at_call(int(args[0]), CutMode(args[1]), int(args[2]))
                reply("ok")
            elif verb == "waitcut":  # waitcut TIMEOUT_S
                report = ops.wait_for_cut(float(args[0]))
                reply("error no cut yet" if report is None else f"ok {format_report(report)}")
            elif verb == "calls":
                reply(f"ok {ops.calls}")
            elif verb == "unmount":
                unmounting.set()
                reply("ok")  # first: the daemon exits as soon as the mount is gone
                fusermount_unmount(mountpoint)
            else:
                reply(f"error unknown command {command!r}")
        except Exception as exc:
            reply(f"error {exc!r}")
    unmounting.set()
    ops.cut()
    fusermount_unmount(mountpoint)


def main(argv: list[str]) -> None:
    backing, mountpoint, state_dir = (Path(a) for a in argv)
    # libfuse 3, which fusermount3 goes with: mfusepy would take libfuse 2 first where both are.
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    # Imported only here: loading it loads libfuse, which the parent's side does not need.
    import mfusepy  # type: ignore[import-untyped,unused-ignore]  # noqa: PLC0415

    # The parent reads replies on stdout: nothing else may write there (libfuse and mfusepy log
    # to stderr).
    out_fd = os.dup(1)
    os.dup2(2, 1)
    out_lock = threading.Lock()

    def reply(line: str) -> None:
        with out_lock, contextlib.suppress(OSError):  # a parent gone: the control loop sees EOF
            os.write(out_fd, line.encode() + b"\n")

    ops = PowerLossOps(backing, state_dir, on_ready=lambda: reply("ready"))
    unmounting = threading.Event()
    control = threading.Thread(target=_serve_control,
                               args=(ops, mountpoint, sys.stdin.buffer, reply, unmounting),
                               name="powerloss-control", daemon=True)
    control.start()
    status = 0
    try:
        mfusepy.FUSE(ops, str(mountpoint), foreground=True, nothreads=False, fsname="seaway-powerloss",
                     direct_io=True, hard_remove=True, use_ino=True, attr_timeout=0, entry_timeout=0,
                     negative_timeout=0, max_threads=_THREADS_MAX)
    except RuntimeError as exc:
        # libfuse 3.14 ends its loop with an error (8) when the kernel reports the connection
        # aborted (ECONNABORTED) rather than gone (ENODEV), as it may on an unmount while requests
        # of a killed process are still in flight (later versions take both as the end).
        if not unmounting.is_set():
            print(f"power-loss daemon: {exc!r}", file=sys.stderr)
            status = 1
    except BaseException as exc:
        print(f"power-loss daemon: {exc!r}", file=sys.stderr)
        status = 1
    finally:
        ops.cut()
        shutil.rmtree(state_dir, ignore_errors=True)
    # Not a normal exit: the control thread is blocked reading stdin, and the interpreter's
    # shutdown would abort on its buffer's lock.
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
