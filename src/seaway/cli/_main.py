"""The ``seaway`` command: argument parsing, one line per error, a non-zero status on failure."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seaway._errors import SeawayError
from seaway.cli._bench_log import LogBenchConfig, run_log_bench
from seaway.cli._demo import run_demo


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seaway", description="Durable, ordered event storage.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="write, trim and read logs in a local data directory")
    demo.add_argument("--data-dir", type=Path, default=Path(".seaway-demo"))

    bench = commands.add_parser("bench", help="measure throughput against a reference in the same run")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    log = kinds.add_parser("log", help="embedded log appends and catch-up reads against raw RocksDB")
    log.add_argument("--batches", type=int, default=200, help="batches of 500 1 KB records (default 200)")
    log.add_argument("--rounds", type=int, default=3, help="runs of each side; the best counts (default 3)")
    log.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    return parser


def _print_figures(figures: dict[str, Any]) -> None:
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


def _bench_log(args: argparse.Namespace) -> None:
    if args.batches < 1 or args.rounds < 1:
        raise SystemExit("seaway: error: --batches and --rounds must be at least 1")
    figures = run_log_bench(LogBenchConfig(batches=args.batches, rounds=args.rounds))
    if args.json:
        print(json.dumps(figures))
    else:
        _print_figures(figures)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            run_demo(args.data_dir)
        elif args.command == "bench" and args.bench == "log":
            _bench_log(args)
    except SeawayError as exc:
        print(f"seaway: error: {exc} [{exc.code}]", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
