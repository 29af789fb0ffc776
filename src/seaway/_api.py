"""One static type for both stores: what ``seaway.open()`` (embedded) and ``seaway.connect()`` (a
server) return, so that code written once, and typed once, takes either."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Iterable

    from seaway.log import LedgerApi, LogsApi, MetaApi
    from seaway.notify import Notifications
    from seaway.queues import Queues
    from seaway.streams import Streams
    from seaway.txn import Transaction, Transactions


@runtime_checkable
class Store(Protocol):
    """A Seaway store, embedded (:class:`seaway.Seaway`) or remote (:class:`seaway.RemoteSeaway`):
    a function typed ``def f(sw: seaway.Store)`` accepts both, under ``mypy --strict`` too. Each
    namespace is the same API on both (the shared API suite runs against both)."""

    @property
    def logs(self) -> LogsApi:
        """LogDevice-style logs: create, append, read, trim, seal."""

    @property
    def meta(self) -> MetaApi:
        """The metadata store: versioned keys, atomic conditional batches."""

    @property
    def ledger(self) -> LedgerApi:
        """The change ledger: one entry per change of the store's control plane."""

    @property
    def txn(self) -> Transactions:
        """Transactions: begin, commit, abort, status."""

    @property
    def streams(self) -> Streams:
        """Pravega-style streams of auto-scaling segments, and reader groups."""

    @property
    def queues(self) -> Queues:
        """Transactional queues with consumer groups."""

    @property
    def notify(self) -> Notifications:
        """Notification plugins: where the ledger's changes are sent."""

    @property
    def closed(self) -> bool: ...

    def transaction(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Transaction:
        """Begin a transaction (``with sw.transaction() as tx:`` commits on exit); ``logs``: the
        logs it is about to write to, registered by the begin."""

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
