"""A client process of ``seaway bench txn``: connects, warms up, prints ``ready``, waits for a line on
its standard input, makes its calls from its threads, and prints one JSON line of what it measured.

``python -m seaway.bench._txn_worker KIND URL COUNT NAMESPACE THREADS`` (KIND: ``txn`` or ``meta``)
"""

from __future__ import annotations

import json
import sys

import seaway
from seaway.bench._txn import KINDS, run_ops, warm_up


def _worker(argv: list[str]) -> None:
    kind, url, count, namespace, threads = argv[0], argv[1], int(argv[2]), argv[3], int(argv[4])
    if kind not in KINDS:
        raise SystemExit(f"KIND is one of {KINDS}, got {kind!r}")
    with seaway.connect(url, timeout_s=120) as sw:
        warm_up(kind, sw, namespace, threads)  # the connection made, before the clock starts
        print("ready", flush=True)
        sys.stdin.readline()  # the parent's signal: every worker is ready
        result = run_ops(kind, sw, count, namespace, threads)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1:])
