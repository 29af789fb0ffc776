"""The child side of the stream crash test: write keyed events and scale, until killed.

Run as ``python -m seaway.testing._stream_crash DATA_DIR ACK_FILE RUN``. A writer writes events
``<key> <n>`` over ``KEYS`` routing keys, ``n`` increasing per key across runs (``RUN * 10**6``
onwards); a line ``<key> <n>`` is appended to ``ACK_FILE`` once the event is durable. Meanwhile
another thread splits and merges the stream's segments without pause.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import threading
from concurrent.futures import Future

import seaway
from seaway.streams import FixedSegments, WriteAck

SCOPE = "crash"
STREAM = f"{SCOPE}/keys"
KEYS = 12


def scale_once(stream: seaway.Stream, rng: random.Random) -> None:
    """A random split or merge (two to six segments); a conflict with another scaling is skipped."""
    current = stream.current_segments()
    try:
        if len(current) > 1 and (len(current) > 5 or rng.random() < 0.5):
            i = rng.randrange(len(current) - 1)
            stream.merge([current[i].id, current[i + 1].id])
        else:
            stream.split(rng.choice(current).id, 2)
    except seaway.ScaleConflictError:
        pass


def _scale(sw: seaway.Seaway, run: int) -> None:
    rng = random.Random(run)
    stream = sw.streams.get(STREAM)
    while True:
        scale_once(stream, rng)


def main(argv: list[str]) -> None:
    data_dir, ack_path, run = argv[0], argv[1], int(argv[2])
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    with seaway.open(data_dir) as sw:
        if SCOPE not in sw.streams.scopes():
            sw.streams.create_scope(SCOPE)
            sw.streams.create(STREAM, scaling=FixedSegments(2))
        threading.Thread(target=_scale, args=(sw, run), daemon=True).start()
        lock = threading.Lock()

        def acked(line: bytes, future: Future[WriteAck]) -> None:
            if future.exception() is None:
                with lock:
                    os.write(fd, line)

        with sw.streams.get(STREAM).writer(f"run{run}") as writer:
            n = run * 10**6
            while True:
                for key in range(KEYS):
                    line = f"k{key} {n}\n".encode()
                    future = writer.write(line.strip(), f"k{key}")
                    future.add_done_callback(functools.partial(acked, line))
                n += 1


if __name__ == "__main__":
    main(sys.argv[1:])
