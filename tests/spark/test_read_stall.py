"""Finding 10: a source's read that stalls (the server sends nothing for the read timeout) fails
with a clear, retriable error, embedded and through a server; it never passes for the end of the
range, which would make the batch complete short (rows silently lost)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

import seaway
from seaway.errors import TimedOutError
from seaway.log import epoch_of
from seaway.server import ServerProcess
from seaway.spark import _plan
from seaway.spark._plan import LogTarget, Range
from seaway.spark._rows import read_range

STALL_S = 0.5


@pytest.fixture(params=["embedded", "remote"])
def sw(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(_plan, "READ_TIMEOUT_S", STALL_S)
    if request.param == "embedded":
        with seaway.open(tmp_path / "data") as store:
            yield store
    else:
        server: ServerProcess = request.getfixturevalue("server")
        with seaway.connect(server.url, timeout_s=30) as client:
            yield client


def _log_of_three(sw: Any) -> tuple[Any, int]:
    log = sw.logs.create("stalls")
    log.append_batch([b"a", b"b", b"c"])
    return log, log.tail_lsn()


def test_a_range_whose_read_stalls_fails_the_task_instead_of_ending_short(sw: Any) -> None:
    log, tail = _log_of_three(sw)
    # The range ends past what the server will send (as when a read hangs): the three events
    # come, then nothing.
    r = Range(str(log.id), log.id, tail - 2, tail + 5)
    schema = pa.schema([pa.field("payload", pa.binary())])
    with pytest.raises(TimedOutError, match=r"nothing for 0\.5 s") as caught:
        list(read_range(sw, r, schema))
    assert caught.value.retriable


def test_a_range_read_to_its_end_completes(sw: Any) -> None:
    log, tail = _log_of_three(sw)
    schema = pa.schema([pa.field("payload", pa.binary())])
    batches = list(read_range(sw, Range(str(log.id), log.id, tail - 2, tail), schema))
    assert [p for b in batches for p in b.column(0).to_pylist()] == [b"a", b"b", c := b"c"] and c


def test_planning_over_an_epoch_change_fails_when_the_read_stalls(sw: Any) -> None:
    log, tail = _log_of_three(sw)
    target = LogTarget(sw, "stalls")
    until = (epoch_of(tail) + 1) << 32 | 5  # in the next epoch, which nothing has reached
    with pytest.raises(TimedOutError, match="nothing for"):
        target.first_present(log.id, tail + 1, until)
