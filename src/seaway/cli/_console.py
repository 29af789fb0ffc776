"""``seaway console``: the web console over a data directory (or a server), until SIGTERM or Ctrl-C.
Beside a server, ``seaway serve --console-listen`` serves it instead."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path
from typing import Any

from seaway.cli._store import check_store_dir


def add_console_parser(commands: Any) -> None:
    console = commands.add_parser(
        "console", help="serve the read-only web console over a data directory (or a server)",
        description="The web console (docs/console.md): streams and their scaling timeline, groups and their "
                    "lag, the change ledger, transactions, notification plugins, health. Read-only; behind "
                    "the token ($SEAWAY_TOKEN or --token-file) if one is set.")
    where = console.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path, help="a data directory, opened in this process")
    where.add_argument("--address", help="a server's URL, read as a client (seaway://host:port)")
    console.add_argument("--listen", default="127.0.0.1:7080", help="host:port (default 127.0.0.1:7080; port 0: any)")
    console.add_argument("--token-file", type=Path, help="file holding the token (or set SEAWAY_TOKEN)")
    console.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (needs --tls-key)")
    console.add_argument("--tls-key", type=Path)
    console.add_argument("--lag-sample-interval-s", type=float, default=5.0,
                         help="how often the lag chart samples every group's lag (default 5)")


def run_console(args: argparse.Namespace) -> None:
    import seaway  # noqa: PLC0415 - the store and the web server load only for this command
    from seaway.console import Console, ConsoleConfig  # noqa: PLC0415

    token = os.environ.get("SEAWAY_TOKEN") or None
    if args.token_file is not None:
        token = args.token_file.read_text().strip() or None
    config = ConsoleConfig(listen=args.listen, token=token, tls_cert=args.tls_cert, tls_key=args.tls_key,
                           lag_sample_interval_s=args.lag_sample_interval_s)
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    if args.data_dir is not None:
        check_store_dir(args.data_dir)  # only reads: a mistyped path is an error, not a new store
        store: Any = seaway.open(args.data_dir)
        where = f"embedded {args.data_dir}"
    else:
        store = seaway.connect(args.address, token=token)
        where = f"client of {args.address}"
    with store, Console(store, config, where=where) as console:
        print(f"console on {console.url}", flush=True)
        done.wait()
