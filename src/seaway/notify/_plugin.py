"""A plugin: one configuration's delivery loop, one step at a time (the thread that drives it, and
the tests, call :meth:`Plugin.step`; the clock is injected, so a test replays retries exactly).

Guarantees: entries are delivered in ledger order (one at a time: the next is sent only once the
previous one was acknowledged, given up or left out), at least once (the checkpoint moves past an
entry only after its target acknowledged it, so a crash re-sends at most what was in flight), each
with its index as a stable id. Entries pruned before the plugin reached them are reported as one
*missed* range, exactly, and the plugin goes on from the ledger's tail.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from seaway.errors import DeliveryError, DeliveryRefusedError, SeawayError
from seaway.notify._api import COUNTERS, Checkpoint
from seaway.notify._config import NotifyConfig
from seaway.notify._formats import Notice, build_message
from seaway.notify._source import LedgerSource
from seaway.notify._targets import Sender

_log = logging.getLogger("seaway.notify")


class CheckpointStore(Protocol):
    """Where a plugin keeps its checkpoint (``Notifications`` is one)."""

    def checkpoint(self, name: str) -> Checkpoint | None: ...

    def save_checkpoint(self, name: str, checkpoint: Checkpoint, config_version: int | None) -> None:
        """Save ``checkpoint`` only while the configuration's version is still ``config_version``."""


@dataclass(frozen=True)
class MissedRange:
    first: int
    last: int


class PluginObserver:
    """Told of deliveries and missed ranges (the service's Prometheus metrics); does nothing here."""

    def delivered(self, name: str, latency_s: float) -> None:
        pass

    def missed(self, name: str, count: int) -> None:
        pass


class Plugin:
    """Delivers the entries ``config`` selects from ``source`` through ``sender``."""

    def __init__(self, config: NotifyConfig, sender: Sender, source: LedgerSource, checkpoints: CheckpointStore,
                 clock_s: Callable[[], float], *, config_version: int | None = None, idle_s: float = 0.5,
                 save_interval_s: float = 0.0, observer: PluginObserver | None = None) -> None:
        self.config = config
        self.config_version = config_version
        """The stored version of ``config`` (``Notifications.versions()``): the checkpoint is saved
        only while it is current, so a replaced plugin never moves its successor's position."""
        self._sender = sender
        self._source = source
        self._checkpoints = checkpoints
        self._clock_s = clock_s
        self.idle_s = idle_s
        self.save_interval_s = save_interval_s
        """The least time between two checkpoint saves (each a synced write): a plugin woken by
        every change saves at most this often, and a crash re-sends at most this much."""
        self._saved_at_s = float("-inf")
        self._observer = observer or PluginObserver()
        saved = checkpoints.checkpoint(config.name)
        if saved is None:
            # Configured without a ledger at hand (see Notifications.set): start at its head now.
            saved = Checkpoint(source.bounds()[1])
        self.position = saved.index
        self.counters = {k: saved.counters.get(k, 0) for k in COUNTERS}
        self.missed_ranges: list[MissedRange] = []
        self._triggered_through = self.position
        self._attempts = 0
        self._first_failure_s = 0.0
        self._retry_at_s: float | None = None
        self._saved = saved
        self.last_error = saved.last_error
        """Why the last failed delivery failed (kept in the checkpoint), or None."""
        self.last_error_ms = saved.last_error_ms

    @property
    def name(self) -> str:
        return self.config.name

    def step(self) -> float:
        """Deliver what can be delivered now; return how long to wait before the next step (0: more
        is ready). Failures of the target are counted and retried, never raised."""
        now = self._clock_s()
        if self._retry_at_s is not None and now < self._retry_at_s:
            return self._retry_at_s - now
        self._retry_at_s = None
        tail, head = self._source.bounds()
        if self.position + 1 < tail:
            self._report_missed(self.position + 1, tail - 1)
        entries = self._source.read(self.position + 1, self.config.batch_entries_max)
        if entries and entries[0].index > self.position + 1:  # pruned between bounds() and read()
            self._report_missed(self.position + 1, entries[0].index - 1)
        for entry in entries:
            if self.config.matches(entry):
                if entry.index > self._triggered_through:
                    self.counters["triggered"] += 1
                    self._triggered_through = entry.index
                message = build_message(Notice.of_entry(entry), self.config.format, self.config.name)
                try:
                    self._sender.send(message)
                except DeliveryError as exc:
                    wait_s = self._failed(entry.index, exc)
                    if wait_s is not None:
                        self._save(now=True)  # the failure's counters: a retry waits longer than a save
                        return wait_s
                else:
                    self._attempts = 0
                    self.counters["delivered"] += 1
                    self._observer.delivered(self.name, max(0.0, self._clock_s() - entry.time_ms / 1000))
            self.position = entry.index
        self._save()
        if len(entries) == self.config.batch_entries_max or self.position < head:
            return 0.0  # more is written already (a read may stop short of its limit at the ledger's byte cap)
        if self._unsaved():  # saved later: come back when it is due, even with nothing new
            return min(self.idle_s, max(0.001, self._saved_at_s + self.save_interval_s - time.monotonic()))
        return self.idle_s

    def _failed(self, index: int, exc: DeliveryError) -> float | None:
        """Count a failed attempt; the wait before the next one, or None if the entry is given up."""
        now = self._clock_s()
        self.counters["failed"] += 1
        self.last_error, self.last_error_ms = f"entry {index}: {exc}", int(now * 1000)
        self._attempts += 1
        if self._attempts == 1:
            self._first_failure_s = now
        retry = self.config.retry
        refused = isinstance(exc, DeliveryRefusedError)  # for good: retrying would change nothing
        if refused or self._attempts >= retry.attempts_max or now - self._first_failure_s >= retry.ttl_s:
            _log.error("notification given up", extra={"plugin": self.name, "index": index,
                                                       "attempts": self._attempts, "error": str(exc)})
            self.counters["dropped"] += 1
            self._attempts = 0
            return None
        wait_s = retry.delay_s(self._attempts)
        _log.warning("notification failed; retrying", extra={"plugin": self.name, "index": index,
                                                             "attempt": self._attempts, "retry_in_s": wait_s,
                                                             "error": str(exc)})
        self._retry_at_s = now + wait_s
        return wait_s

    def _report_missed(self, first: int, last: int) -> None:
        """The entries ``first..last`` were pruned before this plugin delivered them: say so (log,
        counter, a notice to the target, once) and go on after them."""
        count = last - first + 1
        _log.error("notifications missed: the ledger was pruned past this plugin",
                   extra={"plugin": self.name, "first": first, "last": last, "count": count})
        self.missed_ranges.append(MissedRange(first, last))
        del self.missed_ranges[:-100]  # the log and the counter keep the rest
        self.counters["missed"] += count
        self._observer.missed(self.name, count)
        notice = Notice.missed(self.name, first, last, int(self._clock_s() * 1000))
        try:
            self._sender.send(build_message(notice, self.config.format, self.name))
        except DeliveryError as exc:  # the notice is a courtesy: the log and the counter are the record
            _log.warning("missed-range notice not delivered", extra={"plugin": self.name, "error": str(exc)})
        self.position = last
        self._triggered_through = max(self._triggered_through, last)
        self._attempts = 0
        self._save(now=True)

    def _unsaved(self) -> bool:
        return (self.position, self.counters, self.last_error_ms) != \
            (self._saved.index, self._saved.counters, self._saved.last_error_ms)

    def _save(self, *, now: bool = False) -> None:
        """Save the checkpoint if it moved, at most every ``save_interval_s`` unless ``now``."""
        if not self._unsaved():
            return
        if not now and time.monotonic() - self._saved_at_s < self.save_interval_s:
            return
        checkpoint = Checkpoint(self.position, dict(self.counters), int(self._clock_s() * 1000), self.last_error,
                                self.last_error_ms)
        self._checkpoints.save_checkpoint(self.name, checkpoint, self.config_version)
        self._saved = checkpoint
        self._saved_at_s = time.monotonic()

    def interrupt(self) -> None:
        """End a delivery in progress (from another thread): it fails at once."""
        interrupt = getattr(self._sender, "interrupt", None)
        if callable(interrupt):
            interrupt()

    def close(self) -> None:
        """Save what was delivered (a stopped plugin resends nothing when it starts again), then
        close the target."""
        try:
            self._save(now=True)
        except SeawayError:  # the store is failing: the next start resends from the last save
            _log.warning("notification checkpoint not saved at stop", extra={"plugin": self.name})
        finally:
            self._sender.close()
