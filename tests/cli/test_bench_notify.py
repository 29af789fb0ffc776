"""``seaway bench notify`` at tiny sizes: it runs end to end (a server, a webhook, a nats-server),
and its figures are consistent with what it measured."""

from __future__ import annotations

import json

import pytest

from seaway.bench._notify import _split_events
from seaway.cli._main import main
from seaway.ledger import CHANGES
from seaway.notify import Nats, NotifyConfig, Webhook


def test_the_two_targets_split_every_operation_between_them_without_overlap() -> None:
    webhook, nats = _split_events()
    assert set(webhook) | set(nats) == set(CHANGES) and not set(webhook) & set(nats)
    a = NotifyConfig("a", Webhook("http://127.0.0.1:1/"), events=webhook)
    b = NotifyConfig("b", Nats("nats://127.0.0.1:1"), events=nats)
    assert not a.overlaps(b)


def test_bench_notify_prints_its_figures_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "notify", "--cycles", "3", "--rounds", "1", "--latency-entries", "10",
                 "--paced-ops-per-s", "40", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["benchmark"] == "notify" and figures["ops_per_cycle"] == 4
    off, on = figures["ops_per_s_off"], figures["ops_per_s_on"]
    assert off > 0 and on > 0
    # The rates are rounded to 0.1 and the slowdown to 0.001: on a loaded machine (a few ops/s), the
    # rates' rounding alone moves their ratio by more than any fixed tolerance.
    low, high = (off - 0.05) / (on + 0.05) - 1, (off + 0.05) / (on - 0.05) - 1
    assert low - 0.0005 <= figures["slowdown"] <= high + 0.0005, (figures["slowdown"], off, on)
    for target in ("webhook", "nats"):
        assert figures[f"{target}_entries"] >= 10
        p50, p99 = figures[f"{target}_latency_p50_ms"], figures[f"{target}_latency_p99_ms"]
        # Delivery is after the commit, and the plugins poll every 0.5 s: well under a minute.
        assert 0 <= p50 <= p99 < 60_000


def test_bench_notify_refuses_a_non_positive_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "notify", "--cycles", "0"]) == 2  # a usage error (INVALID_ARGUMENT)
    assert "--cycles" in capsys.readouterr().err
