"""A FUSE filesystem that loses, when the power is cut, every write that was not yet synced (or, as
the test chooses, keeps part of them as a real disk may).

``kill -9`` keeps the operating system's page cache, so a crash test that only kills processes would
pass even if every fsync were removed. :class:`PowerLossFS` mounts a passthrough filesystem over a
*backing* directory, served by a child process that keeps what was not yet synced in its memory and
writes it to the backing directory only when it is synced. :meth:`PowerLossFS.cut_power` drops it
all; after :meth:`PowerLossFS.unmount`, the backing directory holds exactly what was synced, for a
new mount or for direct use.

What is modelled (the strictest model that can be implemented exactly):

- **File data and size.** A write, a truncation (``ftruncate``, ``O_TRUNC``), an extension by
  ``fallocate`` and a hole punched by it (``PUNCH_HOLE | KEEP_SIZE``, reading as zeros) are held
  in memory, overlaid on reads so the processes above see them, until an ``fsync`` or
  ``fdatasync`` of the file (through any descriptor) applies them all. The two calls
  are treated alike: ``fdatasync`` must persist the size anyway, and the rest of the inode is not
  modelled. What a cut keeps of the writes made since a file's last fsync is chosen by a
  :class:`CutMode` and a seed: nothing (``LOSE``, the default and the strictest for what was
  acknowledged); a prefix of them with the last one kept only up to a page boundary (``TORN``); or
  a subset of their pages that is not a prefix, a later page kept and an earlier one lost
  (``REORDERED``, a disk without write barriers), with truncations and extensions kept as a
  prefix, in order, as a journal keeps them. Never across an fsync: what it covered is kept
  whole. The states other than ``LOSE`` are those a store must tolerate in what it had not yet
  acknowledged: a torn tail of a log, zeros in the middle of one.
- **Names.** Every change to a directory's entries (a file created, linked, unlinked or renamed
  into or out of it; a directory or symlink made or removed) is durable only once that directory
  is fsynced (``fsync`` of a descriptor of the directory). A new file that was fsynced but whose
  directory was not is gone after a cut, as is a new directory whose parent was not fsynced, with
  everything in it; the contents of a directory are those of its last fsync. A rename between two
  directories is two changes, made durable by the fsync of each (between the two, the file may
  have both names or neither); renaming a *directory* to another directory is refused with
  ``EXDEV`` (callers copy instead), so a directory never has two durable names. Data synced to a
  file whose name is not yet durable is kept, and counts from the moment its name becomes durable.

What is not modelled:

- Permissions, ownership and times (applied at once, not made durable by anything in particular);
  extended attributes (not supported); ``mknod`` (refused); ``rename`` flags such as
  ``RENAME_NOREPLACE`` (the binding drops them); ``mmap`` of files (every file is opened with
  ``direct_io``, which the kernel does not map shared-writable).
- Sectors that fail, and writes torn inside a page (:data:`PAGE_BYTES`, 4 KiB: the unit a torn
  write is cut at).
- Directory changes made durable without an fsync (ext4's journal commits carry them now and
  then): in every mode a directory is as of its last fsync. A store that relied on a name being
  gone after a cut would not be caught.
- Syncs of the whole filesystem (``sync``, ``syncfs``: FUSE is not told of them); use
  :meth:`PowerLossFS.sync` for "everything so far is on disk".
- The backing directory's own durability: it stands for the disk after the power comes back, and
  is written without fsyncs of its own.

The kernel keeps no data of this filesystem: files are opened with ``direct_io`` (every read and
write reaches the daemon), the writeback cache is switched off, and attributes and names are not
cached (timeouts of 0), so the size a process sees is the daemon's. File locks (``flock``,
``fcntl``) are kept by the kernel; they go with the process holding them.

The power is cut by :meth:`PowerLossFS.cut_power` at a moment the test picks, or by
:meth:`PowerLossFS.cut_at_call` just before the Nth call that changes the disk (a write, a
truncation or ``fallocate``, an fsync, a change of names: ``COUNTED_CALLS``), a place the test
gives by number. A cut is linearised with every operation: an operation that returned before it
keeps its effect, and every operation after it fails with ``EIO``, as on a disk that lost its
power. The mount stays
(failing) until :meth:`PowerLossFS.unmount`, so that a process still running cannot write around it
into the mount point's own directory; kill the processes using it, then unmount.

The daemon needs ``mfusepy`` (the ``dev`` extra), libfuse 3 and ``fusermount3`` (Debian's
``fuse3`` package) and ``/dev/fuse``. It keeps every inode's synced content in a private directory
beside the backing directory, on the same filesystem (``.NAME.powerloss``), hard-linked under its
durable names in the backing directory; that directory is removed at unmount.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from seaway.testing._powerloss_fuse import FUSERMOUNT, fusermount_unmount, parse_report
from seaway.testing._powerloss_state import PAGE_BYTES, CutMode, CutReport

__all__ = ["PAGE_BYTES", "CutMode", "CutReport", "PowerLossFS", "PowerLossUnavailableError", "powerloss_unavailable"]


# The daemon needs two modules of this package, and the package's ``__init__`` imports all of
# Seaway (a third of a second, at every mount of a test that mounts dozens of times): stand-ins for
# the two packages let it import just those. Not ``-m``: runpy would import the package too.
_DAEMON = """
import os, sys, types
testing = sys.argv.pop(1)
for name, path in (("seaway", os.path.dirname(testing)), ("seaway.testing", testing)):
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from seaway.testing._powerloss_fuse import main
main(sys.argv[1:])
"""


class PowerLossUnavailableError(RuntimeError):
    """This machine cannot mount the filesystem (no ``/dev/fuse``, ``fusermount3`` or libfuse 3):
    the environment's fault, not the caller's; ``make test`` installs what it can."""


def powerloss_unavailable() -> str | None:
    """Why :class:`PowerLossFS` cannot mount here, or None if it can (as far as can be told
    without mounting)."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist (no FUSE in this kernel or container)"
    if shutil.which(FUSERMOUNT) is None:
        return f"{FUSERMOUNT} is not installed (Debian: apt-get install fuse3)"
    return None



class PowerLossFS:
    """The power-loss filesystem over ``backing``, mounted at ``mountpoint`` by a child process.

    Use as a context manager (or call :meth:`close`): however the test ends, the mount is removed
    and the daemon stopped. ``backing`` is created if missing; what it holds is the disk's content
    as the filesystem starts (all of it counts as synced).
    """

    def __init__(self, backing: str | os.PathLike[str], mountpoint: str | os.PathLike[str], *,
                 timeout_s: float = 30.0) -> None:
        self.backing = Path(backing).absolute()
        self.mountpoint = Path(mountpoint).absolute()
        self.timeout_s = timeout_s
        self._state_dir = self.backing.parent / f".{self.backing.name}.powerloss"
        self._daemon: subprocess.Popen[bytes] | None = None
        self._lines = bytearray()

    def __enter__(self) -> PowerLossFS:
        self.mount()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def mounted(self) -> bool:
        return self._daemon is not None

    def mount(self) -> None:
        """Start the daemon and wait until the mount serves requests. Raises
        :class:`PowerLossUnavailableError` if FUSE cannot be used here, ``RuntimeError`` if the
        daemon fails."""
        if self._daemon is not None:
            raise RuntimeError(f"{self.mountpoint} is already mounted")
        why = powerloss_unavailable()
        if why is not None:
            raise PowerLossUnavailableError(why)
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self._lines.clear()
        self._daemon = subprocess.Popen(
            [sys.executable, "-c", _DAEMON, str(Path(__file__).parent), str(self.backing), str(self.mountpoint),
             str(self._state_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            reply = self._reply()
            if reply != "ready":
                raise RuntimeError(f"the power-loss daemon did not start: {reply!r}")
        except BaseException:
            self.close()
            raise

    def sync(self) -> None:
        """Make everything written so far durable, as ``sync`` would (FUSE is not told of it)."""
        self._command("sync")

    def cut_power(self, mode: CutMode = CutMode.LOSE, seed: int = 0) -> CutReport:
        """Drop every write, truncation and directory change not yet synced, but what ``mode``
        keeps of the writes (chosen by ``seed``: the same state of the filesystem and the same seed
        keep the same). From now on every operation on the mount fails with ``EIO``; kill what
        uses it, then :meth:`unmount`."""
        return parse_report(self._command(f"cut {mode.value} {seed}").split()[1:])

    def cut_at_call(self, calls: int, mode: CutMode = CutMode.LOSE, seed: int = 0) -> None:
        """Cut the power as :meth:`cut_power` would, just before the ``calls``-th call from now
        that changes the disk (that call fails with ``EIO``); see :meth:`wait_for_cut`."""
        if calls < 1:
            raise ValueError(f"calls must be at least 1, got {calls}")
        self._command(f"cutat {calls} {mode.value} {seed}")

    def wait_for_cut(self, timeout_s: float) -> CutReport | None:
        """Once the power is cut (by :meth:`cut_at_call`), what the cut dropped; None if it was not
        within ``timeout_s`` (at most the filesystem's own timeout)."""
        reply = self._command(f"waitcut {min(timeout_s, self.timeout_s / 2)}", fail=False)
        return parse_report(reply.split()[1:]) if reply.startswith("ok") else None

    def calls(self) -> int:
        """The calls that changed the disk since the mount (what :meth:`cut_at_call` counts)."""
        return int(self._command("calls").split()[1])

    def unmount(self) -> None:
        """Unmount and wait for the daemon to exit. What was not synced is lost, as at a cut: call
        :meth:`sync` first for a clean shutdown. Processes must have closed their files (and left
        the mount) first, or the daemon waits for them until the timeout."""
        daemon = self._daemon
        if daemon is None:
            return
        self._command("unmount")
        try:
            status = daemon.wait(self.timeout_s)
        except subprocess.TimeoutExpired:
            self.close()
            raise RuntimeError(f"the power-loss daemon of {self.mountpoint} did not exit; killed it") from None
        self._forget()
        if status != 0:
            raise RuntimeError(f"the power-loss daemon of {self.mountpoint} exited with status {status}")

    def close(self) -> None:
        """Unmount whatever the state (lazily, and by killing the daemon if it does not exit);
        idempotent, and raises nothing: for finalizers."""
        daemon = self._daemon
        if daemon is None:
            return
        fusermount_unmount(self.mountpoint)
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
            fusermount_unmount(self.mountpoint)  # the kernel aborted the connection: detach it
        self._forget()
        shutil.rmtree(self._state_dir, ignore_errors=True)

    def _forget(self) -> None:
        daemon, self._daemon = self._daemon, None
        if daemon is not None:
            for pipe in (daemon.stdin, daemon.stdout):
                if pipe is not None:
                    pipe.close()

    def _command(self, command: str, *, fail: bool = True) -> str:
        daemon = self._daemon
        if daemon is None or daemon.stdin is None:
            raise RuntimeError(f"{self.mountpoint} is not mounted")
        try:
            daemon.stdin.write(command.encode() + b"\n")
            daemon.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"the power-loss daemon of {self.mountpoint} is gone") from None
        reply = self._reply()
        if fail and not reply.startswith("ok"):
            raise RuntimeError(f"power-loss daemon: {command} failed: {reply}")
        return reply

    def _reply(self) -> str:
        """The daemon's next line, waiting at most the timeout."""
        daemon = self._daemon
        assert daemon is not None and daemon.stdout is not None
        deadline = time.monotonic() + self.timeout_s
        fd = daemon.stdout.fileno()
        while b"\n" not in self._lines:
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise RuntimeError(f"the power-loss daemon of {self.mountpoint} did not answer")
            if select.select([fd], [], [], left_s)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise RuntimeError(f"the power-loss daemon of {self.mountpoint} exited "
                                       f"(status {daemon.wait()}); see its stderr")
                self._lines += chunk
        line, _, rest = bytes(self._lines).partition(b"\n")
        self._lines[:] = rest
        return line.decode()

