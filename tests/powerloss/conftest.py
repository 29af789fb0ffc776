"""Fixtures of the power-loss tests: a seed that replays a run, and a mounted power-loss filesystem.

There is no skip here: on a machine without FUSE (no ``/dev/fuse``, no ``fusermount3``), mounting
raises :class:`~seaway.testing.PowerLossUnavailableError`, which says what is missing, and the
tests fail. ``make test`` installs Debian's fuse3 where it can.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from seaway.testing import PowerLossFS


@pytest.fixture
def seed() -> Iterator[int]:
    value = int(os.environ.get("SEAWAY_POWERLOSS_SEED", str(random.randrange(2**32))))
    yield value
    print(f"power-loss seed {value}; replay with SEAWAY_POWERLOSS_SEED={value}")


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[PowerLossFS]:
    """The filesystem over ``tmp_path/disk`` (the disk), to mount at ``tmp_path/mnt``; unmounted
    however the test ends (kill the processes using it first)."""
    filesystem = PowerLossFS(tmp_path / "disk", tmp_path / "mnt")
    try:
        yield filesystem
    finally:
        filesystem.close()
