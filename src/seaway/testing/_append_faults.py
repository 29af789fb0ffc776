"""Faults injected into a store's appends, by seed: what a loaded or flaky store does to a producer.

:class:`AppendFaults` wraps the one method every append of a store goes through (embedded, and the
store inside a server, which serves every remote client's appends), and for each batch decides, with
a random generator seeded by the test, to let it through or to:

- ``refuse``: refuse it at once with :class:`OverloadedError`, as a full inbox does, before the store
  sees it: a later batch may well be taken;
- ``refuse_later``: refuse it with :class:`OverloadedError` after the call returned (the future fails),
  as a sequencer whose queue is full does, again without storing it;
- ``lose_reply``: store it, then fail its future with :class:`TimedOutError`, as a reply lost on the
  way back does: the batch is stored, the producer does not know;
- ``delay``: answer it up to ``delay_s_max`` late (the order of answers changes, not of stores);

and, at one named step, to crash: ``crash_after=N`` kills the process with SIGKILL once the Nth
batch it touches is stored, before its reply is returned (the producer never hears of it, and of
nothing after it): what a process killed between a write and its acknowledgement leaves.

Each decision is recorded in :attr:`AppendFaults.injected`, so a failing test can say what was done;
the same seed and the same sequence of appends make the same decisions.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from seaway.errors import InvalidArgumentError, OverloadedError, TimedOutError


@dataclass(frozen=True, slots=True)
class InjectedFault:
    kind: str
    """``refuse``, ``refuse_later``, ``lose_reply``, ``delay`` or ``crash``."""
    log_id: int
    records: int
    sequence: int | None
    """The batch's producer sequence number, if it had one."""


class AppendFaults:
    """Faults for a store's appends, decided per batch by a generator seeded with ``seed``.

    ``refuse``, ``refuse_later``, ``lose_reply`` and ``delay`` are probabilities per batch (their sum
    at most 1). ``limit`` bounds the faults injected in all (None: no bound), so that retries end.
    ``logs``: only batches of these log ids are touched (None: all). ``marked_only``: only batches
    with a producer mark (idempotent appends) are touched. ``crash_after``: the process kills
    itself (SIGKILL) once the ``crash_after``-th batch touched (from 1) is stored, before its reply
    goes back (for a test's child process: see the module's docstring).
    """

    def __init__(self, seed: int, *, refuse: float = 0.0, refuse_later: float = 0.0, lose_reply: float = 0.0,
                 delay: float = 0.0, delay_s_max: float = 0.02, limit: int | None = None,
                 logs: set[int] | None = None, marked_only: bool = False, crash_after: int | None = None) -> None:
        chances = (refuse, refuse_later, lose_reply, delay)
        if any(not 0 <= c <= 1 for c in chances) or sum(chances) > 1:
            raise InvalidArgumentError(f"fault probabilities must be in [0, 1] and sum to at most 1, got {chances}")
        self.seed = seed
        self._rng = random.Random(seed)
        self._chances = chances
        self._delay_s_max = delay_s_max
        self._limit = limit
        self._logs = logs
        self._marked_only = marked_only
        if crash_after is not None and (not isinstance(crash_after, int) or crash_after < 1):
            raise InvalidArgumentError(f"crash_after counts batches from 1, got {crash_after!r}")
        self._crash_after = crash_after
        self.touched = 0
        """Batches of the logs (and marks) this touches, so far."""
        self._lock = threading.Lock()
        self.injected: list[InjectedFault] = []
        self.passed = 0
        """Batches let through untouched."""

    def __repr__(self) -> str:
        return f"AppendFaults(seed={self.seed}, injected={len(self.injected)}, passed={self.passed})"

    def _decide(self, log_id: int, records: int, producer: Any) -> str | None:
        with self._lock:
            if self._logs is not None and log_id not in self._logs:
                return None
            if self._marked_only and producer is None:
                return None
            self.touched += 1
            if self.touched == self._crash_after:
                self.injected.append(InjectedFault("crash", log_id, records,
                                                   None if producer is None else producer.sequence))
                return "crash"
            if self._limit is not None and len(self.injected) >= self._limit:
                self.passed += 1
                return None
            draw = self._rng.random()
            for kind, chance in zip(("refuse", "refuse_later", "lose_reply", "delay"), self._chances, strict=True):
                if draw < chance:
                    self.injected.append(InjectedFault(kind, log_id, records,
                                                       None if producer is None else producer.sequence))
                    return kind
                draw -= chance
            self.passed += 1
            return None

    def wrap(self, append_async: Callable[..., Future[range]]) -> Callable[..., Future[range]]:
        """``append_async`` (the store's: log id, payloads, sync, producer mark, if_tail) with faults."""

        def faulty(log_id: int, payloads: tuple[bytes, ...], sync: bool = True, producer: Any = None,
                   if_tail: int | None = None) -> Future[range]:
            kind = self._decide(log_id, len(payloads), producer)
            if kind == "refuse":
                raise OverloadedError(f"injected: log {log_id}'s batch refused at once")
            outer: Future[range] = Future()
            if kind == "refuse_later":
                _later(0.0, lambda: outer.set_exception(OverloadedError(f"injected: log {log_id}'s batch refused")))
                return outer
            inner = append_async(log_id, payloads, sync, producer, if_tail)
            if kind is None:
                return inner
            if kind == "crash":
                inner.add_done_callback(lambda done: self._crash(done, outer))
                return outer
            delay_s = self._delay_s_max if kind == "delay" else 0.0

            def answered(done: Future[range]) -> None:
                error = done.exception()
                if kind == "lose_reply" and error is None:
                    error = TimedOutError(f"injected: the reply to log {log_id}'s stored batch was lost")
                if error is not None:
                    _later(delay_s, lambda: outer.set_exception(error))
                else:
                    _later(delay_s, lambda: outer.set_result(done.result()))

            inner.add_done_callback(answered)
            return outer

        return faulty

    def _crash(self, done: Future[range], outer: Future[range]) -> None:
        """Once the batch is stored, die before its reply is passed on; a batch that failed is
        answered as it failed, and the next one touched is the crash point instead."""
        error = done.exception()
        if error is None:
            os.kill(os.getpid(), signal.SIGKILL)
        with self._lock:
            self._crash_after = self.touched + 1
        outer.set_exception(error or AssertionError("unreachable"))

    @contextmanager
    def applied(self, target: Any) -> Iterator[AppendFaults]:
        """While inside, the appends of ``target`` (an embedded store, ``seaway.open``'s, or a
        :class:`seaway.server.Server` running in this process) go through these faults."""
        store = _log_store(target)
        real = store.append_async
        store.append_async = self.wrap(real)
        try:
            yield self
        finally:
            del store.append_async  # the class's method again


def _log_store(target: Any) -> Any:
    """The embedded log store under a store or an in-process server."""
    inner = getattr(target, "store", None)  # a Server holds its embedded store
    store = getattr(inner if inner is not None else target, "_store", None)
    if store is None or not hasattr(store, "append_async"):
        raise InvalidArgumentError(f"{target!r} is neither an embedded store nor an in-process server")
    return store


def _later(delay_s: float, run: Callable[[], None]) -> None:
    """Run ``run`` on another thread (after ``delay_s``): never in the caller's, which may hold locks."""
    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()
