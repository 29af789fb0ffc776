"""Counting a log's records without reading them (``Logs.count_records``), against a count made by
reading: across epochs (each reopen takes one), holes (a failed disk write leaves one), trims and
seals."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

import seaway
from seaway import Record
from seaway.errors import InvalidArgumentError, LsnOutOfRangeError, StorageError
from seaway.log import LSN_MAX, DiskWrite, epoch_of
from seaway.logsdb import PutRecords

_OPS = st.lists(st.one_of(st.tuples(st.just("append"), st.integers(1, 5)),
                          st.tuples(st.just("fail"), st.integers(1, 3)),
                          st.tuples(st.just("reopen"), st.just(0)),
                          st.tuples(st.just("trim"), st.integers(0, 100))), min_size=1, max_size=12)


def _read_count(log: seaway.Log, lsn_from: int, lsn_until: int) -> int:
    """Records read in ``[lsn_from, lsn_until]`` (a read past the tail would wait for more)."""
    lsn_from, lsn_until = max(lsn_from, 1), min(lsn_until, log.tail_lsn())
    if lsn_from > lsn_until:
        return 0
    return sum(1 for item in log.read(lsn_from, lsn_until) if isinstance(item, Record))


class _Faults:
    def __init__(self) -> None:
        self.fail_next = threading.Event()

    def __call__(self, write: DiskWrite) -> StorageError | None:
        if self.fail_next.is_set() and any(isinstance(op, PutRecords) for op in write.ops):
            self.fail_next.clear()
            return StorageError("injected")
        return None


@settings(max_examples=25, deadline=None)
@given(ops=_OPS, probes=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=8))
def test_the_count_equals_what_a_reader_reads(ops: list[tuple[str, int]], probes: list[tuple[int, int]]) -> None:
    faults = _Faults()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        lsns: list[int] = []  # every LSN issued, in order (records and holes)
        sw = seaway.Seaway(path, disk_fault=faults)
        try:
            log_id = sw.logs.create("l").id
            for op, n in ops:
                log = sw.logs.get(log_id)
                if op == "append":
                    lsns.extend(log.append_batch([b"x"] * n))
                elif op == "fail":
                    faults.fail_next.set()
                    with pytest.raises(StorageError):
                        log.append_batch([b"lost"] * n)
                    lsns.extend(log.append_batch([b"after"]))  # past the hole
                elif op == "reopen":
                    sw.close()
                    sw = seaway.Seaway(path, disk_fault=faults)
                elif lsns:
                    log.trim(lsns[n % len(lsns)])
            log = sw.logs.get(log_id)
            edges = sorted({0, 1, *lsns, *(lsn + 1 for lsn in lsns), log.tail_lsn() + 5})
            for a, b in probes:
                lo, hi = edges[a % len(edges)], edges[b % len(edges)]
                assert sw.logs.count_records({log_id: (lo, hi)}) == {log_id: _read_count(log, lo, hi)}, (lo, hi)
            assert sw.logs.count_records({log_id: (0, None)}) == {log_id: _read_count(log, 0, log.tail_lsn())}
            assert len({epoch_of(lsn) for lsn in lsns}) <= 1 + sum(op == "reopen" for op, _ in ops)
        finally:
            sw.close()


def test_a_sealed_log_counts_to_its_final_lsn_and_a_deleted_one_is_left_out(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log, gone = sw.logs.create("a"), sw.logs.create("b")
        first = log.append_batch([b"1", b"2", b"3"])[0]
        log.seal()
        gone.append(b"x")
        sw.logs.delete(gone)
        assert sw.logs.count_records({log.id: (first + 1, None), gone.id: (0, None)}) == {log.id: 2}
        assert sw.logs.count_records({log.id: (first, LSN_MAX)}) == {log.id: 3}


@pytest.mark.parametrize("bad", [{1: (0,)}, {1: [0, 1]}, {1: (-1, None)}, {1: (0, 2**64)}, {0: (0, None)}, [1]])
def test_bad_ranges_are_refused(tmp_path: Path, bad: object) -> None:
    with seaway.open(tmp_path) as sw, pytest.raises((InvalidArgumentError, LsnOutOfRangeError)):
        sw.logs.count_records(bad)  # type: ignore[arg-type]
