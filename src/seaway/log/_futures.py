"""Futures for the records of one batch, made and settled for a fraction of the usual cost.

A record appended on its own gets a ``concurrent.futures.Future``; with batching, thousands of them
are made and settled per batch, and a stock future costs more than the append itself (its
``threading.Condition`` alone is about a microsecond to make). The futures of one batch are settled
at the same moment, so they can share one condition: :class:`BatchFutures` makes them with the
shared condition and settles them all under one hold of it, waking every waiter once.

They are ordinary ``Future`` objects to their users (``result``, ``exception``, ``done``,
``add_done_callback``, ``concurrent.futures.wait`` and ``as_completed`` all work; a test pins this).
This reaches into the attributes ``Future`` keeps (``_condition``, ``_state`` and so on), which have
not changed since Python 3.2; the test would catch a Python that changes them. They start RUNNING, as
an append on its way cannot be called back, so ``cancel`` never wakes the shared condition.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures._base import FINISHED, RUNNING
from typing import Any, Generic, TypeVar

from seaway._invariant import invariant

T = TypeVar("T")


class _Member(Future[T]):
    """A future whose condition is its batch's (see the module docstring).

    It starts RUNNING with the class's defaults, and makes its two lists (``wait``'s waiters, done
    callbacks) only when something uses them: a list per future is garbage the collector must walk
    while the future lives, and most futures of a batch never need them (measured: 1.2 us a
    future with the lists, 0.4 without, when many are held)."""

    _state = RUNNING
    _result: Any = None
    _exception: BaseException | None = None

    def __init__(self, condition: threading.Condition) -> None:  # no super().__init__(): that makes a condition
        self._condition = condition

    # Once FINISHED a future never changes, and its result was set before its state: reading them
    # needs no lock (one attribute read is atomic). Only waiting does, which Future's own methods do.
    def result(self, timeout: float | None = None) -> T:
        if self._state == FINISHED:
            if self._exception is not None:
                raise self._exception
            result: T = self._result
            return result
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state == FINISHED:
            return self._exception
        return super().exception(timeout)

    def done(self) -> bool:
        return self._state == FINISHED or super().done()

    @property  # an attribute of Future's, made on first use
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        made: list[Any] = self.__dict__.setdefault("_waiters_made", [])
        return made

    @property
    def _done_callbacks(self) -> list[Any]:
        made: list[Any] = self.__dict__.setdefault("_callbacks_made", [])
        return made


class BatchFutures(Generic[T]):
    """The futures of one batch: made one at a time, settled all together, once."""

    __slots__ = ("_condition", "_settled", "futures")

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self.futures: list[_Member[T]] = []
        self._settled = False

    def new(self) -> Future[T]:
        """A new future of this batch (before the batch is settled)."""
        future: _Member[T] = _Member(self._condition)
        self.futures.append(future)
        return future

    def settle(self, results: list[T] | None, error: BaseException | None = None) -> None:
        """Give every future its result (``results`` in the order they were made), or every one
        ``error``. Done callbacks run after the condition is released, in the calling thread."""
        futures = self.futures
        with self._condition:
            invariant(not self._settled, "a batch's futures are settled once")
            self._settled = True
            if error is None:
                invariant(results is not None and len(results) == len(futures), "a result for each future")
                for future, result in zip(futures, results or (), strict=True):
                    future._result = result
                    future._state = FINISHED
            else:
                for future in futures:
                    future._exception = error
                    future._state = FINISHED
            # Few futures are waited on by wait() or as_completed(), or have callbacks: find those.
            watched = [f for f in futures if len(f.__dict__) > 3]
            for future in watched:
                for waiter in future.__dict__.get("_waiters_made", ()):
                    if error is None:
                        waiter.add_result(future)
                    else:
                        waiter.add_exception(future)
            self._condition.notify_all()
        for future in watched:
            if future.__dict__.get("_callbacks_made"):
                future._invoke_callbacks()  # type: ignore[attr-defined]  # Future's own, not in its stubs
