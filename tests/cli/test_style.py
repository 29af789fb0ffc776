"""One output style for every command (issue 22, item 2): ISO 8601 UTC times, ``e<epoch>n<esn>`` LSNs,
``payload`` for the data of a record, event or entry, escaped text, errors as JSON under ``--json``, and
exit statuses that tell a failure from an absence, a usage error and an unreachable store."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from seaway.cli._store import (
    EXIT_ABSENT,
    EXIT_FAILED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    parse_time,
    plural,
    time_text,
)
from seaway.errors import InvalidArgumentError
from tests.cli.conftest import Cli, Where

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LSN = re.compile(r"e\d+n\d+")
NASTY = "red \x1b[31mALERT\x1b[0m\nsecond line\r\x07"
"""A payload that would colour the terminal, ring its bell and forge a second output line."""


def seaway_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seaway.cli", *args], capture_output=True, text=True, timeout=120,
                          check=False)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_times_print_in_one_form_and_parse_in_several() -> None:
    assert time_text(1_795_753_841_715) == "2026-11-27T04:30:41.715Z"
    assert time_text(None) is None
    for spelled in ("2026-11-27T04:30:41.715Z", "2026-11-27T05:30:41.715+01:00", "2026-11-27 04:30:41.715",
                    "1795753841715"):
        assert parse_time(spelled) == 1_795_753_841_715, spelled
    with pytest.raises(InvalidArgumentError, match="ISO 8601"):
        parse_time("yesterday")
    assert [plural(1, "record"), plural(2, "record"), plural(1, "entry"), plural(0, "entry")] == [
        "1 record", "2 records", "1 entry", "0 entries"]


def test_log_records_show_iso_times_lsns_and_escaped_payloads(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    appended = cli("log", "append", log, NASTY, "\udcff-not-utf8-\u200b", *where.args)  # as Python gives argv's \xff
    assert appended.out.startswith(f"appended 2 records to {log} at e"), appended
    text = [line for line in _lines(cli("log", "tail", log, *where.args).out) if "gap" not in line]
    assert len(text) == 2  # the newline in the payload did not forge a line
    lsn, when, payload = text[0].split("\t")
    assert LSN.fullmatch(lsn) and ISO.fullmatch(when)
    assert payload == "red \\x1b[31mALERT\\x1b[0m\\nsecond line\\r\\x07" and "\x1b" not in text[0]
    assert text[1].split("\t")[2] == "\\xff-not-utf8-\\u200b"  # stored as the byte given, printed escaped
    rows = [json.loads(line) for line in _lines(cli("log", "tail", log, *where.args, "--json").out)]
    records = [r for r in rows if "payload" in r]
    assert records[0]["payload"] == NASTY and ISO.fullmatch(records[0]["time"])
    assert records[0]["lsn_str"] == lsn and isinstance(records[0]["lsn"], int)
    found = cli("log", "find-time", log, records[1]["time"], *where.args)  # the time as printed is taken back
    assert found.out.strip() in (records[0]["lsn_str"], records[1]["lsn_str"]), found


def test_binary_payloads_show_as_hex_in_json_and_escaped_in_text(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    with where.open() as sw:
        sw.logs.get(log).append_batch([b"\x00\xff\x1b[2J"])
    row = next(json.loads(line) for line in _lines(cli("log", "tail", log, *where.args, "--json").out)
               if "payload" in line)
    assert row["payload"] == {"hex": "00ff1b5b324a"}
    line = next(line for line in _lines(cli("log", "tail", log, *where.args).out) if "gap" not in line)
    assert line.endswith("\t\\x00\\xff\\x1b[2J")


def test_streams_and_queues_name_the_data_payload_and_escape_it(cli: Cli, where: Where) -> None:
    scope, queue = where.ns, f"q{where.ns}"
    stream = f"{scope}/s"
    assert cli("scope", "create", scope, *where.args).status == 0
    assert cli("stream", "create", stream, *where.args).status == 0
    assert cli("stream", "write", stream, NASTY, *where.args).status == 0
    event = json.loads(cli("stream", "read", stream, *where.args, "--json").out)
    assert event["payload"] == NASTY and LSN.fullmatch(event["lsn_str"]) and ISO.fullmatch(event["time"])
    (line,) = _lines(cli("stream", "read", stream, *where.args).out)
    assert line.split("\t")[:1] == ["0.0"] and "\x1b" not in line and line.endswith("\\r\\x07")
    described = json.loads(cli("stream", "describe", stream, *where.args, "--json").out)
    assert ISO.fullmatch(described["created"]) and all(ISO.fullmatch(s["created"]) for s in described["segments"])
    assert cli("queue", "create", queue, *where.args).status == 0
    assert cli("queue", "group", "create", queue, "g", "--size", "1", *where.args).status == 0
    enqueued = json.loads(cli("queue", "enqueue", queue, NASTY, *where.args, "--json").out)
    assert enqueued["count"] == 1 and enqueued["txn"] > 0
    peek = json.loads(cli("queue", "dequeue", queue, "g", "0", "--no-ack", *where.args, "--json").out)
    assert [e["payload"] for e in peek["entries"]] == [NASTY]
    (line,) = _lines(cli("queue", "dequeue", queue, "g", "0", *where.args).out)
    assert "\x1b" not in line and line.endswith("\\r\\x07")
    described_text = cli("queue", "describe", queue, *where.args).out
    positions = re.findall(r"position (\S+):\d+\ttail (\S+)", described_text)
    assert positions and all(LSN.fullmatch(p) and LSN.fullmatch(t) for p, t in positions), described_text
    assert described_text.startswith(f"queue {queue}\t1 group\n")


def test_transaction_and_ledger_times_are_iso(cli: Cli, where: Where) -> None:
    assert cli("scope", "create", where.ns, *where.args).status == 0
    rows = [json.loads(line) for line in _lines(cli("notify", "tail", "--json", *where.args).out)]
    assert rows and all(ISO.fullmatch(r["time"]) for r in rows), rows
    assert ISO.fullmatch(cli("notify", "tail", *where.args).out.splitlines()[-1].split()[1])
    with where.open() as sw:
        open_txn = sw.transaction(timeout_s=600)
    listed = json.loads(cli("txn", "list", "--json", *where.args).out)
    mine = [r for r in listed if r["id"] == open_txn.id]
    assert mine and ISO.fullmatch(mine[0]["began"]) and ISO.fullmatch(mine[0]["expiry"])
    assert cli("txn", "abort", str(open_txn.id), *where.args).status == 0


def test_errors_under_json_are_json_with_their_code(cli: Cli, where: Where) -> None:
    assert cli("log", "create", where.log, *where.args).status == 0  # the data directory is a store
    ran = cli("log", "tail", f"nosuch-{where.ns}", *where.args, "--json")
    assert ran.status == EXIT_ABSENT and ran.out == ""
    error = json.loads(ran.err)
    assert error["code"] == "UNKNOWN_LOG" and where.ns in error["error"] and error["retriable"] is False
    absent = cli("meta", "get", where.ns, "nokey", *where.args, "--json")
    assert absent.status == EXIT_ABSENT and json.loads(absent.err)["code"] == "NO_SUCH_KEY"
    plain = cli("log", "tail", f"nosuch-{where.ns}", *where.args)
    assert plain.err.startswith("seaway: error: ") and plain.err.endswith("[UNKNOWN_LOG]\n")


def test_usage_errors_under_json_are_json_too(capsys: pytest.CaptureFixture[str]) -> None:
    from seaway.cli import main  # noqa: PLC0415

    with pytest.raises(SystemExit) as usage:
        main(["log", "tail", "--json", "--no-such-option", "l"])
    assert usage.value.code == EXIT_USAGE
    error = json.loads(capsys.readouterr().err)
    assert error["code"] == "USAGE" and "--no-such-option" in error["error"]
    with pytest.raises(SystemExit):
        main(["log", "tail", "--no-such-option", "l"])
    text = capsys.readouterr().err  # argparse's own, without --json
    assert text.startswith("usage: seaway") and "unrecognized arguments: --no-such-option" in text


def test_exit_statuses_tell_failed_usage_absent_and_unavailable_apart(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    assert cli("log", "seal", log, *where.args).status == 0
    assert cli("log", "append", log, "late", *where.args).status == EXIT_FAILED  # LOG_SEALED
    assert cli("log", "trim", log, "e1x", *where.args).status == EXIT_USAGE
    assert cli("log", "append", f"nosuch-{where.ns}", "x", *where.args).status == EXIT_ABSENT
    assert cli("stream", "describe", f"{where.ns}/nosuch", *where.args).status == EXIT_ABSENT
    assert cli("txn", "abort", "12345", *where.args).status == EXIT_ABSENT
    with pytest.raises(SystemExit) as usage:
        cli("log", "append", *where.args)  # no log named: argparse's usage error
    assert usage.value.code == EXIT_USAGE


def test_a_refused_connection_is_unavailable_and_says_so() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ran = seaway_cmd("log", "list", "--address", f"seaway://127.0.0.1:{port}", "--json")
    assert ran.returncode == EXIT_UNAVAILABLE, ran
    assert json.loads(ran.stderr.strip().splitlines()[-1])["code"] == "UNAVAILABLE"
    helped = seaway_cmd("--help")
    assert "exit status: 0 ok, 1 failed, 2 usage" in " ".join(helped.stdout.split())


def test_errors_name_the_log_not_its_id(cli: Cli, where: Where) -> None:
    log = where.log
    assert cli("log", "create", log, *where.args).status == 0
    first = json.loads(cli("log", "append", log, "a", *where.args, "--json").out)["first_lsn"]
    stale = cli("log", "append", log, "b", "--if-tail", str(first + 1), *where.args)
    assert stale.status == EXIT_FAILED and "[TAIL_MISMATCH]" in stale.err
    assert f"log {log!r}" in stale.err, stale.err
    assert cli("log", "seal", log, *where.args).status == 0
    sealed = cli("log", "append", log, "c", *where.args)
    assert "[LOG_SEALED]" in sealed.err and f"log {log!r}" in sealed.err, sealed.err


def test_a_file_target_without_a_path_says_what_is_missing(cli: Cli, where: Where) -> None:
    ran = cli("notify", "config", "set", f"f-{where.ns}", "--target", '{"type": "file"}', *where.args)
    assert ran.status == EXIT_USAGE and "[NOTIFY_CONFIG_INVALID]" in ran.err
    assert "needs path" in ran.err and "__init__" not in ran.err and "positional" not in ran.err, ran.err


def test_a_split_of_a_segment_that_is_not_current_names_the_current_ones(cli: Cli, where: Where) -> None:
    stream = f"{where.ns}/s"
    assert cli("scope", "create", where.ns, *where.args).status == 0
    assert cli("stream", "create", stream, "--segments", "2", *where.args).status == 0
    ran = cli("stream", "scale", stream, "--split", "9.9", *where.args)
    assert ran.status == EXIT_USAGE and "[INVALID_ARGUMENT]" in ran.err
    assert f"{stream} has no current segment 9.9: its current segments are 0.0, 0.1" in ran.err, ran.err
    assert cli("stream", "scale", stream, "--split", "0.1", *where.args).status == 0
    again = cli("stream", "scale", stream, "--split", "0.1", *where.args)  # sealed by the split before
    assert "current segments are 0.0, 1.2, 1.3" in again.err, again.err


def test_serve_on_a_used_port_says_so_and_creates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "new-store"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = seaway_cmd("serve", "--data-dir", str(data), "--listen", f"127.0.0.1:{port}")
    assert ran.returncode == EXIT_FAILED, ran
    assert ran.stderr.strip().splitlines() == [
        f"seaway: error: cannot listen on 127.0.0.1:{port}: Address already in use (is another server running "
        "there?)"], ran.stderr
    assert not data.exists()


def test_python_reprs_spell_lsns_and_segments_as_the_command_does(where: Where) -> None:
    from seaway.log import lsn_str, make_lsn  # noqa: PLC0415
    from seaway.queues import Position  # noqa: PLC0415
    from seaway.streams import Event, StreamCut  # noqa: PLC0415

    with where.open() as sw:
        log = sw.logs.create(where.log)
        log.append_batch([b"a"])
        items = list(log.read(1, log.tail_lsn()))
        assert all(LSN.search(repr(item)) and not re.search(r"lsn(_lo|_hi)?=\d", repr(item)) for item in items)
        last = items[-1]
        assert repr(last) == (f"Record(log_id={log.id}, lsn={lsn_str(last.lsn)}, timestamp_ms={last.timestamp_ms}, "
                              "payload=b'a')")
        sw.queues.create(f"q{where.ns}")
        sw.queues.create_group(f"q{where.ns}", "g", 1)
        info = repr(sw.queues.describe_group(f"q{where.ns}", "g"))
        assert "position=Position(lsn=e0n1, entry=0), tail_lsn=e" in info, info
    assert repr(Position(make_lsn(3, 7), 2)) == "Position(lsn=e3n7, entry=2)"
    cut = StreamCut("web/clicks", {(1 << 32) | 2: make_lsn(1, 5)})
    assert repr(cut) == "StreamCut(stream='web/clicks', positions={'1.2': e1n5})"
    event = Event(b"x", (1 << 32) | 2, make_lsn(1, 5), 0, {(1 << 32) | 2: make_lsn(1, 6)})
    assert repr(event) == ("Event(payload=b'x', segment='1.2', lsn=e1n5, timestamp_ms=0, position={'1.2': e1n6}, "
                           "routing_key=None)")


def test_log_tail_leaves_out_the_bridges_between_epochs_unless_asked(cli: Cli, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    assert cli("log", "create", "l", *data).status == 0
    for payload in ("a", "b"):  # each command over a data directory opens a new epoch
        assert cli("log", "append", "l", payload, *data).status == 0
    plain = _lines(cli("log", "tail", "l", *data).out)
    assert [line.split("\t")[2] for line in plain] == ["a", "b"]
    bridged = _lines(cli("log", "tail", "l", "--bridges", *data).out)
    assert [line.split()[0] for line in bridged if "gap" in line] == ["BRIDGE", "BRIDGE"]
    assert cli("log", "trim", "l", plain[0].split("\t")[0], *data).status == 0
    trimmed = _lines(cli("log", "tail", "l", *data).out)  # other gaps are always shown
    assert trimmed[0].startswith("TRIM gap e0n1..") and trimmed[1].endswith("\tb")
