"""The child side of the writer crash test: write keyed events through an :class:`EventWriter`
with many of each key in flight, and die (SIGKILL) once the Nth append has landed, before its
reply comes back (:class:`~seaway.testing.AppendFaults` ``crash_after``).

Run as ``python -m seaway.testing._writer_crash DATA_DIR ACK_FILE SEED``. Events are
``<key>:<n>`` (``n`` counting up per key, six digits) over ``KEYS`` routing keys; a line
``<key>:<n>`` is appended to ``ACK_FILE`` once the writer acknowledged the event (durable). The
faults (replies delayed by seed, so that they come back out of order) touch only the writer's
appends. An exit code of 3 means the writes ended without the crash.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import threading
from concurrent.futures import Future

import seaway
from seaway.streams import AutoScalingConfig, FixedSegments, WriteAck
from seaway.testing._append_faults import AppendFaults

STREAM = "crash/events"
KEYS = 6
EVENTS_PER_KEY = 20_000
CONFIG = seaway.SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None), retention=None)
NOT_CRASHED = 3


def crash_after(seed: int) -> int:
    """Which of the writer's appends lands last: some way in, once appends join many events."""
    return random.Random(seed).randint(20, 200)


def main(argv: list[str]) -> None:
    data_dir, ack_path, seed = argv[0], argv[1], int(argv[2])
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    lock = threading.Lock()

    def acked(line: bytes, future: Future[WriteAck]) -> None:
        if future.exception() is None:
            with lock:
                os.write(fd, line)

    sw = seaway.Seaway(data_dir, CONFIG)
    sw.streams.create_scope("crash")
    sw.streams.create(STREAM, scaling=FixedSegments(2))
    faults = AppendFaults(seed, delay=0.3, delay_s_max=0.01, marked_only=True, crash_after=crash_after(seed))
    with faults.applied(sw), sw.streams.get(STREAM).writer("w") as writer:
        for n in range(EVENTS_PER_KEY):
            for key in range(KEYS):
                payload = f"k{key}:{n:06d}".encode()
                writer.write(payload, f"k{key}").add_done_callback(functools.partial(acked, payload + b"\n"))
        writer.flush()
    sw.close()
    raise SystemExit(NOT_CRASHED)


if __name__ == "__main__":
    main(sys.argv[1:])
