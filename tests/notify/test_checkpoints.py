"""A plugin's checkpoint and its configuration in the real metadata store (an embedded store with
no plugins of its own: the tests drive them): a replaced or deleted configuration's plugin saves
nothing, and deleting a configuration is one conditional change."""

from __future__ import annotations

from pathlib import Path

import pytest

import seaway
from seaway._errors import InvalidArgumentError
from seaway.ledger import QueueCreated
from seaway.notify import JsonLinesFile, NotifyConfig, Plugin
from tests.notify.fakes import Clock, FlakyTarget

FILE = JsonLinesFile("/unused")


def _open(path: Path) -> seaway.Seaway:
    return seaway.open(path, seaway.SeawayConfig(notify=None))  # no plugins of its own: the test runs them


def _version(sw: seaway.Seaway, name: str) -> int:
    return sw.notify.versions()[name][0]


def _drain(plugin: Plugin) -> None:
    for _ in range(1000):
        if plugin.step() == plugin.idle_s:
            return
    raise AssertionError("the plugin never went idle")


def test_a_plugin_whose_configuration_was_replaced_saves_nothing_so_its_successor_skips_no_entry(
        tmp_path: Path) -> None:
    with _open(tmp_path / "data") as sw:
        first = NotifyConfig("p", FILE, prefix="queue/a")
        sw.notify.set(first)
        old_target = FlakyTarget()
        old = Plugin(first, old_target, sw.ledger, sw.notify, Clock(), config_version=_version(sw, "p"))
        sw.ledger.append(QueueCreated("a1"))
        _drain(old)
        assert [m.resource for m in old_target.received] == ["queue/a1"]
        # Replaced; until the watcher sees it, the old plugin runs on and leaves out what the new selects.
        second = NotifyConfig("p", FILE, prefix="queue/b")
        sw.notify.set(second)
        sw.ledger.append(QueueCreated("b1"))
        _drain(old)
        old.close()
        new_target = FlakyTarget()
        _drain(Plugin(second, new_target, sw.ledger, sw.notify, Clock(), config_version=_version(sw, "p")))
        assert [m.resource for m in new_target.received] == ["queue/b1"]


def test_a_plugin_whose_configuration_was_deleted_and_set_again_leaves_the_new_checkpoint_alone(
        tmp_path: Path) -> None:
    with _open(tmp_path / "data") as sw:
        config = NotifyConfig("p", FILE, prefix="queue/")
        sw.notify.set(config)
        old = Plugin(config, FlakyTarget(), sw.ledger, sw.notify, Clock(), config_version=_version(sw, "p"))
        sw.notify.delete("p")
        sw.notify.set(config)  # a new plugin: it starts at the head as this set found it
        start = sw.notify.checkpoint("p")
        assert start is not None
        sw.ledger.append(QueueCreated("q1"))
        _drain(old)  # not stopped yet: it delivers q1 and tries to save past it
        old.close()
        assert sw.notify.checkpoint("p") == start


def test_a_plugin_started_without_its_configurations_version_is_told_so(tmp_path: Path) -> None:
    with _open(tmp_path / "data") as sw:
        config = NotifyConfig("p", FILE)
        sw.notify.set(config)
        plugin = Plugin(config, FlakyTarget(), sw.ledger, sw.notify, Clock())
        sw.ledger.append(QueueCreated("q1"))
        with pytest.raises(InvalidArgumentError, match="config_version"):
            plugin.step()
