"""Epochs after a restart: every log's first append takes a new one, and the logs activated
together share one durable write of the epoch store."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path

from seaway import epoch_of
from seaway.log import EmbeddedLogStore, RocksDBEpochStore

WAIT_S = 30.0
LOGS = 40


class _CountingEpochs:
    """The embedded epoch store, counting its durable writes; with ``hold_first``, the first write
    waits until the test lets it go (so appends pile up behind it)."""

    def __init__(self, path: Path, hold_first: bool = False) -> None:
        self._inner = RocksDBEpochStore(path)
        self.writes = 0
        self.writing = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()

    def _write(self) -> None:
        self.writes += 1
        self.writing.set()
        assert self.release.wait(WAIT_S)

    def get(self, log_id: int) -> int:
        return self._inner.get(log_id)

    def compare_and_set(self, log_id: int, expected: int, new: int) -> bool:
        self._write()
        return self._inner.compare_and_set(log_id, expected, new)

    def compare_and_set_many(self, changes: Mapping[int, tuple[int, int]]) -> bool:
        self._write()
        return self._inner.compare_and_set_many(changes)

    def close(self) -> None:
        self._inner.close()


def _session(path: Path, epochs: _CountingEpochs, log_ids: range) -> dict[int, int]:
    """Append once to each log (the first after the store opens); return each one's epoch."""
    store = EmbeddedLogStore(path, epoch_store=epochs)
    try:
        first = store.append_async(log_ids[0], (b"first",))
        assert epochs.writing.wait(WAIT_S)  # the writer thread is in the first log's epoch write
        rest = [store.append_async(log_id, (b"%d" % log_id,)) for log_id in log_ids[1:]]
        epochs.release.set()
        futures: list[Future[range]] = [first, *rest]
        return {log_id: epoch_of(f.result(WAIT_S)[0]) for log_id, f in zip(log_ids, futures, strict=True)}
    finally:
        store.close()


def test_first_appends_after_a_restart_share_epoch_writes(tmp_path: Path) -> None:
    log_ids = range(1, LOGS + 1)
    before = _session(tmp_path, _CountingEpochs(tmp_path / "epochs"), log_ids)
    for restart in range(2):
        epochs = _CountingEpochs(tmp_path / "epochs", hold_first=True)
        after = _session(tmp_path, epochs, log_ids)
        # One write for the first log's activation, one for the 39 that waited behind it.
        assert epochs.writes <= 2, f"restart {restart}: {epochs.writes} epoch writes for {LOGS} logs"
        assert all(after[i] > before[i] for i in log_ids), f"restart {restart}: {before} -> {after}"
        before = after
