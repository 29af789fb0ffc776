"""Calls made at the same time by several threads of one connection, joined into one call.

A thread that calls when fewer than ``in_flight_max`` calls of the kind are on the wire sends at
once, with whatever other threads queued meanwhile; a thread that finds them all on the wire queues
its item and waits, and the next call to come back takes the queue along. At low load every item goes
alone and waits for nothing; under load each call carries many (a server's cost is mostly per call,
and items of one call share its syncs). No thread of its own: the callers send.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from seaway.errors import SeawayError, ServerError

Item = TypeVar("Item")
Result = TypeVar("Result")


class CallBatcher(Generic[Item, Result]):
    """Joins ``call(item)`` of concurrent threads into ``send(items)``, which returns one result (or
    the error) per item, in order; an error ``send`` raises is every item's."""

    def __init__(self, send: Callable[[Sequence[Item]], Sequence[Result | SeawayError]], *,
                 in_flight_max: int = 1, items_max: int = 256) -> None:
        self._send = send
        self._in_flight_max = in_flight_max
        self._items_max = items_max
        self._lock = threading.Lock()
        self._queued: list[tuple[Item, Future[Result]]] = []
        self._in_flight = 0

    def call(self, item: Item) -> Result:
        future: Future[Result] = Future()
        with self._lock:
            self._queued.append((item, future))
            taken = self._take()
        while taken:
            self._run(taken)
            with self._lock:
                self._in_flight -= 1
                taken = self._take()
        return future.result()

    def _take(self) -> list[tuple[Item, Future[Result]]]:
        """What to send now (under the lock): the queue's first items, if a call may go."""
        if not self._queued or self._in_flight >= self._in_flight_max:
            return []
        taken, self._queued = self._queued[:self._items_max], self._queued[self._items_max:]
        self._in_flight += 1
        return taken

    def _run(self, taken: list[tuple[Item, Future[Result]]]) -> None:
        try:
            results = self._send([item for item, _ in taken])
            if len(results) != len(taken):
                raise ServerError(f"a joined call answered {len(results)} items of {len(taken)}")
        except BaseException as exc:  # every item's: each caller raises a copy of its own (and chains it)
            for _, future in taken:
                future.set_exception(copy.copy(exc))
            return
        for (_, future), result in zip(taken, results, strict=True):
            if isinstance(result, SeawayError):
                future.set_exception(result)
            else:
                future.set_result(result)
