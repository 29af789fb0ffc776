"""Retention (Pravega's PDP-19, and PDP-47's consumption-based retention, simplified), run where a
store's writes land: in the embedded store's process, or the server's.

Each pass looks at every active stream with a retention policy:

1. Every ``cut_interval_s`` it records the stream's tail as a cut in the stream's retention set
   (``Stream.record_cut()``), with its time and the stream's size up to it.
2. It picks one of the recorded cuts and truncates the stream there (``Stream.truncate()``), only
   if that moves the head forwards. With ``kept(c)`` what truncating at cut ``c`` keeps (by time:
   ``now - time(c)``; by size: the newest cut's size minus ``c``'s), the *min cut* is the newest
   cut with ``kept >= min``, the *max cut* the newest with ``kept >= max``:

   - no reader group subscribed: the min cut;
   - subscribed groups (``create_reader_group(..., retention_subscribed=True)``): the newest cut
     at or before every subscribed group's checkpoint (a cut unordered with a checkpoint is not
     at or before it), but never newer than the min cut (keep at least ``min``), and never older
     than the max cut (keep at most about ``max``; no bound when ``max`` is None).

Cuts are discrete: the stream keeps up to ``cut_interval_s`` (or the bytes written in it) more than
the bounds say. A group's checkpoint is what its readers last stored (once per read batch, and on
``checkpoint()``). A group below the head after a truncation (past ``max``) gets
:class:`StreamTruncatedError` from its readers.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seaway._clock import Clock
from seaway._passes import PeriodicPasses
from seaway.errors import InvalidArgumentError, InvalidStreamCutError, SeawayError, StreamChangedError
from seaway.streams._config import RetentionByTime
from seaway.streams._controller import StreamController
from seaway.streams._cut import StreamCut
from seaway.streams._metadata import as_json
from seaway.streams._reader_group import subscribed_checkpoints
from seaway.streams._streams import Stream

log = logging.getLogger("seaway.streams")


def _interval(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86_400:
        raise InvalidArgumentError(f"{name} must be in (0, 86400]{' or None' if optional else ''}, got {value!r}")


@dataclass(frozen=True)
class RetentionConfig:
    """Where and how often retention runs."""

    interval_s: float | None = 30.0
    """Seconds between passes over every stream; None: no background passes (``run_once`` only)."""
    cut_interval_s: float = 60.0
    """How often a stream's tail is recorded as a cut into its retention set: the granularity of
    truncation (a stream keeps up to this much more than its policy's minimum)."""

    def __post_init__(self) -> None:
        _interval("interval_s", self.interval_s, optional=True)
        _interval("cut_interval_s", self.cut_interval_s, optional=False)


@dataclass(frozen=True)
class Truncated:
    """One truncation a pass made."""

    stream: str
    cut: StreamCut
    reason: str


class StreamRetention:
    """Passes of retention over every stream of a store: :meth:`run_once` from a test (with a fake
    clock), or :meth:`start` for a background thread. Thread-safe."""

    def __init__(self, controller: StreamController, clock: Clock, config: RetentionConfig | None = None) -> None:
        self._controller = controller
        self._clock = clock
        self._config = config or RetentionConfig()
        self._passes = PeriodicPasses("retention", self.run_once, self._config.interval_s)
        self._lock = threading.Lock()

    def run_once(self) -> list[Truncated]:
        """One pass over every stream; the truncations made."""
        done: list[Truncated] = []
        with self._lock:
            controller = self._controller
            for scope in controller.list_scopes():
                for name in controller.list_streams(scope):
                    try:
                        found = self._pass(Stream(controller, scope, name))
                    except SeawayError as exc:  # one stream's trouble does not stop the others'
                        log.warning("retention skipped a stream", extra={"stream": f"{scope}/{name}",
                                                                         "error": str(exc)})
                        continue
                    if found is not None:
                        done.append(found)
        return done

    def _pass(self, stream: Stream) -> Truncated | None:
        meta = stream.metadata
        state, _ = meta.state()
        policy = state.config.retention
        if state.state != "active" or policy is None:
            return None
        now_ms = self._clock.now_ms()
        cuts = meta.retention_set()
        if not cuts or now_ms - cuts[-1][0] >= self._config.cut_interval_s * 1000:
            with contextlib.suppress(StreamChangedError):  # another process recorded one meanwhile
                stream.record_cut()
            cuts = meta.retention_set()
        if not cuts:
            return None
        if isinstance(policy, RetentionByTime):
            kept: list[float] = [now_ms - t for t, _ in cuts]
            low, high = policy.min_s * 1000, None if policy.max_s is None else policy.max_s * 1000
            unit = "s"
        else:
            kept = [cuts[-1][1] - size for _, size in cuts]
            low, high = policy.min_bytes, policy.max_bytes
            unit = "bytes"
        # ``kept`` only shrinks from the oldest cut to the newest: the newest with kept >= x is the
        # last index before the first below x.
        min_cut = _newest_keeping(kept, low)
        max_cut = None if high is None else _newest_keeping(kept, high)
        groups = subscribed_checkpoints(meta.meta, stream.name)
        if not groups:
            target, reason = min_cut, f"keeps at least the minimum ({_show(low, unit)})"
        else:
            target = None if min_cut is None else self._newest_consumed(stream, cuts, min_cut, groups)
            reason = f"read by every subscribed group ({', '.join(g for g, _ in groups)})"
            if max_cut is not None and (target is None or target < max_cut):
                target, reason = max_cut, f"keeps at most about the maximum ({_show(high, unit)})"
        if target is None:
            return None
        cut = StreamCut(stream.name, meta.recorded_cut(cuts[target][0])[1])
        try:
            if stream.compare(cut, stream.head()) <= 0:
                return None  # the head is there or past it already: it never moves back
        except InvalidStreamCutError:
            return None  # truncated by hand past part of it: wait for a later cut
        try:  # recorded in the ledger as retention applied, with the policy, not as a manual truncation
            self._controller.truncate(meta, cut, policy=as_json(state.config.to_json()["retention"]).decode())
        except (StreamChangedError, InvalidStreamCutError):
            return None  # truncated meanwhile by someone else: look again on the next pass
        log.info("retention truncated a stream", extra={"stream": stream.name, "reason": reason})
        return Truncated(stream.name, cut, reason)

    @staticmethod
    def _newest_consumed(stream: Stream, cuts: list[tuple[int, int]], last: int,
                         groups: list[tuple[str, StreamCut]]) -> int | None:
        """The newest of the cuts ``0..last`` at or before every group's checkpoint: a binary search
        (being before a checkpoint holds for every cut older than one that is)."""

        def consumed(i: int) -> bool:
            cut = StreamCut(stream.name, stream.metadata.recorded_cut(cuts[i][0])[1])
            try:
                return all(stream.compare(cut, checkpoint) <= 0 for _, checkpoint in groups)
            except InvalidStreamCutError:  # ahead of a checkpoint in part of the key space
                return False

        found = _last_true(last + 1, consumed)
        return None if found < 0 else found

    def start(self) -> None:
        """Run passes every ``interval_s`` in a daemon thread until :meth:`close` (nothing when the
        interval is None)."""
        self._passes.start()

    def close(self) -> None:
        self._passes.close()


def _newest_keeping(kept: Sequence[float], at_least: float) -> int | None:
    """The index of the newest cut that keeps ``at_least`` (``kept`` does not grow with the index)."""
    # bisect on the negated values: they do not shrink with the index.
    i = bisect.bisect_right([-k for k in kept], -at_least)
    return None if i == 0 else i - 1


def _last_true(count: int, test: Callable[[int], bool]) -> int:
    """The last index in ``0..count-1`` where ``test`` holds, given that it holds on a prefix; -1
    if on none."""
    lo, hi = 0, count  # test holds below lo; fails at hi and after
    while lo < hi:
        mid = (lo + hi) // 2
        if test(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


def _show(amount: float | None, unit: str) -> str:
    if amount is None:
        return "none"
    return f"{amount / 1000:g} s" if unit == "s" else f"{amount:g} bytes"
