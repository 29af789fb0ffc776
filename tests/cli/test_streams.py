"""``seaway scope`` and ``seaway stream``, against a data directory and a server alike."""

from __future__ import annotations

import json
from pathlib import Path

import seaway
from seaway.cli._store import EXIT_ABSENT, EXIT_FAILED
from tests.cli.conftest import Cli, Where, status_of


def test_a_stream_from_creation_to_deletion(cli: Cli, where: Where) -> None:
    scope = where.ns
    name = f"{scope}/clicks"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert scope in json.loads(cli("scope", "list", *where.args, "--json").out)
    made = cli("stream", "create", name, "--segments", "2", "--retention", "time:60:3600", *where.args, "--json")
    assert made.status == 0, made.err
    assert [s["segment"] for s in json.loads(made.out)["segments"]] == ["0.0", "0.1"]
    assert cli("stream", "list", scope, *where.args).out.split() == [name]
    written = cli("stream", "write", name, "a", "b", "--routing-key", "user-7", *where.args)
    assert written.out == f"wrote 2 events to {name}\n"
    scaled = json.loads(cli("stream", "scale", name, "--split", "0.0", "--ways", "3", *where.args, "--json").out)
    assert scaled["generation"] == 1 and len(scaled["segments"]) == 4
    assert cli("stream", "write", name, "c", "--key", "user-7", *where.args).status == 0  # the old spelling
    read = [json.loads(line) for line in cli("stream", "read", name, *where.args, "--json").out.splitlines()]
    assert [r["payload"] for r in read] == ["a", "b", "c"]  # one key: in the order written, across the split
    history = json.loads(cli("stream", "history", name, *where.args, "--json").out)
    assert [(h["generation"], h["sealed"], h["reason"]) for h in history] == [(1, ["0.0"], "manual")]
    described = json.loads(cli("stream", "describe", name, *where.args, "--json").out)
    assert described["state"] == "active" and described["config"]["retention"]["min_s"] == 60
    updated = cli("stream", "update", name, "--scaling", "events:1000:2:4", *where.args, "--json")
    assert json.loads(updated.out)["scaling"] == {"type": "ByEventRate", "events_per_s": 1000.0, "factor": 2,
                                                  "min_segments": 4}
    refused = cli("stream", "delete", name, *where.args)
    assert refused.status == EXIT_FAILED and "[STREAM_NOT_SEALED]" in refused.err
    assert cli("stream", "seal", name, *where.args).status == 0
    sealed = cli("stream", "write", name, "d", *where.args)
    assert sealed.status == EXIT_FAILED and "[STREAM_SEALED]" in sealed.err
    assert cli("scope", "delete", scope, *where.args).status == EXIT_FAILED  # not empty
    assert cli("stream", "delete", name, *where.args).status == 0
    assert cli("stream", "list", scope, *where.args).out == ""
    assert cli("scope", "delete", scope, *where.args).status == 0


def test_bad_input_is_one_line_and_a_status(cli: Cli, where: Where) -> None:
    for argv, code in ((("stream", "create", "no-slash"), "INVALID_ARGUMENT"),
                       (("stream", "create", f"{where.ns}/x"), "UNKNOWN_SCOPE"),
                       (("stream", "describe", f"{where.ns}/x"), "UNKNOWN_STREAM"),
                       (("stream", "create", "a/b", "--scaling", "events:x"), "INVALID_ARGUMENT"),
                       (("stream", "truncate", "a/b", "{not json"), "INVALID_STREAM_CUT")):
        ran = cli(*argv, *where.args)
        assert ran.status == status_of(code) and ran.err.count("\n") == 1 and f"[{code}]" in ran.err, (argv, ran)


def test_reader_groups_from_the_shell(cli: Cli, where: Where) -> None:
    scope = where.ns
    name = f"{scope}/events"
    group = f"group-{scope}"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert cli("stream", "create", name, "--segments", "2", *where.args).status == 0
    for key in ("a", "b", "c"):
        assert cli("stream", "write", name, f"{key}1", f"{key}2", "--key", key, *where.args).status == 0
    made = cli("reader-group", "create", group, name, "--retention-subscribed", *where.args)
    assert made.status == 0, made.err
    first = cli("reader-group", "read", group, "--reader", "r1", "--limit", "4", "--timeout-s", "0.5", *where.args,
                "--json")
    rest = cli("reader-group", "read", group, "--reader", "r2", "--timeout-s", "0.5", *where.args, "--json")
    events = [json.loads(line)["payload"] for line in (first.out + rest.out).splitlines()]
    assert sorted(events) == ["a1", "a2", "b1", "b2", "c1", "c2"]  # each once, between the two readers
    for key in ("a", "b", "c"):  # r1 left its segments at its position; r2 went on from there
        assert events.index(f"{key}1") < events.index(f"{key}2")
    described = json.loads(cli("reader-group", "describe", group, *where.args, "--json").out)
    assert described["stream"] == name and described["readers"] == []  # both left
    assert described["retention_subscribed"] is True
    assert set(described["checkpoint"]["positions"]) == {"0.0", "0.1"}
    assert cli("reader-group", "delete", group, *where.args).status == 0
    gone = cli("reader-group", "describe", group, *where.args)
    assert gone.status == EXIT_ABSENT and "[UNKNOWN_READER_GROUP]" in gone.err


def test_transactional_streams_from_the_shell(cli: Cli, tmp_path: Path) -> None:
    # A data directory only: the remote client has no transactions in this branch yet.
    where = ("--data-dir", str(tmp_path / "data"))
    assert cli("scope", "create", "t", *where).status == 0
    assert cli("stream", "create", "t/s", "--transactional", *where).status == 0
    assert json.loads(cli("stream", "describe", "t/s", *where, "--json").out)["config"]["transactional"] is True
    assert cli("stream", "write", "t/s", "a", "--key", "k", *where).status == 0
    wrote = json.loads(cli("stream", "write", "t/s", "b", "c", "--key", "k", "--txn", *where, "--json").out)
    assert wrote["count"] == 2 and wrote["txn"] > 0
    read = [json.loads(line)["payload"] for line in cli("stream", "read", "t/s", *where, "--json").out.splitlines()]
    assert read == ["a", "b", "c"]
    with seaway.open(tmp_path / "data") as sw:  # one transaction left open, one aborted
        stream = sw.streams.get("t/s")
        with stream.writer() as writer:
            aborted = sw.transaction()
            writer.write(b"never", "other", txn=aborted).result(10)
            aborted.abort()
            writer.write(b"d", "other").result(10)
            writer.write(b"open", "k", txn=sw.transaction()).result(10)
            writer.write(b"e", "k").result(10)
    read = [json.loads(line)["payload"] for line in cli("stream", "read", "t/s", *where, "--json").out.splitlines()]
    assert read == ["a", "b", "c", "d"]  # "e" waits behind the open transaction's event
    assert cli("stream", "create", "t/plain", *where).status == 0
    refused = cli("stream", "write", "t/plain", "x", "--txn", *where)
    assert refused.status == status_of("INVALID_ARGUMENT") and "[INVALID_ARGUMENT]" in refused.err


def test_streams_storing_routing_keys_from_the_shell(cli: Cli, where: Where) -> None:
    name, plain = f"{where.ns}/keyed", f"{where.ns}/plain"
    assert cli("scope", "create", where.ns, *where.args).status == 0
    assert cli("stream", "create", name, "--store-routing-keys", *where.args).status == 0
    assert cli("stream", "create", plain, *where.args).status == 0
    config = json.loads(cli("stream", "describe", name, *where.args, "--json").out)["config"]
    assert config["store_routing_keys"] is True and config["transactional"] is False
    for stream in (name, plain):
        assert cli("stream", "write", stream, "a", "b", "--key", "user-7", *where.args).status == 0
        assert cli("stream", "write", stream, "c", *where.args).status == 0
    with where.open() as sw, sw.streams.get(name).writer() as writer:
        writer.write(b"d", b"\xff\x00").result(10)
    read = [json.loads(line) for line in cli("stream", "read", name, *where.args, "--json").out.splitlines()]
    assert sorted((r["payload"], r["key"] if not isinstance(r["key"], dict) else r["key"]["hex"]) for r in read) == [
        ("a", "user-7"), ("b", "user-7"), ("c", None), ("d", "ff00")]
    text = cli("stream", "read", name, *where.args).out.splitlines()
    assert sorted(line.split("\t")[3:] for line in text) == [["", "c"], ["\\xff\\x00", "d"], ["user-7", "a"],
                                                             ["user-7", "b"]]  # after segment, LSN, time
    read = [json.loads(line) for line in cli("stream", "read", plain, *where.args, "--json").out.splitlines()]
    assert sorted((r["payload"], r["key"]) for r in read) == [("a", None), ("b", None), ("c", None)]
    assert all(line.count("\t") == 3 for line in cli("stream", "read", plain, *where.args).out.splitlines())
    group = f"group-{where.ns}"
    assert cli("reader-group", "create", group, name, *where.args).status == 0
    got = cli("reader-group", "read", group, "--reader", "r", "--timeout-s", "0.5", *where.args, "--json")
    assert sorted((r["payload"], str(r["key"])) for r in map(json.loads, got.out.splitlines())) == [
        ("a", "user-7"), ("b", "user-7"), ("c", "None"), ("d", "{'hex': 'ff00'}")]


def test_reader_group_describe_shows_its_lag(cli: Cli, where: Where) -> None:
    scope = f"lag{where.ns}"
    name = f"{scope}/events"
    group = f"lagging-{scope}"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert cli("stream", "create", name, "--segments", "2", *where.args).status == 0
    assert cli("stream", "write", name, "a1", "a2", "a3", "--key", "a", *where.args).status == 0
    assert cli("reader-group", "create", group, name, *where.args).status == 0
    described = json.loads(cli("reader-group", "describe", group, *where.args, "--json").out)
    assert described["lag"] == 3 and sorted(described["lags"].values()) == [0, 3]
    assert set(described["lags"]) == {"0.0", "0.1"}
    read = cli("reader-group", "read", group, "--reader", "r", "--max", "2", "--timeout-s", "0.5", *where.args)
    assert read.status == 0, read.err
    text = cli("reader-group", "describe", group, *where.args).out
    assert "\tlag 1" in text.splitlines()[0]


def test_reader_group_reset_from_the_shell(cli: Cli, where: Where) -> None:
    scope = f"rs{where.ns}"
    name = f"{scope}/events"
    group = f"resetting-{scope}"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert cli("stream", "create", name, *where.args).status == 0
    assert cli("stream", "write", name, "e1", "e2", "e3", "--key", "k", *where.args).status == 0
    assert cli("reader-group", "create", group, name, *where.args).status == 0
    tail = cli("reader-group", "reset", group, "--to", "tail", *where.args, "--json")
    assert tail.status == 0, tail.err
    assert json.loads(tail.out)["lag"] == 0
    head = json.loads(cli("reader-group", "reset", group, "--to", "1970-01-01T00:00:00Z", *where.args,
                          "--json").out)
    assert head["lag"] == 3
    cut = json.dumps(json.loads(tail.out)["position"])
    assert "lag 0" in cli("reader-group", "reset", group, "--to", cut, *where.args).out
