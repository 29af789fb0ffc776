"""One Spark session for the whole test run (a JVM costs seconds to start), and a server per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seaway.server import ServerProcess
from seaway.spark import session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    spark = session("seaway-tests")
    yield spark
    spark.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path / "data") as proc:
        yield proc
