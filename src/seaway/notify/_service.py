"""The plugins of a store, run in the process that holds it (an embedded store, or a server for its
clients): a thread per configured plugin, and a watcher that starts, replaces and stops them as
configurations change (wherever they were changed: here, or through the server). With no
configuration, only the watcher runs: one small metadata scan every ``config_poll_s``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

from seaway.errors import CorruptionError, SeawayError
from seaway.notify._api import Notifications
from seaway.notify._plugin import Plugin, PluginObserver
from seaway.notify._policy import TargetPolicy
from seaway.notify._source import LedgerSource
from seaway.notify._targets import make_sender

_log = logging.getLogger("seaway.notify")


@dataclass(frozen=True)
class NotifyServiceConfig:
    targets: TargetPolicy = field(default_factory=TargetPolicy)
    """Where this process's plugins may deliver: by default no file target and no webhook to a
    loopback, private or link-local address (see docs/security.md)."""
    config_poll_s: float = 2.0
    """How often configurations are looked at (a change made elsewhere is seen within this)."""
    idle_s: float = 0.5
    """How often an idle plugin looks for new entries (where the ledger cannot wake it)."""
    save_interval_s: float = 0.2
    """The least time between two saves of a plugin's checkpoint (a synced write each): after a
    crash, a plugin re-sends at most what it delivered in this time."""
    wake_delay_s: float = 0.005
    """After a ledger write wakes an idle plugin, how long it waits for more before it reads (the
    entries of a burst go in one read)."""
    wake_interval_s: float = 0.05
    """The least time between two reads of a plugin woken by writes: under a stream of changes
    a plugin reads in batches (at most 20 times a second) rather than once per change, so that
    delivering costs the control plane little; an isolated change is read after wake_delay_s."""


class _Metrics(PluginObserver):
    def __init__(self, observer: PluginObserver | None) -> None:
        self._observer = observer or PluginObserver()
        self.registry = CollectorRegistry()
        r = self.registry
        self.position = Gauge("seaway_notify_position", "The last ledger index each plugin is done with.",
                              ["plugin"], registry=r)
        self.missed_total = Counter("seaway_notify_missed_total",
                                    "Ledger entries pruned before the plugin delivered them.", ["plugin"], registry=r)
        self.latency = Histogram("seaway_notify_delivery_seconds",
                                 "From an entry's write to its target's acknowledgement.", ["plugin"], registry=r,
                                 buckets=(0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0))
        self.delivered_total = Counter("seaway_notify_delivered_total", "Messages acknowledged by targets.",
                                       ["plugin"], registry=r)

    def delivered(self, name: str, latency_s: float) -> None:
        self.latency.labels(name).observe(latency_s)
        self.delivered_total.labels(name).inc()
        self._observer.delivered(name, latency_s)

    def missed(self, name: str, count: int) -> None:
        self.missed_total.labels(name).inc(count)
        self._observer.missed(name, count)


class ForwardCollector(Collector):
    """Puts the notify metrics into another registry (the server's /metrics)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Any]:
        yield from self._registry.collect()


class _Running:
    """A plugin's thread. Between steps it waits on ``wake``: set by a ledger write (where the
    source can be watched), by a stop, or never, in which case the step's own wait runs out."""

    def __init__(self, version: int, plugin: Plugin, metrics: _Metrics, source: LedgerSource,
                 config: NotifyServiceConfig) -> None:
        self.version = version
        self.plugin = plugin
        self.stopped = False
        self.wake = threading.Event()
        self._metrics = metrics
        self._config = config
        watch = getattr(source, "watch", None)  # an embedded ledger can wake its readers; a remote one cannot
        self._unwatch = watch(self.wake.set) if callable(watch) else None
        self.thread = threading.Thread(target=self._run, name=f"seaway-notify-{plugin.name}", daemon=True)

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()
        self.plugin.interrupt()  # a delivery in progress ends now: a hung receiver holds no stop

    def _run(self) -> None:
        try:
            while not self.stopped:
                self.wake.clear()  # before the step: a write during it wakes the next wait
                stepped_s = time.monotonic()
                try:
                    wait_s = self.plugin.step()
                except Exception:  # the store (not the target) failed, or worse: log it, try again later
                    _log.exception("notification plugin step failed", extra={"plugin": self.plugin.name})
                    wait_s = 1.0
                self._metrics.position.labels(self.plugin.name).set(self.plugin.position)
                if wait_s > 0 and self.wake.wait(wait_s) and not self.stopped:
                    due_s = max(time.monotonic() + self._config.wake_delay_s, stepped_s + self._config.wake_interval_s)
                    time.sleep(max(0.0, due_s - time.monotonic()))
        finally:
            if self._unwatch is not None:
                self._unwatch()
            self.plugin.close()


class NotifyService:
    """Runs the plugins of ``notifications``' configurations over ``source``. ``observer`` is told
    of each delivery and missed range as they happen, in the plugin's thread (it must not block),
    besides the Prometheus metrics of :attr:`registry`."""

    def __init__(self, notifications: Notifications, source: LedgerSource, *, streams: Any = None,
                 clock_s: Callable[[], float] = time.time, config: NotifyServiceConfig | None = None,
                 observer: PluginObserver | None = None) -> None:
        self._notifications = notifications
        self._source = source
        self._streams = streams
        self._clock_s = clock_s
        self.config = config or NotifyServiceConfig()
        self._metrics = _Metrics(observer)
        self.registry = self._metrics.registry
        self._running: dict[str, _Running] = {}
        self._not_started: dict[str, tuple[int, str]] = {}
        """Plugins that could not start: the version of their configuration and why (logged once)."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self._watcher = threading.Thread(target=self._watch, name="seaway-notify", daemon=True)
        self._watcher.start()

    def plugins(self) -> dict[str, Plugin]:
        with self._lock:
            return {name: r.plugin for name, r in self._running.items()}

    def refresh(self) -> None:
        """Start, replace and stop plugins to match the configurations now."""
        configs = self._notifications.versions()
        unreadable = self._notifications.unreadable()
        with self._lock:
            if self._stop.is_set():
                return
            for name in [n for n, r in self._running.items() if configs.get(n, (None,))[0] != r.version]:
                self._stop_plugin(name)
            for name in [n for n in self._not_started if n not in configs and n not in unreadable]:
                del self._not_started[name]
            for name, (version, reason) in unreadable.items():
                self._not_started_because(name, version, f"its configuration is unreadable: {reason}")
            for name, (version, config) in configs.items():
                if name in self._running:
                    continue
                try:
                    plugin = Plugin(config, make_sender(config.target, self._streams, self.config.targets),
                                    self._source, self._notifications, self._clock_s, config_version=version,
                                    idle_s=self.config.idle_s,
                                    save_interval_s=self.config.save_interval_s,
                                    observer=self._metrics)
                except CorruptionError as exc:  # its checkpoint: written by something other than a plugin
                    self._not_started_because(name, version, f"its checkpoint is unreadable: {exc}")
                    continue
                except SeawayError as exc:
                    self._not_started_because(name, version, str(exc))
                    continue
                self._not_started.pop(name, None)
                running = _Running(version, plugin, self._metrics, self._source, self.config)
                self._running[name] = running
                running.thread.start()
                _log.info("notification plugin started", extra={"plugin": name, "position": plugin.position})

    def _not_started_because(self, name: str, version: int, reason: str) -> None:
        """Log why a plugin cannot start, once per configuration version and reason (the watcher
        tries again at every look, and goes on with the other plugins meanwhile)."""
        if self._not_started.get(name) == (version, reason):
            return
        self._not_started[name] = (version, reason)
        _log.error(f"notification plugin {name!r} not started: {reason} (`seaway notify status` shows it; "
                   "delete the configuration, and set it again to start its plugin at the ledger's head)",
                   extra={"plugin": name, "version": version})

    def not_started(self) -> dict[str, str]:
        """The configured plugins that this service could not start, and why."""
        with self._lock:
            return {name: reason for name, (_, reason) in self._not_started.items()}

    def _stop_plugin(self, name: str) -> None:
        running = self._running.pop(name)
        running.stop()
        running.thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # whatever it was, the watcher must keep every other plugin going
                _log.exception("notification configurations not read; trying again")
            self._stop.wait(self.config.config_poll_s)

    def close(self) -> None:
        """Stop every plugin (each finishes the delivery it is in) and the watcher; idempotent."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        with self._lock:
            for name in list(self._running):
                self._stop_plugin(name)
