"""A split store for tests: a control store whose user logs live in a second embedded store's logs
(another directory), the stand-in for a cluster's logs under a control node.

- :func:`split_store`: open both, the control store over the second's logs; close the control
  store first, then the second.
- ``python -m seaway.testing._split serve --data-dir D --user-logs-dir U --listen HOST:PORT
  [--notify-file-dir F]``: a server over such a store (what ``ServerProcess(..., module=...)``
  starts), until SIGTERM.
- ``python -m seaway.testing._split produce CONTROL USER QUEUE FIRST TRANSACTIONS``: enqueue
  ``BATCH`` numbered entries per transaction into ``QUEUE``, each transaction staging the metadata
  key ``produced/<first number>`` (namespace ``crash``), and print ``acked <first number>`` once
  its commit returned: the crash test kills it at any moment and checks the entries against both.
- ``python -m seaway.testing._split create-killed CONTROL USER STREAM``: create stream ``STREAM``
  (``scope/name``, two segments) through user logs that SIGKILL the process as soon as the first
  segment's log is created, before the batch that names it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import seaway
from seaway.log import LogHandle, LogsApi

BATCH = 5
"""Entries per transaction of ``produce``."""
MARKS = "crash"
"""The metadata namespace of ``produce``'s marks."""
PRODUCED_PREFIX = b"produced/"
USER_CONFIG = seaway.SeawayConfig(notify=None, retention=None)
"""The second store's configuration: its logs only are used (no plugins, no stream retention)."""


@contextlib.contextmanager
def split_store(control_dir: str | os.PathLike[str], user_dir: str | os.PathLike[str],
                config: seaway.SeawayConfig | None = None) -> Iterator[seaway.Seaway]:
    """The control store over ``control_dir``, its user logs those of a store over ``user_dir``."""
    with seaway.open(user_dir, USER_CONFIG) as user, seaway.open(control_dir, config, user_logs=user.logs) as sw:
        yield sw


def _serve(args: argparse.Namespace) -> None:
    from seaway.notify import NotifyServiceConfig, TargetPolicy  # noqa: PLC0415 - the server loads only here
    from seaway.server import ServerConfig, serve  # noqa: PLC0415

    store = seaway.SeawayConfig(notify=NotifyServiceConfig(targets=TargetPolicy(file_dir=args.notify_file_dir)))
    with seaway.open(args.user_logs_dir, USER_CONFIG) as user:
        serve(ServerConfig(data_dir=args.data_dir, listen=args.listen, store=store, user_logs=user.logs))


def _produce(control: str, user: str, queue: str, first: int, transactions: int) -> None:
    with split_store(control, user) as sw:
        producer = sw.queues.producer(queue)
        for t in range(transactions):
            numbers = range(first + t * BATCH, first + (t + 1) * BATCH)
            with sw.transaction(timeout_s=60) as tx:
                producer.enqueue_batch(tx, [b"%d" % i for i in numbers])
                tx.stage_put(MARKS, PRODUCED_PREFIX + b"%d" % numbers[0], b"%d" % len(numbers))
            print(f"acked {numbers[0]}", flush=True)


class _KilledAfterCreate:
    """User logs whose first :meth:`create` kills the process once the log exists (a wrapped log
    store: the seam a user's code has too)."""

    def __init__(self, logs: LogsApi) -> None:
        self._logs = logs

    def create(self, name: str, **attributes: Any) -> LogHandle:
        handle = self._logs.create(name, **attributes)
        os.kill(os.getpid(), signal.SIGKILL)
        return handle

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logs, name)


def _create_killed(control: str, user: str, stream: str) -> None:
    with seaway.open(user, USER_CONFIG) as user_store, \
            seaway.open(control, user_logs=cast(LogsApi, _KilledAfterCreate(user_store.logs))) as sw:
        sw.streams.create_scope(stream.partition("/")[0], exist_ok=True)
        sw.streams.create(stream, scaling=seaway.ByEventRate(100, min_segments=2))


def main(argv: list[str]) -> None:
    if argv[:1] == ["produce"]:
        _produce(argv[1], argv[2], argv[3], int(argv[4]), int(argv[5]))
        return
    if argv[:1] == ["create-killed"]:
        _create_killed(argv[1], argv[2], argv[3])
        return
    parser = argparse.ArgumentParser(prog="python -m seaway.testing._split")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user-logs-dir", type=Path, required=True)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--notify-file-dir", type=Path)
    _serve(parser.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
