"""``seaway queue``: queues and their consumer groups from the shell."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from seaway.cli._reset import add_target, time_ms
from seaway.cli._store import open_store, out
from seaway.errors import InvalidArgumentError
from seaway.queues import GroupInfo


def add_queue_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    queue = commands.add_parser(
        "queue", help="queues with consumer groups: create, describe, delete, enqueue, dequeue, group",
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
                         help="a hash key of every entry (repeatable)")
    dequeue = ops.add_parser("dequeue", parents=[common], help="dequeue a consumer's entries and acknowledge them")
    dequeue.add_argument("queue")
    dequeue.add_argument("group")
    dequeue.add_argument("consumer", type=int)
    dequeue.add_argument("--max", type=int, default=100, help="entries at most (default 100)")
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
        op.add_argument("--key", help="the entry key a HASH group partitions on")
        op.add_argument("--strategy", choices=["FIFO", "ROUND_ROBIN", "HASH"],
                        default="FIFO" if op is create else None)
    resize.add_argument("--wait-s", type=float, default=10.0,
                        help="wait this long for the old layout to drain (0: return at once)")
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
    key = f" on {info.key}" if info.key else ""
    state = "resizing: draining the previous layout" if info.resizing else "active"
    lines = [f"{info.queue}/{info.name}\t{info.strategy.value}{key}\tsize {info.size}\tgeneration {info.generation}"
             f"\t{state}\tskipped {info.skipped}\tlag {info.lag}"]
    for p in info.partitions:
        done = "\tdrained" if p.drained else ""
        lines.append(f"  generation {p.generation} partition {p.partition}\tlog {p.log_id}\tposition "
                     f"{p.position.lsn}:{p.position.entry}\ttail {p.tail_lsn}\tlag {p.lag}{done}")
    return "\n".join(lines)


def run_queue(args: argparse.Namespace) -> None:
    if args.op == "group":
        _run_group(args)
        return
    with open_store(args, writes=args.op not in ("describe", "list")) as sw:
        if args.op == "create":
            sw.queues.create(args.queue)
            out(args, {"queue": args.queue}, f"created queue {args.queue}")
        elif args.op == "list":
            names = sw.queues.list()
            out(args, {"queues": names}, "\n".join(names))
        elif args.op == "delete":
            sw.queues.delete(args.queue)
            out(args, {"deleted": args.queue}, f"deleted queue {args.queue}")
        elif args.op == "describe":
            infos = [sw.queues.describe_group(args.queue, g) for g in sw.queues.groups(args.queue)]
            out(args, {"queue": args.queue, "groups": [i.to_json() for i in infos]},
                "\n".join([f"queue {args.queue}\t{len(infos)} groups", *map(_group_text, infos)]))
        elif args.op == "enqueue":
            entries = args.entries or [line.rstrip("\n") for line in sys.stdin]
            keys = _keys(args.key)
            producer = sw.queues.producer(args.queue)
            with sw.transaction() as tx:
                for entry in entries:
                    producer.enqueue(tx, entry.encode(), keys)
            out(args, {"enqueued": len(entries), "transaction": tx.id}, f"enqueued {len(entries)} entries")
        else:
            if not 1 <= args.max <= 10_000 or args.timeout_s < 0:
                raise InvalidArgumentError("--max is in [1, 10000] and --timeout-s not negative")
            with sw.queues.consumer(args.queue, args.group, args.consumer) as consumer:
                tx = sw.transaction()
                try:
                    entries = consumer.dequeue(tx, args.max, args.timeout_s)
                finally:
                    if args.no_ack:
                        tx.abort()
                if not args.no_ack:
                    tx.commit()
            rows = [{"write_pointer": e.write_pointer, "counter": e.counter,
                     "entry": e.payload.decode(errors="replace")} for e in entries]
            out(args, {"entries": rows, "acknowledged": not args.no_ack},
                "\n".join(f"{r['write_pointer']}.{r['counter']}\t{r['entry']}" for r in rows))


def _run_group(args: argparse.Namespace) -> None:
    with open_store(args, writes=args.group_op != "describe") as sw:
        if args.group_op == "create":
            sw.queues.create_group(args.queue, args.group, args.size, args.strategy, key=args.key)
            out(args, {"queue": args.queue, "group": args.group}, f"created group {args.group}")
        elif args.group_op == "resize":
            info = sw.queues.resize_group(args.queue, args.group, args.size, key=args.key, strategy=args.strategy,
                                          wait_s=args.wait_s if args.wait_s > 0 else None)
            out(args, info.to_json(), _group_text(info))
        elif args.group_op == "reset":
            if args.to_time is not None:
                info = sw.queues.reset_group(args.queue, args.group, time_ms=time_ms(args.to_time))
            else:
                info = sw.queues.reset_group(args.queue, args.group, args.to)
            out(args, info.to_json(), _group_text(info))
        elif args.group_op == "delete":
            sw.queues.delete_group(args.queue, args.group)
            out(args, {"deleted": args.group}, f"deleted group {args.group}")
        else:
            info = sw.queues.describe_group(args.queue, args.group)
            out(args, info.to_json(), _group_text(info))
