"""``seaway bench metadata`` and ``seaway bench stream`` (and ``--segments``) at tiny sizes: every
figure is there, and is a positive number."""

from __future__ import annotations

import json
import numbers

from tests.cli.conftest import Cli


def _positive(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0


def test_bench_metadata_reports_every_query_at_every_history_length(cli: Cli) -> None:
    ran = cli("bench", "metadata", "--generations", "6,40", "--samples", "20", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    assert figures["generations"] == [6, 40]
    queries = figures["queries"]
    assert set(queries) == {"current_segments", "segments_at", "successors", "predecessors", "segments_between",
                            "size_until", "cut_at_time", "cut_at_size", "generation_at"}
    for query in queries.values():
        assert set(query["p50_us"]) == {"6", "40"}
        assert all(_positive(v) for v in query["p50_us"].values())
        assert abs(query["ratio"] - query["p50_us"]["40"] / query["p50_us"]["6"]) < 0.01
    assert figures["worst_query_ratio"] == max(q["ratio"] for q in queries.values()) > 0
    assert queries[figures["worst_query"]]["ratio"] == figures["worst_query_ratio"]


def test_bench_metadata_reports_a_comparison_of_cuts_far_apart_against_near_ones(cli: Cli) -> None:
    ran = cli("bench", "metadata", "--generations", "6,300", "--far", "200", "--samples", "20", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    far = figures["far"]
    assert far["generations_apart"] == {"6": 6, "300": 200}
    for g in ("6", "300"):
        near_us, far_us = far["compare_near_p50_us"][g], far["compare_far_p50_us"][g]
        assert _positive(near_us) and _positive(far_us)
        assert abs(far["ratio"][g] - far_us / near_us) < 0.01
    assert figures["far_ratio"] == far["ratio"]["300"]
    assert figures["targets"]["far_ratio"] == 2.0
    # The cuts 200 generations apart are checked from their segments' records alone, not from the
    # 200 deltas between: noise aside, no slower than cuts 4 apart (reading those deltas made it
    # about 10 times slower).
    assert figures["far_ratio"] < 4


def test_bench_stream_reports_write_and_read_ratios_embedded_and_remote(cli: Cli) -> None:
    ran = cli("bench", "stream", "--events", "2000", "--segments-counts", "1,64", "--rounds", "1", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    for mode in ("embedded", "remote"):
        for n in (1, 64):
            for key in (f"{mode}_ratio_{n}", f"{mode}_read_ratio_{n}", f"{mode}_log_write_per_s_{n}",
                        f"{mode}_stream_write_per_s_{n}", f"{mode}_log_read_per_s_{n}",
                        f"{mode}_stream_read_per_s_{n}"):
                assert _positive(figures[key]), key
            expected = figures[f"{mode}_stream_write_per_s_{n}"] / figures[f"{mode}_log_write_per_s_{n}"]
            assert abs(figures[f"{mode}_ratio_{n}"] - expected) < 0.01 * expected + 0.002
    for n in (1, 64):  # transactions: embedded (the remote client has none in this branch yet)
        assert _positive(figures[f"embedded_txn_write_per_s_{n}"])
        expected = figures[f"embedded_txn_write_per_s_{n}"] / figures[f"embedded_stream_write_per_s_{n}"]
        assert abs(figures[f"embedded_txn_ratio_{n}"] - expected) < 0.01 * expected + 0.002


def test_bench_stream_segments_reports_scale_and_delete_times(cli: Cli) -> None:
    ran = cli("bench", "stream", "--segments", "--scales", "20", "--remote-scales", "6", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    for mode, scales in (("embedded", 20), ("remote", 6)):
        assert figures[f"{mode}_scales"] == scales
        assert figures[f"{mode}_segments_made"] == scales // 2 * 3  # a split makes 2, a merge 1
        for key in ("scale_ms", "scales_s", "delete_stream_s", "log_create_ms", "log_delete_s",
                    "scale_over_log_creates"):
            assert _positive(figures[f"{mode}_{key}"]), key


def test_bench_options_are_checked(cli: Cli) -> None:
    assert cli("bench", "metadata", "--generations", "10").status == 2  # usage errors (INVALID_ARGUMENT)
    assert cli("bench", "stream", "--events", "150", "--batch-events", "100").status == 2
