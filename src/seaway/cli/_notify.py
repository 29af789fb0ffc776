"""``seaway notify``: notification configurations, the change ledger followed live, and the plugins'
positions and counters.

``config set NAME --target JSON [--format ...] [--events a,b] [--scope S | --stream S/N] [--prefix P]
[--suffix S]`` creates or replaces one; ``config list`` (with each one's version) and ``config delete
NAME [--version V]`` (only that version, when given). ``tail`` prints the ledger's entries from an
index (``--follow``: and keeps printing new ones); ``status`` each plugin's position, lag and
counters (triggered, delivered, failed, pending, dropped, missed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any

from seaway.cli._store import open_store, out, text_of, time_text
from seaway.errors import InvalidArgumentError, NotifyConfigError

if TYPE_CHECKING:
    from seaway.ledger import LedgerEntry
    from seaway.notify import NotifyConfig

TAIL_BATCH_ENTRIES = 500
TAIL_POLL_S = 0.5
FORMATS = ("cloudevents", "cloudevents-binary", "s3")
"""seaway.notify.FORMATS, written out: the parser is built for every command, and seaway.notify is
heavy (a test checks that the two agree)."""


def add_notify_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``notify config set|list|delete``, ``notify tail`` and ``notify status``."""
    notify = commands.add_parser("notify", help="change notifications: configurations, the ledger, plugins' status")
    ops = notify.add_subparsers(dest="op", required=True, metavar="OPERATION")
    config = ops.add_parser("config", help="notification configurations")
    config_ops = config.add_subparsers(dest="config_op", required=True, metavar="OPERATION")
    put = config_ops.add_parser("set", parents=[common], help="create or replace a configuration")
    put.add_argument("name")
    put.add_argument("--target", required=True,
                     help='the target as JSON, e.g. \'{"type": "webhook", "url": "http://..."}\' '
                          "(types: webhook, file, stream, nats)")
    put.add_argument("--format", default="cloudevents", choices=FORMATS)
    put.add_argument("--events", default="", help="comma-separated operations, kinds (stream.*) or * (default: all)")
    where = put.add_mutually_exclusive_group()
    where.add_argument("--scope", help="only this scope's entries (filters see stream names)")
    where.add_argument("--stream", help="only this stream's entries (scope/name)")
    put.add_argument("--prefix", default="", help="names must start with this")
    put.add_argument("--suffix", default="", help="names must end with this")
    config_ops.add_parser("list", parents=[common], help="the configurations (secrets hidden)")
    delete = config_ops.add_parser("delete", parents=[common], help="delete a configuration")
    delete.add_argument("name")
    delete.add_argument("--version", type=int, default=None,
                        help="only if the configuration is at this version (config list --json shows it)")
    tail = ops.add_parser("tail", parents=[common], help="print the change ledger's entries (--follow: live)")
    tail.add_argument("--from", dest="index_from", type=int, default=None,
                      help="the first index (default: the oldest kept; with --follow: the next one written)")
    tail.add_argument("--follow", action="store_true", help="keep printing new entries until interrupted")
    tail.add_argument("--limit", type=int, default=None, help="stop after this many entries")
    ops.add_parser("status", parents=[common], help="each plugin's position, lag and counters")


def run_notify(args: argparse.Namespace) -> None:
    """Carry out ``args.op``; failures are raised (as :class:`SeawayError`) for the caller to print."""
    if args.op == "config":
        _run_config(args)
    elif args.op == "tail":
        _run_tail(args)
    else:
        _run_status(args)


def _config_from_args(args: argparse.Namespace) -> NotifyConfig:
    from seaway.notify import NotifyConfig, target_from_dict  # noqa: PLC0415

    try:
        target = json.loads(args.target)
    except ValueError as exc:
        raise NotifyConfigError(f"--target is JSON: {exc}") from None
    events = tuple(e.strip() for e in args.events.split(",") if e.strip())
    return NotifyConfig(args.name, target_from_dict(target), format=args.format, events=events, scope=args.scope,
                        stream=args.stream, prefix=args.prefix, suffix=args.suffix)


def _shown(config: NotifyConfig) -> dict[str, Any]:
    """What the command prints: secrets and URL credentials and queries redacted."""
    data: dict[str, Any] = json.loads(config.redacted().to_json())
    return data


def _run_config(args: argparse.Namespace) -> None:
    config = _config_from_args(args) if args.config_op == "set" else None  # checked before the store opens
    with open_store(args, writes=args.config_op != "list") as sw:
        if config is not None:
            sw.notify.set(config)
            out(args, _shown(config), f"set {config.name}")
        elif args.config_op == "list":
            rows = [{**_shown(c), "version": v} for v, c in sw.notify.versions().values()]
            if args.json:
                print(json.dumps(rows))
            for row in [] if args.json else rows:
                print(json.dumps(row, sort_keys=True))
        else:
            sw.notify.delete(args.name, expect_version=args.version)
            out(args, {"deleted": args.name}, f"deleted {args.name}")


def _entry_json(entry: LedgerEntry) -> dict[str, Any]:
    return {"index": entry.index, "time": time_text(entry.time_ms), "time_ms": entry.time_ms,
            "operation": entry.operation, "resource": entry.resource,
            "change": {f.name: getattr(entry.change, f.name) for f in dataclasses.fields(entry.change)}}


def _run_tail(args: argparse.Namespace) -> None:
    if args.limit is not None and args.limit < 1:
        raise InvalidArgumentError(f"--limit is at least 1, got {args.limit}")
    with open_store(args, writes=False) as sw:
        ledger = sw.ledger
        tail, head = ledger.bounds()
        index = args.index_from if args.index_from is not None else (head + 1 if args.follow else tail)
        printed = 0
        while args.limit is None or printed < args.limit:
            entries = ledger.read(index, TAIL_BATCH_ENTRIES)
            for entry in entries[:None if args.limit is None else args.limit - printed]:
                row = _entry_json(entry)
                print(json.dumps(row) if args.json else
                      f"{row['index']} {row['time']} {row['operation']} {text_of(row['resource'])} "
                      f"{json.dumps(row['change'])}", flush=True)
                printed += 1
                index = entry.index + 1
            if not entries:
                if not args.follow:
                    return
                time.sleep(TAIL_POLL_S)  # the ledger has no wait call yet: poll at a bounded rate


def _run_status(args: argparse.Namespace) -> None:
    with open_store(args, writes=False) as sw:
        rows = []
        for s in sw.notify.status():
            rows.append({"name": s.name, "target": s.target, "position": s.position, "lag": s.lag,
                         **s.counters, "pending": s.pending, "updated_ms": s.updated_ms, "error": s.error})
        if args.json:
            print(json.dumps(rows))
            return
        for r in rows:
            lag = "?" if r["lag"] is None else r["lag"]
            print(f"{r['name']} ({r['target']}): position {r['position']} lag {lag} triggered {r['triggered']} "
                  f"delivered {r['delivered']} failed {r['failed']} pending {r['pending']} dropped {r['dropped']} "
                  f"missed {r['missed']}" + ("" if r["error"] is None else f" NOT RUNNING: {r['error']}"))
