"""Through a server: a configuration set by a client starts a plugin in the server's process, whose
metrics the server's /metrics serves."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import seaway
from seaway.notify import JsonLinesFile, NotifyConfig
from seaway.server import ServerProcess


def test_a_client_configures_the_servers_plugins_and_metrics_show_them(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0",
                                                      "--notify-file-dir", str(tmp_path))) as server, \
            seaway.connect(server.url) as sw:
        sw.notify.set(NotifyConfig("feed", JsonLinesFile(str(tmp_path / "feed.jsonl")), scope="web"))
        assert [s.name for s in sw.notify.status()] == ["feed"]
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline and 'seaway_notify_position{plugin="feed"}' not in text:
            time.sleep(0.1)  # the server's watcher starts the plugin within config_poll_s
            with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=5) as answer:
                text = answer.read().decode()
        assert 'seaway_notify_position{plugin="feed"}' in text, server.log_text()[-3000:]
        assert "notification plugin started" in server.log_text()
        sw.notify.delete("feed")
        assert sw.notify.status() == []
