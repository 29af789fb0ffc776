"""``seaway queue``, against a data directory and a server alike."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli, Where, status_of


def test_a_queue_from_creation_to_deletion(cli: Cli, where: Where) -> None:
    queue = f"q{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert queue in json.loads(cli("queue", "list", *where.args, "--json").out)
    made = cli("queue", "group", "create", queue, "users", "--size", "2", "--strategy", "HASH", "--hash-key", "user",
               *where.args)
    assert made.status == 0, made.err
    assert cli("queue", "group", "create", queue, "all", "--size", "1", *where.args).status == 0
    enq = cli("queue", "enqueue", queue, "a", "b", "c", "--key", "user=7", *where.args, "--json")
    assert json.loads(enq.out)["count"] == 3
    both = [json.loads(cli("queue", "dequeue", queue, "users", str(c), "--json", *where.args).out)["entries"]
            for c in range(2)]
    assert sorted(len(b) for b in both) == [0, 3]  # one key: one consumer, in order
    assert [e["payload"] for e in max(both, key=len)] == ["a", "b", "c"]
    peek = json.loads(cli("queue", "dequeue", queue, "all", "0", "--no-ack", "--json", *where.args).out)
    assert [e["payload"] for e in peek["entries"]] == ["a", "b", "c"] and not peek["acknowledged"]
    again = json.loads(cli("queue", "dequeue", queue, "all", "0", "--json", *where.args).out)
    assert [e["payload"] for e in again["entries"]] == ["a", "b", "c"]
    resized = cli("queue", "group", "resize", queue, "users", "--size", "3", "--wait-s", "5", *where.args, "--json")
    assert resized.status == 0, resized.err
    info = json.loads(cli("queue", "group", "describe", queue, "users", "--json", *where.args).out)
    assert info["size"] == 3 and info["generation"] == 2 and not info["resizing"]
    described = json.loads(cli("queue", "describe", queue, "--json", *where.args).out)
    assert sorted(g["group"] for g in described["groups"]) == ["all", "users"]
    assert cli("queue", "group", "delete", queue, "all", *where.args).status == 0
    assert cli("queue", "delete", queue, *where.args).status == 0
    assert queue not in json.loads(cli("queue", "list", *where.args, "--json").out)


def test_bad_queue_input_is_one_line_and_a_status(cli: Cli, where: Where) -> None:
    queue = f"bad{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "h", "--size", "2", "--strategy", "HASH", "--hash-key", "k",
               *where.args).status == 0
    for argv, code in ((("queue", "create", queue), "QUEUE_EXISTS"),
                       (("queue", "describe", "nope-" + queue), "UNKNOWN_QUEUE"),
                       (("queue", "group", "resize", queue, "h", "--size", "0"), "INVALID_ARGUMENT"),
                       (("queue", "group", "describe", queue, "x"), "UNKNOWN_CONSUMER_GROUP"),
                       (("queue", "dequeue", queue, "h", "5"), "CONSUMER_OUTSIDE_GROUP"),
                       (("queue", "enqueue", queue, "no key"), "MISSING_HASH_KEY"),
                       (("queue", "enqueue", queue, "x", "--key", "novalue"), "INVALID_ARGUMENT")):
        ran = cli(*argv, *where.args)
        assert ran.status == status_of(code) and ran.err.count("\n") == 1 and f"[{code}]" in ran.err, (argv, ran)


def test_queue_group_describe_shows_its_lag(cli: Cli, where: Where) -> None:
    queue = f"lag{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "g", "--size", "2", "--strategy", "ROUND_ROBIN",
               *where.args).status == 0
    assert cli("queue", "enqueue", queue, "a", "b", "c", "d", *where.args).status == 0
    info = json.loads(cli("queue", "group", "describe", queue, "g", "--json", *where.args).out)
    assert info["lag"] == 4 and [p["lag"] for p in info["partitions"]] == [2, 2]
    got = json.loads(cli("queue", "dequeue", queue, "g", "0", "--json", *where.args).out)["entries"]
    text = cli("queue", "group", "describe", queue, "g", *where.args).out
    assert f"\tlag {4 - len(got)}" in text.splitlines()[0]
    assert "\tlag 0" in text.splitlines()[1] if got else "\tlag 2" in text.splitlines()[1]


def test_queue_group_reset_from_the_shell(cli: Cli, where: Where) -> None:
    queue = f"rs{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "g", "--size", "1", "--strategy", "HASH", "--hash-key", "k",
               *where.args).status == 0
    assert cli("queue", "enqueue", queue, "a", "b", "--key", "k=1", *where.args).status == 0
    tail = cli("queue", "group", "reset", queue, "g", "--to", "tail", *where.args, "--json")
    assert tail.status == 0, tail.err
    assert json.loads(tail.out)["lag"] == 0
    head = cli("queue", "group", "reset", queue, "g", "--to", "head", *where.args)
    assert head.status == 0 and "\tlag 2" in head.out.splitlines()[0]
    assert json.loads(cli("queue", "group", "reset", queue, "g", "--to", "0", *where.args,
                          "--json").out)["lag"] == 2


def test_a_fifo_group_resets_from_the_shell(cli: Cli, where: Where) -> None:
    queue = f"rf{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "g", "--size", "2", *where.args).status == 0  # FIFO
    assert cli("queue", "enqueue", queue, "a", "b", "c", *where.args).status == 0
    got = json.loads(cli("queue", "dequeue", queue, "g", "0", "--json", *where.args).out)["entries"]
    assert len(got) == 3
    head = cli("queue", "group", "reset", queue, "g", "--to", "head", *where.args, "--json")
    assert head.status == 0, head.err
    assert json.loads(head.out)["lag"] == 3
    again = json.loads(cli("queue", "dequeue", queue, "g", "1", "--json", *where.args).out)["entries"]
    assert [e["payload"] for e in again] == [e["payload"] for e in got]
    assert json.loads(cli("queue", "group", "reset", queue, "g", "--to", "tail", *where.args,
                          "--json").out)["lag"] == 0
