"""``seaway bench txn`` at tiny sizes: every figure is there and positive, the clients are spread as
asked, and the commits per sync are counted from the server's own syncs."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def test_bench_txn_reports_transactions_and_puts_of_many_clients_against_the_disk(cli: Cli) -> None:
    ran = cli("bench", "txn", "--ops", "10", "--clients", "6", "--processes", "2", "--rounds", "1", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    assert figures["clients"] == 6 and figures["processes"] == 2 and figures["ops_per_client"] == 10
    for name in ("txn_per_s_6", "meta_puts_per_s_6", "disk_syncs_per_s", "commits_per_sync",
                 "txn_per_s_6_embedded", "meta_puts_per_s_6_embedded"):
        assert _positive(figures[name]), (name, figures)
    assert figures["txn_per_s_target"] == 10_000 and figures["meta_puts_per_s_target"] == 10_000
    # 60 transactions: each needs at least its commit's sync shared with others, never more than a
    # few syncs of its own (begin, commit, the metadata it applies).
    assert 0.1 < figures["commits_per_sync"] <= 60, figures


def test_bench_txn_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "txn", "--ops", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err  # a usage error
