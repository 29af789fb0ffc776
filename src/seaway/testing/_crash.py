"""The child side of crash tests: append in a loop, recording each acknowledgement, until killed.

Run as ``python -m seaway.testing._crash DATA_DIR ACK_FILE RUN``. Every line of ``ACK_FILE`` is
written only after its append was acknowledged: ``RUN BATCH FIRST_LSN COUNT``. Payloads are derived
from ``(RUN, BATCH, index)`` by :func:`payload`, so the parent can check them byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from concurrent.futures import Future

import seaway

LOG_NAME = "crash"


def payload(run: int, batch: int, index: int) -> bytes:
    seed = hashlib.sha256(f"{run}/{batch}/{index}".encode()).digest()
    size = 16 + seed[0] * 4
    return (seed * (size // len(seed) + 1))[:size]


def main(argv: list[str]) -> None:
    data_dir, ack_path, run = argv[0], argv[1], int(argv[2])
    rng = random.Random(run)
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    # Batches of 1 to 30 records of 16 to 1036 bytes: the larger ones go to segment files.
    config = seaway.SeawayConfig(logs=seaway.LogStoreConfig(logsdb=seaway.LogsDBConfig(segment_min_bytes=8192)))
    with seaway.open(data_dir, config) as sw:
        try:
            log = sw.logs.get(LOG_NAME)
        except seaway.UnknownLogError:
            log = sw.logs.create(LOG_NAME)
        batch = 0
        while True:
            # A few batches in flight at once, so the kill can land between their writes.
            in_flight: list[tuple[int, int, Future[range]]] = []
            for _ in range(rng.randint(1, 4)):
                count = rng.randint(1, 30)
                payloads = [payload(run, batch, i) for i in range(count)]
                in_flight.append((batch, count, log.append_batch_async(payloads)))
                batch += 1
            for number, count, future in in_flight:
                lsns = future.result()
                if len(lsns) != count:
                    raise SystemExit(f"batch {number}: {len(lsns)} LSNs for {count} records")
                os.write(fd, f"{run} {number} {lsns[0]} {count}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1:])
