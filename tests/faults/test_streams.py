"""The streams' shared suites run over faulted appends (refusals before and after the store took a
batch, lost replies, delays; by seed, embedded and through a server): writers under scaling store
each acknowledged event once and each key in order; a reader group reading meanwhile reads each
event once and each key in order; every control-plane change of the run is recorded once in the
ledger."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import seaway
from seaway.streams import WriterConfig
from seaway.testing import AppendFaults
from tests.faults.checkers import Sent, check_exactly_once, check_key_order, event, parse, replayable
from tests.faults.conftest import Faultable
from tests.streams.writer_check import run_writers_under_scaling, segment_events

SEEDS = range(4)
PATIENT = WriterConfig(retries_max=30, retry_backoff_s=0.005)
"""Half the appends may be faulted: enough retries that a run of faults on one segment does not use
them up (a write failed after its retries is not what these tests look for)."""


def _faults(seed: int) -> AppendFaults:
    """Only the writers' (marked) appends: the test's own plain appends go through untouched."""
    return AppendFaults(seed, refuse=0.15, refuse_later=0.15, lose_reply=0.1, delay=0.1, limit=60,
                        marked_only=True)


def _operations(sw: Any, after: int, resource: str) -> list[str]:
    found: list[str] = []
    while True:
        page = [e for e in sw.ledger.read(after + 1, 1000)]
        found.extend(e.operation for e in page if e.resource == resource)
        if not page:
            return found
        after = page[-1].index


@pytest.mark.parametrize("seed", SEEDS)
def test_writers_under_scaling_over_faulted_appends(store: Faultable, seed: int) -> None:
    sw = store.sw
    mark = sw.ledger.bounds()[1]
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/w", scaling=seaway.FixedSegments(2))
    faults = _faults(seed)
    with replayable(faults), faults.applied(store.target):
        run_writers_under_scaling(sw, stream, writers=3, events_each=150, scalings=5, seed=seed, config=PATIENT)
        assert faults.injected, faults
        stored = [payload for _, _, payload in segment_events(sw, stream)]
        check_key_order(stored)
        stream = sw.streams.get("s/w")
        stream.truncate(stream.tail())
        stream.seal()
        # Each change the stream went through is recorded once: its creation, each scaling, the
        # truncation and the seal.
        generation = stream.describe().generation
        operations = _operations(sw, mark, "stream/s/w")
        assert operations.count("stream.created") == 1, operations
        assert operations.count("stream.scaled") == generation, (generation, operations)
        assert operations.count("stream.truncated") == 1 and operations.count("stream.sealed") == 1, operations


def _read_all(group: Any, reader_id: str, read: list[bytes], lock: threading.Lock, writing: threading.Event,
              errors: list[BaseException]) -> None:
    try:
        with group.reader(reader_id) as reader:
            quiet_since: float | None = None
            while True:
                got = reader.read_next(0.2)
                if got is not None:
                    with lock:
                        read.append(got.payload)
                    quiet_since = None
                elif not writing.is_set():
                    # Writers done: two quiet reads in a row (0.4 s with nothing) end the reading.
                    if quiet_since is not None:
                        return
                    quiet_since = time.monotonic()
    except BaseException as exc:  # reported by the test's thread
        errors.append(exc)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_reader_group_reads_each_event_once_in_key_order_while_writers_hit_faults(
        store: Faultable, seed: int) -> None:
    sw = store.sw
    mark = sw.ledger.bounds()[1]
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/r", scaling=seaway.FixedSegments(3))
    sw.streams.create_reader_group("g", "s/r")
    group = sw.streams.reader_group("g")
    sent = Sent()
    read: list[bytes] = []
    lock = threading.Lock()
    writing = threading.Event()
    writing.set()
    errors: list[BaseException] = []
    readers = [threading.Thread(target=_read_all, args=(group, f"r{i}", read, lock, writing, errors))
               for i in range(2)]
    faults = _faults(seed)
    with replayable(faults), faults.applied(store.target):
        for reader in readers:
            reader.start()
        with stream.writer("w", PATIENT) as writer:
            futures = []
            for n in range(120):
                for k in range(6):
                    payload = event(f"k{k}", n)
                    sent.attempt(payload)
                    futures.append((payload, writer.write(payload, f"k{k}")))
                if n == 60:  # the readers follow the segments across a scaling too
                    stream.split(stream.current_segments()[0].id)
            for payload, future in futures:
                future.result(60)
                sent.acknowledge(payload)
        writing.clear()
        for reader in readers:
            reader.join(120)
        assert not errors, errors
        assert not any(reader.is_alive() for reader in readers), "a reader never finished"
        assert faults.injected, faults
        check_exactly_once(read, sent, "read")
        check_key_order(read, "read")
        assert {parse(p)[0] for p in read} == {f"k{k}" for k in range(6)}
        operations = _operations(sw, mark, "stream/s/r")
        assert operations.count("stream.scaled") == 1, operations
