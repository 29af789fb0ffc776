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


SPARK_GROUP = "spark"
"""The tests that start Spark in the test process (the ``spark`` fixture, or a command run
in-process: a JVM of a few GB, seconds to start, kept until the process ends): run in parallel
(``make test`` runs ``pytest -n auto --dist loadgroup``), they all go to one worker, which starts
one session for all of them, as a run without xdist does. The tests that start Spark drivers of
their own to kill them (minutes each) are left out, to run beside the group."""


def _uses_shared_spark(item: pytest.Item) -> bool:
    """The ``spark`` fixture, or ``seaway bench spark`` run in this process (its session is the
    process's, as the fixture's)."""
    return "spark" in getattr(item, "fixturenames", ()) or item.path.name == "test_bench_spark.py"


def _starts_spark(item: pytest.Item) -> bool:
    parts = item.path.relative_to(item.config.rootpath).parts
    return parts[:2] == ("tests", "spark") or parts[-1] == "test_bench_spark.py"


@pytest.hookimpl(wrapper=True)  # around pytest-xdist's own, which reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """The Spark tests first (the group, and the killed drivers), then the slow tests, then the
    others (each in its order): in parallel, the longest work starts first, and the short tests fill
    the other workers' time around it."""
    for item in items:
        if _uses_shared_spark(item):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))
    items.sort(key=lambda item: 0 if _starts_spark(item) else 1 if item.get_closest_marker("slow") else 2)
    yield

