"""A consumer group's lag against a model that counts what was committed and what was consumed:
transactions committed, aborted or left open, consumers committing or aborting, resets, and a
reader group's lag across a reopen (a new epoch of every log)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import given, settings

import seaway

_OPS = st.lists(st.one_of(st.tuples(st.sampled_from(["commit", "abort", "open"]), st.integers(1, 7)),
                          st.tuples(st.sampled_from(["take", "take_abort"]), st.integers(1, 9)),
                          st.tuples(st.sampled_from(["reset_head", "reset_tail"]), st.just(0))),
                min_size=1, max_size=14)


@settings(max_examples=30, deadline=None)
@given(ops=_OPS, size=st.integers(1, 3), strategy=st.sampled_from(["ROUND_ROBIN", "FIFO"]))
def test_lag_is_what_was_committed_and_not_consumed(ops: list[tuple[str, int]], size: int, strategy: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, seaway.open(Path(tmp) / "d") as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "g", size, strategy)
        producer = sw.queues.producer("q")
        consumers = [sw.queues.consumer("q", "g", c) for c in range(size)]
        committed = consumed = 0
        open_txns = []
        for op, n in ops:
            if op in ("commit", "abort", "open"):
                tx = sw.transaction()
                producer.enqueue_batch(tx, [b"x"] * n)
                producer.flush(tx)
                if op == "commit":
                    tx.commit()
                    committed += n
                elif op == "abort":
                    tx.abort()
                else:
                    open_txns.append(tx)
            elif op in ("take", "take_abort"):
                tx = sw.transaction()
                got = sum(len(c.dequeue(tx, n)) for c in consumers)
                if op == "take":
                    tx.commit()
                    consumed += got
                else:
                    tx.abort()
            else:
                info = sw.queues.reset_group("q", "g", op.removeprefix("reset_"))
                # Back to what each partition still keeps (consumed entries not evicted yet count
                # again), or past everything.
                consumed = committed - info.lag
                assert op == "reset_head" or info.lag == 0, ops
            info = sw.queues.describe_group("q", "g")
            assert info.lag == committed - consumed == sum(p.lag for p in info.partitions), ops
        for tx in open_txns:
            tx.abort()
        for consumer in consumers:
            consumer.close()


def test_a_reader_groups_lag_across_a_reopen(tmp_path: Path) -> None:
    for round_ in range(3):  # each reopen starts every log's new epoch: LSNs jump by 2**32
        with seaway.open(tmp_path) as sw:
            sw.streams.create_scope("s", exist_ok=True)
            stream = sw.streams.get_or_create("s/x")
            with stream.writer() as writer:
                for i in range(4):
                    writer.write(b"%d" % i, "k").result(10)
            group = sw.streams.get_or_create_reader_group("g", stream)
            assert group.lag() == 4 * (round_ + 1) - 2 * round_
            with group.reader("r") as reader:
                for _ in range(2):
                    assert reader.read_next(10) is not None
                reader.checkpoint()
            assert group.lag() == 4 * (round_ + 1) - 2 * (round_ + 1)
