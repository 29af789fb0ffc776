"""Deleting a configuration is conditional on the configuration the caller saw: two deletes write
one ledger entry, and a delete that loses a race with a new ``set`` leaves the new configuration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import seaway
from seaway._errors import ConditionFailedError, InvalidArgumentError, UnknownNotifyConfigError
from seaway.log import MetaApi, MetaBatch, Versioned
from seaway.notify import JsonLinesFile, Notifications, NotifyConfig

FILE = JsonLinesFile("/unused")


class CommitLater(MetaApi):
    """``meta``, where ``meanwhile`` runs once just before the next commit: another client's change
    between a call's reads and its write."""

    def __init__(self, meta: MetaApi) -> None:
        self._meta = meta
        self.meanwhile: Callable[[], None] | None = None

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        return self._meta.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        return self._meta.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return self._meta.commit(batch, sync=sync)

    @property
    def revision(self) -> int:
        return self._meta.revision


def _deleted_entries(sw: seaway.Seaway, name: str) -> int:
    entries = sw.ledger.read(0)
    return sum(1 for e in entries if e.operation == "notify.config_deleted" and e.resource == f"notify/{name}")


def test_two_concurrent_deletes_write_one_ledger_entry(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=None)) as sw:
        sw.notify.set(NotifyConfig("p", FILE))
        racing = CommitLater(sw.meta)
        racing.meanwhile = lambda: sw.notify.delete("p")
        with pytest.raises(UnknownNotifyConfigError, match="'p'"):
            Notifications(racing, sw.ledger).delete("p")
        assert _deleted_entries(sw, "p") == 1


def test_a_delete_that_loses_to_a_new_set_leaves_the_new_configuration(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=None)) as sw:
        sw.notify.set(NotifyConfig("p", FILE))
        replaced = NotifyConfig("p", FILE, events=("queue.*",))
        racing = CommitLater(sw.meta)
        racing.meanwhile = lambda: sw.notify.set(replaced)
        with pytest.raises(ConditionFailedError, match="replaced"):
            Notifications(racing, sw.ledger).delete("p")
        assert sw.notify.get("p") == replaced and sw.notify.checkpoint("p") is not None
        assert _deleted_entries(sw, "p") == 0


def test_a_delete_of_a_version_deletes_that_version_only(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=None)) as sw:
        sw.notify.set(NotifyConfig("p", FILE))
        seen = sw.notify.versions()["p"][0]
        sw.notify.set(NotifyConfig("p", FILE, events=("queue.*",)))
        with pytest.raises(ConditionFailedError, match="version"):
            sw.notify.delete("p", expect_version=seen)
        now = sw.notify.versions()["p"][0]
        sw.notify.delete("p", expect_version=now)
        assert sw.notify.list() == [] and _deleted_entries(sw, "p") == 1
        with pytest.raises(UnknownNotifyConfigError):
            sw.notify.delete("p", expect_version=now)


@pytest.mark.parametrize("version", [0, -1, "3", True, 2**63])
def test_a_delete_of_a_version_that_cannot_be_is_refused(tmp_path: Path, version: object) -> None:
    with seaway.open(tmp_path / "data", seaway.SeawayConfig(notify=None)) as sw:
        sw.notify.set(NotifyConfig("p", FILE))
        with pytest.raises(InvalidArgumentError, match="version"):
            sw.notify.delete("p", expect_version=version)  # type: ignore[arg-type]
        assert [c.name for c in sw.notify.list()] == ["p"]
