"""The child side of the commit step crash test: a queue producer's transaction killed (SIGKILL)
between two steps of its commit's one step (see :meth:`TransactionManager.commit_appending`).

Run as ``python -m seaway.testing._step_crash DATA_DIR POINT``. The child creates queue ``q`` with
groups ``h`` (HASH on ``k``, 2) and ``r`` (ROUND_ROBIN, 1), commits entries ``a0``-``a9`` and prints
``committed ID``, then enqueues ``b0``-``b9`` in another transaction, prints ``crashing ID``, and
commits it, killing itself at ``POINT``:

- ``registered``: the step registered its logs with the transaction, nothing appended yet;
- ``data``: the data chunks are stored, the pointer chunks not appended yet;
- ``appended``: every chunk is stored, the commit not made yet.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import seaway

TIMEOUT_S = 2.0
CONFIG = seaway.SeawayConfig(retention=None, txn=seaway.TxnConfig(timeout_s=TIMEOUT_S, tick_s=0.05))
POINTS = ("registered", "data", "appended")


def entries(prefix: str) -> tuple[list[bytes], list[dict[str, int]]]:
    return [b"%s%d" % (prefix.encode(), i) for i in range(10)], [{"k": i} for i in range(10)]


def _killed(*_: Any, **__: Any) -> Any:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class _KillOnPointers:
    """The manager's logs, wrapped: an append to a log other than the queue's data log (a pointer
    chunk's, appended once the data chunks are stored) kills the process instead."""

    def __init__(self, logs: Any, data_log: int | None) -> None:
        self._logs = logs
        self._data_log = data_log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logs, name)

    def get(self, name_or_id: Any) -> Any:
        handle = self._logs.get(name_or_id)
        if handle.id != self._data_log:
            handle.append_batch_async = _killed
        return handle


def main(argv: list[str]) -> None:
    data_dir, point = argv[1], argv[2]
    if point not in POINTS:
        raise SystemExit(f"POINT is one of {POINTS}, not {point!r}")
    with seaway.open(data_dir, CONFIG) as sw:
        sw.queues.create("q")
        sw.queues.create_group("q", "h", 2, "HASH", key="k")
        sw.queues.create_group("q", "r", 1, "ROUND_ROBIN")
        producer = sw.queues.producer("q")
        with sw.transaction() as tx:
            producer.enqueue_batch(tx, *entries("a"))
        print(f"committed {tx.id}", flush=True)
        tx = sw.transaction()
        producer.enqueue_batch(tx, *entries("b"))
        manager: Any = sw.txn_manager
        if point == "registered":
            real_register = manager.register

            def register(*args: Any) -> None:
                real_register(*args)
                _killed()
            manager.register = register
        elif point == "data":
            manager._user_logs = _KillOnPointers(manager._user_logs, sw.queues.data_log("q"))
        else:
            manager.commit = _killed
        print(f"crashing {tx.id}", flush=True)
        tx.commit()
    raise SystemExit("the crash point was never reached")


if __name__ == "__main__":
    main(sys.argv)
