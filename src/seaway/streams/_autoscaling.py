"""Automatic scaling, run where a store's writes land: in the embedded store's process, or the
server's (remote clients leave it to the server).

Each pass samples the append counts of every auto-scaled stream's current segments (one call for
all of a stream's segment logs, no disk read), feeds the :class:`AutoScaler`, and carries out its
decisions as ordinary scalings, whose reasons go to the log and into the stream's history
(``seaway stream history``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from seaway._clock import Clock
from seaway._passes import PeriodicPasses
from seaway.errors import InvalidArgumentError, ScaleConflictError, SeawayError
from seaway.streams._autoscale import AutoScaleConfig, AutoScaler, ScaleDecision
from seaway.streams._config import FixedSegments
from seaway.streams._controller import StreamController

log = logging.getLogger("seaway.streams")


@dataclass(frozen=True)
class AutoScalingConfig:
    """Where and how often automatic scaling runs."""

    interval_s: float | None = 10.0
    """Seconds between passes; None: no automatic scaling in this process."""
    policy: AutoScaleConfig = field(default_factory=AutoScaleConfig)

    def __post_init__(self) -> None:
        if self.interval_s is not None and (isinstance(self.interval_s, bool) or not 0 < self.interval_s <= 3600):
            raise InvalidArgumentError(f"interval_s must be in (0, 3600] or None, got {self.interval_s!r}")


class AutoScaling:
    """Passes of the auto-scaler over every stream of a store: :meth:`run_once` from a test (with a
    fake clock), or :meth:`start` for a background thread. Thread-safe."""

    def __init__(self, controller: StreamController, clock: Clock, config: AutoScalingConfig | None = None) -> None:
        self._controller = controller
        self._config = config or AutoScalingConfig()
        self._passes = PeriodicPasses("autoscaling", self.run_once, self._config.interval_s)
        self._scaler = AutoScaler(clock, self._config.policy)
        self._lock = threading.Lock()

    def run_once(self) -> list[tuple[str, ScaleDecision]]:
        """One pass over every stream; the scalings carried out."""
        done: list[tuple[str, ScaleDecision]] = []
        with self._lock:
            controller = self._controller
            for scope in controller.list_scopes():
                for name in controller.list_streams(scope):
                    try:
                        done += self._pass(scope, name)
                    except SeawayError as exc:  # one stream's trouble does not stop the others'
                        log.warning("automatic scaling skipped a stream", extra={"stream": f"{scope}/{name}",
                                                                                 "error": str(exc)})
        return done

    def _pass(self, scope: str, name: str) -> list[tuple[str, ScaleDecision]]:
        meta = self._controller.stream(scope, name)
        state, _ = meta.state()
        policy = state.config.scaling
        stream = meta.name
        if state.state != "active" or isinstance(policy, FixedSegments):
            return []
        current, _, _ = meta.current()
        counts = self._controller.logs.append_counts([s.log_id for s in current.segments])
        for segment in current.segments:
            records, size = counts.get(segment.log_id, (0, 0))
            self._scaler.observe(stream, segment.id, records, size)
        done = []
        for decision in self._scaler.decide(stream, policy, current):
            try:
                self._controller.scale(meta, list(decision.sealed), list(decision.ranges), decision.reason)
            except ScaleConflictError:
                break  # someone else scaled the stream: decide again on the next pass
            self._scaler.forget(stream, decision.sealed)
            done.append((stream, decision))
        return done

    def start(self) -> None:
        """Run passes every ``interval_s`` in a daemon thread until :meth:`close` (nothing when the
        interval is None)."""
        self._passes.start()

    def close(self) -> None:
        self._passes.close()
