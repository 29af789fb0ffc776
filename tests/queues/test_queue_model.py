"""A Hypothesis state machine: queues against a reference model of what each group must deliver.

Producers enqueue in transactions that commit, abort, or stay open (sent, undecided) to be decided
later; consumers of a HASH group and of a FIFO group dequeue in transactions that commit or abort;
the HASH group is resized; the store is closed and reopened (open transactions are then aborted by
id, as any process may). Checked throughout: a consumer only ever gets committed entries, no group
gets an entry twice, and a HASH group gets each key's entries in the order they were sent. At the
end every open transaction is decided and everything drained: each group got every committed entry,
exactly once.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import seaway
from seaway.queues import Consumer

KEYS = ["a", "b", "c", "d", "e"]
GROUPS = {"h": ("HASH", 2), "f": ("FIFO", 2)}


class QueueModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="seaway-qmodel-"))
        self.sw = seaway.open(self.dir / "data")
        self.sw.queues.create("q")
        for group, (strategy, size) in GROUPS.items():
            self.sw.queues.create_group("q", group, size, strategy, key="k" if strategy == "HASH" else None)
        self.producer = self.sw.queues.producer("q")
        self.sizes = {group: size for group, (_, size) in GROUPS.items()}
        self.consumers: dict[tuple[str, int], Consumer] = {}
        self.next_entry = 0
        self.status: dict[int, str] = {}
        """Entry number -> open / committed / aborted (by its producer transaction)."""
        self.key_of: dict[int, str] = {}
        self.sent_order: dict[str, list[int]] = {k: [] for k in KEYS}
        """Each key's entries in the order their chunks were sent."""
        self.open: list[tuple[Any, list[int]]] = []
        self.delivered: dict[str, list[int]] = {group: [] for group in GROUPS}

    def teardown(self) -> None:
        try:
            for tx, entries in self.open:
                tx.commit()
                for n in entries:
                    self.status[n] = "committed"
            self.open.clear()
            idle_rounds = 0
            for _ in range(20):
                before = {g: len(d) for g, d in self.delivered.items()}
                for group in GROUPS:
                    for c in range(self.sizes[group]):
                        self._consume(group, c, 1000, True)
                # Two rounds without an entry, not one: a consumer that drains an old generation
                # passes the resize's barrier only once the transaction that read to its end
                # commits, so the dequeue of that transaction may return nothing of the new one.
                idle_rounds = idle_rounds + 1 if before == {g: len(d) for g, d in self.delivered.items()} else 0
                if idle_rounds == 2:
                    break
            committed = sorted(n for n, s in self.status.items() if s == "committed")
            for group, got in self.delivered.items():
                assert sorted(got) == committed, group
        finally:
            for consumer in self.consumers.values():
                consumer.close()
            self.sw.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _consumer(self, group: str, c: int) -> Consumer:
        if (group, c) not in self.consumers:
            self.consumers[(group, c)] = self.sw.queues.consumer("q", group, c)
        return self.consumers[(group, c)]

    def _consume(self, group: str, c: int, entries_max: int, commit: bool) -> None:
        if c >= self.sizes[group]:
            return
        tx = self.sw.transaction()
        got = self._consumer(group, c).dequeue(tx, entries_max)
        numbers = [int(e.payload) for e in got]
        for n in numbers:
            assert self.status[n] == "committed", (n, self.status[n])
        if commit:
            tx.commit()
            assert not set(numbers) & set(self.delivered[group]), "delivered twice"
            self.delivered[group].extend(numbers)
        else:
            tx.abort()

    @rule(keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=6), outcome=st.sampled_from(
        ["commit", "commit", "abort", "open"]))
    def produce(self, keys: list[str], outcome: str) -> None:
        tx = self.sw.transaction()
        numbers = list(range(self.next_entry, self.next_entry + len(keys)))
        self.next_entry += len(keys)
        self.producer.enqueue_batch(tx, [b"%d" % n for n in numbers], [{"k": k} for k in keys])
        for n, k in zip(numbers, keys, strict=True):
            self.key_of[n] = k
        if outcome == "open":
            self.producer.flush(tx)  # sent now, decided later
            self.open.append((tx, numbers))
            status = "open"
        elif outcome == "commit":
            tx.commit()
            status = "committed"
        else:
            self.producer.flush(tx)  # sent, then aborted: in the logs, never visible
            tx.abort()
            status = "aborted"
        for n, k in zip(numbers, keys, strict=True):
            self.status[n] = status
            self.sent_order[k].append(n)

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 10), commit=st.booleans())
    def decide_open(self, index: int, commit: bool) -> None:
        tx, numbers = self.open.pop(index % len(self.open))
        if commit:
            tx.commit()
        else:
            tx.abort()
        for n in numbers:
            self.status[n] = "committed" if commit else "aborted"

    @rule(group=st.sampled_from(list(GROUPS)), c=st.integers(0, 2), entries_max=st.integers(1, 8),
          commit=st.booleans())
    def consume(self, group: str, c: int, entries_max: int, commit: bool) -> None:
        self._consume(group, c, entries_max, commit)

    @rule(size=st.integers(1, 3))
    def resize(self, size: int) -> None:
        record, _ = self.sw.queues.group_record("q", "h")
        if record.previous is not None:
            return  # one resize at a time: the previous one is still draining
        self.sw.queues.resize_group("q", "h", size, wait_s=None)
        self.sizes["h"] = size

    @rule()
    def restart(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()
        self.consumers.clear()
        self.sw.close()
        self.sw = seaway.open(self.dir / "data")
        self.producer = self.sw.queues.producer("q")
        for tx, numbers in self.open:  # their process is gone: anyone may abort them by id
            self.sw.txn.abort(tx.id)
            for n in numbers:
                self.status[n] = "aborted"
        self.open.clear()

    @invariant()
    def hash_group_keeps_per_key_order(self) -> None:
        position = {n: i for k in KEYS for i, n in enumerate(self.sent_order[k])}
        last: dict[str, int] = {}
        for n in self.delivered["h"]:
            k = self.key_of[n]
            assert position[n] > last.get(k, -1), f"key {k}: entry {n} delivered out of order"
            last[k] = position[n]


QueueModel.TestCase.settings = settings(max_examples=12, stateful_step_count=25, deadline=None)
test_queue_model = QueueModel.TestCase
