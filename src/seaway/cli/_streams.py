"""``seaway scope`` and ``seaway stream``: scopes and streams from the shell."""

from __future__ import annotations

import argparse
import json
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from seaway.cli._reset import add_target
from seaway.cli._store import (
    arg_bytes,
    bytes_json,
    open_store,
    out,
    parse_time,
    plural,
    stdin_lines,
    text_of,
    time_text,
)
from seaway.errors import CorruptionError, InvalidArgumentError

if TYPE_CHECKING:
    from seaway.streams import RetentionPolicy, ScalingPolicy, Segment, StreamCut
    from seaway.txn import Snapshot

FOLLOW_POLL_S = 0.2
"""How often ``stream read --follow`` looks for new events (the logs have no wait across segments)."""
_READ_ONLY = {("scope", "list"), ("stream", "list"), ("stream", "describe"), ("stream", "read"), ("stream", "history"),
              ("stream", "cut")}
_CUT_HELP = 'a stream cut as JSON (as "stream cut" prints it), "head", "tail", or a time (ISO 8601 or ms since 1970)'



def add_stream_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    scope = commands.add_parser("scope", help="create, list and delete scopes (the namespaces of streams)")
    ops = scope.add_subparsers(dest="op", required=True, metavar="OPERATION")
    for name, text in (("create", "create a scope"), ("delete", "delete an empty scope")):
        ops.add_parser(name, parents=[common], help=text).add_argument("scope")
    ops.add_parser("list", parents=[common], help="the scopes")

    stream = commands.add_parser(
        "stream", help="streams of auto-scaling segments: create, list, describe, update, scale, seal, truncate, "
                       "delete, write, read, cut, history",
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
    ops.add_parser("list", parents=[common], help="a scope's streams (every scope's without one)") \
        .add_argument("scope", nargs="?")
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
    truncate.add_argument("cut", help=_CUT_HELP)
    cut = ops.add_parser("cut", parents=[common], help="print a stream cut (default: the tail, just after the last "
                                                        "event of each current segment)")
    cut.add_argument("stream")
    cut.add_argument("--at", default="tail", help=_CUT_HELP + " (default tail)")
    write = ops.add_parser("write", parents=[common], help="write events (arguments, or lines of stdin)")
    write.add_argument("stream")
    write.add_argument("events", nargs="*")
    write.add_argument("--routing-key", help="the routing key of every event")
    write.add_argument("--key", dest="routing_key", help=argparse.SUPPRESS)  # its old name (--key is NAME=VALUE now)
    write.add_argument("--txn", action="store_true",
                       help="write the events in one transaction: all are seen, or none (a transactional stream)")
    read = ops.add_parser("read", parents=[common], help="print events (segment, LSN, time, [routing key,] payload), "
                                                          "each key's in the order written")
    read.add_argument("stream")
    read.add_argument("--from", dest="cut_from", default="head", metavar="CUT|TIME", help=_CUT_HELP + " (default head)")
    read.add_argument("--limit", type=int, help="stop after this many events")
    read.add_argument("--follow", action="store_true", help="keep printing new events until interrupted")
    history = ops.add_parser("history", parents=[common], help="the scalings, with their reasons")
    history.add_argument("stream")
    history.add_argument("--limit", type=int, default=1000)

    group = commands.add_parser("reader-group", help="readers that share a stream's segments: list, create, describe, "
                                                     "delete, read",
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
    ops.add_parser("list", parents=[common], help="the reader groups, each with its stream")
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
    read.add_argument("--limit", type=int, default=1000, help="stop after this many events (default 1000)")
    read.add_argument("--max", dest="limit", type=int, help=argparse.SUPPRESS)  # its old name
    read.add_argument("--timeout-s", type=float, default=1.0, help="stop after this long without an event")


def _segment_json(segment: Segment) -> dict[str, Any]:
    from seaway.streams import segment_str  # noqa: PLC0415

    return {"segment": segment_str(segment.id), "key_lo": segment.key_lo, "key_hi": segment.key_hi,
            "generation": segment.generation, "created": time_text(segment.created_ms),
            "created_ms": segment.created_ms, "log_id": segment.log_id}


def parse_scaling(text: str) -> ScalingPolicy:
    from seaway.streams import ByDataRate, ByEventRate, FixedSegments  # noqa: PLC0415

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
    from seaway.streams import RetentionBySize, RetentionByTime  # noqa: PLC0415

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
    from seaway.streams import parse_segment, segment_str  # noqa: PLC0415

    # Options are parsed before the store opens, so that a bad one is refused before anything changes.
    scaling = parse_scaling(args.scaling) if getattr(args, "scaling", None) else None
    retention = parse_retention(args.retention) if getattr(args, "retention", None) else None
    if getattr(args, "limit", None) is not None and args.limit < 1:
        raise InvalidArgumentError(f"--limit is at least 1, got {args.limit}")
    split = parse_segment(args.split) if getattr(args, "split", None) else None
    for cut_text in (getattr(args, "cut", None), getattr(args, "cut_from", None), getattr(args, "at", None)):
        if cut_text is not None:
            _check_cut_text(cut_text)
    with open_store(args, writes=(args.command, args.op) not in _READ_ONLY) as sw:
        if args.op == "list":
            scopes = [args.scope] if args.scope else sw.streams.scopes()
            names = [name for scope in scopes for name in sw.streams.list(scope)]
            out(args, names, "\n".join(names))
            return
        if args.op == "create":
            stream = sw.streams.create(args.stream, scaling=scaling, retention=retention, segments=args.segments,
                                       transactional=args.transactional,
                                       store_routing_keys=args.store_routing_keys)
            made = stream.current_segments()
            out(args, {"stream": stream.name, "segments": [_segment_json(s) for s in made]},
                f"created stream {stream.name} with {plural(len(made), 'segment')}")
            return
        stream = sw.streams.get(args.stream)
        if args.op == "describe":
            info = stream.describe()
            tail = stream.tail()
            data = {"stream": info.name, "state": info.state, "config": info.config.to_json(),
                    "generation": info.generation, "created": time_text(info.created_ms),
                    "created_ms": info.created_ms, "segments": [_segment_json(s) for s in info.segments],
                    "head": json.loads(info.head.to_json()), "tail": json.loads(tail.to_json()),
                    "scaling_under_way": info.scaling_under_way}
            lines = [f"{info.name}\t{info.state}\tgeneration {info.generation}\tcreated {time_text(info.created_ms)}"
                     f"\t{json.dumps(info.config.to_json())}"]
            lines += [f"  {segment_str(s.id)}\t[{s.key_lo:.6f}, {s.key_hi:.6f})\tlog {s.log_id}" for s in info.segments]
            lines += [f"head\t{info.head.to_json()}", f"tail\t{tail.to_json()}"]
            out(args, data, "\n".join(lines))
        elif args.op == "cut":
            found = _cut(sw, stream, args.at)
            print(found.to_json())
        elif args.op == "update":
            config = stream.update(scaling=scaling, retention=retention)
            out(args, config.to_json(), f"updated {stream.name}: {json.dumps(config.to_json())}")
        elif args.op == "scale":
            if (args.split is None) == (args.merge is None):
                raise InvalidArgumentError("give --split SEGMENT or --merge SEGMENT SEGMENT...")
            current = [s.id for s in stream.current_segments()]
            for wanted in [split] if split is not None else [parse_segment(m) for m in args.merge]:
                if wanted not in current:
                    raise InvalidArgumentError(f"{stream.name} has no current segment {segment_str(wanted)}: its "
                                               f"current segments are {', '.join(map(segment_str, current))}")
            made = stream.split(split, args.ways) if split is not None else stream.merge(args.merge)
            out(args, {"generation": made.generation, "segments": [_segment_json(s) for s in made.segments]},
                f"{stream.name} is at generation {made.generation} with {plural(len(made.segments), 'segment')}")
        elif args.op == "seal":
            stream.seal()
            out(args, {"sealed": stream.name}, f"sealed {stream.name}")
        elif args.op == "delete":
            stream.delete()
            out(args, {"deleted": stream.name}, f"deleted {stream.name}")
        elif args.op == "truncate":
            cut = _cut(sw, stream, args.cut)
            stream.truncate(cut)
            out(args, {"head": json.loads(stream.head().to_json())}, f"truncated {stream.name} at {cut.to_json()}")
        elif args.op == "write":
            events = [arg_bytes(e) for e in args.events] or stdin_lines()
            if args.txn and getattr(sw, "transaction", None) is None:
                raise InvalidArgumentError("--txn needs transactions, which this connection does not offer")
            with stream.writer() as writer, sw.transaction() if args.txn else nullcontext() as tx:
                acks = [writer.write_batch(batch, args.routing_key, txn=tx) for batch in _batches(events)]
                for ack in acks:
                    ack.result(60)
            out(args, {"stream": stream.name, "count": len(events), **({"txn": tx.id} if tx else {})},
                f"wrote {plural(len(events), 'event')} to {stream.name}" + (f" in transaction {tx.id}" if tx else ""))
        elif args.op == "read":
            _read(sw, stream, _cut(sw, stream, args.cut_from), args)
        elif args.op == "history":
            deltas = stream.history(limit=args.limit)
            rows = [{"generation": d.generation, "time": time_text(d.time_ms), "time_ms": d.time_ms, "reason": d.reason,
                     "sealed": [segment_str(s) for s in d.sealed], "created": [_segment_json(s) for s in d.created]}
                    for d in deltas]
            out(args, rows, "\n".join(
                f"{r['generation']}\t{r['time']}\tsealed {','.join(r['sealed'])}\tcreated "
                f"{','.join(c['segment'] for c in r['created'])}\t{text_of(r['reason'])}" for r in rows))


WRITE_BATCH_EVENTS_MAX = 1000
WRITE_BATCH_BYTES_MAX = 1 << 20


def _batches(events: list[bytes]) -> list[list[bytes]]:
    """``events`` in batches of at most WRITE_BATCH_EVENTS_MAX events and WRITE_BATCH_BYTES_MAX bytes
    (one event larger than that alone): a write per batch, not per event, is what makes 20,000 lines of
    stdin take a fraction of a second. Events without a routing key go a batch to a segment."""
    batches: list[list[bytes]] = []
    size = 0
    for event in events:
        if not batches or len(batches[-1]) >= WRITE_BATCH_EVENTS_MAX or size + len(event) > WRITE_BATCH_BYTES_MAX:
            batches.append([])
            size = 0
        batches[-1].append(event)
        size += len(event)
    return batches


def _check_cut_text(text: str) -> None:
    """Refuse a cut that is neither head, tail, JSON of a cut nor a time, before the store opens."""
    from seaway.streams import StreamCut  # noqa: PLC0415

    spelled = text.strip()
    if spelled.startswith("{"):
        StreamCut.from_json(spelled)
    elif spelled not in ("head", "tail"):
        parse_time(spelled)


def _cut(sw: Any, stream: Any, text: str) -> StreamCut:
    """The cut ``text`` names: ``head``, ``tail``, a cut as JSON, or a time (the first event of each
    segment at or after it, in the segments that were current then)."""
    from seaway.streams import StreamCut  # noqa: PLC0415

    spelled = text.strip()
    if spelled == "head":
        return stream.head()  # type: ignore[no-any-return]
    if spelled == "tail":
        return stream.tail()  # type: ignore[no-any-return]
    if spelled.startswith("{"):
        return StreamCut.from_json(spelled)
    at_ms = parse_time(spelled)
    head = stream.head()
    positions = {s.id: sw.logs.get(s.log_id).find_time(at_ms) for s in stream.segments_at(at_ms)}
    if not positions or stream.compare(StreamCut(stream.name, positions), head) < 0:
        return head  # type: ignore[no-any-return]  # before the head: read from where the events begin
    return StreamCut(stream.name, positions)


def _read(sw: Any, stream: Any, start: StreamCut, args: argparse.Namespace) -> None:
    """The events from ``start``, segment by segment in order of generation (a segment is read once
    every segment it came from, in its key range, is read to its end: each key's events come in the
    order written); a segment's events stop at its tail. With ``args.follow``, again and again, for
    new events and new segments. On a transactional stream, what one snapshot shows: events of
    committed transactions, none of aborted ones, and a segment stops at an event of a transaction
    still in progress (until a later look, with ``--follow``)."""
    from seaway.log import Record  # noqa: PLC0415
    from seaway.txn import AbortedJudges  # noqa: PLC0415

    positions = dict(start.positions)
    finished: set[int] = set()
    printed = 0
    config = stream.config
    while True:
        snapshot = _snapshot(sw) if config.transactional else None
        aborted = AbortedJudges(sw.meta)  # asked after the snapshot was taken
        segments = sorted(stream.segments_between(start, stream.tail()), key=lambda s: (s.generation, s.key_lo))
        unfinished: list[Segment] = []  # looked at in this pass, not read to their end: they hold back later ones
        for segment in segments:
            if segment.id in finished:
                continue
            if any(_before(p, segment) for p in unfinished):
                unfinished.append(segment)
                continue
            log = sw.logs.get(segment.log_id)
            final, tail = log.final_lsn(), log.tail_lsn()
            position = positions.get(segment.id, 1)
            for item in log.read(position, tail) if position <= tail else ():
                if not isinstance(item, Record):
                    position = item.lsn_hi + 1
                    continue
                event = _visible(stream, segment, item, snapshot, aborted)
                if event == _WAIT:  # in a transaction still in progress: later events of the segment wait
                    break
                position = item.lsn + 1
                if not isinstance(event, str):  # else _SKIP: its transaction aborted
                    payload, key = event
                    print(_event_line(args, segment.id, item.lsn, item.timestamp_ms, payload, config.framed, key),
                          flush=args.follow)
                    printed += 1
                    if args.limit is not None and printed >= args.limit:
                        return
            positions[segment.id] = position
            if final is not None and position > final:
                finished.add(segment.id)
            else:
                unfinished.append(segment)
        if not args.follow:
            return
        time.sleep(FOLLOW_POLL_S)  # bounded polling: the logs offer no wait across segments


_WAIT, _SKIP = "wait", "skip"


def _before(earlier: Segment, later: Segment) -> bool:
    """Whether ``earlier`` must be read to its end before ``later``: an older generation over an
    overlapping key range."""
    return earlier.generation < later.generation and earlier.key_lo < later.key_hi and later.key_lo < earlier.key_hi


def _visible(stream: Any, segment: Segment, item: Any, snapshot: Snapshot | None,
             aborted: Any) -> tuple[bytes, str | bytes | None] | str:
    """An event's payload and key; _SKIP for an event to skip (its transaction aborted); _WAIT for
    one of a transaction still in progress."""
    from seaway.streams import segment_str, unframe_keyed  # noqa: PLC0415
    from seaway.txn import Visibility  # noqa: PLC0415

    if not stream.config.framed:
        return item.payload, None
    write_pointer, key, payload = unframe_keyed(item.payload)
    if write_pointer:
        if snapshot is None:
            raise CorruptionError(f"{stream.name} segment {segment_str(segment.id)} position {item.lsn}: a "
                                  "transaction's event in a stream that is not transactional")
        seen = aborted.judge(segment.log_id, snapshot, write_pointer)
        if seen is Visibility.WAIT:
            return _WAIT
        if seen is Visibility.SKIP:
            return _SKIP
    return payload, key


def _event_line(args: argparse.Namespace, segment: int, lsn: int, timestamp_ms: int | None, payload: bytes,
                keyed: bool, key: str | bytes | None) -> str:
    """One event as printed: ``segment lsn time [key] payload`` (a key column for streams that store
    keys, empty for an event without one), escaped where not printable; or a JSON object, with
    ``key`` null for none, and bytes that are not UTF-8 as ``{"hex": ...}``."""
    from seaway.log import lsn_str  # noqa: PLC0415
    from seaway.streams import segment_str  # noqa: PLC0415

    if args.json:
        return json.dumps({"segment": segment_str(segment), "lsn": lsn, "lsn_str": lsn_str(lsn),
                           "time": time_text(timestamp_ms), "timestamp_ms": timestamp_ms,
                           "key": bytes_json(key) if isinstance(key, bytes) else key, "payload": bytes_json(payload)})
    columns = [segment_str(segment), lsn_str(lsn), time_text(timestamp_ms) or "-"]
    if keyed:
        columns.append("" if key is None else text_of(key))
    return "\t".join([*columns, text_of(payload)])


def _snapshot(sw: Any) -> Snapshot:
    txn = getattr(sw, "txn", None)
    if txn is None:
        raise InvalidArgumentError("the stream is transactional: reading it needs transactions, which this "
                                   "connection does not offer")
    snapshot: Snapshot = txn.snapshot()
    return snapshot


def run_reader_group(args: argparse.Namespace) -> None:
    from seaway.streams import StreamCut, segment_str  # noqa: PLC0415

    start = StreamCut.from_json(args.start) if getattr(args, "start", None) else None
    end = StreamCut.from_json(args.end) if getattr(args, "end", None) else None
    with open_store(args, writes=args.op not in ("describe", "list")) as sw:
        if args.op == "list":
            rows = [{"group": name, "stream": sw.streams.reader_group(name).stream}
                    for name in sw.streams.list_reader_groups()]
            out(args, rows, "\n".join(f"{r['group']}\t{r['stream']}" for r in rows))
        elif args.op == "create":
            made = sw.streams.create_reader_group(args.group, args.stream, start, end,
                                                  retention_subscribed=args.retention_subscribed)
            out(args, {"group": args.group, "stream": made.stream}, f"created reader group {args.group}")
        elif args.op == "delete":
            sw.streams.delete_reader_group(args.group)
            out(args, {"deleted": args.group}, f"deleted reader group {args.group}")
        elif args.op == "reset":
            group = sw.streams.reader_group(args.group)
            cut = group.reset(_cut(sw, group.stream_handle, args.to))
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
            if args.limit < 1 or not args.timeout_s > 0:
                raise InvalidArgumentError("--limit must be at least 1 and --timeout-s above 0")
            group = sw.streams.reader_group(args.group)
            keyed = group.stream_handle.config.framed
            with group.reader(args.reader) as reader:
                for _ in range(args.limit):
                    event = reader.read_next(args.timeout_s)
                    if event is None:
                        break
                    print(_event_line(args, event.segment, event.lsn, event.timestamp_ms, event.payload, keyed,
                                      event.routing_key))
