"""One record per call, from several threads at once, embedded and through a server: every append is
stored once, where its future says, and each producer's records of a log are in the order it
appended them (append_async, append and append_batch_async share one order; a writer keeps its own)."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from concurrent.futures import Future
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seaway import Record
from tests.api.conftest import Api

KINDS = ("async", "append", "batch", "writer")
Step = tuple[int, str, int]  # (log index, kind, records)


def _produce(api: Api, logs: list[Any], plans: list[list[Step]]) -> dict[bytes, int]:
    """Run each plan in a thread of its own, all at once; the LSN each payload got."""
    got: dict[bytes, int] = {}
    lock = threading.Lock()
    start = threading.Barrier(len(plans))
    errors: list[BaseException] = []

    def run(producer: int, plan: list[Step]) -> None:
        futures: list[tuple[list[bytes], Future[Any]]] = []
        writers: dict[int, Any] = {}
        sent = 0
        try:
            start.wait(30)
            for log_index, kind, count in plan:
                log = logs[log_index]
                channel = "w" if kind == "writer" else "d"
                batch = [f"{producer}/{channel}/{sent + i}".encode() for i in range(count)]
                sent += count
                if kind == "async":
                    futures.extend(([p], log.append_async(p)) for p in batch)
                elif kind == "append":
                    for p in batch:
                        with lock:
                            got[p] = log.append(p, 30)  # durable on return
                elif kind == "batch":
                    futures.append((batch, log.append_batch_async(batch)))
                else:
                    writer = writers.get(log_index) or writers.setdefault(log_index, log.writer(flush_records_max=3))
                    futures.extend(([p], writer.write(p)) for p in batch)
            for writer in writers.values():
                writer.close()
            for batch, future in futures:
                result = future.result(30)
                lsns = [result] if isinstance(result, int) else list(result)
                with lock:
                    got.update(zip(batch, lsns, strict=True))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, plan)) for i, plan in enumerate(plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return got


def _check(logs: list[Any], got: dict[bytes, int], context: str) -> None:
    stored: dict[bytes, tuple[int, int]] = {}
    for index, log in enumerate(logs):
        for item in log.read():
            if isinstance(item, Record):
                assert item.payload not in stored, f"{context}: {item.payload!r} stored twice"
                stored[item.payload] = (index, item.lsn)
    assert set(stored) == set(got), f"{context}: stored and acknowledged differ"
    order: dict[tuple[int, str, str], list[tuple[int, int]]] = defaultdict(list)  # (log, producer, channel)
    for payload, (index, lsn) in stored.items():
        assert got[payload] == lsn, f"{context}: {payload!r} is at {lsn:#x}, its future said {got[payload]:#x}"
        producer, channel, number = payload.decode().split("/")
        order[(index, producer, channel)].append((lsn, int(number)))
    for key, pairs in order.items():
        by_lsn = [number for _, number in sorted(pairs)]
        assert by_lsn == sorted(by_lsn), f"{context}: producer {key[1]} of log {key[0]} ({key[2]}) out of order"


step = st.tuples(st.integers(0, 1), st.sampled_from(KINDS), st.integers(1, 6))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plans=st.lists(st.lists(step, min_size=1, max_size=25), min_size=2, max_size=4))
def test_concurrent_single_appends_keep_each_producers_order(api: Api, plans: list[list[Step]]) -> None:
    logs = [api.sw.logs.create(api.name()) for _ in range(2)]
    _check(logs, _produce(api, logs, plans), f"plans {plans}")


def test_many_single_appends_at_once_keep_order(api: Api) -> None:
    """Enough records that batches are joined while others are in flight; a seeded mix of kinds."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    logs = [api.sw.logs.create(api.name()) for _ in range(2)]
    plans = [[(rng.randrange(2), rng.choice(("async", "async", "async", "batch", "writer")), rng.randint(1, 40))
              for _ in range(60)] for _ in range(4)]
    _check(logs, _produce(api, logs, plans), f"seed {seed}")
