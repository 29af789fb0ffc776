"""A plugin in the store's process is woken by ledger writes: with an idle poll far longer than the
test, each change still reaches its target within moments, and closing the store stops the
plugin at once, its wait cut short."""

from __future__ import annotations

import json
import time
from pathlib import Path

import seaway
from seaway.notify import JsonLinesFile, NotifyConfig, NotifyServiceConfig, TargetPolicy

IDLE_S = 60.0
"""Far longer than the test waits: only a wake-up delivers in time."""


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait_for(path: Path, count: int, timeout_s: float) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout_s
    while len(got := _lines(path)) < count and time.monotonic() < deadline:
        time.sleep(0.01)  # the plugin's thread writes the file: polling it is all a test can do
    return got


def test_an_idle_plugin_is_woken_by_each_ledger_write(tmp_path: Path) -> None:
    feed = tmp_path / "feed.jsonl"
    config = seaway.SeawayConfig(notify=NotifyServiceConfig(config_poll_s=0.05, idle_s=IDLE_S,
                                                            targets=TargetPolicy(file_dir=tmp_path)))
    with seaway.open(tmp_path / "data", config) as sw:
        sw.notify.set(NotifyConfig("feed", JsonLinesFile(str(feed)), prefix="log/app."))
        sw.logs.create("app.first")  # delivered by the plugin's first step, once it started
        assert len(_wait_for(feed, 1, 30)) == 1
        time.sleep(0.2)  # the plugin is idle now, in a wait of IDLE_S
        for i in range(3):
            started = time.monotonic()
            sw.logs.create(f"app.l{i}")
            got = _wait_for(feed, 2 + i, 10)
            assert len(got) == 2 + i, f"change {i} not delivered within 10 s of an idle poll of {IDLE_S} s"
            assert time.monotonic() - started < 10
        assert [line["data"]["change"]["name"] for line in got] == ["app.first", "app.l0", "app.l1", "app.l2"]
        started = time.monotonic()
    assert time.monotonic() - started < IDLE_S / 2  # closing the store stopped the idle plugin at once
