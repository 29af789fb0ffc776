"""Segment files: the bytes of large entries, kept beside RocksDB rather than in it.

rocksdict holds Python's GIL for the whole of a RocksDB write, while RocksDB copies and checksums
every byte of the batch; in a server that is one core's worth of Python threads waiting. A large
entry's bytes go instead to its partition's segment file, with ``pwritev`` and ``fdatasync``, which
let other threads run; RocksDB stores only a reference (offset and length) under the entry's key.

The order of a write makes this crash-safe with no recovery step: the bytes are written and synced
before the write batch holding their references goes to RocksDB. Whatever RocksDB brings back after
a crash (its write-ahead log, a memtable flushed in the background) therefore refers only to bytes
already on stable storage. Bytes whose reference never reached RocksDB are unreferenced; they go
with the partition. A segment's bytes are the entry exactly as it would be stored inline, its header
bound to its key, so a reference that points at the wrong bytes fails the entry's checksum.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from seaway._dirs import fsync_dir
from seaway.errors import ClosedError, StorageError

_IOV_MAX = 1024  # buffers per pwritev call (Linux's IOV_MAX)


class Segment:
    """One partition's segment file: appended by one writer at a time, read by any thread.

    The file is opened by each call that needs it (and created by the first append), and closed
    once no call is using it, so a long catch-up read over many time partitions holds no
    descriptor for those it has passed. Two exceptions: a segment appended to keeps its
    descriptor until :meth:`stop_appending` (the next write needs it at once), and a removed one
    until the last reference to it goes, so a reader that found the partition before it was
    dropped still reads it. :meth:`close` closes it for good once no call is using it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._size = 0
        self._dir_synced = False
        self._lock = threading.Lock()
        self._users = 0
        self._appending = False
        self._removed = False
        self._closing = False
        self._close_fd: weakref.finalize[[int], Segment] | None = None

    def _open(self, create: bool) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o644)
        except FileNotFoundError as exc:
            if create:
                raise StorageError(f"cannot create segment file {self.path}: {exc}") from exc
            return  # nothing was ever appended, or a crash took the file: reads find no bytes
        except OSError as exc:
            raise StorageError(f"cannot open segment file {self.path}: {exc}") from exc
        close_fd = weakref.finalize(self, os.close, fd)
        try:
            self._size = os.fstat(fd).st_size
        except OSError as exc:
            close_fd()
            raise StorageError(f"cannot open segment file {self.path}: {exc}") from exc
        self._fd, self._close_fd = fd, close_fd

    def _close_if_idle(self) -> None:
        """Close the descriptor if no call is using it and nothing keeps it (under the lock)."""
        if self._users or self._close_fd is None:
            return
        if self._closing or not (self._appending or self._removed):
            self._close_fd()
            self._fd, self._close_fd = -1, None

    @contextmanager
    def _using(self, appending: bool = False) -> Iterator[int]:
        """The descriptor, held open: created if ``appending`` (and kept open after), else -1 if
        the file does not exist."""
        fd = self._acquire(appending)
        try:
            yield fd
        finally:
            self._release()

    def _acquire(self, appending: bool = False) -> int:
        """What :meth:`_using` does on entry; each call is to be followed by :meth:`_release`."""
        with self._lock:
            if self._closing:
                raise ClosedError(f"segment file {self.path.name} is closed")
            if self._fd < 0:
                self._open(create=appending)
            self._appending |= appending
            self._users += 1
            return self._fd

    def _release(self) -> None:
        with self._lock:
            self._users -= 1
            self._close_if_idle()

    @contextmanager
    def held_open(self) -> Iterator[Callable[[int, int], bytes]]:
        """A function that reads as :meth:`read` does, and keeps the descriptor it opens until the
        scope ends: a read of many entries opens the file once, not once an entry, and takes no
        lock after that. Opens nothing by itself (a read that finds its entries inline costs no
        system call), and closes as usual when the scope ends."""
        fd = -1

        def read(offset: int, length: int) -> bytes:
            nonlocal fd
            if fd < 0:
                fd = self._acquire()  # released when the scope ends: nothing closes it until then
                if fd < 0:
                    self._release()
                    return b""
            if not 0 <= offset < self._size or length <= 0:
                return b""
            return _pread_all(fd, min(length, self._size - offset), offset)

        try:
            yield read
        finally:
            if fd >= 0:
                self._release()

    def append(self, values: Sequence[bytes]) -> int:
        """Write ``values`` back to back at the end; return the offset of the first. Not durable
        until :meth:`sync`. On failure nothing counts as appended: the next append overwrites."""
        with self._using(appending=True) as fd:
            offset = self._size
            try:
                _pwrite_all(fd, values, offset)
            except OSError as exc:
                raise StorageError(f"cannot write segment file {self.path.name}: {exc}") from exc
            self._size = offset + sum(map(len, values))
        return offset

    def sync(self) -> None:
        """Make every append so far durable, and the file's name in its directory with them."""
        with self._using(appending=True) as fd:
            try:
                os.fdatasync(fd)
                if not self._dir_synced:
                    # Whoever created the file (this process or one before a crash), its name is
                    # durable before any byte in it counts.
                    fsync_dir(self.path.parent)
                    self._dir_synced = True
            except OSError as exc:
                raise StorageError(f"cannot sync segment file {self.path.name}: {exc}") from exc

    def read(self, offset: int, length: int) -> bytes:
        """The bytes at ``[offset, offset + length)``; fewer (none for a range that starts outside)
        where the segment ends first: a damaged reference cannot make this allocate more."""
        fd = self._acquire()  # not _using(): a generator's context costs more than the read of a small entry
        try:
            if fd < 0 or not 0 <= offset < self._size or length <= 0:
                return b""
            return _pread_all(fd, min(length, self._size - offset), offset)
        finally:
            self._release()

    def punch(self, ranges: Sequence[tuple[int, int]]) -> int:
        """Give the disk space of these ``(offset, length)`` ranges back to the file system: their
        entries were deleted (and the deletion is durable), so nothing refers to them any more. The
        file keeps its size and offsets; the ranges read as zeros. Returns the bytes punched: 0
        where the file system cannot, in which case the space goes with the partition."""
        punched = 0
        with self._using() as fd:
            if fd < 0:
                return 0
            for offset, length in ranges:
                if length <= 0 or not _punch_hole(fd, offset, length):
                    continue
                punched += length
        return punched

    def size(self) -> int:
        """Bytes appended so far (the next append's offset)."""
        with self._using():
            return self._size

    def stop_appending(self) -> None:
        """No more appends come (a newer partition takes them): keep no descriptor between calls."""
        with self._lock:
            self._appending = False
            self._close_if_idle()

    def close(self) -> None:
        """Idempotent; calls in progress finish first, later ones raise :class:`ClosedError`."""
        with self._lock:
            self._closing = True
            self._close_if_idle()

    def remove(self) -> None:
        """Delete the file. Readers holding this segment can still read it: it is opened first,
        and stays open until the last reference to the segment goes."""
        with self._using():
            with self._lock:
                self._removed = True
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot remove segment file {self.path}: {exc}") from exc


_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02
_fallocate: Any = None


def _punch_hole(fd: int, offset: int, length: int) -> bool:
    """Linux's fallocate(PUNCH_HOLE | KEEP_SIZE), which Python's os module lacks; False where the
    system or the file system does not support it."""
    global _fallocate
    if _fallocate is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _fallocate = libc.fallocate
            _fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
            _fallocate.restype = ctypes.c_int
        except (OSError, AttributeError):
            _fallocate = False
    if _fallocate is False:
        return False
    return bool(_fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, offset, length) == 0)


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    """Up to ``length`` bytes at ``offset``: a read may return fewer than asked (Linux gives at most
    about 2 GiB a call), so read on until the range is done or the file ends."""
    parts: list[bytes] = []
    done = 0
    while done < length:
        part = os.pread(fd, length - done, offset + done)
        if not part:
            break
        parts.append(part)
        done += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _pwrite_all(fd: int, values: Sequence[bytes], offset: int) -> None:
    views = [memoryview(v) for v in values if v]
    i = 0
    while i < len(views):
        written = os.pwritev(fd, views[i:i + _IOV_MAX], offset)
        if written <= 0:
            raise OSError("pwritev wrote nothing")
        offset += written
        while written and i < len(views):  # skip what was written; a short write resumes mid-buffer
            if written >= len(views[i]):
                written -= len(views[i])
                i += 1
            else:
                views[i] = views[i][written:]
                written = 0
