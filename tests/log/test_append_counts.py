"""Append counts of the embedded store: they start again at zero when it reopens, and count every
acknowledged append made from any thread."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import seaway


def test_counts_start_again_at_zero_when_the_store_reopens(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("log")
        log.append_batch([b"a" * 10] * 3)
        assert sw.logs.append_counts([log.id]) == {log.id: (3, 30)}
    with seaway.open(tmp_path) as sw:
        assert sw.logs.append_counts([log.id]) == {log.id: (0, 0)}
        sw.logs.get(log.id).append(b"bc")
        assert sw.logs.append_counts([log.id]) == {log.id: (1, 2)}
        assert sw.logs.get(log.id).tail_lsn() > 3  # the records are there; only the counts restarted


def test_counts_every_acknowledged_append_from_many_threads(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        logs = [sw.logs.create(f"log-{i}") for i in range(3)]
        samples: list[dict[int, seaway.log.AppendCounts]] = []
        done = threading.Event()

        def sample() -> None:  # counts seen meanwhile only ever grow
            while not done.is_set():
                samples.append(sw.logs.append_counts([log.id for log in logs]))

        def write(n: int) -> None:
            futures = [logs[(n + i) % 3].append_async(bytes(i % 7)) for i in range(300)]
            for future in futures:
                future.result(30)

        sampler = threading.Thread(target=sample)
        sampler.start()
        writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        done.set()
        sampler.join()
        counts = sw.logs.append_counts([log.id for log in logs])
        assert sum(c.records for c in counts.values()) == 1200
        assert sum(c.payload_bytes for c in counts.values()) == 4 * sum(i % 7 for i in range(300))
        assert counts == {log.id: (sum(1 for n in range(4) for i in range(300) if (n + i) % 3 == k),
                                   sum(i % 7 for n in range(4) for i in range(300) if (n + i) % 3 == k))
                          for k, log in enumerate(logs)}
        for earlier, later in itertools.pairwise(samples):
            assert all(later[i].records >= earlier[i].records and later[i].payload_bytes >= earlier[i].payload_bytes
                       for i in earlier)
