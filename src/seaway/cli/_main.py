"""The ``seaway`` command: argument parsing, one line per error, an exit status that says what happened.

Every command module loads what it needs when it runs, not when the parser is built: ``seaway --help``
and a one-record ``log append`` start without gRPC, Spark or the parts of the store they do not use.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from seaway.cli._cluster import add_cluster_parser, add_serve_cluster_options, run_cluster, serve_cluster
from seaway.cli._console import add_console_parser, run_console
from seaway.cli._demo import add_demo_parser, run_demo_command
from seaway.cli._lsn import LSN_HELP
from seaway.cli._meta import add_meta_parser, run_meta
from seaway.cli._notify import add_notify_parser, run_notify
from seaway.cli._queues import add_queue_parsers, run_queue
from seaway.cli._spark import add_spark_parser, run_spark
from seaway.cli._store import (
    EXIT_ABSENT,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    arg_bytes,
    bytes_json,
    open_store,
    out,
    parse_time,
    plural,
    stdin_lines,
    text_of,
    time_text,
    where_parser,
)
from seaway.cli._streams import add_stream_parsers, run_reader_group, run_scope, run_stream
from seaway.cli._txn import add_txn_parser, run_txn
from seaway.errors import InvalidArgumentError, SeawayError, TransportError

if TYPE_CHECKING:
    from seaway.log import ReadItem

_LSN_ARGUMENTS = ("lsn_from", "lsn", "if_tail")
"""Where ``log`` operations keep the LSNs they are given, as text."""
_READ_ONLY_OPS = ("tail", "find-time", "info", "list")
"""``log`` operations that only read: they refuse a data directory that is not a store."""
INTERNAL_LOG_GROUPS = ("streams.segments", "queues.partitions")
"""The log groups the store keeps for streams' segments and queues' partitions: ``log list`` hides
their logs (and the store's own, named ``seaway.*``) unless ``--all``."""


class _Parser(argparse.ArgumentParser):
    """A parser whose commands take options anywhere among their arguments (``log append clicks --json
    x``): a parser without subcommands parses intermixed (``parse_known_intermixed_args``)."""

    _intermixing = False
    json_errors = False
    """Whether a usage error is printed as JSON (the command line asked for ``--json``)."""

    def error(self, message: str) -> NoReturn:
        if not self.json_errors:
            super().error(message)
        print(json.dumps({"error": f"{self.prog}: {message}", "code": "USAGE", "retriable": False}), file=sys.stderr)
        sys.exit(EXIT_USAGE)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        if self._subparsers is not None or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # parse_known_intermixed_args calls back here, twice
        try:
            return super().parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _parser(*, with_benchmarks: bool) -> argparse.ArgumentParser:
    from seaway import __version__  # noqa: PLC0415 - light: the package loads its names on first use

    parser = _Parser(prog="seaway", description="Durable, ordered event storage.", epilog=EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=f"seaway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_demo_parser(commands)

    srv = commands.add_parser("serve", help="serve a data directory over gRPC until SIGTERM", epilog=EXIT_CODES_HELP)
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
    add_serve_cluster_options(srv)
    add_console_parser(commands)
    add_cluster_parser(commands)

    bench = commands.add_parser("bench", help="measure throughput against a reference in the same run")
    if with_benchmarks:  # their modules load only for `seaway bench`: every other command starts without them
        from seaway.bench import add_bench_parsers  # noqa: PLC0415

        add_bench_parsers(bench)

    logs = commands.add_parser("log", help="list, append, tail, trim, find-time, info, create, create-group, seal, "
                                           "delete",
                               description=f"LSNs are given as {LSN_HELP}, and printed as e<epoch>n<esn>.",
                               epilog=EXIT_CODES_HELP)
    ops: Any = logs.add_subparsers(dest="op", required=True, metavar="OPERATION")
    common = where_parser()
    listing = ops.add_parser("list", parents=[common], help="the logs, by name (internal ones with --all)")
    listing.add_argument("--all", action="store_true",
                         help="also the logs the store keeps for streams, queues and transactions")
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
                        help=f"append only if the log's last LSN is this one ({LSN_HELP}; 0: the log is empty)")
    tail = ops.add_parser("tail", parents=[common], help="print records (LSN, time, payload) and gaps")
    tail.add_argument("log")
    tail.add_argument("--from", dest="lsn_from", default="1", metavar="LSN", help=f"{LSN_HELP} (default 1)")
    tail.add_argument("--limit", type=int, help="stop after this many records")
    tail.add_argument("--follow", action="store_true", help="keep waiting for new records")
    tail.add_argument("--bridges", action="store_true",
                      help="also print BRIDGE gaps (where one epoch ends and the next begins: no record was ever "
                           "there, so they are left out by default); other gaps are always printed")
    trim = ops.add_parser("trim", parents=[common], help="trim a log up to and including an LSN")
    trim.add_argument("log")
    trim.add_argument("lsn", help=LSN_HELP)
    find = ops.add_parser("find-time", parents=[common], help="the first LSN at or after a time")
    find.add_argument("log")
    find.add_argument("time", help="ISO 8601 (2026-11-27T04:30:00Z; UTC if no zone) or milliseconds since 1970")
    seal = ops.add_parser("seal", parents=[common], help="seal a log for good (no more appends); print its final LSN")
    seal.add_argument("log")
    delete = ops.add_parser("delete", parents=[common], help="delete a log and its records (its id is never reused)")
    delete.add_argument("log")
    info = ops.add_parser("info", parents=[common], help="a log's state, or every log's (internal ones with --all)")
    info.add_argument("log", nargs="?")
    info.add_argument("--all", action="store_true",
                      help="also the logs the store keeps for streams, queues and transactions")
    add_meta_parser(commands, common)
    add_stream_parsers(commands, common)
    add_queue_parsers(commands, common)
    add_txn_parser(commands, common)
    add_spark_parser(commands, common)
    add_notify_parser(commands, common)
    return parser


def _print_figures(figures: dict[str, Any]) -> None:
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


def check_port_free(listen: str) -> None:
    """:class:`OSError` saying so if ``listen`` (host:port) is taken: checked before ``serve`` creates
    anything, so that a used port leaves no new data directory behind and no raw gRPC line."""
    host, _, port_text = listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    if not port_text.isdigit() or int(port_text) == 0:
        return  # the server says what is wrong with it; port 0 is always free
    try:
        infos = socket.getaddrinfo(host, int(port_text), type=socket.SOCK_STREAM)
    except OSError:
        return  # the server says what is wrong with the host
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as exc:
            raise OSError(f"cannot listen on {listen}: {exc.strerror or exc} (is another server running there?)") \
                from None


def _serve(args: argparse.Namespace) -> None:
    if args.cluster:
        serve_cluster(args)
        return
    from seaway import SeawayConfig  # noqa: PLC0415 - gRPC and the store load only to serve
    from seaway.notify import NotifyServiceConfig, TargetPolicy  # noqa: PLC0415
    from seaway.server import ServerConfig, serve  # noqa: PLC0415
    from seaway.spark import SparkLagCollector  # noqa: PLC0415 - no PySpark: the sources' lag from metadata

    token = os.environ.get("SEAWAY_TOKEN") or None
    if args.token_file is not None:
        token = args.token_file.read_text().strip() or None
    check_port_free(args.listen)
    if args.console_listen:
        check_port_free(args.console_listen)
    targets = TargetPolicy(file_dir=args.notify_file_dir, private_addresses_ok=args.notify_private_addresses)
    serve(ServerConfig(data_dir=args.data_dir, listen=args.listen, token=token, tls_cert=args.tls_cert,
                       tls_key=args.tls_key, metrics_listen=args.metrics_listen,
                       metrics_beyond_loopback=args.metrics_beyond_loopback,
                       store=SeawayConfig(notify=NotifyServiceConfig(targets=targets)),
                       console_listen=args.console_listen, collectors=(SparkLagCollector,)))


def _item_json(item: ReadItem) -> dict[str, Any]:
    from seaway.log import Record, lsn_str  # noqa: PLC0415

    if isinstance(item, Record):
        return {"lsn": item.lsn, "lsn_str": lsn_str(item.lsn), "time": time_text(item.timestamp_ms),
                "timestamp_ms": item.timestamp_ms, "payload": bytes_json(item.payload)}
    return {"gap": item.type.value, "lsn_lo": item.lsn_lo, "lsn_hi": item.lsn_hi,
            "lsn_lo_str": lsn_str(item.lsn_lo), "lsn_hi_str": lsn_str(item.lsn_hi)}


def _item_text(item: ReadItem) -> str:
    from seaway.log import Record, lsn_str  # noqa: PLC0415

    if isinstance(item, Record):
        return f"{lsn_str(item.lsn)}\t{time_text(item.timestamp_ms)}\t{text_of(item.payload)}"
    return f"{item.type.value} gap {lsn_str(item.lsn_lo)}..{lsn_str(item.lsn_hi)}"


def _log_command(args: argparse.Namespace) -> None:
    """Carry out ``args.op``. LSNs in JSON are integers, each with its ``e<epoch>n<esn>`` beside it
    (under the same name with ``_str`` appended)."""
    named: list[Any] = []  # the log the operation got, to name it in errors
    try:
        _log_op(args, named)
    except SeawayError as exc:
        if named:
            _name_the_log(exc, named[0])
        raise


def _name_the_log(exc: SeawayError, log: Any) -> None:
    """Let an error of the layers below, which know a log by its id only (``log 7: ...``), name it
    as the user did: ``log 'clicks' (id 7): ...``."""
    by_id = f"log {log.id}"
    text = exc.args[0] if exc.args else None
    if isinstance(text, str) and text.startswith((by_id + " ", by_id + ":")):
        exc.args = (f"log {log.name!r} (id {log.id})" + text[len(by_id):], *exc.args[1:])


def _log_op(args: argparse.Namespace, named: list[Any]) -> None:
    from seaway.cli._lsn import parse_lsn  # noqa: PLC0415
    from seaway.log import LSN_MAX, GapType, Record, lsn_str  # noqa: PLC0415

    # LSN arguments are parsed here, not by argparse, so a bad one is one line like any other error;
    # and before the store opens, so that it is refused before anything is created.
    given = {name: parse_lsn(getattr(args, name)) for name in _LSN_ARGUMENTS if getattr(args, name, None) is not None}
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise InvalidArgumentError(f"--limit is at least 1, got {limit}")
    at_ms = parse_time(args.time) if args.op == "find-time" else None
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
            named.append(log)
            payloads = [arg_bytes(p) for p in args.payloads] or stdin_lines()
            if not payloads:  # an empty standard input: nothing to do, as stream write and queue enqueue
                out(args, {"log": log.name, "count": 0}, f"appended 0 records to {log.name}")
                return
            lsns = log.append_batch(payloads, if_tail=given.get("if_tail"))
            out(args, {"log": log.name, "first_lsn": lsns[0], "first_lsn_str": lsn_str(lsns[0]), "last_lsn": lsns[-1],
                       "last_lsn_str": lsn_str(lsns[-1]), "count": len(lsns)},
                f"appended {plural(len(lsns), 'record')} to {log.name} at {lsn_str(lsns[0])}..{lsn_str(lsns[-1])}")
        elif args.op == "tail":
            log = sw.logs.get(args.log)
            named.append(log)
            printed = 0
            for item in log.read(given["lsn_from"], LSN_MAX if args.follow else None):
                if not args.bridges and not isinstance(item, Record) and item.type is GapType.BRIDGE:
                    continue
                print(json.dumps(_item_json(item)) if args.json else _item_text(item), flush=args.follow)
                printed += isinstance(item, Record)
                if limit is not None and printed >= limit:
                    break
        elif args.op == "trim":
            lsn = given["lsn"]
            log = sw.logs.get(args.log)
            named.append(log)
            log.trim(lsn)
            out(args, {"log": log.name, "trimmed_to": lsn, "trimmed_to_str": lsn_str(lsn)},
                f"trimmed {log.name} up to {lsn_str(lsn)}")
        elif args.op == "seal":
            log = sw.logs.get(args.log)
            named.append(log)
            final = log.seal()
            out(args, {"log": log.name, "final_lsn": final, "final_lsn_str": lsn_str(final)},
                f"sealed {log.name}: its final LSN is {lsn_str(final)}")
        elif args.op == "delete":
            doomed = sw.logs.get(args.log)
            named.append(doomed)
            sw.logs.delete(doomed)
            out(args, {"deleted": doomed.name, "log_id": doomed.id}, f"deleted {doomed.name} (id {doomed.id})")
        elif args.op == "find-time":
            assert at_ms is not None
            found = sw.logs.get(args.log).find_time(at_ms)
            out(args, {"lsn": found, "lsn_str": lsn_str(found), "time": time_text(at_ms)}, lsn_str(found))
        elif args.op == "list":
            names = sorted(log.name for log in sw.logs.list() if args.all or not _internal(log))
            out(args, names, "\n".join(text_of(n) for n in names))
        elif args.op == "info":
            logs = [sw.logs.get(args.log)] if args.log else [log for log in sw.logs.list()
                                                             if args.all or not _internal(log)]
            rows = [_info_row(log) for log in logs]
            if args.json:
                print(json.dumps(rows))
            else:
                for row in rows:
                    sealed = "\tsealed" if row["final_lsn"] is not None else ""
                    print(f"{text_of(row['name'])}\tid {row['log_id']}\ttail {row['tail_lsn_str']}\t"
                          f"trimmed to {row['trim_point_str']}\t{row['data_size']} bytes{sealed}")


def _internal(log: Any) -> bool:
    return bool(log.name.startswith("seaway.") or log.info.group in INTERNAL_LOG_GROUPS)


def _info_row(log: Any) -> dict[str, Any]:
    from seaway.log import lsn_str  # noqa: PLC0415

    tail, trim_point = log.tail_lsn(), log.trim_point()
    return {"name": log.name, "log_id": log.id, "group": log.info.group, "tail_lsn": tail,
            "tail_lsn_str": lsn_str(tail), "trim_point": trim_point, "trim_point_str": lsn_str(trim_point),
            "data_size": log.data_size(), "backlog_s": log.attributes.backlog_s, "final_lsn": log.final_lsn(),
            "internal": _internal(log)}


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        run_demo_command(args)
    elif args.command == "serve":
        _serve(args)
    elif args.command == "console":
        run_console(args)
    elif args.command == "cluster":
        run_cluster(args)
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
        return run_queue(args)
    elif args.command == "txn":
        run_txn(args)
    elif args.command == "spark":
        run_spark(args)
    elif args.command == "notify":
        run_notify(args)
    return EXIT_OK


def exit_status(exc: SeawayError) -> int:
    """The exit status of a failure: absent (every ``Unknown...Error`` is a ``KeyError``), unavailable
    (the connection failed), usage (a value the command or the store finds invalid), else failed."""
    if isinstance(exc, KeyError):
        return EXIT_ABSENT
    if isinstance(exc, TransportError):
        return EXIT_UNAVAILABLE
    if isinstance(exc, InvalidArgumentError):
        return EXIT_USAGE
    return EXIT_FAILED


def _report(args: argparse.Namespace, message: str, code: str | None, retriable: bool) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"error": message, "code": code, "retriable": retriable}), file=sys.stderr)
    else:
        print(f"seaway: error: {text_of(message)}" + (f" [{code}]" if code else ""), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``); return its exit status (see
    :data:`EXIT_CODES_HELP`). Errors go to stderr as one line, or as a JSON object with ``--json``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _Parser.json_errors = "--json" in argv
    args = _parser(with_benchmarks=argv[:1] == ["bench"]).parse_args(argv)
    try:
        return _run(args)
    except SeawayError as exc:
        _report(args, str(exc), exc.code, exc.retriable)
        return exit_status(exc)
    except OSError as exc:
        _report(args, str(exc), None, False)
        return EXIT_UNAVAILABLE if isinstance(exc, ConnectionError) else EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
