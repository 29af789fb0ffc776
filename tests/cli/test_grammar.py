"""One command grammar (issue 22, item 3): ``list`` for every kind, the same flag for the same meaning
(old spellings kept as hidden aliases), options among positionals, ``--version``, ``stream read`` with
``--from``/``--limit``/``--follow``, a stream's cuts printable, dequeues that never leave a transaction
behind and say which one blocks them, and ``get_or_create`` that says what differs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway.cli._store import EXIT_FAILED, EXIT_INTERRUPTED
from seaway.errors import ConsumerGroupExistsError, ReaderGroupExistsError, StreamExistsError
from seaway.server import ServerProcess
from tests.cli.conftest import Cli, Where

WAIT_S = 60.0
"""The most a test waits for a child process to reach a state."""


def _rows(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_version_and_options_among_positionals(cli: Cli, where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as version:
        cli("--version")
    assert version.value.code == 0 and capsys.readouterr().out == f"seaway {seaway.__version__}\n"
    log = where.log
    assert cli("log", "create", *where.args, log).status == 0
    appended = cli("log", "append", log, "--json", "x", *where.args, "y")  # as the walkthrough typed it
    assert appended.status == 0, appended.err
    assert json.loads(appended.out)["count"] == 2
    tail = cli("log", "tail", "--limit", "1", log, *where.args, "--from", "1")
    assert [line.split("\t")[-1] for line in tail.out.splitlines() if "gap" not in line] == ["x"]


def test_every_kind_has_a_list_and_log_list_hides_the_stores_own_logs(cli: Cli, where: Where) -> None:
    scope, log, queue = where.ns, where.log, f"q{where.ns}"
    for argv in (("scope", "create", scope), ("stream", "create", f"{scope}/s", "--segments", "2"),
                 ("log", "create", log), ("queue", "create", queue),
                 ("queue", "group", "create", queue, "g", "--size", "1"), ("queue", "enqueue", queue, "e"),
                 ("reader-group", "create", f"rg-{scope}", f"{scope}/s")):
        ran = cli(*argv, *where.args)
        assert ran.status == 0, (argv, ran)
    listed = cli("log", "list", *where.args).out.splitlines()
    assert log in listed and not any(n.startswith(("seg/", "queue/", "seaway.")) for n in listed), listed
    infos = json.loads(cli("log", "info", *where.args, "--json").out)
    assert log in [r["name"] for r in infos] and not any(r["internal"] for r in infos)
    every_info = json.loads(cli("log", "info", "--all", *where.args, "--json").out)
    assert any(r["internal"] and r["name"].startswith("seg/") for r in every_info)
    everything = json.loads(cli("log", "list", "--all", *where.args, "--json").out)
    assert log in everything and any(n.startswith("seg/") for n in everything)
    assert any(n.startswith("queue/") for n in everything) and "seaway.txn.wal" in everything
    groups = json.loads(cli("reader-group", "list", *where.args, "--json").out)
    assert {"group": f"rg-{scope}", "stream": f"{scope}/s"} in groups
    assert f"rg-{scope}\t{scope}/s" in cli("reader-group", "list", *where.args).out.splitlines()
    assert f"{scope}/s" in cli("stream", "list", *where.args).out.splitlines()  # every scope's, without one
    assert cli("stream", "list", scope, *where.args).out == f"{scope}/s\n"
    assert queue in json.loads(cli("queue", "list", *where.args, "--json").out)


def test_the_same_flag_means_the_same_thing_and_old_spellings_still_work(cli: Cli, where: Where) -> None:
    scope, queue = where.ns, f"q{where.ns}"
    stream = f"{scope}/s"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert cli("stream", "create", stream, "--store-routing-keys", *where.args).status == 0
    assert cli("stream", "write", stream, "a", "--routing-key", "k1", *where.args).status == 0
    assert cli("stream", "write", stream, "b", "--key", "k2", *where.args).status == 0  # hidden alias
    keys = [r["key"] for r in _rows(cli("stream", "read", stream, *where.args, "--json").out)]
    assert sorted(map(str, keys)) == ["k1", "k2"]
    assert cli("reader-group", "create", f"rg-{scope}", stream, *where.args).status == 0
    one = cli("reader-group", "read", f"rg-{scope}", "--reader", "r", "--limit", "1", "--timeout-s", "0.5",
              *where.args)
    assert len(one.out.splitlines()) == 1, one
    assert cli("queue", "create", queue, *where.args).status == 0
    made = cli("queue", "group", "create", queue, "h", "--size", "2", "--strategy", "HASH", "--hash-key", "user",
               *where.args)
    assert made.status == 0, made.err
    assert cli("queue", "enqueue", queue, "x", "y", "z", "--key", "user=1", *where.args).status == 0
    taken = [len(json.loads(cli("queue", "dequeue", queue, "h", str(c), "--limit", "2", "--no-ack", *where.args,
                                "--json").out)["entries"]) for c in range(2)]
    assert sorted(taken) == [0, 2]  # one key, one consumer, at most --limit
    old = [len(json.loads(cli("queue", "dequeue", queue, "h", str(c), "--max", "1", "--no-ack", *where.args,
                              "--json").out)["entries"]) for c in range(2)]
    assert sorted(old) == [0, 1]
    for consumer in range(2):  # acknowledged: the resizes below find the old layout drained
        assert cli("queue", "dequeue", queue, "h", str(consumer), *where.args).status == 0
    resized = cli("queue", "group", "resize", queue, "h", "--size", "3", "--timeout-s", "5", *where.args, "--json")
    assert resized.status == 0 and json.loads(resized.out)["size"] == 3, resized
    old_resize = cli("queue", "group", "resize", queue, "h", "--size", "2", "--wait-s", "5", "--key", "user",
                     *where.args, "--json")
    assert old_resize.status == 0 and json.loads(old_resize.out)["key"] == "user", old_resize


def test_stream_read_from_a_time_or_a_cut_with_a_limit(cli: Cli, where: Where) -> None:
    stream = f"{where.ns}/s"
    assert cli("scope", "create", where.ns, *where.args).status == 0
    assert cli("stream", "create", stream, "--segments", "2", *where.args).status == 0
    assert cli("stream", "write", stream, "a1", "a2", "--routing-key", "a", *where.args).status == 0
    first = _rows(cli("stream", "read", stream, *where.args, "--json").out)
    last_ms = max(int(str(r["timestamp_ms"])) for r in first)
    deadline = time.monotonic() + WAIT_S
    while time.time() * 1000 <= last_ms + 1:  # the next events are stamped strictly later than these
        assert time.monotonic() < deadline
        time.sleep(0.002)
    tail_cut = cli("stream", "cut", stream, *where.args).out.strip()
    assert json.loads(tail_cut)["stream"] == stream
    described = json.loads(cli("stream", "describe", stream, *where.args, "--json").out)
    assert described["tail"] == json.loads(tail_cut) and described["head"]["stream"] == stream
    assert cli("stream", "write", stream, "b1", "b2", "--routing-key", "a", *where.args).status == 0
    since_cut = _rows(cli("stream", "read", stream, "--from", tail_cut, *where.args, "--json").out)
    assert [r["payload"] for r in since_cut] == ["b1", "b2"]
    since_time = _rows(cli("stream", "read", stream, "--from", str(since_cut[0]["time"]), *where.args,
                           "--json").out)
    assert [r["payload"] for r in since_time] == ["b1", "b2"]
    limited = cli("stream", "read", stream, "--limit", "3", *where.args)
    assert [line.split("\t")[-1] for line in limited.out.splitlines()] == ["a1", "a2", "b1"]
    assert cli("stream", "read", stream, "--from", "tail", *where.args).out == ""
    refused = cli("stream", "read", stream, "--from", "last tuesday", *where.args)
    assert refused.status != 0 and "ISO 8601" in refused.err


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "server-data")
    yield proc
    assert proc.stop() == 0, proc.log_text()[-4000:]


def _seaway(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "seaway.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _interrupt(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT_S)
    return proc.returncode, out, err


def test_stream_read_follow_prints_new_events_across_a_scaling(own_server: ServerProcess) -> None:
    with seaway.connect(own_server.url) as sw:
        sw.streams.create_scope("f")
        stream = sw.streams.create("f/s")
        with stream.writer() as writer:
            writer.write(b"before", "k").result(10)
        follower = _seaway("stream", "read", "f/s", "--follow", "--json", "--address", own_server.url)
        try:
            assert follower.stdout is not None
            assert json.loads(follower.stdout.readline())["payload"] == "before"
            stream.split("0.0")
            with stream.writer() as writer:
                writer.write(b"after", "k").result(10)
            after = json.loads(follower.stdout.readline())
            assert after["payload"] == "after" and after["segment"].startswith("1."), after
        finally:
            status, _, err = _interrupt(follower)
    assert status == EXIT_INTERRUPTED, err


def test_an_interrupted_dequeue_aborts_its_transaction(own_server: ServerProcess) -> None:
    with seaway.connect(own_server.url) as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "g", 1)
        blocking = sw.transaction(timeout_s=600)  # an entry in progress: the dequeue waits for it to end
        producer = sw.queues.producer("q")
        producer.enqueue(blocking, b"pending")
        producer.flush(blocking)
        waiting = _seaway("queue", "dequeue", "q", "g", "0", "--timeout-s", "600", "--address", own_server.url)
        try:
            deadline = time.monotonic() + WAIT_S
            while not (started := [t.id for t in sw.txn.list()
                                   if t.status.value == "IN_PROGRESS" and t.id != blocking.id]):
                assert time.monotonic() < deadline and waiting.poll() is None, "the dequeue began no transaction"
                time.sleep(0.05)  # polling the store for the child's transaction, with a deadline
        finally:
            status, out, err = _interrupt(waiting)
        assert status == EXIT_INTERRUPTED and out == "", err
        assert sw.txn.status(started[0]).value == "ABORTED"  # not left IN_PROGRESS until it times out
        blocking.abort()


def test_a_dequeue_blocked_by_an_open_transaction_names_it(cli: Cli, where: Where) -> None:
    queue = f"q{where.ns}"
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "g", "--size", "1", *where.args).status == 0
    with where.open() as sw:
        blocking = sw.transaction(timeout_s=600)
        producer = sw.queues.producer(queue)
        producer.enqueue(blocking, b"pending")
        producer.flush(blocking)  # written to the queue's log, not yet committed
    ran = cli("queue", "dequeue", queue, "g", "0", "--timeout-s", "0", *where.args)
    assert ran.status == EXIT_FAILED and ran.out == ""
    assert f"in transaction {blocking.id}, still in progress" in ran.err and "txn abort" in ran.err, ran.err
    as_json = cli("queue", "dequeue", queue, "g", "0", "--timeout-s", "0", *where.args, "--json")
    assert json.loads(as_json.out) == {"entries": [], "acknowledged": True, "blocked_by": blocking.id}
    assert cli("txn", "abort", str(blocking.id), *where.args).status == 0
    empty = cli("queue", "dequeue", queue, "g", "0", "--timeout-s", "0", *where.args)
    assert (empty.status, empty.out, empty.err) == (0, "", "")  # nothing left, nothing blocking


def test_get_or_create_says_what_differs(where: Where) -> None:
    with where.open() as sw:
        sw.streams.create_scope(where.ns)
        name = f"{where.ns}/s"
        made = sw.streams.get_or_create(name, retention=seaway.RetentionByTime(60), segments=2)
        assert sw.streams.get_or_create(name).name == made.name  # nothing asked: any configuration
        assert sw.streams.get_or_create(name, retention=seaway.RetentionByTime(60), segments=2).name == name
        with pytest.raises(StreamExistsError, match=r"retention is RetentionByTime\(min_s=60"):
            sw.streams.get_or_create(name, retention=seaway.RetentionByTime(3600))
        with pytest.raises(StreamExistsError, match="a fixed 2 segments, not 3"):
            sw.streams.get_or_create(name, segments=3)
        with pytest.raises(StreamExistsError, match="not transactional"):
            sw.streams.get_or_create(name, transactional=True)
        sw.streams.create(f"{where.ns}/other")
        sw.streams.get_or_create_reader_group(f"rg-{where.ns}", name)
        with pytest.raises(ReaderGroupExistsError, match=f"reads stream '{name}', not '{where.ns}/other'"):
            sw.streams.get_or_create_reader_group(f"rg-{where.ns}", f"{where.ns}/other")
        queue = f"q{where.ns}"
        sw.queues.create(queue)
        sw.queues.create_group(queue, "g", 2, "HASH", key="user")
        sw.queues.create_group(queue, "g", 2, "HASH", key="user", exist_ok=True)  # the same: fine
        with pytest.raises(ConsumerGroupExistsError, match="size is 2, not 3; key is 'user', not 'page'"):
            sw.queues.create_group(queue, "g", 3, "HASH", key="page", exist_ok=True)
        with pytest.raises(ConsumerGroupExistsError, match=r"has a consumer group 'g'$"):
            sw.queues.create_group(queue, "g", 2, "HASH", key="user")


def test_lines_of_stdin_are_written_in_batches_each_once_and_in_order(own_server: ServerProcess) -> None:
    lines = [f"line-{n}" for n in range(5000)]
    for argv in (("scope", "create", "in"), ("stream", "create", "in/s", "--segments", "3")):
        assert subprocess.run([sys.executable, "-m", "seaway.cli", *argv, "--address", own_server.url],
                              capture_output=True, timeout=120, check=False).returncode == 0
    for prefix, key in (("", []), ("k-", ["--routing-key", "k"])):
        stdin = "".join(f"{prefix}{line}\n" for line in lines)
        wrote = subprocess.run([sys.executable, "-m", "seaway.cli", "stream", "write", "in/s", *key, "--json",
                                "--address", own_server.url], input=stdin, capture_output=True, text=True,
                               timeout=120, check=False)
        assert wrote.returncode == 0 and json.loads(wrote.stdout)["count"] == len(lines), wrote.stderr
    with seaway.connect(own_server.url) as sw:
        group = sw.streams.create_reader_group("check", "in/s")
        with group.reader("r") as reader:
            read = []
            while (event := reader.read_next(5.0)) is not None:
                read.append((event.payload.decode(), event.segment))
    plain = [(p, s) for p, s in read if not p.startswith("k-")]
    keyed = [(p, s) for p, s in read if p.startswith("k-")]
    assert sorted(p for p, _ in plain) == sorted(lines)  # each once
    assert len({s for _, s in plain}) > 1  # the unkeyed batches were spread over the segments
    assert [p for p, _ in keyed] == [f"k-{line}" for line in lines]  # one key: in the order of stdin
    assert len({s for _, s in keyed}) == 1


def test_an_empty_standard_input_writes_nothing_alike_for_logs_streams_and_queues(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    for argv in (("log", "create", "l"), ("scope", "create", "s"), ("stream", "create", "s/s"),
                 ("queue", "create", "q")):
        assert subprocess.run([sys.executable, "-m", "seaway.cli", *argv, *data], capture_output=True, timeout=120,
                              check=False).returncode == 0
    for argv in (("log", "append", "l"), ("stream", "write", "s/s"), ("queue", "enqueue", "q")):
        ran = subprocess.run([sys.executable, "-m", "seaway.cli", *argv, *data, "--json"], input="",
                             capture_output=True, text=True, timeout=120, check=False)
        assert ran.returncode == 0 and json.loads(ran.stdout)["count"] == 0, (argv, ran.stderr)


def test_the_internal_log_groups_written_out_for_log_list_are_the_stores() -> None:
    from seaway.cli._main import INTERNAL_LOG_GROUPS  # noqa: PLC0415
    from seaway.queues._records import PARTITIONS_GROUP  # noqa: PLC0415
    from seaway.streams._controller import SEGMENTS_GROUP  # noqa: PLC0415
    from seaway.txn import WAL_LOG  # noqa: PLC0415

    assert INTERNAL_LOG_GROUPS == (SEGMENTS_GROUP, PARTITIONS_GROUP) and WAL_LOG.startswith("seaway.")
