"""``seaway txn``, against a data directory and a server alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import seaway.cli._txn as txn_cli
from seaway import TxnStatus
from tests.cli.conftest import Cli, Where, status_of


def test_list_status_and_abort_transactions(cli: Cli, where: Where) -> None:
    with where.open() as sw:
        log = sw.logs.create(where.log)
        wrote = sw.transaction(timeout_s=600)
        wrote.register_logs([log.id])
        idle = sw.transaction(timeout_s=600)
        done = sw.transaction()
        done.commit()
    # The transactions outlive the handle that began them (embedded: the store is reopened).
    listed = cli("txn", "list", *where.args, "--json")
    assert listed.status == 0, listed.err
    rows = {row["id"]: row for row in json.loads(listed.out)}
    assert rows[wrote.id]["status"] == "IN_PROGRESS" and rows[wrote.id]["logs"] == [log.id]
    assert rows[idle.id]["expiry_ms"] - rows[idle.id]["began_ms"] == 600_000
    assert done.id not in rows
    text = cli("txn", "list", *where.args).out.splitlines()
    (line,) = [row for row in text if row.startswith(f"{wrote.id}\t")]
    assert line.split("\t")[1] == "IN_PROGRESS" and line.endswith(f"logs {log.id}")
    assert cli("txn", "status", str(done.id), *where.args).out == "COMMITTED\n"
    assert json.loads(cli("txn", "status", str(idle.id), *where.args, "--json").out) == {
        "id": idle.id, "status": "IN_PROGRESS"}

    aborted = cli("txn", "abort", str(wrote.id), *where.args)
    assert aborted.status == 0 and aborted.out == f"aborted {wrote.id}: ABORTED\n", aborted.err
    assert cli("txn", "abort", str(idle.id), *where.args, "--json").status == 0
    rows = {row["id"]: row for row in json.loads(cli("txn", "list", *where.args, "--json").out)}
    assert rows[wrote.id]["status"] == "ABORTED"  # invalid: it registered a log, whose data readers skip
    assert idle.id not in rows  # it wrote nothing: forgotten
    with where.open() as sw:
        assert sw.txn.status(wrote.id) is TxnStatus.ABORTED and sw.txn.status(idle.id) is TxnStatus.ABORTED
    assert cli("txn", "status", "12345", *where.args).out == "UNKNOWN\n"


def test_txn_errors_are_one_line_with_their_code(cli: Cli, where: Where) -> None:
    with where.open() as sw:
        done = sw.transaction()
        done.commit()
    for argv, code in ((("abort", str(done.id)), "TRANSACTION_NOT_IN_PROGRESS"),
                       (("abort", "12345"), "UNKNOWN_TRANSACTION"),
                       (("status", "not-a-number"), "INVALID_ARGUMENT"),
                       (("abort", "0"), "INVALID_ARGUMENT"),
                       (("status", str(2**64)), "INVALID_ARGUMENT")):
        ran = cli("txn", *argv, *where.args)
        assert ran.status == status_of(code) and ran.err.count("\n") == 1 and f"[{code}]" in ran.err, (argv, ran)


def test_reading_commands_refuse_a_directory_that_is_not_a_store(cli: Cli, tmp_path: Path) -> None:
    for argv in (("list",), ("status", "5")):
        ran = cli("txn", *argv, "--data-dir", str(tmp_path / "nothing"))
        assert ran.status == status_of("INVALID_ARGUMENT") and "[INVALID_ARGUMENT]" in ran.err, ran


def test_list_reads_in_pages_and_prints_at_most_limit(cli: Cli, where: Where, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txn_cli, "PAGE", 2)  # pages of 2, so that 5 transactions take several
    with where.open() as sw:
        ids = [sw.transaction(timeout_s=600).id for _ in range(5)]
    listed = [row["id"] for row in json.loads(cli("txn", "list", *where.args, "--json").out)]
    assert [i for i in listed if i in ids] == ids and len(set(listed)) == len(listed)
    limited = cli("txn", "list", *where.args, "--limit", "3").out.splitlines()
    assert [int(line.split("\t")[0]) for line in limited] == listed[:3]
    refused = cli("txn", "list", *where.args, "--limit", "0")
    assert refused.status != 0 and "--limit" in refused.err
