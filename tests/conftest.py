"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sw(tmp_path: Path, clock: FakeClock) -> Iterator[seaway.Seaway]:
    with seaway.open(tmp_path / "data", clock=clock) as store:
        yield store
