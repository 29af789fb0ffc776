"""A producer or consumer process of ``seaway bench log --remote``; prints one JSON line of figures
(a consumer's latencies as base64 of 64-bit floats).

Each prints ``ready`` once connected (a consumer: once tailing); a producer then waits for a line on
its standard input before it sends anything.

``python -m seaway.bench._worker produce URL LOG BATCHES BATCH_RECORDS RECORD_BYTES IN_FLIGHT RATE PHASE``
``python -m seaway.bench._worker consume URL LOG RECORDS``
"""

from __future__ import annotations

import json
import sys
from typing import Any

import seaway
from seaway._alloc import keep_large_buffers_in_heap
from seaway.bench._remote import consume, pack_latencies, produce


def _ready() -> None:
    print("ready", flush=True)


def _ready_then_go() -> None:
    _ready()
    sys.stdin.readline()  # the parent's signal: every worker is ready


def _worker(argv: list[str]) -> None:
    keep_large_buffers_in_heap()  # as the server does: batches pass through large buffers
    role, url, log_name = argv[0], argv[1], argv[2]
    numbers = [float(a) for a in argv[3:]]
    with seaway.connect(url, timeout_s=120) as sw:
        log = sw.logs.get(log_name)
        if role == "produce":
            batches, batch_records, record_bytes, in_flight, rate, phase = numbers
            result: dict[str, Any] = produce(log, int(batches), int(batch_records), int(record_bytes),
                                             int(in_flight), rate or None, _ready_then_go, phase)
        else:
            result = consume(sw.logs.reader, log, int(numbers[0]), _ready)
    if "latencies_ms" in result:
        result["latencies_ms"] = pack_latencies(result["latencies_ms"])
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1:])
