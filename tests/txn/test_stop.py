"""A commit logged but whose metadata writes failed stops the manager with a clear error (instead of
saves waiting for it forever); reopening the store applies the writes from the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway._errors import StorageError


class _FailingCommits:
    """The metadata store, whose batches fail while ``failing`` is set."""

    def __init__(self, meta: Any) -> None:
        self._meta = meta
        self.failing = False

    def batch(self) -> Any:
        batch = self._meta.batch()
        commit = batch.commit

        def maybe_fail() -> int:
            if self.failing:
                raise StorageError("injected: the metadata write failed")
            return int(commit())

        batch.commit = maybe_fail
        return batch

    def commit(self, batch: Any, *, sync: bool = True) -> int:
        if self.failing:
            raise StorageError("injected: the metadata write failed")
        return int(self._meta.commit(batch, sync=sync))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meta, name)


def test_a_failed_apply_stops_the_manager_and_a_restart_applies_it(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data") as sw:
        manager = sw.txn.api
        failing = _FailingCommits(manager._meta)  # type: ignore[attr-defined]
        manager._meta = failing  # type: ignore[attr-defined]
        tx = sw.transaction()
        tx.stage_put("app", b"k", b"v")
        failing.failing = True
        with pytest.raises(StorageError, match="reopen the store"):
            tx.commit()
        with pytest.raises(StorageError):
            sw.transaction()
        with pytest.raises(StorageError):
            manager.save()  # type: ignore[attr-defined]
        failing.failing = False
    with seaway.open(tmp_path / "data") as sw:
        assert sw.txn.status(tx.id) is seaway.TxnStatus.COMMITTED
        found = sw.meta.get("app", b"k")
        assert found is not None and found.value == b"v"
