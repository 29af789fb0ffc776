"""``seaway bench txn`` at tiny sizes: every figure is there, a positive number, and each ratio is
the quotient of its two rates."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def test_bench_txn_reports_pairs_against_metadata_puts_remote_and_embedded(cli: Cli) -> None:
    ran = cli("bench", "txn", "--pairs", "20", "--rounds", "1", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    assert figures["clients"] == 3 and figures["pairs_per_client"] == 20
    for mode in ("remote", "embedded"):
        pairs, puts, ratio = (figures[f"txn_pairs_per_s_{mode}"], figures[f"meta_puts_per_s_{mode}"],
                              figures[f"txn_pair_ratio_{mode}"])
        assert _positive(pairs) and _positive(puts) and _positive(ratio), figures
        assert abs(ratio - pairs / puts) < 0.01 * ratio + 0.002, figures


def test_bench_txn_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "txn", "--pairs", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err  # a usage error
