"""A producer or consumer process of ``seaway bench queue``: ``python -m seaway.bench._queue_worker
ROLE ...`` (see :func:`seaway.bench._queue.worker`). A module of its own, so that running it does not
import the benchmark's module twice (once by the package, once as ``__main__``)."""

import sys

from seaway.bench._queue import worker

if __name__ == "__main__":
    worker(sys.argv[1:])
