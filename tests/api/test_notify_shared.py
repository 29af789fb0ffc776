"""Notification configurations through the same API embedded and through a server; the plugins
run where the store is (in this process, or in the server's) and deliver to a JSON-lines file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from seaway._errors import ConditionFailedError, NotifyConfigOverlapError, UnknownNotifyConfigError
from seaway.ledger import NotifyConfigured
from seaway.notify import JsonLinesFile, NotifyConfig
from tests.api.conftest import Api


def _wait_for_lines(path: Path, count: int, timeout_s: float = 30.0) -> list[dict[str, object]]:
    """The plugin's thread writes the file: poll it, bounded (the plugin's own tests use a fake clock)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"{path}: {len(lines)} lines after {timeout_s} s, expected {count}")


def test_configurations_are_set_listed_and_deleted_and_overlaps_refused(api: Api, tmp_path: Path) -> None:
    scope = api.name("nscope")
    notify = api.sw.notify
    first = NotifyConfig(api.name("cfg"), JsonLinesFile(str(tmp_path / "a.jsonl")), scope=scope, prefix="a")
    notify.set(first)
    assert notify.get(first.name) == first and first in notify.list()
    clash = NotifyConfig(api.name("cfg"), JsonLinesFile(str(tmp_path / "b.jsonl")), scope=scope, prefix="ab")
    with pytest.raises(NotifyConfigOverlapError, match=first.name):
        notify.set(clash)
    apart = NotifyConfig(clash.name, clash.target, scope=scope, prefix="b")
    notify.set(apart)
    notify.set(NotifyConfig(first.name, first.target, scope=scope, prefix="a", events=("stream.created",)))
    assert notify.get(first.name).events == ("stream.created",)
    notify.delete(first.name)
    notify.delete(apart.name)
    with pytest.raises(UnknownNotifyConfigError):
        notify.get(first.name)
    with pytest.raises(UnknownNotifyConfigError):
        notify.delete(first.name)


def test_the_store_runs_the_plugin_and_changes_reach_the_file_in_order(api: Api, tmp_path: Path) -> None:
    tag = api.name("feed")
    out = tmp_path / "changes.jsonl"
    # The configurations' own entries are the feed (other changes record entries with ledger-emit):
    # a store-wide plugin on the resources notify/<tag>..., which its own configuration is one of.
    watch = NotifyConfig(f"{tag}-watch", JsonLinesFile(str(out)), events=("notify.*",), prefix=f"notify/{tag}")
    api.sw.notify.set(watch)
    names = [f"{tag}-{n}" for n in range(3)]
    try:
        for n, name in enumerate(names):
            api.sw.notify.set(NotifyConfig(name, JsonLinesFile(str(tmp_path / f"{n}.jsonl")),
                                           scope=api.name("nscope")))
        api.sw.notify.delete(names[0])
        lines = _wait_for_lines(out, 5)
    finally:
        for name in [watch.name, *names[1:]]:
            api.sw.notify.delete(name)
    assert [(line["type"], line["subject"]) for line in lines] == \
        [("io.seaway.notify.configured", f"notify/{name}") for name in [watch.name, *names]] + \
        [("io.seaway.notify.config_deleted", f"notify/{names[0]}")]
    ids = [int(str(line["id"])) for line in lines]
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [line["sequence"] for line in lines] == [f"{i:020d}" for i in ids]


def test_a_configuration_change_is_itself_a_ledger_entry(api: Api, tmp_path: Path) -> None:
    ledger = api.sw.ledger
    before = ledger.bounds()[1]
    config = NotifyConfig(api.name("cfg"), JsonLinesFile(str(tmp_path / "x.jsonl")), scope=api.name("nscope"))
    api.sw.notify.set(config)
    entries = ledger.read(before + 1)
    assert [e.change for e in entries] == [NotifyConfigured(config.name, config.to_json())]
    api.sw.notify.delete(config.name)
    assert ledger.read(before + 2)[0].operation == "notify.config_deleted"


def test_a_delete_is_conditional_on_the_version_seen(api: Api, tmp_path: Path) -> None:
    notify, ledger = api.sw.notify, api.sw.ledger
    config = NotifyConfig(api.name("cfg"), JsonLinesFile(str(tmp_path / "x.jsonl")), scope=api.name("nscope"))
    notify.set(config)
    seen = notify.versions()[config.name][0]
    notify.set(NotifyConfig(config.name, config.target, scope=config.scope, events=("stream.created",)))
    before = ledger.bounds()[1]
    with pytest.raises(ConditionFailedError, match="not deleted"):
        notify.delete(config.name, expect_version=seen)
    assert notify.get(config.name).events == ("stream.created",) and ledger.bounds()[1] == before
    now = notify.versions()[config.name][0]
    notify.delete(config.name, expect_version=now)
    with pytest.raises(UnknownNotifyConfigError):
        notify.delete(config.name, expect_version=now)
    assert [e.operation for e in ledger.read(before + 1)] == ["notify.config_deleted"]


def test_a_plugins_status_shows_its_last_delivery_error_and_when(api: Api, tmp_path: Path) -> None:
    scope = api.name("nerr")
    name = api.name("cfg")
    api.sw.notify.set(NotifyConfig(name, JsonLinesFile(str(tmp_path / "missing" / "out.jsonl")), scope=scope))
    try:
        api.sw.streams.create_scope(scope)
        api.sw.streams.create(f"{scope}/s", segments=1)  # selected: its delivery fails (no such directory)
        deadline = time.monotonic() + 30
        status = next(s for s in api.sw.notify.status() if s.name == name)
        while status.last_error is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the plugin's thread delivers: poll, bounded
            status = next(s for s in api.sw.notify.status() if s.name == name)
        assert status.last_error is not None and status.last_error.startswith("entry ")
        assert "cannot append" in status.last_error and status.last_error_ms > 0
        assert status.counters["failed"] >= 1
    finally:
        api.sw.notify.delete(name)
