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
    assert cli("queue", "group", "create", queue, "h", "--size", "2", "--strategy", "HASH", "--key", "k",
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
