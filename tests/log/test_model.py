"""The log API against a reference model (Hypothesis stateful): append, batch, trim, find_time,
reopen, reads with gaps."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import seaway
from seaway import LogsDBConfig, LogStoreConfig, SeawayConfig
from seaway.testing import FakeClock

from .helpers import LogModel, normalize

LOGS = ("alpha", "beta")
payloads = st.binary(min_size=0, max_size=64)


class LogMachine(RuleBasedStateMachine):
    store_config = LogStoreConfig(logsdb=LogsDBConfig(partition_duration_s=10))

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="seaway-model-"))
        self.clock = FakeClock()
        # Small partitions, so the clock rule makes several and reads and find_time cross them.
        self.config = SeawayConfig(logs=self.store_config)
        self.sw = seaway.open(self.dir, self.config, self.clock)
        self.models = {name: LogModel() for name in LOGS}
        for name in LOGS:
            self.sw.logs.create(name)

    def teardown(self) -> None:
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self, name: str) -> seaway.Log:
        return self.sw.logs.get(name)

    @rule(name=st.sampled_from(LOGS), payload=payloads)
    def append(self, name: str, payload: bytes) -> None:
        lsn = self.log(name).append(payload)
        expected = self.models[name].append(self.log(name).id, [payload], self.clock.now_ms())
        assert lsn == expected[0]

    @rule(name=st.sampled_from(LOGS), batch=st.lists(payloads, min_size=1, max_size=20))
    def append_batch(self, name: str, batch: list[bytes]) -> None:
        lsns = self.log(name).append_batch(batch)
        assert lsns == self.models[name].append(self.log(name).id, batch, self.clock.now_ms())

    @rule(seconds=st.floats(min_value=0, max_value=30))
    def advance_clock(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(name=st.sampled_from(LOGS), data=st.data())
    def trim(self, name: str, data: st.DataObject) -> None:
        model = self.models[name]
        candidates = [r.lsn for r in model.records] + [model.tail, model.tail + 1, model.trim_point]
        lsn = data.draw(st.sampled_from(candidates))
        if lsn > model.tail:
            try:
                self.log(name).trim(lsn)
            except seaway.TrimPastTailError:
                return
            raise AssertionError("trim past the tail was accepted")
        self.log(name).trim(lsn)
        model.trim_point = max(model.trim_point, lsn)

    @rule()
    def reopen(self) -> None:
        self.sw.close()
        self.sw = seaway.open(self.dir, self.config, self.clock)
        for model in self.models.values():
            model.active = False

    @rule()
    def run_retention(self) -> None:
        # No log has a backlog: only partitions whose records are all trimmed may go, and
        # reads must not change (the invariant below checks them after every step).
        self.sw.logs.run_retention()

    @rule(name=st.sampled_from(LOGS), data=st.data())
    def find_time(self, name: str, data: st.DataObject) -> None:
        model = self.models[name]
        stamps = [r.timestamp_ms for r in model.records] + [0, self.clock.now_ms() + 1]
        ts = data.draw(st.sampled_from(stamps))
        delta = data.draw(st.sampled_from([-1, 0, 1]))
        ts = max(0, ts + delta)
        assert self.log(name).find_time(ts) == model.find_time(ts)

    @precondition(lambda self: any(m.records for m in self.models.values()))
    @rule(name=st.sampled_from(LOGS), data=st.data())
    def read_from_anywhere(self, name: str, data: st.DataObject) -> None:
        model = self.models[name]
        if not model.records:
            return
        lsns = [r.lsn for r in model.records]
        start = data.draw(st.sampled_from([1, *lsns, lsns[-1] + 1 if lsns[-1] < model.tail else lsns[-1]]))
        until = data.draw(st.sampled_from([lsn for lsn in lsns if lsn >= start] or [model.tail]))
        if start > until:
            return
        got = normalize(list(self.log(name).read(start, until)))
        assert got == model.read(self.log(name).id, start, until)

    @invariant()
    def whole_logs_match(self) -> None:
        for name, model in self.models.items():
            log = self.log(name)
            assert log.tail_lsn() == model.tail
            assert log.is_empty() == (not any(r.lsn > model.trim_point for r in model.records))
            if model.tail:
                assert normalize(list(log.read())) == model.read(log.id, 1, model.tail)


LogMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestLogModel = LogMachine.TestCase


class EntryByEntryLogMachine(LogMachine):
    """Readers read one entry at a time, so after their first chunk they ask for the entry that starts
    where they stand: the tail cache answers, and its bound (a few entries) makes it evict and miss."""

    store_config = LogStoreConfig(logsdb=LogsDBConfig(partition_duration_s=10), read_chunk_bytes_max=1,
                                  tail_cache_bytes_max=600)


EntryByEntryLogMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestLogModelEntryByEntry = EntryByEntryLogMachine.TestCase


class SegmentLogMachine(LogMachine):
    """Entries of 60 bytes or more (most batches, some single records) go to segment files, the
    rest stay inline, and readers read both."""

    store_config = LogStoreConfig(logsdb=LogsDBConfig(partition_duration_s=10, segment_min_bytes=60),
                                  tail_cache_bytes_max=0)


SegmentLogMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestLogModelSegments = SegmentLogMachine.TestCase
