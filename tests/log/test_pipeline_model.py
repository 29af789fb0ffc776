"""The ordered append pipeline (:class:`seaway.log.OrderedAppends`) against a reference (Hypothesis
stateful): units put in order, a store that keeps Kafka's idempotent-producer rule, and a transport
that Hypothesis drives: batches arrive in the order sent, each refused before the store saw it
(retriable), stored with its answer lost, refused for good, or stored; answers come back in any
order (delays); a send may be refused at once; retries wait on a fake clock.

The contract (docs/ordering.md): what is stored is, in the order of the store, a subsequence of the
units in the order they were put, each unit whole and once; every future that said "stored" is
stored where it said; and once the faults stop, every unit is settled.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from seaway import (
    InvalidArgumentError,
    LogSealedError,
    OverloadedError,
    PayloadTooLargeError,
    SeawayError,
    SequenceGapError,
    SequenceOrderError,
    TimedOutError,
)
from seaway.log import OrderedAppends, PipelineConfig, ProducerMark, RetryPolicy


@dataclass
class _Producer:
    next: int = 0
    stored: dict[int, range] = field(default_factory=dict)


class _Store:
    """One log that takes a producer's batches only in sequence order and answers a retry of a
    stored batch with its LSNs (as :mod:`seaway.log._order` and the idempotence window do)."""

    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.producers: dict[bytes, _Producer] = {}
        self.sealed = False

    def append(self, payloads: Sequence[bytes], mark: ProducerMark) -> range | SeawayError:
        producer = self.producers.setdefault(mark.producer_id, _Producer())
        stored = producer.stored.get(mark.sequence)
        if stored is not None:
            return stored if len(stored) == len(payloads) else InvalidArgumentError("sequence reused")
        if self.sealed:
            return LogSealedError("sealed")
        if mark.sequence > producer.next:
            return SequenceGapError(f"batch {mark.sequence} before {producer.next}")
        if mark.sequence < producer.next:
            return SequenceOrderError(f"batch {mark.sequence} after {producer.next - 1}")
        lsns = range(len(self.records) + 1, len(self.records) + 1 + len(payloads))
        self.records.extend(payloads)
        producer.stored[mark.sequence] = lsns
        producer.next += 1
        return lsns


FAULTS = ("none", "refuse", "lose_reply", "final", "seal")


class PipelineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.timer_ids = itertools.count()
        self.stores: list[_Store] = []
        self.arrivals: deque[tuple[_Store, Sequence[bytes], ProducerMark, Future[range]]] = deque()
        self.replies: list[tuple[Future[range], range | BaseException]] = []
        self.refuse_sends = 0
        self.units: list[tuple[bytes, ...]] = []
        self.outcomes: dict[int, range | BaseException] = {}
        self.ended = False
        self.new_log()

    def new_log(self) -> None:
        """Appends to a new log (a sealed log's successor, as a stream writer moves to)."""
        store = _Store()
        self.stores.append(store)
        self.ended = False

        def send(payloads: Sequence[bytes], mark: ProducerMark, _if_tail: int | None) -> Future[range]:
            return self.send(store, payloads, mark)

        def ended(_error: BaseException) -> None:
            self.ended = True

        self.appends = OrderedAppends(
            send, PipelineConfig(batches_in_flight_max=3, join_records_max=4,
                                 retry=RetryPolicy(attempts_max=3, backoff_s=1.0, backoff_max_s=4.0)),
            later=self.later, clock=lambda: self.now, hand_back=lambda e: isinstance(e, LogSealedError),
            ended=ended)

    def put_unit(self, n: int) -> None:
        def settle(lsns: range | None, error: BaseException | None) -> None:
            assert n not in self.outcomes, f"unit {n} settled twice"
            self.outcomes[n] = lsns if error is None else error  # type: ignore[assignment]

        self.appends.put_unit(self.units[n], settle, wait=False, tag=n)

    # --- the injected transport and clock -------------------------------------------------------

    def send(self, store: _Store, payloads: Sequence[bytes], mark: ProducerMark) -> Future[range]:
        if self.refuse_sends:
            self.refuse_sends -= 1
            raise OverloadedError("injected: refused at once")
        future: Future[range] = Future()
        self.arrivals.append((store, tuple(payloads), mark, future))
        return future

    def later(self, delay_s: float, run: Callable[[], None]) -> None:
        heapq.heappush(self.timers, (self.now + delay_s, next(self.timer_ids), run))

    # --- rules ----------------------------------------------------------------------------------

    @rule(records=st.integers(1, 3))
    def put(self, records: int) -> None:
        n = len(self.units)
        self.units.append(tuple(f"u{n}.{i}".encode() for i in range(records)))
        self.put_unit(n)

    @precondition(lambda self: self.arrivals)
    @rule(fault=st.sampled_from(FAULTS))
    def arrive(self, fault: str) -> None:
        """The oldest batch on its way reaches the store (or is refused on the way)."""
        store, payloads, mark, future = self.arrivals.popleft()
        outcome: range | BaseException
        if fault == "seal":
            store.sealed = True
            outcome = store.append(payloads, mark)
        elif fault == "refuse":
            outcome = OverloadedError("injected: refused before the store saw it")
        elif fault == "final":
            outcome = PayloadTooLargeError("injected: refused for good before the store saw it")
        else:
            outcome = store.append(payloads, mark)
            if fault == "lose_reply":
                outcome = TimedOutError("injected: the answer was lost")
        self.replies.append((future, outcome))

    @precondition(lambda self: self.replies)
    @rule(pick=st.integers(0, 10))
    def reply(self, pick: int) -> None:
        """An answer comes back; answers overtake each other (delays)."""
        future, outcome = self.replies.pop(pick % len(self.replies))
        if isinstance(outcome, range):
            future.set_result(outcome)
        else:
            future.set_exception(outcome)

    @rule(count=st.integers(1, 2))
    def refuse_next_sends(self, count: int) -> None:
        self.refuse_sends = count

    @precondition(lambda self: self.timers)
    @rule()
    def fire_timer(self) -> None:
        at, _, run = heapq.heappop(self.timers)
        self.now = max(self.now, at)
        run()

    @precondition(lambda self: self.ended)
    @rule()
    def move_to_a_new_log(self) -> None:
        """The log ended (sealed): what it did not store goes, in order, to a new log, first."""
        moved = self.appends.take_back()
        assert moved == sorted(moved), f"units handed back out of order: {moved}"
        records = set(self.stores[-1].records)
        for n in moved:
            assert n not in self.outcomes, f"unit {n} handed back after it was settled"
            assert self.units[n][0] not in records, f"unit {n} handed back, and stored"
        self.new_log()
        for n in moved:
            self.put_unit(n)

    @rule()
    def faults_stop(self) -> None:
        """No more faults: everything put is settled, and the contract holds at the end too."""
        self.refuse_sends = 0
        for _ in range(10_000):
            if self.arrivals:
                self.arrive("none")
            elif self.replies:
                self.reply(0)
            elif self.timers:
                self.fire_timer()
            elif self.ended:
                self.move_to_a_new_log()
            else:
                break
        assert len(self.outcomes) == len(self.units), "a unit is unsettled once the faults stopped"
        assert self.appends.held_bytes == 0
        self.check_stored()

    # --- the contract ---------------------------------------------------------------------------

    @invariant()
    def check_stored(self) -> None:
        index = {p: (n, i) for n, unit in enumerate(self.units) for i, p in enumerate(unit)}
        position = 0
        last_unit = -1
        records = [r for store in self.stores for r in store.records]
        while position < len(records):
            n, i = index[records[position]]
            assert i == 0, f"unit {n} stored in part: {records[position:position + 3]}"
            assert n > last_unit, f"unit {n} stored after unit {last_unit} (or twice): {records}"
            unit = self.units[n]
            assert tuple(records[position:position + len(unit)]) == unit, f"unit {n} not stored whole"
            last_unit = n
            position += len(unit)
        for n, outcome in self.outcomes.items():
            if isinstance(outcome, range):
                stored = [store.records for store in self.stores if self.units[n][0] in store.records]
                assert len(stored) == 1, f"unit {n} said stored, and is stored in {len(stored)} logs"
                assert tuple(stored[0][lsn - 1] for lsn in outcome) == self.units[n], \
                    f"unit {n} said stored at {outcome}, which hold something else"

    def teardown(self) -> None:
        self.appends.close()


PipelineMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
TestPipeline = PipelineMachine.TestCase
