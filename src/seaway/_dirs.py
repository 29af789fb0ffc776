"""Directories whose names survive a power cut.

POSIX makes a new entry of a directory (a file or directory created in it) durable only once that
directory is fsynced. ext4 and XFS usually carry a ``mkdir`` along with the next journal commit,
but nothing promises it, and a store whose directory is gone after a power cut has lost everything
it acknowledged. Every directory Seaway creates goes through :func:`make_dir_durable`.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (a file created or removed in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dir_durable(path: Path) -> None:
    """Create directory ``path`` and its missing parents, each new one fsynced into its parent.

    Also fsyncs ``path``'s parent when ``path`` already exists: an earlier call may have been cut
    short between its ``mkdir`` and its fsync (a kill keeps the directory in the page cache; a power
    cut afterwards would not). Parents that existed already are taken as durable. Raises
    ``OSError`` (``NotADirectoryError`` if ``path`` or a parent is something else)."""
    missing: list[Path] = []
    at = path
    while not at.exists():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for new in reversed(missing):
        new.mkdir(exist_ok=True)  # exist_ok: a racing caller may have made it; fsynced all the same
        fsync_dir(new.parent)
    if not missing:
        if not path.is_dir():
            raise NotADirectoryError(f"{path} exists and is not a directory")
        fsync_dir(path.parent)
