"""``seaway queue``: queues and their consumer groups from the shell."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from seaway.cli._reset import add_target
from seaway.cli._store import (
    EXIT_FAILED,
    EXIT_OK,
    arg_bytes,
    bytes_json,
    open_store,
    out,
    parse_time,
    plural,
    stdin_lines,
    text_of,
)
from seaway.errors import InvalidArgumentError

if TYPE_CHECKING:
    from seaway.queues import GroupInfo


def add_queue_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    queue = commands.add_parser(
        "queue", help="queues with consumer groups: list, create, describe, delete, enqueue, dequeue, group",
        description="A queue's entries reach exactly one consumer of each of its consumer groups; a consumer "
                    "acknowledges by committing the transaction it dequeued in.")
    ops = queue.add_subparsers(dest="op", required=True, metavar="OPERATION")
    for name, text in (("create", "create a queue"), ("describe", "the queue's consumer groups and positions"),
                       ("delete", "delete a queue, its groups and their entries")):
        ops.add_parser(name, parents=[common], help=text).add_argument("queue")
    ops.add_parser("list", parents=[common], help="the queues")
    enqueue = ops.add_parser("enqueue", parents=[common], help="enqueue entries (arguments, or lines of stdin) "
                                                               "in one transaction")
    enqueue.add_argument("queue")
    enqueue.add_argument("entries", nargs="*")
    enqueue.add_argument("--key", action="append", default=[], metavar="NAME=VALUE",
                         help="a key of every entry, that HASH groups partition on (repeatable)")
    dequeue = ops.add_parser("dequeue", parents=[common], help="dequeue a consumer's entries and acknowledge them")
    dequeue.add_argument("queue")
    dequeue.add_argument("group")
    dequeue.add_argument("consumer", type=int)
    dequeue.add_argument("--limit", type=int, default=100, help="entries at most (default 100)")
    dequeue.add_argument("--max", dest="limit", type=int, help=argparse.SUPPRESS)  # its old name
    dequeue.add_argument("--timeout-s", type=float, default=1.0, help="wait this long for the first entry")
    dequeue.add_argument("--no-ack", action="store_true", help="print them but abort: they are delivered again")

    group = ops.add_parser("group", help="consumer groups: create, resize, delete, describe, reset")
    group_ops = group.add_subparsers(dest="group_op", required=True, metavar="OPERATION")
    create = group_ops.add_parser("create", parents=[common], help="create a consumer group")
    resize = group_ops.add_parser("resize", parents=[common],
                                  help="change a group's size or key; per-key order is kept (old layout drained "
                                       "first)")
    for op in (create, resize):
        op.add_argument("queue")
        op.add_argument("group")
        op.add_argument("--size", type=int, required=op is create, help="consumers in the group")
        op.add_argument("--hash-key", metavar="NAME", help="the entry key (enqueue --key NAME=...) a HASH group "
                                                             "partitions on")
        op.add_argument("--key", dest="hash_key", help=argparse.SUPPRESS)  # its old name
        op.add_argument("--strategy", choices=["FIFO", "ROUND_ROBIN", "HASH"],
                        default="FIFO" if op is create else None)
    resize.add_argument("--timeout-s", type=float, default=10.0,
                        help="wait this long for the old layout to drain (0: return at once)")
    resize.add_argument("--wait-s", dest="timeout_s", type=float, help=argparse.SUPPRESS)  # its old name
    for name, text in (("delete", "delete a consumer group"),
                       ("describe", "a group's layout, partitions, positions, lag (committed entries not "
                                    "acknowledged) and resize progress")):
        op = group_ops.add_parser(name, parents=[common], help=text)
        op.add_argument("queue")
        op.add_argument("group")
    reset = group_ops.add_parser("reset", parents=[common],
                                 help="move a ROUND_ROBIN or HASH group's positions to the head, the tail or a time "
                                      "(a consumer transaction open meanwhile fails its commit)")
    reset.add_argument("queue")
    reset.add_argument("group")
    add_target(reset, cut=False)


def _keys(pairs: list[str]) -> dict[str, str]:
    keys = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InvalidArgumentError(f"--key takes NAME=VALUE, got {pair!r}")
        keys[name] = value
    return keys


def _group_text(info: GroupInfo) -> str:
    from seaway.log import lsn_str  # noqa: PLC0415

    key = f" on {info.key}" if info.key else ""
    state = "resizing: draining the previous layout" if info.resizing else "active"
    lines = [f"{info.queue}/{info.name}\t{info.strategy.value}{key}\tsize {info.size}\tgeneration {info.generation}"
             f"\t{state}\tskipped {info.skipped}\tlag {info.lag}"]
    for p in info.partitions:
        done = "\tdrained" if p.drained else ""
        lines.append(f"  generation {p.generation} partition {p.partition}\tlog {p.log_id}\tposition "
                     f"{lsn_str(p.position.lsn)}:{p.position.entry}\ttail {lsn_str(p.tail_lsn)}\tlag {p.lag}{done}")
    return "\n".join(lines)


def run_queue(args: argparse.Namespace) -> int:
    """Carry out ``args.op``; return the exit status (EXIT_FAILED: a dequeue that found its next entry
    in a transaction still in progress, and says which)."""
    if args.op == "group":
        _run_group(args)
        return EXIT_OK
    if args.op == "dequeue" and (not 1 <= args.limit <= 10_000 or args.timeout_s < 0):
        raise InvalidArgumentError("--limit is in [1, 10000] and --timeout-s not negative")
    with open_store(args, writes=args.op not in ("describe", "list")) as sw:
        if args.op == "create":
            sw.queues.create(args.queue)
            out(args, {"queue": args.queue}, f"created queue {args.queue}")
        elif args.op == "list":
            names = sw.queues.list()
            out(args, names, "\n".join(names))
        elif args.op == "delete":
            sw.queues.delete(args.queue)
            out(args, {"deleted": args.queue}, f"deleted queue {args.queue}")
        elif args.op == "describe":
            infos = [sw.queues.describe_group(args.queue, g) for g in sw.queues.groups(args.queue)]
            out(args, {"queue": args.queue, "groups": [i.to_json() for i in infos]},
                "\n".join([f"queue {args.queue}\t{plural(len(infos), 'group')}", *map(_group_text, infos)]))
        elif args.op == "enqueue":
            entries = [arg_bytes(e) for e in args.entries] or stdin_lines()
            keys = _keys(args.key)
            producer = sw.queues.producer(args.queue)
            with sw.transaction() as tx:
                for entry in entries:
                    producer.enqueue(tx, entry, keys)
            out(args, {"queue": args.queue, "count": len(entries), "txn": tx.id},
                f"enqueued {plural(len(entries), 'entry')} to {args.queue} in transaction {tx.id}")
        else:
            return _dequeue(sw, args)
    return EXIT_OK


def _dequeue(sw: Any, args: argparse.Namespace) -> int:
    """Dequeue in a transaction of its own, committed (acknowledged) or, with ``--no-ack``, aborted;
    aborted too if anything fails or the command is interrupted, so that nothing is held until the
    transaction times out."""
    with sw.queues.consumer(args.queue, args.group, args.consumer) as consumer:
        tx = sw.txn.begin(reads=consumer.reads())  # the reads its dequeue makes, with the begin
        try:
            entries = consumer.dequeue(tx, args.limit, args.timeout_s)
            tx.abort() if args.no_ack else tx.commit()
        except BaseException:
            _abort_quietly(tx)
            raise
        blocked_by = consumer.blocked_by
    rows = [{"write_pointer": e.write_pointer, "counter": e.counter, "payload": bytes_json(e.payload)}
            for e in entries]
    out(args, {"entries": rows, "acknowledged": not args.no_ack, "blocked_by": blocked_by},
        "\n".join(f"{e.write_pointer}.{e.counter}\t{text_of(e.payload)}" for e in entries))
    if blocked_by is None:
        return EXIT_OK
    print(f"seaway: nothing dequeued: consumer {args.consumer}'s next entry is in transaction {blocked_by}, still "
          f"in progress; it is delivered once that commits (see `seaway txn status {blocked_by}`; "
          f"`seaway txn abort {blocked_by}` gives up a stuck one)", file=sys.stderr)
    return EXIT_FAILED


def _abort_quietly(tx: Any) -> None:
    # Already ended, or the store is gone: the failure that brought us here is the one to report.
    with contextlib.suppress(Exception):
        tx.abort()


def _run_group(args: argparse.Namespace) -> None:
    with open_store(args, writes=args.group_op != "describe") as sw:
        if args.group_op == "create":
            sw.queues.create_group(args.queue, args.group, args.size, args.strategy, key=args.hash_key)
            out(args, {"queue": args.queue, "group": args.group}, f"created group {args.group}")
        elif args.group_op == "resize":
            info = sw.queues.resize_group(args.queue, args.group, args.size, key=args.hash_key, strategy=args.strategy,
                                          wait_s=args.timeout_s if args.timeout_s > 0 else None)
            out(args, info.to_json(), _group_text(info))
        elif args.group_op == "reset":
            if args.to.strip() in ("head", "tail"):
                info = sw.queues.reset_group(args.queue, args.group, args.to.strip())
            else:
                info = sw.queues.reset_group(args.queue, args.group, time_ms=parse_time(args.to))
            out(args, info.to_json(), _group_text(info))
        elif args.group_op == "delete":
            sw.queues.delete_group(args.queue, args.group)
            out(args, {"deleted": args.group}, f"deleted group {args.group}")
        else:
            info = sw.queues.describe_group(args.queue, args.group)
            out(args, info.to_json(), _group_text(info))
