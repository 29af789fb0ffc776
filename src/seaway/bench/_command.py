"""``seaway bench``: the benchmarks' arguments, and which benchmark each runs.

The command loads this package only when it runs a benchmark, so that every other command, and
``seaway --help``, starts without the benchmarks' modules.
"""

from __future__ import annotations

import argparse
from typing import Any

from seaway.bench._cli import run_cli_bench
from seaway.bench._cluster import ClusterBenchConfig, run_cluster_bench
from seaway.bench._log import LogBenchConfig, run_log_bench
from seaway.bench._logs import LogsBenchConfig, run_logs_bench
from seaway.bench._notify import add_notify_bench_parser, run_notify_bench_command
from seaway.bench._queue import QueueBenchConfig, run_queue_bench
from seaway.bench._remote import RemoteBenchConfig, run_remote_bench
from seaway.bench._spark import add_spark_bench_parser, run_spark_bench_command
from seaway.bench._stream import add_stream_bench_parsers, run_stream_bench_command
from seaway.bench._txn import TxnBenchConfig, run_txn_bench
from seaway.errors import InvalidArgumentError


def add_bench_parsers(bench: argparse.ArgumentParser) -> None:
    """Add one subcommand per benchmark to the ``bench`` command's parser."""
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    many = kinds.add_parser("logs", help="appends with 1, 1,000 and 10,000 logs; metadata batches, embedded and remote")
    many.add_argument("--rounds", type=int, default=2, help="runs of each log count; the best counts (default 2)")
    many.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    many.add_argument("--only", choices=["mux"],
                      help="run one part alone: mux, one remote reader over 1,000 logs against one over 1 log")
    log = kinds.add_parser("log", help="embedded log appends and catch-up reads against raw RocksDB")
    log.add_argument("--batches", type=int, default=200, help="batches of 500 1 KB records (default 200)")
    log.add_argument("--rounds", type=int, default=3, help="runs of each side; the best counts (default 3)")
    log.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    log.add_argument("--remote", action="store_true",
                     help="3 producer and 3 consumer processes against a server, beside the embedded figures")
    log.add_argument("--address", help="with --remote: use this server (seaway://host:port) instead of starting one")
    log.add_argument("--paced-events-per-s", type=int, default=20_000, help="with --remote: the paced run's rate")
    add_stream_bench_parsers(kinds)
    add_spark_bench_parser(kinds)
    add_notify_bench_parser(kinds)
    queue = kinds.add_parser("queue", help="the headline workload: 3 producers, 2 consumer groups (2 and 3 "
                                           "consumers), 1 KB entries in transactions of 500, exactly-once checked")
    queue.add_argument("--transactions", type=int, default=60,
                       help="transactions each producer commits at full speed (default 60)")
    queue.add_argument("--paced-events-per-s", type=int, default=20_000, help="the paced round's total rate")
    queue.add_argument("--paced-s", type=float, default=5.0, help="the paced round's length")
    queue.add_argument("--reference-batches", type=int, default=60,
                       help="batches of 500 per producer in the bench log --remote reference round")
    queue.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    txn = kinds.add_parser("txn", help="transactions (begin, one metadata put, commit) and metadata puts from "
                                       "32 clients through a server, against the disk's synced writes")
    txn.add_argument("--ops", type=int, default=200, help="transactions (and puts) each client makes (default 200)")
    txn.add_argument("--clients", type=int, default=32, help="client threads in all (default 32)")
    txn.add_argument("--processes", type=int, default=4, help="client processes they are spread over (default 4)")
    txn.add_argument("--rounds", type=int, default=2, help="runs of each kind; the best counts (default 2)")
    txn.add_argument("--address", help="use this server (seaway://host:port) instead of starting one")
    txn.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    cluster = kinds.add_parser("cluster", help="a replicated log through 3 nodes at R=2 against one server; "
                                               "write disruption when the sequencer's node is killed")
    cluster.add_argument("--clients", type=int, default=8, help="appending threads (default 8)")
    cluster.add_argument("--seconds", type=float, default=5.0, help="how long each side appends (default 5)")
    cluster.add_argument("--kills", type=int, default=10, help="SIGKILLs of the sequencer's node (default 10)")
    cluster.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    cli = kinds.add_parser("cli", help="the command's start: seaway --help and a one-record log append, against "
                                       "an empty interpreter")
    cli.add_argument("--runs", type=int, default=9, help="runs of each; the median wall time counts (default 9)")
    cli.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark ``args.bench`` names, with the arguments parsed by :func:`add_bench_parsers`;
    return its figures."""
    if args.bench == "log":
        if args.batches < 1 or args.rounds < 1 or args.paced_events_per_s < 1:
            raise InvalidArgumentError("--batches, --rounds and --paced-events-per-s must be at least 1")
        if args.remote:
            return run_remote_bench(RemoteBenchConfig(batches=args.batches, address=args.address,
                                                      paced_events_per_s=args.paced_events_per_s))
        return run_log_bench(LogBenchConfig(batches=args.batches, rounds=args.rounds))
    if args.bench in ("metadata", "stream"):
        return run_stream_bench_command(args)
    if args.bench == "spark":
        return run_spark_bench_command(args)
    if args.bench == "notify":
        return run_notify_bench_command(args)
    if args.bench == "queue":
        if min(args.transactions, args.paced_events_per_s, args.reference_batches) < 1 or not args.paced_s > 0:
            raise InvalidArgumentError("--transactions, --paced-events-per-s, --paced-s and --reference-batches "
                                       "must be positive")
        return run_queue_bench(QueueBenchConfig(transactions=args.transactions,
                                                paced_events_per_s=args.paced_events_per_s,
                                                paced_s=args.paced_s, reference_batches=args.reference_batches))
    if args.bench == "txn":
        if args.ops < 1 or args.clients < 1 or args.processes < 1 or args.rounds < 1:
            raise InvalidArgumentError("--ops, --clients, --processes and --rounds must be at least 1")
        return run_txn_bench(TxnBenchConfig(clients=args.clients, processes=args.processes, ops=args.ops,
                                            rounds=args.rounds, address=args.address))
    if args.bench == "cluster":
        if args.clients < 1 or args.kills < 1 or not args.seconds > 0:
            raise InvalidArgumentError("--clients and --kills must be at least 1, --seconds positive")
        return run_cluster_bench(ClusterBenchConfig(clients=args.clients, seconds=args.seconds, kills=args.kills))
    if args.bench == "cli":
        if args.runs < 1:
            raise InvalidArgumentError("--runs must be at least 1")
        return run_cli_bench(args.runs)
    if args.bench == "logs":
        if args.rounds < 1:
            raise InvalidArgumentError("--rounds must be at least 1")
        return run_logs_bench(LogsBenchConfig(rounds=args.rounds, only=args.only))
    raise InvalidArgumentError(f"no benchmark is called {args.bench!r}")
