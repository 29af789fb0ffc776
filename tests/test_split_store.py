"""A split store (a cluster's control node's shape): ``seaway.open(path, user_logs=X)`` keeps its
own state (transaction log, metadata, ledger) in ``path`` and the users' logs in X, here a second
embedded store's logs. The shared API suites run over it too (``SPLIT`` in tests/api); this file
checks where things live, the metadata batches that create logs in X, and crashes.

Set ``SEAWAY_CRASH_SEED`` to replay a failing crash run; the seed is in every failure message.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.errors import ConditionFailedError, InvalidArgumentError, LogExistsError
from seaway.log import CREATING_NAMESPACE, AbortedWrites, SplitMetadataStore
from seaway.notify import NotifyConfig, NotifyServiceConfig, SeawayStream
from seaway.testing._split import BATCH, MARKS, PRODUCED_PREFIX, USER_CONFIG, split_store
from seaway.txn import WAL_LOG, TxnStatus

CHILD = [sys.executable, "-m", "seaway.testing._split"]


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("SEAWAY_CRASH_SEED", random.randrange(1 << 30)))


@pytest.fixture
def both(tmp_path: Path) -> Iterator[tuple[seaway.Seaway, seaway.Seaway]]:
    """The user logs' store and the control store over its logs."""
    with seaway.open(tmp_path / "user", USER_CONFIG) as user, \
            seaway.open(tmp_path / "control", user_logs=user.logs) as sw:
        yield user, sw


def _names(logs: object) -> set[str]:
    return {log.name for log in logs.list()}  # type: ignore[attr-defined]


def test_user_logs_live_in_the_other_store_and_the_stores_own_state_stays_in_its_directory(
        both: tuple[seaway.Seaway, seaway.Seaway]) -> None:
    user, sw = both
    assert sw.logs is user.logs and sw.own_logs is not user.logs
    assert isinstance(sw.meta, SplitMetadataStore)
    mine = sw.logs.create("mine")
    sw.streams.create_scope("sc")
    stream = sw.streams.create("sc/st", scaling=seaway.ByEventRate(100, min_segments=2))
    sw.queues.create("q")
    sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
    with sw.transaction() as tx:
        sw.queues.producer("q").enqueue_batch(tx, [b"a", b"b"])
        tx.stage_put("app", b"k", b"v")
    segment_logs = {s.log_id for s in stream.current_segments()}
    user_ids = {log.id for log in user.logs.list()}
    assert mine.id in user_ids and segment_logs <= user_ids
    assert any(name.startswith("queue/q/") for name in _names(user.logs))
    assert WAL_LOG in _names(sw.own_logs) and WAL_LOG not in _names(user.logs)
    assert _names(sw.own_logs) == {WAL_LOG}  # nothing of the users' in the control store's own logs
    found = sw.meta.get("app", b"k")
    assert found is not None and found.value == b"v" and user.meta.get("app", b"k") is None
    assert not sw.meta.scan(CREATING_NAMESPACE)  # every intent went with its batch


def test_a_batch_refused_by_a_condition_leaves_no_log_in_the_user_logs(
        both: tuple[seaway.Seaway, seaway.Seaway]) -> None:
    user, sw = both
    sw.meta.put("app", b"taken", b"1")
    with pytest.raises(ConditionFailedError):
        sw.meta.batch().expect_absent("app", b"taken").create_log("refused", 500).commit()
    assert "refused" not in _names(user.logs)
    assert not sw.meta.scan(CREATING_NAMESPACE)
    # The name is free again; the id is used up (the log was created, then deleted: ids are never
    # used again), as callers that choose random ids and choose again on LogExistsError expect.
    with pytest.raises(LogExistsError):
        sw.meta.batch().create_log("refused", 500).commit()
    sw.meta.batch().expect_absent("app", b"free").create_log("refused", 501).put("app", b"free", b"1").commit()
    assert user.logs.get("refused").id == 501


def test_an_id_taken_in_the_user_logs_refuses_the_batch_and_undoes_the_logs_it_created(
        both: tuple[seaway.Seaway, seaway.Seaway]) -> None:
    user, sw = both
    user.logs.create("someone-elses", log_id=701)
    with pytest.raises(LogExistsError):
        sw.meta.batch().create_log("first", 700).create_log("second", 701).put("app", b"k", b"v").commit()
    assert _names(user.logs) == {"someone-elses"}  # the first went again; the other's log stays
    assert sw.meta.get("app", b"k") is None and not sw.meta.scan(CREATING_NAMESPACE)


def test_a_batch_must_give_the_ids_of_the_logs_it_creates_in_another_store(
        both: tuple[seaway.Seaway, seaway.Seaway]) -> None:
    user, sw = both
    with pytest.raises(InvalidArgumentError, match="ids given"):
        sw.meta.batch().create_log("no-id").commit()
    assert "no-id" not in _names(user.logs)


def test_a_log_created_by_a_process_killed_before_its_batch_is_deleted_when_the_store_opens(tmp_path: Path) -> None:
    control, user = tmp_path / "control", tmp_path / "user"
    child = subprocess.run([*CHILD, "create-killed", str(control), str(user), "sc/st"], check=False,
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr[-3000:]
    with seaway.open(user, USER_CONFIG) as alone:
        orphans = [log.name for log in alone.logs.list() if log.name.startswith("seg/")]
    assert len(orphans) == 1, "the child died after creating the first segment's log"
    with split_store(control, user) as sw:
        assert orphans[0] not in _names(sw.logs)  # named by nothing: deleted at the opening
        assert not sw.meta.scan(CREATING_NAMESPACE)
        stream = sw.streams.create("sc/st", scaling=seaway.ByEventRate(100, min_segments=2))  # never created
        assert len(stream.current_segments()) == 2


def _consume_all(sw: seaway.Seaway) -> list[int]:
    got: list[int] = []
    for c in range(2):
        consumer = sw.queues.consumer("q", "g", c)
        while True:
            with sw.transaction() as tx:
                batch = [int(e.payload) for e in consumer.dequeue(tx, 1000, 0.5)]
            if not batch:
                break
            got += batch
    return got


@pytest.mark.slow
def test_every_acknowledged_entry_is_there_once_after_the_producing_process_is_killed(
        tmp_path: Path, seed: int) -> None:
    """A process holding a split store produces queue entries, each transaction staging a mark
    in the control store; it is killed with SIGKILL after a random number of acknowledged commits
    (its next commit in flight), three times. After both parts are opened again, the entries are
    exactly those of the marked transactions, each once, and every acknowledged one is marked."""
    rng = random.Random(seed)
    control, user = tmp_path / "control", tmp_path / "user"
    with split_store(control, user) as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "g", 2, "ROUND_ROBIN")
    acked: set[int] = set()
    for round_ in range(3):
        first = (round_ + 1) * 1_000_000
        proc = subprocess.Popen([*CHILD, "produce", str(control), str(user), "q", str(first), "100000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        target = rng.randint(1, 40)
        for line in proc.stdout:  # blocks until the child acknowledges its next commit
            acked.add(int(line.split()[1]))
            if len(acked) >= target + 40 * round_:
                break
        proc.kill()
        rest, err = proc.communicate(timeout=60)
        acked.update(int(line.split()[1]) for line in rest.splitlines())  # printed before the kill
        assert proc.returncode == -9, f"seed {seed}: the producer ended by itself: {err[-3000:]}"
    with split_store(control, user) as sw:
        for info in sw.txn_manager.list():  # the killed producers' transactions in flight
            if info.status is TxnStatus.IN_PROGRESS:
                sw.txn_manager.abort(info.id)
        marked = {int(key[len(PRODUCED_PREFIX):]) for key, _ in sw.meta.scan_all(MARKS, prefix=PRODUCED_PREFIX)}
        got = _consume_all(sw)
    assert acked <= marked, f"seed {seed}: acknowledged but not committed: {sorted(acked - marked)[:10]}"
    expected = sorted(n for start in marked for n in range(start, start + BATCH))
    assert len(got) == len(set(got)), f"seed {seed}: {len(got) - len(set(got))} entries delivered twice"
    assert sorted(got) == expected, f"seed {seed}: {len(set(expected) - set(got))} missing, " \
                                    f"{len(set(got) - set(expected))} not committed"


def test_aborted_write_entries_go_with_the_user_logs_trims_and_deletions_at_the_next_pruning_pass(
        both: tuple[seaway.Seaway, seaway.Seaway]) -> None:
    """The entries are in the control store's metadata, the trims and deletions in the user logs'
    store: the manager's pruning pass drops those entries (embedded, the trim itself does)."""
    _, sw = both
    kept, trimmed, deleted = (sw.logs.create(name) for name in ("kept", "trimmed", "deleted"))
    lsns = {log.id: [log.append(b"r%d" % i) for i in range(3)] for log in (kept, trimmed, deleted)}
    aborted = AbortedWrites(sw.meta)
    for log in (kept, trimmed, deleted):
        aborted.note(log.id, [(7, lsns[log.id][0]), (8, lsns[log.id][2])])
    trimmed.trim(lsns[trimmed.id][1])
    sw.logs.delete(deleted)
    sw.txn_manager.run_pruning()
    assert [wp for _, wp, _ in aborted.entries(kept.id)] == [7, 8]
    assert [wp for _, wp, _ in aborted.entries(trimmed.id)] == [8]
    assert aborted.entries(deleted.id) == []


def test_a_plugins_stream_target_writes_into_the_user_logs_in_ledger_order(tmp_path: Path) -> None:
    """The plugins run with the control store and read its ledger; the stream they write is one of
    the users', its segments' logs in the other store."""
    config = seaway.SeawayConfig(notify=NotifyServiceConfig(config_poll_s=0.1, idle_s=0.05))
    with seaway.open(tmp_path / "user", USER_CONFIG) as user, \
            seaway.open(tmp_path / "control", config, user_logs=user.logs) as sw:
        sw.notify.set(NotifyConfig("feed", SeawayStream("feed/changes"), prefix="queue/"))
        for i in range(3):
            sw.queues.create(f"q{i}")
        expected = [e for e in sw.ledger.read(1, 1000) if e.operation == "queue.created"]
        assert len(expected) == 3
        deadline = time.monotonic() + 30
        while (sw.notify.status()[0].position or 0) < expected[-1].index:
            assert time.monotonic() < deadline, f"the plugin is stuck: {sw.notify.status()}"
            time.sleep(0.05)  # polling the plugin's checkpoint, which nothing signals
        sw.streams.create_reader_group("check", "feed/changes")
        events = []
        with sw.streams.reader_group("check").reader("r") as reader:
            while (event := reader.read_next(1.0)) is not None:
                events.append(json.loads(event.payload))
        assert [e["id"] for e in events] == [str(e.index) for e in expected]
        segments = {s.log_id for s in sw.streams.get("feed/changes").current_segments()}
        assert segments <= {log.id for log in user.logs.list()}


@pytest.mark.parametrize("wrong", ["./other", object(), seaway.SeawayConfig()])
def test_user_logs_that_are_not_a_stores_logs_are_refused_at_once(tmp_path: Path, wrong: object) -> None:
    with pytest.raises(InvalidArgumentError, match="must be a store's logs"):
        seaway.open(tmp_path / "control", user_logs=wrong)  # type: ignore[arg-type]
    with seaway.open(tmp_path / "control") as sw:  # nothing was left open
        assert sw.logs is sw.own_logs
