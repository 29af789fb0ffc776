"""The client side of the server crash test: append through the client in a loop, logging each ack.

Run as ``python -m seaway.testing._producer URL LOG ACK_FILE CLIENT``. A line ``CLIENT BATCH FIRST_LSN
COUNT`` is written to ``ACK_FILE`` only after the batch was acknowledged; payloads come from
:func:`seaway.testing._crash.payload` with ``run = CLIENT``, so the parent can check them.
"""

from __future__ import annotations

import os
import random
import sys

import seaway
from seaway.testing._crash import payload


def main(argv: list[str]) -> None:
    url, log_name, ack_path, client = argv[0], argv[1], argv[2], int(argv[3])
    rng = random.Random(client)
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    # Patient enough to ride out a server restart; each retry carries the batch's sequence number.
    retry = seaway.RetryPolicy(attempts_max=200, backoff_s=0.02, backoff_max_s=0.25)
    with seaway.connect(url, retry=retry, timeout_s=10) as sw:
        log = sw.logs.get(log_name)
        batch = 0
        while True:
            # 1 to 100 records of 16 to 1036 bytes: a third of the batches exceed the server's
            # segment_min_bytes (32 KB), so both ways of storing a batch are killed mid-write.
            count = rng.randint(1, 100)
            lsns = log.append_batch([payload(client, batch, i) for i in range(count)])
            os.write(fd, f"{client} {batch} {lsns[0]} {count}\n".encode())
            batch += 1


if __name__ == "__main__":
    main(sys.argv[1:])
