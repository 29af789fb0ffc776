"""``seaway scope`` and ``seaway stream``: scopes and streams from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from typing import Any

from seaway.cli._reset import add_target, time_ms
from seaway.cli._store import open_store, out
from seaway.errors import CorruptionError, InvalidArgumentError
from seaway.log import LSN_MAX, Record, lsn_str
from seaway.streams import (
    ByDataRate,
    ByEventRate,
    FixedSegments,
    RetentionBySize,
    RetentionByTime,
    RetentionPolicy,
    ScalingPolicy,
    Segment,
    StreamCut,
    segment_str,
    unframe_keyed,
)
from seaway.txn import AbortedJudges, Snapshot, Visibility

_READ_ONLY = {("scope", "list"), ("stream", "list"), ("stream", "describe"), ("stream", "read"), ("stream", "history")}


def add_stream_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    scope = commands.add_parser("scope", help="create, list and delete scopes (the namespaces of streams)")
    ops = scope.add_subparsers(dest="op", required=True, metavar="OPERATION")
    for name, text in (("create", "create a scope"), ("delete", "delete an empty scope")):
        ops.add_parser(name, parents=[common], help=text).add_argument("scope")
    ops.add_parser("list", parents=[common], help="the scopes")

    stream = commands.add_parser(
        "stream", help="streams of auto-scaling segments: create, list, describe, update, scale, seal, truncate, "
                       "delete, write, read, history",
        description="A stream (named scope/stream) is a set of segments, each a log, that split under load and "
                    "merge when it falls. Events with the same routing key are read in the order written.")
    ops = stream.add_subparsers(dest="op", required=True, metavar="OPERATION")
    create = ops.add_parser("create", parents=[common], help="create a stream")
    update = ops.add_parser("update", parents=[common], help="change a stream's scaling or retention policy")
    for op in (create, update):
        op.add_argument("stream", help="scope/stream")
        op.add_argument("--scaling", help="fixed:N, events:RATE[:FACTOR[:MIN]] or bytes:RATE[:FACTOR[:MIN]] "
                                          "(a rate per segment per second)")
        op.add_argument("--retention", help="time:MIN_S[:MAX_S] or size:MIN_BYTES[:MAX_BYTES]")
    create.add_argument("--segments", type=int, help="segments to start with (default: the policy's minimum)")
    create.add_argument("--transactional", action="store_true",
                        help="events may be written in transactions (fixed for the stream's life; such a "
                             "stream stores routing keys too)")
    create.add_argument("--store-routing-keys", action="store_true",
                        help="store each event's routing key, for readers to see (fixed for the stream's life)")
    ops.add_parser("list", parents=[common], help="a scope's streams").add_argument("scope")
    for name, text in (("describe", "configuration, state and current segments"),
                       ("seal", "no more writes; readers reach the end"),
                       ("delete", "delete a sealed stream and its segments")):
        ops.add_parser(name, parents=[common], help=text).add_argument("stream")
    scale = ops.add_parser("scale", parents=[common], help="split a segment, or merge adjacent ones")
    scale.add_argument("stream")
    scale.add_argument("--split", metavar="SEGMENT", help="the segment to split (generation.number)")
    scale.add_argument("--ways", type=int, default=2, help="split into this many (default 2)")
    scale.add_argument("--merge", nargs="+", metavar="SEGMENT", help="adjacent segments to merge")
    truncate = ops.add_parser("truncate", parents=[common], help="remove the events below a stream cut")
    truncate.add_argument("stream")
    truncate.add_argument("cut", help='a stream cut as JSON (as "describe --json" prints the head, or "tail")')
    write = ops.add_parser("write", parents=[common], help="write events (arguments, or lines of stdin)")
    write.add_argument("stream")
    write.add_argument("events", nargs="*")
    write.add_argument("--key", help="the routing key of every event")
    write.add_argument("--txn", action="store_true",
                       help="write the events in one transaction: all are seen, or none (a transactional stream)")
    read = ops.add_parser("read", parents=[common], help="print the events of every segment, in key order (with "
                                                          "their routing keys if the stream stores them)")
    read.add_argument("stream")
    history = ops.add_parser("history", parents=[common], help="the scalings, with their reasons")
    history.add_argument("stream")
    history.add_argument("--limit", type=int, default=1000)

    group = commands.add_parser("reader-group", help="reader groups: readers that share a stream's segments",
                                description="Readers of a group, in any process, share a stream's segments: each "
                                            "segment is read by one reader at a time, in key order across scalings.")
    ops = group.add_subparsers(dest="op", required=True, metavar="OPERATION")
    make = ops.add_parser("create", parents=[common], help="create a reader group over a stream")
    make.add_argument("group")
    make.add_argument("stream")
    make.add_argument("--start", help="a stream cut (JSON) to start from (default: the stream's head)")
    make.add_argument("--end", help="a stream cut (JSON) to stop at (default: none, follow the stream)")
    make.add_argument("--retention-subscribed", action="store_true",
                      help="the stream's consumption-based retention keeps what this group has not read")
    for name, text in (("describe", "readers, their segments and positions, the group's checkpoint, and its lag "
                                    "(events left to read, per segment and in all)"),
                       ("delete", "delete a reader group")):
        ops.add_parser(name, parents=[common], help=text).add_argument("group")
    reset = ops.add_parser("reset", parents=[common],
                           help="move the group's position to the head, the tail, a time or a cut (its readers are "
                                "removed: they get READER_OFFLINE and must join again)")
    reset.add_argument("group")
    add_target(reset, cut=True)
    read = ops.add_parser("read", parents=[common], help="join the group as a reader, print events, and leave")
    read.add_argument("group")
    read.add_argument("--reader", required=True, help="this reader's id in the group")
    read.add_argument("--max", type=int, default=1000, help="stop after this many events (default 1000)")
    read.add_argument("--timeout-s", type=float, default=1.0, help="stop after this long without an event")


def _segment_json(segment: Segment) -> dict[str, Any]:
    return {"segment": segment_str(segment.id), "key_lo": segment.key_lo, "key_hi": segment.key_hi,
            "generation": segment.generation, "created_ms": segment.created_ms, "log_id": segment.log_id}


def parse_scaling(text: str) -> ScalingPolicy:
    kind, _, rest = text.partition(":")
    try:
        parts = [float(p) for p in rest.split(":")] if rest else []
        if kind == "fixed" and len(parts) == 1:
            return FixedSegments(int(parts[0]))
        if kind in ("events", "bytes") and 1 <= len(parts) <= 3:
            factor, least = (int(parts[1]) if len(parts) > 1 else 2), (int(parts[2]) if len(parts) > 2 else 1)
            return (ByEventRate(parts[0], factor, least) if kind == "events"
                    else ByDataRate(parts[0], factor, least))
    except ValueError:
        pass
    raise InvalidArgumentError(f"--scaling is fixed:N, events:RATE[:FACTOR[:MIN]] or bytes:RATE[:FACTOR[:MIN]], "
                               f"got {text!r}")


def parse_retention(text: str) -> RetentionPolicy:
    kind, _, rest = text.partition(":")
    try:
        parts = [float(p) for p in rest.split(":")] if rest else []
        if kind == "time" and 1 <= len(parts) <= 2:
            return RetentionByTime(parts[0], parts[1] if len(parts) > 1 else None)
        if kind == "size" and 1 <= len(parts) <= 2:
            return RetentionBySize(int(parts[0]), int(parts[1]) if len(parts) > 1 else None)
    except ValueError:
        pass
    raise InvalidArgumentError(f"--retention is time:MIN_S[:MAX_S] or size:MIN_BYTES[:MAX_BYTES], got {text!r}")


def run_scope(args: argparse.Namespace) -> None:
    with open_store(args, writes=(args.command, args.op) not in _READ_ONLY) as sw:
        if args.op == "create":
            sw.streams.create_scope(args.scope)
            out(args, {"scope": args.scope}, f"created scope {args.scope}")
        elif args.op == "delete":
            sw.streams.delete_scope(args.scope)
            out(args, {"deleted": args.scope}, f"deleted scope {args.scope}")
        else:
            scopes = sw.streams.scopes()
            out(args, scopes, "\n".join(scopes))


def run_stream(args: argparse.Namespace) -> None:
    # Options are parsed before the store opens, so that a bad one is refused before anything changes.
    scaling = parse_scaling(args.scaling) if getattr(args, "scaling", None) else None
    retention = parse_retention(args.retention) if getattr(args, "retention", None) else None
    cut = StreamCut.from_json(args.cut) if args.op == "truncate" else None
    with open_store(args, writes=(args.command, args.op) not in _READ_ONLY) as sw:
        if args.op == "list":
            names = sw.streams.list(args.scope)
            out(args, names, "\n".join(names))
            return
        if args.op == "create":
            stream = sw.streams.create(args.stream, scaling=scaling, retention=retention, segments=args.segments,
                                       transactional=args.transactional,
                                       store_routing_keys=args.store_routing_keys)
            out(args, {"stream": stream.name, "segments": [_segment_json(s) for s in stream.current_segments()]},
                f"created stream {stream.name} with {len(stream.current_segments())} segments")
            return
        stream = sw.streams.get(args.stream)
        if args.op == "describe":
            info = stream.describe()
            data = {"stream": info.name, "state": info.state, "config": info.config.to_json(),
                    "generation": info.generation, "created_ms": info.created_ms,
                    "segments": [_segment_json(s) for s in info.segments], "head": json.loads(info.head.to_json()),
                    "scaling_under_way": info.scaling_under_way}
            lines = [f"{info.name}\t{info.state}\tgeneration {info.generation}\t{json.dumps(info.config.to_json())}"]
            lines += [f"  {segment_str(s.id)}\t[{s.key_lo:.6f}, {s.key_hi:.6f})\tlog {s.log_id}" for s in info.segments]
            out(args, data, "\n".join(lines))
        elif args.op == "update":
            config = stream.update(scaling=scaling, retention=retention)
            out(args, config.to_json(), f"updated {stream.name}: {json.dumps(config.to_json())}")
        elif args.op == "scale":
            if (args.split is None) == (args.merge is None):
                raise InvalidArgumentError("give --split SEGMENT or --merge SEGMENT SEGMENT...")
            made = stream.split(args.split, args.ways) if args.split else stream.merge(args.merge)
            out(args, {"generation": made.generation, "segments": [_segment_json(s) for s in made.segments]},
                f"{stream.name} is at generation {made.generation} with {len(made.segments)} segments")
        elif args.op == "seal":
            stream.seal()
            out(args, {"sealed": stream.name}, f"sealed {stream.name}")
        elif args.op == "delete":
            stream.delete()
            out(args, {"deleted": stream.name}, f"deleted {stream.name}")
        elif args.op == "truncate":
            assert cut is not None
            stream.truncate(cut)
            out(args, {"head": json.loads(stream.head().to_json())}, f"truncated {stream.name} at {cut.to_json()}")
        elif args.op == "write":
            events = [e.encode() for e in args.events] or [line.rstrip("\n").encode() for line in sys.stdin]
            if args.txn and getattr(sw, "transaction", None) is None:
                raise InvalidArgumentError("--txn needs transactions, which this connection does not offer")
            with stream.writer() as writer, sw.transaction() if args.txn else nullcontext() as tx:
                acks = [writer.write(e, args.key, txn=tx) for e in events]
                done = [a.result(60) for a in acks]
            out(args, {"written": len(done), **({"txn": tx.id} if tx else {})},
                f"wrote {len(done)} events to {stream.name}" + (f" in transaction {tx.id}" if tx else ""))
        elif args.op == "read":
            _read_all(sw, stream, args)
        elif args.op == "history":
            deltas = stream.history(limit=args.limit)
            rows = [{"generation": d.generation, "time_ms": d.time_ms, "reason": d.reason,
                     "sealed": [segment_str(s) for s in d.sealed], "created": [_segment_json(s) for s in d.created]}
                    for d in deltas]
            out(args, rows, "\n".join(
                f"{r['generation']}\t{r['time_ms']}\tsealed {','.join(r['sealed'])}\tcreated "
                f"{','.join(c['segment'] for c in r['created'])}\t{r['reason']}" for r in rows))


def _read_all(sw: Any, stream: Any, args: argparse.Namespace) -> None:
    """Every event from the head, segment by segment in order of generation (so each key's events
    come in the order written); a segment's events stop at its tail. On a transactional stream,
    what one snapshot shows: events of committed transactions, none of aborted ones, and a
    segment stops at an event of a transaction still in progress."""
    head = stream.head().positions
    segments = stream.segments_between(stream.head(), stream.tail())
    config = stream.config
    snapshot = _snapshot(sw) if config.transactional else None
    aborted = AbortedJudges(sw.meta)  # asked after the snapshot was taken
    for segment in sorted(segments, key=lambda s: (s.generation, s.key_lo)):
        log = sw.logs.get(segment.log_id)
        start = head.get(segment.id, 1)
        tail = log.tail_lsn()
        if start > tail:
            continue
        for item in log.read(start, min(tail, LSN_MAX)):
            if isinstance(item, Record):
                payload, key = item.payload, None
                if config.framed:
                    write_pointer, key, payload = unframe_keyed(payload)
                    if write_pointer:
                        if snapshot is None:
                            raise CorruptionError(f"{stream.name} segment {segment_str(segment.id)} position "
                                                  f"{item.lsn}: a transaction's event in a stream that is not "
                                                  "transactional")
                        seen = aborted.judge(segment.log_id, snapshot, write_pointer)
                        if seen is Visibility.WAIT:
                            break
                        if seen is Visibility.SKIP:
                            continue
                print(_event_line(args, segment.id, item.lsn, payload, config.framed, key))


def _event_line(args: argparse.Namespace, segment: int, lsn: int, payload: bytes, keyed: bool,
                key: str | bytes | None) -> str:
    """One event as printed: ``segment lsn [key] event`` (a key column for streams that store keys,
    empty for an event without one), or a JSON object with ``key`` null for none. A key given as
    bytes shows in JSON as ``{"hex": ...}``, in text decoded as UTF-8 where it can be."""
    text = payload.decode(errors="replace")
    if args.json:
        return json.dumps({"segment": segment_str(segment), "lsn": lsn,
                           "key": {"hex": key.hex()} if isinstance(key, bytes) else key, "event": text})
    if not keyed:
        return f"{segment_str(segment)}\t{lsn_str(lsn)}\t{text}"
    key_text = "" if key is None else key if isinstance(key, str) else key.decode(errors="replace")
    return f"{segment_str(segment)}\t{lsn_str(lsn)}\t{key_text}\t{text}"


def _snapshot(sw: Any) -> Snapshot:
    txn = getattr(sw, "txn", None)
    if txn is None:
        raise InvalidArgumentError("the stream is transactional: reading it needs transactions, which this "
                                   "connection does not offer")
    snapshot: Snapshot = txn.snapshot()
    return snapshot


def run_reader_group(args: argparse.Namespace) -> None:
    start = StreamCut.from_json(args.start) if getattr(args, "start", None) else None
    end = StreamCut.from_json(args.end) if getattr(args, "end", None) else None
    with open_store(args, writes=args.op != "describe") as sw:
        if args.op == "create":
            made = sw.streams.create_reader_group(args.group, args.stream, start, end,
                                                  retention_subscribed=args.retention_subscribed)
            out(args, {"group": args.group, "stream": made.stream}, f"created reader group {args.group}")
        elif args.op == "delete":
            sw.streams.delete_reader_group(args.group)
            out(args, {"deleted": args.group}, f"deleted reader group {args.group}")
        elif args.op == "reset":
            group = sw.streams.reader_group(args.group)
            if args.to_time is not None:
                cut = group.reset(time_ms=time_ms(args.to_time))
            else:
                cut = group.reset(StreamCut.from_json(args.to_cut) if args.to_cut else args.to)
            out(args, {"group": args.group, "position": json.loads(cut.to_json()), "lag": group.lag()},
                f"reset reader group {args.group}: lag {group.lag()}")
        elif args.op == "describe":
            info = sw.streams.reader_group(args.group).describe()
            data = {"group": info.name, "stream": info.stream, "readers": list(info.readers),
                    "retention_subscribed": info.retention_subscribed,
                    "assignments": {r: [segment_str(s) for s in segs] for r, segs in info.assignments.items()},
                    "unassigned": [segment_str(s) for s in info.unassigned],
                    "finished": [segment_str(s) for s in info.finished],
                    "checkpoint": json.loads(StreamCut(info.stream, info.positions).to_json())
                    if info.positions else None,
                    "lag": info.lag, "lags": {segment_str(s): n for s, n in info.lags.items()}}
            lines = [f"{info.name}\tstream {info.stream}\treaders {len(info.readers)}\tlag {info.lag}"]
            lines += [f"  {r}\t{', '.join(segs)}" for r, segs in data["assignments"].items()]
            lines += [f"  unassigned\t{', '.join(data['unassigned'])}"]
            lines += [f"  lag {segment}\t{n}" for segment, n in data["lags"].items()]
            out(args, data, "\n".join(lines))
        else:
            if args.max < 1 or not args.timeout_s > 0:
                raise InvalidArgumentError("--max must be at least 1 and --timeout-s above 0")
            group = sw.streams.reader_group(args.group)
            keyed = group.stream_handle.config.framed
            with group.reader(args.reader) as reader:
                for _ in range(args.max):
                    event = reader.read_next(args.timeout_s)
                    if event is None:
                        break
                    print(_event_line(args, event.segment, event.lsn, event.payload, keyed, event.routing_key))
