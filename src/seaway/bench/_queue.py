"""``seaway bench queue``: the source design's headline workload, transactional and exactly-once.

Three producers enqueue 1 KB entries in transactions of 500 to one queue with two consumer groups
(2 consumers hashing on a user id, 3 hashing on a page id); every consumer dequeues and
acknowledges inside a transaction. Each entry carries its producer, its sequence number and its
send time: at the end every group's count and checksums must equal what was produced (exactly
once), and consumers measure end-to-end latency (from the producer's enqueue to the consumer's
commit). It runs through a server it starts (producers and consumers in processes of their own),
again with producers paced to a fixed total rate for the latency, and embedded (threads); the
reference, ``seaway bench log --remote``'s full-speed round, runs against the same server in the
same run.

Workers run ``python -m seaway.bench._queue produce|consume URL ...`` and print one JSON line.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seaway
from seaway._alloc import keep_large_buffers_in_heap
from seaway._progress import Progress
from seaway.bench import _workers as workers
from seaway.bench._log import machine, process_cpu_s
from seaway.bench._remote import RemoteBenchConfig, _percentile, pack_latencies, unpack_latencies
from seaway.bench._remote import _remote_round as _log_round
from seaway.server import ServerProcess

_HEAD = struct.Struct(">QIQ")
"""An entry starts with its send time (ns), its producer and its sequence number."""
GROUPS = (("users", 2, "user"), ("pages", 3, "page"))
_KEY_OF: dict[str, Callable[[int], int]] = {"users": lambda seq: seq % 1000, "pages": lambda seq: (seq * 7) % 501}
"""Each entry's key in each group, from its sequence number (as the producer sets them)."""
_MASK = (1 << 64) - 1
CPU_US_PER_ENTRY_TARGET = 20
"""Two cores give 2,000,000 us of CPU a second: 100,000 entries a second leave 20 us an entry for
producers, consumers and server together."""
DEQUEUE_ENTRIES = 2000
"""Entries a consumer takes (and acknowledges) per transaction at most: what it has, up to this."""


@dataclass(frozen=True)
class QueueBenchConfig:
    producers: int = 3
    transactions: int = 60
    """Transactions each producer commits in the full-speed round."""
    batch_entries: int = 500
    entry_bytes: int = 1024
    paced_events_per_s: int = 20_000
    paced_s: float = 5.0
    reference_batches: int = 60
    """Batches of 500 per producer in the reference round of ``bench log --remote``."""
    in_flight: int = 4
    """Transactions each producer keeps open at once (as the reference keeps 4 batches in flight)."""


def entry_id(producer: int, seq: int) -> int:
    return (producer << 40) | seq


def produce(sw: Any, queue: str, producer: int, transactions: int, batch: int, entry_bytes: int,
            events_per_s: float | None, ready: Any = lambda: None, phase: float = 0.0,
            in_flight: int = 1) -> dict[str, Any]:
    """Commit ``transactions`` transactions of ``batch`` entries, ``in_flight`` at a time (each
    from a thread of its own, as a producer process with several transactions open would); paced
    to ``events_per_s`` if given."""
    out = sw.queues.producer(queue)
    results: list[dict[str, Any]] = []
    counts = [transactions // in_flight + (k < transactions % in_flight) for k in range(in_flight)]
    rate = events_per_s / in_flight if events_per_s else None
    threads = [threading.Thread(target=lambda k=k: results.append(_produce_one(
        sw, out, producer * in_flight + k, counts[k], batch, entry_bytes, rate, (phase + k) / in_flight, started)))
        for k in range(in_flight)]
    ready()
    started, cpu_started = time.time(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(results) != in_flight:
        raise RuntimeError("a producer thread failed")
    xor = 0
    for r in results:
        xor ^= r["xor"]
    return {"started": started, "ended": time.time(), "entries": sum(r["entries"] for r in results),
            "sum": sum(r["sum"] for r in results) & _MASK, "xor": xor,
            "cpu_s": time.process_time() - cpu_started}


def _produce_one(sw: Any, out: Any, producer: int, transactions: int, batch: int, entry_bytes: int,
                 events_per_s: float | None, phase: float, started: float) -> dict[str, Any]:
    pad = b"\0" * (entry_bytes - _HEAD.size)
    seq = 0
    for n in range(transactions):
        if events_per_s:
            delay = started + (n + phase) * batch / events_per_s - time.time()
            if delay > 0:
                time.sleep(delay)
        with sw.transaction(logs=out.logs()) as tx:  # declared at its begin: the commit registers none
            now = time.time_ns()
            payloads = [_HEAD.pack(now, producer, seq + i) + pad for i in range(batch)]
            keys = [{"user": _KEY_OF["users"](seq + i), "page": _KEY_OF["pages"](seq + i)} for i in range(batch)]
            out.enqueue_batch(tx, payloads, keys)
        seq += batch
    ids = [entry_id(producer, s) for s in range(seq)]
    xor = 0
    for value in ids:
        xor ^= value
    return {"entries": seq, "sum": sum(ids) & _MASK, "xor": xor}


def consume(sw: Any, queue: str, group: str, consumer_id: int, done: Any, ready: Any = lambda: None) -> dict[str, Any]:
    """Dequeue and commit until ``done()`` says the producers finished and nothing is left."""
    latencies: list[float] = []
    total = xor = 0
    seen: set[int] = set()
    duplicates = out_of_order = 0
    last_seq: dict[tuple[int, int], int] = {}
    key_of = _KEY_OF[group]
    first = last = 0.0
    with sw.queues.consumer(queue, group, consumer_id) as consumer:
        ready()
        cpu_started = time.process_time()
        finished = False
        # Begun with the reads its first dequeue makes, and each next one begun by the commit
        # before it: in steady state one call a transaction (plus the dequeue's reads).
        tx = sw.txn.begin(reads=consumer.reads())
        try:
            while True:
                entries = consumer.dequeue(tx, DEQUEUE_ENTRIES, 0.05)
                if not entries:
                    tx.abort()
                    if finished:
                        break
                    finished = done()
                    tx = sw.txn.begin(reads=consumer.reads())
                    continue
                tx = tx.commit_and_begin(reads=consumer.reads())
                now_ns = time.time_ns()
                first = first or now_ns / 1e9
                last = now_ns / 1e9
                for entry in entries:
                    stamp, producer, seq = _HEAD.unpack_from(entry.payload)
                    ident = entry_id(producer, seq)
                    duplicates += ident in seen
                    where = (producer, key_of(seq))  # one producer's entries of a key come in its order
                    out_of_order += last_seq.get(where, -1) >= seq
                    last_seq[where] = seq
                    seen.add(ident)
                    total = (total + ident) & _MASK
                    xor ^= ident
                    latencies.append((now_ns - stamp) / 1e6)
        finally:
            tx.abort()  # the one begun last (nothing once it ended)
    return {"group": group, "entries": len(latencies), "unique": len(seen), "duplicates": duplicates,
            "out_of_order": out_of_order,
            "sum": total, "xor": xor, "first": first, "last": last, "latencies_ms": latencies,
            "cpu_s": time.process_time() - cpu_started}


def _setup(sw: Any, queue: str) -> None:
    sw.queues.create(queue)
    for group, size, key in GROUPS:
        sw.queues.create_group(queue, group, size, "HASH", key=key)


def _done_key(queue: str) -> bytes:
    return f"done/{queue}".encode()


def _summary(produced: list[dict[str, Any]], consumed: list[dict[str, Any]]) -> dict[str, Any]:
    start = min(p["started"] for p in produced)
    entries = sum(p["entries"] for p in produced)
    want_sum = sum(p["sum"] for p in produced) & _MASK
    want_xor = 0
    for p in produced:
        want_xor ^= p["xor"]
    groups: dict[str, Any] = {}
    for group, _, _ in GROUPS:
        mine = [c for c in consumed if c["group"] == group]
        got_sum = sum(c["sum"] for c in mine) & _MASK
        got_xor = 0
        for c in mine:
            got_xor ^= c["xor"]
        count = sum(c["entries"] for c in mine)
        end = max((c["last"] for c in mine if c["last"]), default=start)
        groups[group] = {"consumed": count, "consumed_per_s": round(count / max(end - start, 1e-9)),
                         "exactly_once": (count == entries and got_sum == want_sum and got_xor == want_xor
                                          and not any(c["duplicates"] for c in mine)),
                         "key_order": not any(c["out_of_order"] for c in mine)}
    latencies = [x for c in consumed for x in c["latencies_ms"]]
    return {"produced": entries,
            "produced_per_s": round(entries / (max(p["ended"] for p in produced) - start)),
            "consumed_per_s_min_group": min(g["consumed_per_s"] for g in groups.values()),
            "exactly_once": all(g["exactly_once"] for g in groups.values()),
            "key_order": all(g["key_order"] for g in groups.values()),
            "groups": groups,
            "latency_p50_ms": round(_percentile(latencies, 0.5), 2),
            "latency_p99_ms": round(_percentile(latencies, 0.99), 2)}


def _remote_round(url: str, config: QueueBenchConfig, transactions: int, rate: float,
                  server_pid: int | None = None) -> dict[str, Any]:
    """One round through the server at ``url``; with the server's ``server_pid``, its figures hold
    ``cpu_us_per_entry``: the CPU time (user + system) of every process of the round (the server,
    the producers and consumers from their start signal on, this one) over the entries produced."""
    queue = f"bench-{os.getpid()}-{time.time_ns()}"
    with seaway.connect(url) as sw:
        _setup(sw, queue)
    python = [sys.executable, "-m", "seaway.bench._queue_worker"]
    consumers = [workers.start([*python, "consume", url, queue, group, str(c)], waits_for_go=False)
                 for group, size, _ in GROUPS for c in range(size)]
    producers = [workers.start([*python, "produce", url, queue, str(p), str(transactions), str(config.batch_entries),
                                str(config.entry_bytes), str(rate), str(p / config.producers), str(config.in_flight)])
                 for p in range(config.producers)]
    with workers.killed_at_exit(consumers + producers):
        workers.await_ready(consumers + producers)
        server_cpu = None if server_pid is None else process_cpu_s(server_pid)
        own_cpu = time.process_time()
        workers.go(producers)
        produced = [workers.result(proc) for proc in producers]
        with seaway.connect(url) as sw:
            sw.meta.put("bench", _done_key(queue), b"1")
        consumed = [workers.result(proc) for proc in consumers]
        server_after = None if server_pid is None else process_cpu_s(server_pid)
        own_cpu = time.process_time() - own_cpu
        for figures in consumed:
            figures["latencies_ms"] = unpack_latencies(figures["latencies_ms"])
    with seaway.connect(url) as sw:
        sw.queues.delete(queue)
    summary = _summary(produced, consumed)
    if server_cpu is not None and server_after is not None and summary["produced"]:
        cpu_s = (server_after - server_cpu) + own_cpu + sum(w["cpu_s"] for w in produced + consumed)
        summary["cpu_us_per_entry"] = round(cpu_s * 1e6 / summary["produced"], 1)
    return summary


def _embedded_round(config: QueueBenchConfig) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, seaway.open(Path(tmp)) as sw:
        _setup(sw, "bench")
        finished = threading.Event()
        produced: list[dict[str, Any]] = []
        consumed: list[dict[str, Any]] = []
        consumers = [threading.Thread(target=lambda g=group, c=c: consumed.append(
            consume(sw, "bench", g, c, finished.is_set))) for group, size, _ in GROUPS for c in range(size)]
        producers = [threading.Thread(target=lambda p=p: produced.append(produce(
            sw, "bench", p, config.transactions, config.batch_entries, config.entry_bytes, None,
            in_flight=config.in_flight)))
            for p in range(config.producers)]
        for t in consumers + producers:
            t.start()
        for t in producers:
            t.join()
        finished.set()
        for t in consumers:
            t.join()
    if len(produced) != config.producers or len(consumed) != sum(size for _, size, _ in GROUPS):
        raise RuntimeError("an embedded benchmark thread failed")
    return _summary(produced, consumed)


def run_queue_bench(config: QueueBenchConfig) -> dict[str, Any]:
    keep_large_buffers_in_heap()
    paced_txns = max(1, round(config.paced_events_per_s * config.paced_s / config.batch_entries / config.producers))
    rate = config.paced_events_per_s / config.producers
    with Progress(4, "remote, full speed") as progress, \
            tempfile.TemporaryDirectory(prefix="seaway-bench-") as tmp, ServerProcess(Path(tmp) / "data") as server:
        full = _remote_round(server.url, config, config.transactions, 0, server.pid)
        progress.advance(label=f"remote, paced at {config.paced_events_per_s} events/s")
        paced = _remote_round(server.url, config, paced_txns, rate)
        progress.advance(label="reference: bench log --remote")
        reference, _ = _remote_round_log(server.url, config)
        progress.advance(label="embedded")
        embedded = _embedded_round(config)
        progress.advance(label="done")
    return {
        "benchmark": "queue",
        "producers": config.producers,
        "groups": {group: {"consumers": size, "hash_key": key} for group, size, key in GROUPS},
        "entries_per_producer": config.transactions * config.batch_entries,
        "entry_bytes": config.entry_bytes,
        "batch_entries": config.batch_entries,
        "transactions_in_flight_per_producer": config.in_flight,
        **{k: v for k, v in full.items() if k != "groups"},
        "groups_remote": full["groups"],
        "paced_events_per_s": config.paced_events_per_s,
        "paced_latency_p50_ms": paced["latency_p50_ms"],
        "paced_latency_p99_ms": paced["latency_p99_ms"],
        "paced_exactly_once": paced["exactly_once"],
        "log_remote_produced_per_s": reference["produced_per_s"],
        "produced_ratio_to_log_remote": round(full["produced_per_s"] / reference["produced_per_s"], 3),
        "embedded_produced_per_s": embedded["produced_per_s"],
        "embedded_consumed_per_s_min_group": embedded["consumed_per_s_min_group"],
        "embedded_exactly_once": embedded["exactly_once"],
        "embedded_latency_p50_ms": embedded["latency_p50_ms"],
        "targets": {"produced_per_s": 100_000, "consumed_per_s_min_group": 100_000, "paced_latency_p50_ms": 20,
                    "cpu_us_per_entry": CPU_US_PER_ENTRY_TARGET},
        "machine": machine(),
    }


def _remote_round_log(url: str, config: QueueBenchConfig) -> tuple[dict[str, float], float | None]:
    reference = RemoteBenchConfig(producers=config.producers, batches=config.reference_batches,
                                  batch_records=config.batch_entries, record_bytes=config.entry_bytes)
    return _log_round(url, reference, "reference", reference.batches, 0)


def worker(argv: list[str]) -> None:
    keep_large_buffers_in_heap()
    role, url, queue = argv[0], argv[1], argv[2]
    with seaway.connect(url, timeout_s=120) as sw:
        if role == "produce":
            producer, transactions, batch, entry_bytes = (int(a) for a in argv[3:7])
            rate, phase, in_flight = float(argv[7]), float(argv[8]), int(argv[9])

            def go() -> None:
                print("ready", flush=True)
                sys.stdin.readline()

            result = produce(sw, queue, producer, transactions, batch, entry_bytes, rate or None, go, phase,
                             in_flight)
        else:
            group, consumer_id = argv[3], int(argv[4])
            result = consume(sw, queue, group, consumer_id,
                             lambda: sw.meta.get("bench", _done_key(queue)) is not None,
                             lambda: print("ready", flush=True))
            result["latencies_ms"] = pack_latencies(result["latencies_ms"])
    print(json.dumps(result), flush=True)

