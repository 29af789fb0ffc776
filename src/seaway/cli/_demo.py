"""``seaway demo``: the access-log analytics pipeline (seaway.demo) with a progress line and a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from seaway._progress import Progress
from seaway.errors import InvalidArgumentError

_SHORT = {"parse": "parse", "dead-letters": "dead", "page-counts": "pages", "unique-users": "users"}

_DESCRIPTION = """\
Runs the access-log analytics pipeline of CDAP's queue design on Seaway and Spark:

  generator -> demo/access -> Spark "parse" -> queue demo.pageviews -> group page-counts (HASH page, 3)
                          \\-> Spark "dead-letters" -> demo/dead-letters   \\-> group unique-users (HASH user, 2)

A generator writes synthetic web-server access log lines (a few percent deliberately malformed) at
--rate lines a second for --duration-s seconds; Spark queries parse them, send malformed lines to a
dead-letter stream, and count views per page and exact unique users per 10 s window of the lines'
own time, each exactly once, into the streams demo/page-counts and demo/unique-users. Then the
pipeline is drained and the command prints the top pages, the unique users per window and the
dead-letter count.

Unless --address names a running server, it starts `seaway serve` over DATA_DIR/store (Spark's
workers are other processes: they reach the store through a server) and stops it at the end.
Spark's checkpoints live in DATA_DIR/checkpoints: run the command again and the pipeline resumes
where it stopped (counts go on, nothing is counted twice). Keep one data directory per server.
Needs the spark extra (pip install 'seaway[spark]') and Java 17.
"""


def add_demo_parser(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the access-log analytics pipeline (generator, Spark, queues)",
                               description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--data-dir", type=Path, default=Path(".seaway-demo"),
                      help="the store (unless --address), checkpoints and generator state (default .seaway-demo)")
    demo.add_argument("--duration-s", type=float, default=30.0, help="how long to generate (default 30)")
    demo.add_argument("--rate", type=float, default=200.0, help="lines generated a second (default 200)")
    demo.add_argument("--address", help="seaway://host:port of a running server to use instead of starting one")
    demo.add_argument("--seed", type=int, default=1,
                      help="the generator's seed: the same seed and data gives the same lines (default 1)")


def run_demo_command(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
    try:
        # Imported here: the other commands work without pyspark, which only this one needs.
        from seaway.demo.run import DemoConfig, DemoStatus, run_demo  # noqa: PLC0415
        from seaway.spark import session  # noqa: PLC0415
    except ImportError as exc:
        raise InvalidArgumentError(f"seaway demo needs the spark extra: pip install 'seaway[spark]' ({exc})") from None
    config = DemoConfig(data_dir=args.data_dir, duration_s=args.duration_s, rate_per_s=args.rate, seed=args.seed,
                        address=args.address)
    where = f"the server at {config.address}" if config.address else f"a local server over {args.data_dir / 'store'}"
    print(f"seaway demo: generating for {config.duration_s:g} s at {config.rate_per_s:g} lines/s into {where}",
          file=out, flush=True)
    ticks = max(1, int(config.duration_s * 10))
    phases: list[str] = []

    with Progress(ticks, "starting a server", stream=err) as bar:
        def show(status: DemoStatus) -> None:
            if not phases or phases[-1] != status.phase:
                phases.append(status.phase)
                if not bar.enabled:  # no progress line (not a terminal): say each phase once
                    print(f"  {status.phase} ({status.elapsed_s:.0f} s)", file=out, flush=True)
            stats = status.queries
            parsed = stats["parse"].input_rows if "parse" in stats else 0
            batches = " ".join(f"{_SHORT[name]} {s.batches}" for name, s in stats.items())
            label = f"{status.phase}: {status.generated} written, {parsed} parsed"
            label += f"; batches {batches}" if batches else " (Spark starting)"
            done = ticks if status.phase != "generating" else \
                min(ticks, int(status.generated / config.rate_per_s * 10))
            bar.advance(done - bar.done, label)

        result = run_demo(config, lambda: session("seaway-demo"), show)
    for line in result.report.lines(result.generated_now, result.generated_total):
        print(line, file=out)
    print(f"run {result.runs} over {args.data_dir}: run `seaway demo` again to go on from here", file=out, flush=True)
