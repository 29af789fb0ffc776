"""``seaway meta``: the metadata store from the shell, against a data directory and a server alike."""

from __future__ import annotations

import json
from pathlib import Path

from seaway.cli._store import EXIT_ABSENT, EXIT_USAGE, text_of
from tests.cli.conftest import Cli, Where, status_of


def test_put_get_scan_delete(cli: Cli, where: Where) -> None:
    ns = where.ns
    put = cli("meta", "put", ns, "streams/a", "first", *where.args)
    assert put.status == 0, put.err
    first = int(put.out.split()[-1])
    assert put.out == f"put {ns} streams/a: version {first}\n"
    second = json.loads(cli("meta", "put", ns, "streams/b", "été", *where.args, "--json").out)
    assert second == {"namespace": ns, "key": "streams/b", "version": second["version"]} and second["version"] > first
    assert cli("meta", "put", ns, "other", "x", *where.args).status == 0
    assert cli("meta", "get", ns, "streams/a", *where.args).out == f"first\tversion {first}\n"
    assert json.loads(cli("meta", "get", ns, "streams/b", *where.args, "--json").out) == {
        "key": "streams/b", "value": "été", "version": second["version"]}
    scan = cli("meta", "scan", ns, "--prefix", "streams/", *where.args)
    assert scan.out.splitlines() == [f"streams/a\tfirst\tversion {first}",
                                     f"streams/b\tété\tversion {second['version']}"]
    rows = json.loads(cli("meta", "scan", ns, "--limit", "2", *where.args, "--json").out)
    assert [r["key"] for r in rows] == ["other", "streams/a"]  # byte order, at most --limit
    deleted = cli("meta", "delete", ns, "streams/a", *where.args, "--json")
    assert json.loads(deleted.out)["revision"] > second["version"], deleted.err
    absent = cli("meta", "get", ns, "streams/a", *where.args)
    assert (absent.status, absent.out) == (EXIT_ABSENT, "") and absent.err == f"seaway: {ns} streams/a: no such key\n"
    assert cli("meta", "scan", ns, "--prefix", "nothing", *where.args) == (0, "", "")


def test_expect_version_is_a_compare_and_set(cli: Cli, where: Where) -> None:
    ns = where.ns
    created = cli("meta", "put", ns, "owner", "a", "--expect-version", "0", *where.args, "--json")
    version = json.loads(created.out)["version"]
    taken = cli("meta", "put", ns, "owner", "b", "--expect-version", "0", *where.args)
    assert taken.status == 1 and taken.out == ""
    assert taken.err == (f"seaway: error: {ns} owner is version {version}, not absent: nothing changed "
                         "[CONDITION_FAILED]\n")
    stale = cli("meta", "delete", ns, "owner", "--expect-version", str(version + 1000), *where.args)
    assert stale.status == 1 and stale.err.count("\n") == 1 and "[CONDITION_FAILED]" in stale.err
    assert cli("meta", "get", ns, "owner", *where.args).out == f"a\tversion {version}\n"  # nothing changed
    moved = cli("meta", "put", ns, "owner", "b", "--expect-version", str(version), *where.args)
    assert moved.status == 0, moved.err
    assert cli("meta", "delete", ns, "owner", "--expect-version", moved.out.split()[-1], *where.args).status == 0
    gone = cli("meta", "delete", ns, "owner", "--expect-version", "7", *where.args)
    assert gone.err == f"seaway: error: {ns} owner is absent, not version 7: nothing changed [CONDITION_FAILED]\n"


def test_bytes_that_are_not_text_are_printed_escaped(cli: Cli, where: Where) -> None:
    ns = where.ns
    with where.open() as sw:
        sw.meta.put(ns, b"k\xff\x00", b"a\\xff\n\xfe\tz")
    text = cli("meta", "scan", ns, *where.args)
    assert text.out == "k\\xff\\x00\ta\\\\xff\\n\\xfe\\tz\tversion " + text.out.split()[-1] + "\n"
    rows = json.loads(cli("meta", "scan", ns, *where.args, "--json").out)
    assert rows[0]["key"] == {"hex": "6bff00"} and rows[0]["value"] == {"hex": "615c7866660afe097a"}
    assert cli("meta", "get", ns, "k\udcff\x00", *where.args).err.startswith("seaway: error: KEY must be UTF-8")


def test_bad_requests_are_one_line_and_a_status(cli: Cli, where: Where) -> None:
    for argv in (("get", "no spaces", "k"), ("scan", where.ns, "--limit", "0"), ("scan", where.ns, "--limit", "10001"),
                 ("put", where.ns, "k", "x" * ((1 << 20) + 1))):
        refused = cli("meta", *argv, *where.args)
        code = refused.err.rsplit("[", 1)[-1].rstrip("]\n")
        assert refused.status == status_of(code) and refused.out == "" and refused.err.count("\n") == 1, (argv, refused)
        assert refused.err.startswith("seaway: error: ") and "_ERROR]" not in refused.err, refused.err


def test_reads_refuse_a_directory_that_is_not_a_store_and_writes_create_one(cli: Cli, tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    for argv in (("get", "ns", "k"), ("scan", "ns")):
        refused = cli("meta", *argv, "--data-dir", str(typo))
        assert refused.status == EXIT_USAGE and "no Seaway data directory" in refused.err and not typo.exists()
    assert cli("meta", "put", "ns", "k", "v", "--data-dir", str(typo)).status == 0
    assert cli("meta", "get", "ns", "k", "--data-dir", str(typo)).out.startswith("v\tversion ")


def test_text_of_is_one_unambiguous_line() -> None:
    assert text_of("plain text, é ü 日本".encode()) == "plain text, é ü 日本"
    assert text_of(b"\xff") == "\\xff" and text_of(b"\\xff") == "\\\\xff"  # a raw byte, and the text \xff
    assert text_of(b"a\tb\nc\r\x1b\x7f") == "a\\tb\\nc\\r\\x1b\\x7f"
    assert text_of("\u0085\u200b\U000e0001".encode()) == "\\u0085\\u200b\\U000e0001"  # never \x80-\xff
    assert "\n" not in text_of(bytes(range(256)))
