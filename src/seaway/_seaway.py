"""``seaway.open()``: the embedded store, one entry point with a namespace per concept."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry

from seaway._clock import Clock, SystemClock
from seaway._errors import ClosedError, InvalidArgumentError
from seaway._passes import PeriodicPasses
from seaway.log import (
    CoalesceConfig,
    DiskFault,
    EmbeddedLogStore,
    LedgerConfig,
    LedgerStore,
    LogAttributes,
    Logs,
    LogsApi,
    LogStoreConfig,
    MetadataStore,
    SplitMetadataStore,
    check_logs_api,
)
from seaway.notify import Notifications, NotifyService, NotifyServiceConfig, check_file_dir
from seaway.queues import Queues
from seaway.streams import AutoScaling, AutoScalingConfig, RetentionConfig, StreamRetention, Streams
from seaway.txn import Transaction, TransactionManager, Transactions, TxnConfig


@dataclass(frozen=True)
class SeawayConfig:
    """Configuration of an embedded store; every part has safe defaults."""

    logs: LogStoreConfig = field(default_factory=LogStoreConfig)
    log_defaults: LogAttributes = field(default_factory=LogAttributes)
    """Attributes of logs that neither they nor their group override."""
    appends: CoalesceConfig = field(default_factory=CoalesceConfig)
    """How appends of a log made while earlier ones are in flight are batched and bounded."""
    autoscaling: AutoScalingConfig = field(default_factory=AutoScalingConfig)
    """Automatic scaling of streams, run in the process that holds the store (a server's, for its
    clients)."""
    retention: RetentionConfig | None = field(default_factory=RetentionConfig)
    """Streams' retention policies, applied by passes in the process that holds the store (by
    default every 30 s, recording each stream's tail as a cut every 60 s); None: never applied
    (streams are truncated only by hand)."""
    txn: TxnConfig = field(default_factory=TxnConfig)
    """The transaction manager: default and longest timeouts, bounds, saving and pruning."""
    notify: NotifyServiceConfig | None = field(default_factory=NotifyServiceConfig)
    """The notification plugins, run in the process that holds the store (with no configuration,
    only a watcher that looks for one every few seconds); None: not run in this process. Its
    ``targets`` say where they may deliver: by default no file target (name a directory,
    ``TargetPolicy(file_dir=...)``) and no webhook to a private address (docs/security.md)."""
    ledger: LedgerConfig = field(default_factory=LedgerConfig)
    """The change ledger's soft bound and how often it is applied (its hard bound is
    ``logs.logsdb.ledger_hard_entries_max``)."""

    def __post_init__(self) -> None:
        if self.ledger.soft_entries_max > self.logs.logsdb.ledger_hard_entries_max:
            raise InvalidArgumentError(
                f"the ledger's soft bound ({self.ledger.soft_entries_max} entries) is above its hard bound "
                f"({self.logs.logsdb.ledger_hard_entries_max})")


class Seaway:
    """An open Seaway store. Use as a context manager, or call :meth:`close`.

    ``user_logs``: where the users' logs live (``sw.logs``: logs created by users, stream
    segments, queue partitions), when not in this store's directory: another store's logs (a
    cluster's, for its control node). The store's own state (the transaction manager's log,
    the metadata, the ledger) stays in ``path``. The caller keeps ``user_logs`` open while the
    store is, and closes it after the store (see docs/cluster.md, "The control node")."""

    def __init__(self, path: str | os.PathLike[str], config: SeawayConfig | None = None,
                 clock: Clock | None = None, disk_fault: DiskFault | None = None, *,
                 user_logs: LogsApi | None = None) -> None:
        self.path = Path(path)
        if user_logs is not None:
            check_logs_api(user_logs, "user_logs")
        config = config or SeawayConfig()
        if config.notify is not None:  # the plugins never write into the store's own directory
            if config.notify.targets.file_dir is not None:
                check_file_dir(config.notify.targets.file_dir, self.path)
            config = dataclasses.replace(config, notify=dataclasses.replace(
                config.notify, targets=dataclasses.replace(config.notify.targets, store_dir=self.path)))
        self.config = config
        self.clock: Clock = clock or SystemClock()
        """The store's clock: what its changes are stamped with (a server tells its clients)."""
        self._store = EmbeddedLogStore(self.path, self.config.logs, clock, disk_fault=disk_fault)
        self.autoscaling: AutoScaling | None = None
        self.retention: StreamRetention | None = None
        self._txn_manager: TransactionManager | None = None
        self._notify_service: NotifyService | None = None
        self._ledger_pruning: PeriodicPasses | None = None
        try:
            self.own_logs = Logs(self._store, self.config.log_defaults, self.config.appends)
            """The logs in the store's own directory: its transaction log, and, unless
            ``user_logs`` were given, every log (then the same object as :attr:`logs`)."""
            self.logs: LogsApi = self.own_logs if user_logs is None else user_logs
            self.meta: MetadataStore = self.own_logs.metadata_store()
            if user_logs is not None:
                split = SplitMetadataStore(self.meta, user_logs)
                split.undo_unfinished()  # logs a killed process created for batches that never applied
                self.meta = split
            self.ledger = LedgerStore(self._store.logsdb, self.meta, self.config.ledger)
            self._ledger_pruning = PeriodicPasses("ledger-pruning", self.ledger.enforce_bounds,
                                                  self.config.ledger.prune_interval_s)
            self._ledger_pruning.start()
            self._txn_manager = TransactionManager(self.own_logs, self.meta, clock, self.config.txn,
                                                   user_logs=user_logs)
            self._txn_manager.start()
            self.txn = Transactions(self._txn_manager)
            self.streams = Streams(self.logs, self.meta, clock, self.txn)
            self.queues = Queues(self.logs, self.meta, self.txn, clock)
            # A change a killed process left half-done (a scaling, seal, truncation, deletion) is
            # finished now, before anything else meets it: the steps are idempotent.
            self.streams.recover()
            self.autoscaling = AutoScaling(self.streams.controller, clock or SystemClock(), self.config.autoscaling)
            self.autoscaling.start()
            if self.config.retention is not None:
                self.retention = StreamRetention(self.streams.controller, clock or SystemClock(),
                                                 self.config.retention)
                self.retention.start()
            self.notify = Notifications(self.meta, self.ledger,
                                        self.config.notify.targets if self.config.notify is not None else None)
            if self.config.notify is not None:
                self._notify_service = NotifyService(self.notify, self.ledger, streams=self.streams,
                                                     config=self.config.notify)
                self._notify_service.start()
        except BaseException:
            if self._notify_service is not None:
                self._notify_service.close()
            if self._ledger_pruning is not None:
                self._ledger_pruning.close()
            if self._txn_manager is not None:
                self._txn_manager.close()
            self._store.close()
            raise

    @property
    def disk_syncs(self) -> int:
        """Syncs of the store's write-ahead log so far: each makes every write stored before it
        durable, so concurrent commits and appends share them (a server exports the count)."""
        return self._store.logsdb.wal_syncs

    @property
    def txn_manager(self) -> TransactionManager:
        """The transaction manager itself (``txn`` is the API over it), for a server: what it
        serves beyond that API (the invalid list as changes, in pages)."""
        if self._txn_manager is None:
            raise ClosedError("the store is closed")
        return self._txn_manager

    def close(self) -> None:
        """Finish accepted appends and close; idempotent."""
        if self._notify_service is not None:
            self._notify_service.close()  # first: its plugins read the ledger and write streams
        if self.autoscaling is not None:
            self.autoscaling.close()
        if self.retention is not None:
            self.retention.close()
        if self._ledger_pruning is not None:
            self._ledger_pruning.close()
        if self._txn_manager is not None:
            self._txn_manager.close()
        # First: what the coalescers hold goes to the store before it closes (user logs given to
        # the store are their owner's to close).
        self.own_logs.close_appends()
        self._store.close()

    @property
    def notify_metrics(self) -> CollectorRegistry | None:
        """The notification plugins' Prometheus metrics (a server serves them), or None if they do
        not run in this process."""
        return self._notify_service.registry if self._notify_service is not None else None

    def transaction(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Transaction:
        """Begin a transaction (``with sw.transaction() as tx:`` commits on exit, aborts on an
        exception)."""
        return self.txn.begin(timeout_s, logs)

    @property
    def closed(self) -> bool:
        return self._store.closed

    @property
    def write_failure(self) -> str | None:
        """Why appends fail until the store is reopened (a disk sync failed: what reached the disk
        is unknown), or None. A server reports itself unhealthy meanwhile."""
        return self._store.write_failure

    def __enter__(self) -> Seaway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(path: str | os.PathLike[str], config: SeawayConfig | None = None,  # noqa: A001
         clock: Clock | None = None, *, user_logs: LogsApi | None = None) -> Seaway:
    """Open (creating if needed) the embedded store in directory ``path``.

    ``user_logs``: keep the users' logs in another store's logs instead (a control node's shape;
    see :class:`Seaway`). Raises :class:`DataDirLockedError` if another process or store has it open.
    """
    return Seaway(path, config, clock, user_logs=user_logs)
