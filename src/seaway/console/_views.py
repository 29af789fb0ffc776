"""What the console shows, as JSON-ready values: read through the public API that an embedded store
(``seaway.open``) and a client (``seaway.connect``) both offer (the :class:`seaway.Store` Protocol,
which mypy checks every call here against), and nothing else, so that the same code serves both.
Times are ISO 8601 UTC (``2026-11-27T04:30:00.123Z``), LSNs ``e<epoch>n<esn>``, segments
``generation.number``, as the command prints them.

Nothing here changes the store: every call it makes only reads.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from seaway.errors import SeawayError
from seaway.ledger import CHANGES, LedgerEntry
from seaway.log import lsn_str
from seaway.streams import Delta, Segment, segment_str

if TYPE_CHECKING:
    from seaway import Store  # a Protocol: both stores (embedded and a client) satisfy it

STREAMS_MAX = 1_000
"""Streams the streams page lists (the first by scope, then name)."""
HISTORY_DELTAS_MAX = 1_000
"""Scalings a stream's timeline draws (the first ones)."""
TRANSACTIONS_MAX = 1_000
"""Transactions the transactions page lists (the oldest first)."""


def iso_ms(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds and ``Z``; None stays None."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- health ------------------------------------------------------------------------------------


def health(store: Store, where: str, started_ms: int, groups_max: int,
           serving: Callable[[], bool] | None = None,
           figures: Callable[[], dict[str, float]] | None = None) -> dict[str, Any]:
    """Whether the store serves, its ledger's bounds, how many of each thing it holds (counted
    up to the lists' limits (:data:`STREAMS_MAX`, ``groups_max``, :data:`TRANSACTIONS_MAX`), so
    that what the page asks every few seconds costs the same however much the store holds), and
    beside a server, its own figures (``figures``: requests, errors, ... since it started)."""
    status = _status(store, serving)
    tail, head = store.ledger.bounds()
    scopes = store.streams.scopes()
    streams_seen = 0
    for scope in scopes:
        if streams_seen >= STREAMS_MAX:
            break
        streams_seen += len(store.streams.list(scope))
    return {"status": status, "where": where, "time": iso_ms(now_ms()), "console_started": iso_ms(started_ms),
            "write_failure": getattr(store, "write_failure", None),
            "ledger": {"tail_index": tail, "head_index": head},
            "counts": {"scopes": len(scopes), "streams": min(streams_seen, STREAMS_MAX),
                       "reader_groups": len(store.streams.list_reader_groups(limit=groups_max)),
                       "queues": len(store.queues.list()),
                       "transactions": len(store.txn.list(limit=TRANSACTIONS_MAX)),
                       "notify_plugins": len(store.notify.status())},
            "counts_max": {"streams": STREAMS_MAX, "reader_groups": groups_max, "transactions": TRANSACTIONS_MAX},
            "server": None if figures is None else figures()}


def _status(store: Store, serving: Callable[[], bool] | None) -> str:
    """``SERVING`` or ``NOT_SERVING``, as the server's Health call says it. Beside a server, its own
    rule (``serving``); for a client, the server's answer; for an embedded store, open and taking
    writes."""
    if serving is not None:
        return "SERVING" if serving() else "NOT_SERVING"
    remote = getattr(store, "health", None)
    if callable(remote):
        try:
            return str(remote())
        except SeawayError as exc:
            return f"UNAVAILABLE: {exc}"
    return "NOT_SERVING" if store.closed or getattr(store, "write_failure", None) else "SERVING"


# --- streams -----------------------------------------------------------------------------------


def segment_json(segment: Segment) -> dict[str, Any]:
    return {"segment": segment_str(segment.id), "key_lo": segment.key_lo, "key_hi": segment.key_hi,
            "generation": segment.generation, "created": iso_ms(segment.created_ms), "log_id": segment.log_id}


def streams(store: Store) -> list[dict[str, Any]]:
    """Every stream (up to :data:`STREAMS_MAX`), with its state and how many segments it has now."""
    rows: list[dict[str, Any]] = []
    for scope in store.streams.scopes():
        for name in store.streams.list(scope):
            if len(rows) >= STREAMS_MAX:
                return rows
            try:
                info = store.streams.get(name).describe()  # named scope/stream
            except SeawayError:  # deleted meanwhile
                continue
            rows.append({"stream": info.name, "state": info.state, "generation": info.generation,
                         "created": iso_ms(info.created_ms), "segments": len(info.segments),
                         "config": info.config.to_json(), "scaling_under_way": info.scaling_under_way})
    return rows


def stream(store: Store, name: str) -> dict[str, Any]:
    """One stream: its current segments (with their logs' tails), its scalings, and its scaling
    timeline: every segment it has had, with the key range it covered and from when until when."""
    handle = store.streams.get(name)
    info = handle.describe()
    deltas = handle.history(limit=HISTORY_DELTAS_MAX)
    bounds = store.logs.bounds([s.log_id for s in info.segments])  # one call for every segment
    segments = []
    for s in info.segments:
        found = bounds.get(s.log_id)
        segments.append({**segment_json(s), "tail_lsn": None if found is None else lsn_str(found.tail_lsn)})
    try:
        first = handle.segments_at(info.created_ms)
    except SeawayError:  # its first segments are no longer known: the timeline starts at its first scaling
        first = []
    return {"stream": info.name, "state": info.state, "generation": info.generation,
            "created": iso_ms(info.created_ms), "config": info.config.to_json(), "segments": segments,
            "head": {segment_str(s): lsn_str(p) for s, p in info.head.positions.items()},
            "history": [{"generation": d.generation, "time": iso_ms(d.time_ms), "reason": d.reason,
                         "sealed": [segment_str(s) for s in d.sealed],
                         "created": [segment_str(s.id) for s in d.created]} for d in deltas],
            "timeline": timeline(first, deltas, info.created_ms, now_ms())}


def timeline(first: list[Segment], deltas: list[Delta], created_ms: int, until_ms: int) -> list[dict[str, Any]]:
    """Each segment as a rectangle over time and key space: ``from`` its creation ``to`` the scaling
    that sealed it (or ``until_ms`` if none has), over ``[key_lo, key_hi)``. ``first``: the
    segments the stream was created with; ``deltas``: its scalings, in order."""
    spans: dict[int, dict[str, Any]] = {}
    for s in first:
        spans[s.id] = {"segment": segment_str(s.id), "generation": s.generation, "key_lo": s.key_lo,
                       "key_hi": s.key_hi, "from_ms": created_ms, "to_ms": None}
    for d in deltas:
        for sealed in d.sealed:
            if sealed in spans:
                spans[sealed]["to_ms"] = d.time_ms
        for s in d.created:
            spans[s.id] = {"segment": segment_str(s.id), "generation": s.generation, "key_lo": s.key_lo,
                           "key_hi": s.key_hi, "from_ms": d.time_ms, "to_ms": None}
    return [{"segment": span["segment"], "generation": span["generation"], "key_lo": span["key_lo"],
             "key_hi": span["key_hi"], "from": iso_ms(span["from_ms"]),
             "to": iso_ms(until_ms if span["to_ms"] is None else span["to_ms"]), "open": span["to_ms"] is None}
            for span in spans.values()]


# --- groups ------------------------------------------------------------------------------------


def reader_groups(store: Store, groups_max: int) -> list[dict[str, Any]]:
    """The reader groups (the first ``groups_max`` by name): readers, segments and positions, lag."""
    rows = []
    for name in store.streams.list_reader_groups(limit=groups_max):
        try:
            info = store.streams.reader_group(name).describe()
        except SeawayError:  # deleted meanwhile
            continue
        rows.append({"group": info.name, "stream": info.stream, "readers": list(info.readers),
                     "assignments": {r: [segment_str(s) for s in segs] for r, segs in info.assignments.items()},
                     "unassigned": [segment_str(s) for s in info.unassigned],
                     "positions": [{"segment": segment_str(s), "position": lsn_str(p),
                                    "lag": info.lags.get(s)}
                                   for s, p in sorted(info.positions.items())],
                     "lag": info.lag})
    return rows


def consumer_groups(store: Store, groups_max: int) -> list[dict[str, Any]]:
    """The queues' consumer groups (the first ``groups_max``): layout, partitions' positions, lag."""
    rows: list[dict[str, Any]] = []
    for queue in store.queues.list():
        for group in store.queues.groups(queue):
            if len(rows) >= groups_max:
                return rows
            try:
                info = store.queues.describe_group(queue, group)
            except SeawayError:
                continue
            rows.append({"queue": info.queue, "group": info.name, "size": info.size,
                         "strategy": info.strategy.value, "generation": info.generation, "resizing": info.resizing,
                         "skipped": info.skipped, "lag": info.lag,
                         "partitions": [{"generation": p.generation, "partition": p.partition,
                                         "position": lsn_str(p.position.lsn), "entry": p.position.entry,
                                         "tail_lsn": lsn_str(p.tail_lsn), "drained": p.drained,
                                         "lag": p.lag} for p in info.partitions]})
    return rows


def lag_totals(store: Store, groups_max: int) -> dict[str, int | None]:
    """Every group's total lag, by series name (``reader group NAME``, ``consumer group QUEUE/GROUP``,
    ``notify NAME``): what the lag sampler records."""
    totals: dict[str, int | None] = {}
    for row in reader_groups(store, groups_max):
        totals[f"reader group {row['group']}"] = row["lag"]
    for row in consumer_groups(store, groups_max):
        totals[f"consumer group {row['queue']}/{row['group']}"] = row["lag"]
    for plugin in store.notify.status()[:groups_max]:
        totals[f"notify {plugin.name}"] = plugin.lag
    return totals


# --- the ledger --------------------------------------------------------------------------------


def operations() -> list[str]:
    """Every kind of change the ledger records (for the feed's filter)."""
    return sorted(CHANGES)


def entry_json(entry: LedgerEntry) -> dict[str, Any]:
    change = {f.name: getattr(entry.change, f.name) for f in dataclasses.fields(entry.change)}
    return {"index": entry.index, "time": iso_ms(entry.time_ms), "operation": entry.operation,
            "resource": entry.resource, "change": json.loads(json.dumps(change, default=str))}


def ledger(store: Store, *, after: int | None, kind: str, name: str, entries_max: int,
           scan_entries_max: int) -> dict[str, Any]:
    """Ledger entries of operation ``kind`` (all if empty) on a resource whose name contains ``name``
    (all if empty). With ``after`` (an index): the entries after it, oldest first; without: the
    latest ones. At most ``entries_max`` entries, found among at most ``scan_entries_max``;
    ``next`` is the index to ask after next time; ``missed``, the entries after ``after`` that were
    pruned before they could be shown (None if none were)."""
    tail, head = store.ledger.bounds()
    start = max(tail, head - scan_entries_max + 1) if after is None else max(tail, after + 1)
    stop = min(head, start + scan_entries_max - 1)
    found: list[dict[str, Any]] = []
    index = start
    last_seen = start - 1
    while index <= stop:
        batch = store.ledger.read(index, min(1000, stop - index + 1))
        if not batch:
            break
        for entry in batch:
            last_seen = entry.index
            if (not kind or entry.operation == kind) and (not name or name in entry.resource):
                found.append(entry_json(entry))
        index = batch[-1].index + 1
    if after is None:
        found = found[-entries_max:]
        next_index = last_seen
    else:
        if len(found) > entries_max:  # the rest comes with the next answer
            found = found[:entries_max]
            last_seen = found[-1]["index"]
        next_index = last_seen
    missed = store.ledger.missed(after) if after is not None else range(0)
    return {"entries": found, "next": max(next_index, 0), "tail_index": tail, "head_index": head,
            "missed": None if not missed else {"first": missed.start, "last": missed.stop - 1}}


# --- transactions and notifications ------------------------------------------------------------


def transactions(store: Store) -> list[dict[str, Any]]:
    """The transactions the manager holds: in progress, then invalid (aborted or timed out, their
    data not yet gone); the first :data:`TRANSACTIONS_MAX`."""
    now = now_ms()
    return [{"id": t.id, "status": t.status.value, "began": iso_ms(t.began_ms), "times_out": iso_ms(t.expiry_ms),
             "age_s": None if t.began_ms is None else round((now - t.began_ms) / 1000, 1), "logs": list(t.logs)}
            for t in store.txn.list(limit=TRANSACTIONS_MAX)]


def plugins(store: Store) -> list[dict[str, Any]]:
    """The notification plugins: target, position in the ledger, lag, counters, why one cannot run
    (``error``), and its last failed delivery (``last_error``, at ``last_error_time``)."""
    return [{"name": s.name, "target": s.target, "position": s.position, "lag": s.lag,
             "counters": dict(s.counters), "pending": s.pending, "updated": iso_ms(s.updated_ms or None),
             "error": s.error, "last_error": s.last_error, "last_error_time": iso_ms(s.last_error_ms or None)}
            for s in store.notify.status()]
