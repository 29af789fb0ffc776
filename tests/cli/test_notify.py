"""``seaway notify``: configurations from the shell (with a data directory and through a server),
the ledger's entries, and the plugins' status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seaway.errors import PermissionDeniedError
from tests.cli.conftest import Cli, Where


def test_config_set_list_delete_and_clear_errors(cli: Cli, where: Where, tmp_path: Path) -> None:
    name, scope = f"cfg-{where.ns}", f"scope-{where.ns}"
    target = json.dumps({"type": "webhook", "url": "http://hooks.example.com/hook?key=k3y", "secret": "hush"})
    ran = cli("notify", "config", "set", name, "--target", target, "--scope", scope, "--prefix", "a",
              "--events", "stream.*,scope.created", *where.args)
    assert ran.status == 0, ran.err
    listed = cli("notify", "config", "list", "--json", *where.args)
    mine = [c for c in json.loads(listed.out) if c["name"] == name]
    assert mine and mine[0]["target"]["secret"] == "(redacted)" and mine[0]["events"] == ["stream.*", "scope.created"]
    assert mine[0]["target"]["url"] == "http://hooks.example.com/hook?(redacted)"
    assert "hush" not in listed.out and "k3y" not in listed.out
    overlap = cli("notify", "config", "set", f"{name}-b", "--target", target, "--scope", scope, "--prefix", "ab",
                  *where.args)
    assert overlap.status != 0 and "overlaps" in overlap.err and name in overlap.err
    unknown = cli("notify", "config", "set", f"{name}-c", "--target", '{"type": "kafka"}', *where.args)
    assert unknown.status != 0 and "unknown target type 'kafka'" in unknown.err
    malformed = cli("notify", "config", "set", f"{name}-d", "--target", "{nope", *where.args)
    assert malformed.status != 0 and "--target is JSON" in malformed.err
    status = cli("notify", "status", "--json", *where.args)
    rows = [r for r in json.loads(status.out) if r["name"] == name]
    assert rows and rows[0]["target"] == "webhook" and rows[0]["delivered"] == 0
    assert cli("notify", "config", "delete", name, *where.args).status == 0
    gone = cli("notify", "config", "delete", name, *where.args)
    assert gone.status != 0 and "no notification configuration" in gone.err


def test_tail_prints_the_configuration_entries_without_their_secrets(cli: Cli, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    target = json.dumps({"type": "webhook", "url": "https://u:pw@hooks.example.com/h?token=t0k", "secret": "hush"})
    assert cli("notify", "config", "set", "one", "--target", target, "--scope", "web", *data).status == 0
    assert cli("notify", "config", "delete", "one", *data).status == 0
    ran = cli("notify", "tail", "--json", *data)
    rows = [json.loads(line) for line in ran.out.splitlines()]
    assert [(r["operation"], r["resource"]) for r in rows] == [("notify.configured", "notify/one"),
                                                               ("notify.config_deleted", "notify/one")]
    assert rows[1]["index"] == rows[0]["index"] + 1
    assert not any(secret in ran.out for secret in ("hush", "pw", "t0k")), ran.out
    limited = cli("notify", "tail", "--from", str(rows[1]["index"]), *data)
    assert limited.out.split()[0] == str(rows[1]["index"]) and "notify.config_deleted" in limited.out


def test_config_delete_of_a_version_leaves_a_newer_one(cli: Cli, where: Where, tmp_path: Path) -> None:
    name = f"cfg-{where.ns}"
    target = json.dumps({"type": "stream", "stream": f"{where.ns}/feed"})
    assert cli("notify", "config", "set", name, "--target", target, "--scope", where.ns, *where.args).status == 0
    listed = cli("notify", "config", "list", "--json", *where.args)
    seen = [c["version"] for c in json.loads(listed.out) if c["name"] == name]
    assert len(seen) == 1
    again = cli("notify", "config", "set", name, "--target", target, "--scope", where.ns, "--prefix", "a",
                *where.args)
    assert again.status == 0, again.err
    stale = cli("notify", "config", "delete", name, "--version", str(seen[0]), *where.args)
    assert stale.status != 0 and "not deleted" in stale.err
    listed = cli("notify", "config", "list", "--json", *where.args)
    now = [c["version"] for c in json.loads(listed.out) if c["name"] == name and c["prefix"] == "a"]
    assert len(now) == 1 and now[0] > seen[0]
    assert cli("notify", "config", "delete", name, "--version", str(now[0]), *where.args).status == 0


def test_status_shows_a_plugin_whose_checkpoint_cannot_be_read(cli: Cli, where: Where) -> None:
    name = f"cfg-{where.ns}"
    target = json.dumps({"type": "stream", "stream": f"{where.ns}/feed"})
    assert cli("notify", "config", "set", name, "--target", target, "--scope", where.ns, *where.args).status == 0
    with where.open() as sw:
        if where.args[0] == "--address":  # a server's clients may not write its namespaces at all
            with pytest.raises(PermissionDeniedError):
                sw.meta.batch().put("notify", f"checkpoint/{name}".encode(), b"not a checkpoint").commit()
            return
        # With the configuration rewritten in the same batch: a plugin already running in this
        # store can no longer save its checkpoint over the garbage.
        config = sw.meta.get("notify", f"config/{name}".encode()).value
        sw.meta.batch().put("notify", f"checkpoint/{name}".encode(), b"not a checkpoint") \
            .put("notify", f"config/{name}".encode(), config).commit()
    rows = [r for r in json.loads(cli("notify", "status", "--json", *where.args).out) if r["name"] == name]
    assert len(rows) == 1 and "checkpoint is unreadable" in rows[0]["error"] and rows[0]["position"] is None
    text = cli("notify", "status", *where.args).out
    assert f"{name} (stream): position None" in text and "NOT RUNNING: its checkpoint is unreadable" in text
    assert cli("notify", "config", "delete", name, *where.args).status == 0
