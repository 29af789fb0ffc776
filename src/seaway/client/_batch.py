"""Calls made at the same time by several threads of one connection, joined into one call.

A thread that calls when fewer than ``in_flight_max`` calls of the kind are on the wire sends at
once, with whatever other threads queued meanwhile; a thread that finds them all on the wire queues
its item and waits. When a call comes back, its sender returns with its own answer and the waiting
threads are woken: one whose item is still queued sends the queue along. At low load every item
goes alone and waits for nothing; under load each call carries many (a server's cost is mostly per
call, and items of one call share its syncs). No thread of its own: the callers send, and none
sends for others once its own answer came (under steady load the first sender would otherwise be
kept sending for ever).

An interrupted sender (KeyboardInterrupt, SystemExit) raises its interrupt; the other items of its
call are answered :class:`TransportError` (whether the call was applied is unknown, which their
retry paths handle, as for a call cut off), and its call slot is freed. A waiting thread that is
interrupted takes its item out of the queue if it was not sent yet.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from seaway.errors import SeawayError, ServerError, TransportError

Item = TypeVar("Item")
Result = TypeVar("Result")


class _Slot(Generic[Item, Result]):
    """One caller's item and, once answered, its result or error."""

    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.done = False

    def answer(self, result: Result | SeawayError) -> None:
        if isinstance(result, SeawayError):
            self.error = result
        else:
            self.result = result
        self.done = True

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done = True


class CallBatcher(Generic[Item, Result]):
    """Joins ``call(item)`` of concurrent threads into ``send(items)``, which returns one result (or
    the error) per item, in order; an error ``send`` raises is every item's."""

    def __init__(self, send: Callable[[Sequence[Item]], Sequence[Result | SeawayError]], *,
                 in_flight_max: int = 1, items_max: int = 256) -> None:
        self._send = send
        self._in_flight_max = in_flight_max
        self._items_max = items_max
        self._cond = threading.Condition(threading.Lock())
        self._queued: list[_Slot[Item, Result]] = []
        self._in_flight = 0

    def call(self, item: Item) -> Result:
        slot: _Slot[Item, Result] = _Slot(item)
        with self._cond:
            self._queued.append(slot)
        while not slot.done:
            taken: list[_Slot[Item, Result]] = []
            try:
                with self._cond:
                    while not slot.done and (not self._queued or self._in_flight >= self._in_flight_max):
                        self._cond.wait()
                    if slot.done:
                        break
                    taken, self._queued = self._queued[:self._items_max], self._queued[self._items_max:]
                    self._in_flight += 1
                self._run(taken)
            except BaseException:
                with self._cond:
                    if not slot.done and slot in self._queued:  # not sent: it never will be
                        self._queued.remove(slot)
                raise
            finally:
                if taken:
                    with self._cond:
                        self._in_flight -= 1
                        self._cond.notify_all()
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[return-value]  # a Result when no error

    def _run(self, taken: list[_Slot[Item, Result]]) -> None:
        """Send ``taken`` and answer each; whatever happens, none is left unanswered."""
        try:
            try:
                results = self._send([slot.item for slot in taken])
                if len(results) != len(taken):
                    raise ServerError(f"a joined call answered {len(results)} items of {len(taken)}")
            except Exception as exc:  # every item's: each caller raises a copy of its own (and chains it)
                for slot in taken:
                    slot.fail(copy.copy(exc))
                return
            for slot, result in zip(taken, results, strict=True):
                slot.answer(result)
        finally:
            # Interrupted (the sending thread's KeyboardInterrupt or SystemExit, raised on in that
            # thread only): the others' outcome is unknown, as for a call cut off in transport.
            for slot in taken:
                if not slot.done:
                    slot.fail(TransportError("the thread sending this joined call was interrupted;"
                                             " whether it was applied is unknown"))
