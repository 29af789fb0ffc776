"""The ``seaway`` command: argument parsing, one line per error, a non-zero status on failure."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seaway.cli._console import add_console_parser, run_console
from seaway.cli._demo import add_demo_parser, run_demo_command
from seaway.cli._lsn import parse_lsn
from seaway.cli._meta import add_meta_parser, run_meta
from seaway.cli._notify import add_notify_parser, run_notify
from seaway.cli._queues import add_queue_parsers, run_queue
from seaway.cli._store import open_store, out, where_parser
from seaway.cli._streams import add_stream_parsers, run_reader_group, run_scope, run_stream
from seaway.cli._txn import add_txn_parser, run_txn
from seaway.errors import SeawayError
from seaway.log import LSN_MAX, Gap, ReadItem, Record, lsn_str

_LSN_HELP = "e<epoch>n<esn> as printed, a decimal integer, or 0x hex"
_LSN_ARGUMENTS = ("lsn_from", "lsn", "if_tail")
"""Where ``log`` operations keep the LSNs they are given, as text."""
_READ_ONLY_OPS = ("tail", "find-time", "info")
"""``log`` operations that only read: they refuse a data directory that is not a store."""


def _parser(*, with_benchmarks: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seaway", description="Durable, ordered event storage.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_demo_parser(commands)

    srv = commands.add_parser("serve", help="serve a data directory over gRPC until SIGTERM")
    srv.add_argument("--data-dir", type=Path, required=True)
    srv.add_argument("--listen", default="127.0.0.1:7070", help="host:port (default 127.0.0.1:7070; port 0: any)")
    srv.add_argument("--metrics-listen",
                     help="port, or host:port, for Prometheus /metrics (default: off; a port alone: on 127.0.0.1)")
    srv.add_argument("--metrics-beyond-loopback", action="store_true",
                     help="let /metrics (which has no token) listen beyond loopback")
    srv.add_argument("--tls-cert", type=Path)
    srv.add_argument("--tls-key", type=Path)
    srv.add_argument("--token-file", type=Path, help="file holding the shared secret (or set SEAWAY_TOKEN)")
    srv.add_argument("--notify-file-dir", type=Path,
                     help="the directory notification file targets write under (default: file targets refused)")
    srv.add_argument("--notify-private-addresses", action="store_true",
                     help="let webhooks reach loopback, private and link-local addresses (default: refused)")
    srv.add_argument("--console-listen", metavar="HOST:PORT", help="serve the web console there (default: off)")
    add_console_parser(commands)

    bench = commands.add_parser("bench", help="measure throughput against a reference in the same run")
    if with_benchmarks:  # their modules load only for `seaway bench`: every other command starts without them
        from seaway.bench import add_bench_parsers  # noqa: PLC0415

        add_bench_parsers(bench)

    logs = commands.add_parser("log", help="append, tail, trim, find-time, info, create, create-group, seal, delete",
                               description=f"LSNs are given as {_LSN_HELP}, and printed as e<epoch>n<esn>.")
    ops = logs.add_subparsers(dest="op", required=True, metavar="OPERATION")
    common = where_parser()
    create = ops.add_parser("create", parents=[common], help="create a log")
    create.add_argument("log")
    create.add_argument("--backlog-s", type=float)
    create.add_argument("--group", help="a log group to take the id from, and the attributes")
    group = ops.add_parser("create-group", parents=[common], help="create a named range of log ids")
    group.add_argument("group")
    group.add_argument("first_id", type=int)
    group.add_argument("last_id", type=int)
    group.add_argument("--backlog-s", type=float)
    append = ops.add_parser("append", parents=[common], help="append payloads (arguments, or lines of stdin)")
    append.add_argument("log")
    append.add_argument("payloads", nargs="*")
    append.add_argument("--if-tail", metavar="LSN",
                        help=f"append only if the log's last LSN is this one ({_LSN_HELP}; 0: the log is empty)")
    tail = ops.add_parser("tail", parents=[common], help="print records and gaps")
    tail.add_argument("log")
    tail.add_argument("--from", dest="lsn_from", default="1", metavar="LSN", help=f"{_LSN_HELP} (default 1)")
    tail.add_argument("--follow", action="store_true", help="keep waiting for new records")
    trim = ops.add_parser("trim", parents=[common], help="trim a log up to and including an LSN")
    trim.add_argument("log")
    trim.add_argument("lsn", help=_LSN_HELP)
    find = ops.add_parser("find-time", parents=[common], help="first LSN at or after a time (ms since 1970)")
    find.add_argument("log")
    find.add_argument("timestamp_ms", type=int)
    seal = ops.add_parser("seal", parents=[common], help="seal a log for good (no more appends); print its final LSN")
    seal.add_argument("log")
    delete = ops.add_parser("delete", parents=[common], help="delete a log and its records (its id is never reused)")
    delete.add_argument("log")
    info = ops.add_parser("info", parents=[common], help="logs and their state")
    info.add_argument("log", nargs="?")
    add_meta_parser(commands, common)
    add_stream_parsers(commands, common)
    add_queue_parsers(commands, common)
    add_txn_parser(commands, common)
    add_notify_parser(commands, common)
    return parser


def _print_figures(figures: dict[str, Any]) -> None:
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


def _serve(args: argparse.Namespace) -> None:
    from seaway import SeawayConfig  # noqa: PLC0415 - gRPC and the store load only to serve
    from seaway.notify import NotifyServiceConfig, TargetPolicy  # noqa: PLC0415
    from seaway.server import ServerConfig, serve  # noqa: PLC0415

    token = os.environ.get("SEAWAY_TOKEN") or None
    if args.token_file is not None:
        token = args.token_file.read_text().strip() or None
    targets = TargetPolicy(file_dir=args.notify_file_dir, private_addresses_ok=args.notify_private_addresses)
    serve(ServerConfig(data_dir=args.data_dir, listen=args.listen, token=token, tls_cert=args.tls_cert,
                       tls_key=args.tls_key, metrics_listen=args.metrics_listen,
                       metrics_beyond_loopback=args.metrics_beyond_loopback,
                       store=SeawayConfig(notify=NotifyServiceConfig(targets=targets)),
                       console_listen=args.console_listen))


def _item_json(item: ReadItem) -> dict[str, Any]:
    if isinstance(item, Record):
        try:
            payload: Any = item.payload.decode()
        except UnicodeDecodeError:
            payload = {"hex": item.payload.hex()}
        return {"lsn": item.lsn, "lsn_str": lsn_str(item.lsn), "timestamp_ms": item.timestamp_ms, "payload": payload}
    gap: Gap = item
    return {"gap": gap.type.value, "lsn_lo": gap.lsn_lo, "lsn_hi": gap.lsn_hi,
            "lsn_lo_str": lsn_str(gap.lsn_lo), "lsn_hi_str": lsn_str(gap.lsn_hi)}


def _item_text(item: ReadItem) -> str:
    if isinstance(item, Record):
        return f"{lsn_str(item.lsn)}\t{item.timestamp_ms}\t{item.payload.decode(errors='replace')}"
    return f"{item.type.value} gap {lsn_str(item.lsn_lo)}..{lsn_str(item.lsn_hi)}"


def _log_command(args: argparse.Namespace) -> None:
    """Carry out ``args.op``. LSNs in JSON are integers, each with its ``e<epoch>n<esn>`` beside it
    (under the same name with ``_str`` appended)."""
    # LSN arguments are parsed here, not by argparse, so a bad one is one line like any other error;
    # and before the store opens, so that it is refused before anything is created.
    given = {name: parse_lsn(getattr(args, name)) for name in _LSN_ARGUMENTS if getattr(args, name, None) is not None}
    with open_store(args, writes=args.op not in _READ_ONLY_OPS) as sw:
        if args.op == "create":
            log = sw.logs.create(args.log, group=args.group,
                                 **({"backlog_s": args.backlog_s} if args.backlog_s else {}))
            out(args, {"name": log.name, "log_id": log.id}, f"created {log.name} (id {log.id})")
        elif args.op == "create-group":
            made = sw.logs.create_group(args.group, args.first_id, args.last_id,
                                        **({"backlog_s": args.backlog_s} if args.backlog_s else {}))
            out(args, {"group": made.name, "first_id": made.first_id, "last_id": made.last_id},
                f"created group {made.name} (ids {made.first_id}-{made.last_id})")
        elif args.op == "append":
            log = sw.logs.get(args.log)
            payloads = [p.encode() for p in args.payloads] or [line.rstrip("\n").encode() for line in sys.stdin]
            lsns = log.append_batch(payloads, if_tail=given.get("if_tail"))
            out(args, {"first_lsn": lsns[0], "first_lsn_str": lsn_str(lsns[0]), "last_lsn": lsns[-1],
                       "last_lsn_str": lsn_str(lsns[-1]), "count": len(lsns)},
                f"appended {len(lsns)} records at {lsn_str(lsns[0])}..{lsn_str(lsns[-1])}")
        elif args.op == "tail":
            log = sw.logs.get(args.log)
            for item in log.read(given["lsn_from"], LSN_MAX if args.follow else None):
                print(json.dumps(_item_json(item)) if args.json else _item_text(item), flush=args.follow)
        elif args.op == "trim":
            lsn = given["lsn"]
            sw.logs.get(args.log).trim(lsn)
            out(args, {"trimmed_to": lsn, "trimmed_to_str": lsn_str(lsn)}, f"trimmed {args.log} up to {lsn_str(lsn)}")
        elif args.op == "seal":
            final = sw.logs.get(args.log).seal()
            out(args, {"final_lsn": final, "final_lsn_str": lsn_str(final)},
                f"sealed {args.log}: its final LSN is {lsn_str(final)}")
        elif args.op == "delete":
            doomed = sw.logs.get(args.log)
            sw.logs.delete(doomed)
            out(args, {"deleted": doomed.name, "log_id": doomed.id}, f"deleted {doomed.name} (id {doomed.id})")
        elif args.op == "find-time":
            found = sw.logs.get(args.log).find_time(args.timestamp_ms)
            out(args, {"lsn": found, "lsn_str": lsn_str(found)}, lsn_str(found))
        elif args.op == "info":
            logs = [sw.logs.get(args.log)] if args.log else sw.logs.list()
            rows = [_info_row(log) for log in logs]
            if args.json:
                print(json.dumps(rows))
            else:
                for row in rows:
                    sealed = "\tsealed" if row["final_lsn"] is not None else ""
                    print(f"{row['name']}\tid {row['log_id']}\ttail {row['tail_lsn_str']}\t"
                          f"trimmed to {row['trim_point_str']}\t{row['data_size']} bytes{sealed}")


def _info_row(log: Any) -> dict[str, Any]:
    tail, trim_point = log.tail_lsn(), log.trim_point()
    return {"name": log.name, "log_id": log.id, "group": log.info.group, "tail_lsn": tail,
            "tail_lsn_str": lsn_str(tail), "trim_point": trim_point, "trim_point_str": lsn_str(trim_point),
            "data_size": log.data_size(), "backlog_s": log.attributes.backlog_s, "final_lsn": log.final_lsn()}


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(with_benchmarks=argv[:1] == ["bench"]).parse_args(argv)
    try:
        if args.command == "demo":
            run_demo_command(args)
        elif args.command == "serve":
            _serve(args)
        elif args.command == "console":
            run_console(args)
        elif args.command == "bench":
            from seaway.bench import run_bench  # noqa: PLC0415 - loaded only for `seaway bench`

            figures = run_bench(args)
            print(json.dumps(figures)) if args.json else _print_figures(figures)
        elif args.command == "log":
            _log_command(args)
        elif args.command == "meta":
            return run_meta(args)
        elif args.command == "scope":
            run_scope(args)
        elif args.command == "stream":
            run_stream(args)
        elif args.command == "reader-group":
            run_reader_group(args)
        elif args.command == "queue":
            run_queue(args)
        elif args.command == "txn":
            run_txn(args)
        elif args.command == "notify":
            run_notify(args)
    except SeawayError as exc:
        print(f"seaway: error: {exc} [{exc.code}]", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"seaway: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
