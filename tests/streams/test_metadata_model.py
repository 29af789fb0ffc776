"""The stream metadata as a Hypothesis state machine against the brute-force reference: splits,
merges, truncations, time passing and reopening the store, with every query checked after each
step."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import seaway
from seaway import StreamCut
from seaway.log import LSN_OLDEST
from seaway.testing import FakeClock
from tests.streams.test_metadata import Reference


class StreamMetadataModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.clock = FakeClock()
        self.sw = seaway.Seaway(self.dir, clock=self.clock)
        self.sw.streams.create_scope("s")
        self.stream = self.sw.streams.create("s/m", segments=2)
        self.reference = Reference(self.stream)
        self.head: dict[int, int] | None = None

    def teardown(self) -> None:
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(pick=st.integers(0, 100), ways=st.integers(2, 3), wait_s=st.sampled_from([0, 0.001, 2]))
    def split(self, pick: int, ways: int, wait_s: float) -> None:
        self.clock.advance(wait_s)
        current = self.stream.current_segments()
        self.stream.split(current[pick % len(current)].id, ways)
        self.reference.add(self.clock.now_ms(), self.stream.current_segments())

    @precondition(lambda self: len(self.stream.current_segments()) > 1)
    @rule(pick=st.integers(0, 100), wait_s=st.sampled_from([0, 1]))
    def merge(self, pick: int, wait_s: float) -> None:
        self.clock.advance(wait_s)
        current = self.stream.current_segments()
        i = pick % (len(current) - 1)
        self.stream.merge([current[i].id, current[i + 1].id])
        self.reference.add(self.clock.now_ms(), self.stream.current_segments())

    @rule(back=st.integers(0, 3))
    def truncate(self, back: int) -> None:
        """At the start of a recent generation, if that is not behind the head."""
        generation = max(0, len(self.reference.generations) - 1 - back)
        cut = {s.id: LSN_OLDEST for s in self.reference.generations[generation][1]}
        self.reference.finish()
        if self.head is not None and any(self.reference.after(self.reference.every[s], cut) for s in self.head):
            return  # behind (or beside) the head: refused, tested elsewhere
        self.stream.truncate(StreamCut(self.stream.name, cut))
        self.head = cut

    @rule()
    def reopen(self) -> None:
        self.sw.close()
        self.sw = seaway.Seaway(self.dir, clock=self.clock)
        self.stream = self.sw.streams.get("s/m")

    @invariant()
    def queries_match_the_reference(self) -> None:
        reference = self.reference
        reference.finish()
        assert [s.id for s in self.stream.current_segments()] == [s.id for s in reference.generations[-1][1]]
        times = sorted({t for t, _ in reference.generations})
        for t in [times[0] - 1, *times, times[-1] + 1]:
            expected = {s.id for s in reference.at(t)
                        if self.head is None or not reference.before(s, self.head)}
            assert {s.id for s in self.stream.segments_at(t)} == expected, t
        for segment_id, segment in reference.every.items():
            sealed = reference.sealed_at(segment_id)
            successors = {s.id for s in self.stream.successors(segment_id)}
            assert successors == (set() if sealed is None else {
                s.id for s in reference.generations[sealed][1] if s.overlaps(segment) and s.generation == sealed})
        assert [d.generation for d in self.stream.history()] == list(range(1, len(reference.generations)))
        if self.head is not None:
            assert self.stream.head().positions == self.head


StreamMetadataModel.TestCase.settings = settings(max_examples=25, stateful_step_count=15, deadline=None)
test_stream_metadata_model = StreamMetadataModel.TestCase
