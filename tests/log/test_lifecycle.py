"""Sealing and deleting logs: what a crash in the middle leaves, and appends racing a seal."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import seaway
from seaway import LogDeletedError, LogSealedError, Record


def test_a_deletion_cut_short_after_its_mark_is_finished_when_the_store_opens(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("doomed")
        kept = sw.logs.create("kept")
        log.append_batch([b"x" * 1000] * 50)
        kept.append(b"stays")
        # What a crash right after the durable mark leaves: the mark, and all of the data.
        sw.logs._config.mark_deleted(log.id)
        assert any(log.id in p.log_ids for p in sw.logs.partitions())
    with seaway.open(tmp_path) as sw:
        with pytest.raises(LogDeletedError):
            sw.logs.get(log.id)
        assert all(log.id not in p.log_ids for p in sw.logs.partitions())
        assert [x.name for x in sw.logs.list()] == ["kept"]
        assert [r.payload for r in sw.logs.get("kept").read() if isinstance(r, Record)] == [b"stays"]
        again = sw.logs.create("doomed")
        assert again.id > max(log.id, kept.id)


def test_appends_racing_a_seal_are_stored_below_the_final_lsn_or_refused(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("racing")
        outcomes: list[int | None] = []
        started = threading.Event()

        def append_until_refused() -> None:
            for i in range(100_000):
                future = log.append_batch_async([b"%d" % i])
                if i == 200:
                    started.set()
                try:
                    outcomes.append(future.result(30)[0])
                except LogSealedError:
                    outcomes.append(None)
                    return

        appender = threading.Thread(target=append_until_refused)
        appender.start()
        assert started.wait(30)
        final = log.seal()
        appender.join(60)
        stored = [lsn for lsn in outcomes if lsn is not None]
        assert outcomes[-1] is None and None not in outcomes[:-1]
        assert stored and max(stored) == final
        assert [r.lsn for r in log.read() if isinstance(r, Record)] == stored
    with seaway.open(tmp_path) as sw:  # the seal is durable
        log = sw.logs.get("racing")
        assert log.final_lsn() == final
        with pytest.raises(LogSealedError):
            log.append(b"after reopen")


def test_reads_leave_no_reader_behind(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        log = sw.logs.create("read-often")
        log.append_batch([b"a", b"b"])
        for _ in range(1000):
            assert len([i for i in log.read() if isinstance(i, Record)]) == 2
        first = next(iter(sw.logs.read({log: 1})))  # abandoned after one item: closed when dropped
        assert first is not None
        assert not sw.logs._store._watchers, "finished reads left readers registered"


def test_a_deleted_log_leaves_only_its_refusal_in_the_store_memory(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        store = sw.logs._store
        kept = sw.logs.create("kept")
        kept.append(b"stays")
        gone = []
        for i in range(20):
            log = sw.logs.create(f"gone-{i}")
            log.append_batch([b"x"] * 3)
            if i % 2:
                log.seal()
            sw.logs.delete(log)
            gone.append(log.id)
        held: set[object] = set()
        for name, value in vars(store).items():
            if name not in ("_deleted", "_ended") and isinstance(value, dict | set):  # those refuse its appends
                held.update(value)
        assert kept.id in held  # the probe sees what a live log holds
        assert not held & set(gone)
        with pytest.raises(LogDeletedError):
            store.append_async(gone[0], (b"late",)).result(30)
        assert kept.append(b"more") > 0
