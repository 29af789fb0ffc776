"""The log configuration (names, ids, groups): lookups beside creations, and what deletions leave."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway import LogDeletedError, UnknownLogError
from seaway.log import LogAttributes
from seaway.log._config import LogsConfig
from seaway.logsdb import LogsDB

WAIT_S = 30.0


class _HeldMetadata:
    """A LogsDB whose metadata writes wait until the test lets them go: a creation's sync that
    takes as long as the test wants."""

    def __init__(self, db: LogsDB) -> None:
        self._db = db
        self.writing = threading.Event()
        self.release = threading.Event()

    def put_meta(self, key: bytes, value: bytes, **kwargs: Any) -> None:
        self.writing.set()
        assert self.release.wait(WAIT_S)
        self._db.put_meta(key, value, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def _in_thread(call: Any) -> Future[Any]:
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def test_a_lookup_does_not_wait_for_a_creation_sync(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        existing = sw.logs.create("existing")
        doomed = sw.logs.create("doomed")
        sw.logs.delete(doomed)
        held = _HeldMetadata(sw.logs._store.logsdb)
        config = LogsConfig(held, LogAttributes())  # type: ignore[arg-type]
        held.release.set()
        created = _in_thread(lambda: config.create_log("new", None, None, {}))
        assert created.result(WAIT_S).name == "new"
        held.release.clear()
        held.writing.clear()
        creating = _in_thread(lambda: config.create_log("slow", None, None, {}))
        assert held.writing.wait(WAIT_S)
        try:
            # While the creation's durable write is held: lookups answer, by name and by id.
            assert _in_thread(lambda: config.get("existing")).result(5).log_id == existing.id
            assert _in_thread(lambda: config.get(existing.id)).result(5).name == "existing"
            with pytest.raises(UnknownLogError):
                _in_thread(lambda: config.get("slow")).result(5)  # not created until durable
            with pytest.raises(LogDeletedError):
                _in_thread(lambda: config.get(doomed.id)).result(5)
            assert [i.name for i in _in_thread(config.logs).result(5)] == ["existing", "new"]
        finally:
            held.release.set()
        assert creating.result(WAIT_S).name == "slow"
        assert config.get("slow").log_id == creating.result().log_id


def _held(config: LogsConfig) -> set[object]:
    """Every key and log name in the configuration's memory."""
    held: set[object] = set()
    for value in vars(config).values():
        if isinstance(value, dict | set):
            held.update(value)
        if isinstance(value, dict):
            held.update(v if isinstance(v, str) else getattr(v, "name", None) for v in value.values())
    return held


def test_deleted_logs_take_no_memory_in_the_configuration(tmp_path: Path) -> None:
    with seaway.open(tmp_path) as sw:
        kept = sw.logs.create("kept")
        gone = []
        for i in range(50):
            log = sw.logs.create(f"gone-{i}")
            log.append(b"x")
            gone.append(log.id)
            sw.logs.delete(log)
        names = {f"gone-{i}" for i in range(50)}
        for config in (sw.logs._config, LogsConfig(sw.logs._store.logsdb, LogAttributes())):
            held = _held(config)
            assert kept.id in held and "kept" in held  # the probe sees what a live log holds
            assert not held & (set(gone) | names)
            # What the memory held is read from the marks: deleted ids answer as such, and never return.
            with pytest.raises(LogDeletedError, match="gone-7"):
                config.get(gone[7])
            with pytest.raises(seaway.LogExistsError):
                config.create_log("again", gone[3], None, {})
            assert config.deleted_ids() == gone
        again = sw.logs.create("gone-3")
        assert again.id > max(gone)
