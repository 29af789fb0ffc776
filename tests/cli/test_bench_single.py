"""The one-event-per-call benchmark measures every way on both sides and reports their ratios."""

from __future__ import annotations

from pathlib import Path

from seaway.bench._single import SingleBenchConfig, run_single_bench


def test_single_event_bench_reports_rates_and_ratios(tmp_path: Path) -> None:
    figures = run_single_bench(SingleBenchConfig(events=2_000, batch_events=100, rounds=1), tmp_path)
    for side in ("embedded", "remote"):
        rates = [figures[f"batch100_events_per_s_{side}"], figures[f"single_event_async_per_s_{side}"],
                 figures[f"single_event_writer_per_s_{side}"]]
        assert all(rate > 0 for rate in rates)
        async_ratio = figures[f"single_event_async_ratio_{side}"]
        writer_ratio = figures[f"single_event_writer_ratio_{side}"]
        assert abs(async_ratio - rates[1] / rates[0]) < 0.01
        assert figures[f"single_event_ratio_{side}"] == min(async_ratio, writer_ratio)
