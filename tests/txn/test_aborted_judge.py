"""LogJudge: a record its snapshot calls visible is judged by the log's aborted-write entries,
read again only when the snapshot it last read them after had not decided that record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.log import AbortedView, AbortedWrites, MetaApi, MetaBatch, Versioned
from seaway.txn import JUDGED_LOGS_MAX, AbortedJudges, LogJudge, Snapshot, Visibility


class CountingMeta(MetaApi):
    """A metadata store that counts its scans (how a judge's reads are seen)."""

    def __init__(self, inner: MetaApi) -> None:
        self.inner = inner
        self.scans = 0

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        return self.inner.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        self.scans += 1
        return self.inner.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        return self.inner.commit(batch, sync=sync)


@pytest.fixture
def sw(tmp_path: Path) -> Iterator[seaway.Seaway]:
    with seaway.open(tmp_path / "data") as store:
        yield store


def test_a_record_dropped_from_the_invalid_list_stays_skipped(sw: seaway.Seaway) -> None:
    log = sw.logs.create("l")
    lsn = log.append(b"x")
    meta = CountingMeta(sw.meta)
    judge = LogJudge(AbortedView(AbortedWrites(meta), log.id))
    before = Snapshot(100, in_progress=(70,), invalid=(50,))
    assert judge.judge(before, 50) is Visibility.SKIP  # the snapshot decides: nothing read
    assert judge.judge(before, 70) is Visibility.WAIT
    assert meta.scans == 0
    assert judge.judge(before, 40) is Visibility.VISIBLE  # read once, after ``before``
    reads = meta.scans
    assert judge.judge(before, 41) is Visibility.VISIBLE and meta.scans == reads  # ``before`` decided it
    # 50 and 70 are aborted and listed in the log, then leave the invalid list.
    AbortedWrites(sw.meta).note(log.id, [(50, lsn), (70, lsn)])
    after = Snapshot(120)
    assert judge.judge(after, 50) is Visibility.SKIP  # ``before`` had not decided it: read again
    assert meta.scans > reads
    reads = meta.scans
    assert judge.judge(after, 70) is Visibility.SKIP and meta.scans == reads  # ``after`` is the base now
    assert judge.judge(after, 110) is Visibility.VISIBLE and meta.scans == reads
    assert judge.judge(Snapshot(120, write_pointer=50), 50) is Visibility.VISIBLE  # its own writes


def test_one_judge_per_log_shared_by_its_readers(sw: seaway.Seaway) -> None:
    first, second = sw.logs.create("a"), sw.logs.create("b")
    lsn = first.append(b"x")
    judges = AbortedJudges(sw.meta)
    assert judges.of(first.id) is judges.of(first.id) and judges.of(first.id) is not judges.of(second.id)
    AbortedWrites(sw.meta).note(first.id, [(7, lsn)])
    assert judges.judge(first.id, Snapshot(10), 7) is Visibility.SKIP
    assert judges.judge(second.id, Snapshot(10), 7) is Visibility.VISIBLE  # per log


def test_judges_are_kept_for_at_most_the_limit_of_logs(sw: seaway.Seaway) -> None:
    judges = AbortedJudges(sw.meta)
    first = judges.of(1)
    kept = [judges.of(log_id) for log_id in range(2, JUDGED_LOGS_MAX + 1)]
    assert judges.of(1) is first  # JUDGED_LOGS_MAX logs: all kept (and 1 is the most recent now)
    judges.of(JUDGED_LOGS_MAX + 1)  # one more: the least recently judged (2) goes
    assert judges.of(1) is first and judges.of(2) is not kept[0]
