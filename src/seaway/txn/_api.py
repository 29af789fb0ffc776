"""``sw.txn`` and the :class:`Transaction` handle, over a manager embedded or remote (:class:`TxnApi`).

A transaction's writes are made by the layers above (queue producers and consumers, stream
writers), each through the handle: they register the logs they are about to write (so that the
manager can find an aborted transaction's data), tag what they write with the transaction's id
(its write pointer), declare conflict keys, stage metadata writes to apply with the commit, and
hook the commit (to flush what they buffered) and its end (to learn the outcome).
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from seaway.errors import (
    InvalidArgumentError,
    SeawayError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    UnknownTransactionError,
)
from seaway.log import LINKED_BATCHES_MAX, LinkedBatch, LsnSlot, Versioned
from seaway.txn._chain import Begun, check_reads
from seaway.txn._checks import check_commit, check_txn_logs, check_wait, check_write_pointers
from seaway.txn._linked import LinkedWrite
from seaway.txn._manager import TxnInfo
from seaway.txn._snapshot import Snapshot
from seaway.txn._state import TxnStatus

log = logging.getLogger("seaway.txn")

_REFUSALS = (TransactionConflictError, TransactionNotInProgressError, UnknownTransactionError, InvalidArgumentError)
"""A commit's errors that say it did not commit."""

DEADLINE_MARGIN_S_MAX = 1.0
"""A transaction's handle refuses writes this long (or a tenth of its timeout, if less) before the
manager would time it out, so that no write of it lands after it is invalid and pruned."""


class TxnApi(Protocol):
    """The transaction manager, embedded (:class:`TransactionManager`) or through the server."""

    @property
    def default_timeout_s(self) -> float: ...

    def begin(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Snapshot: ...

    def begin_with(self, timeout_s: float | None = None, logs: Iterable[int] = (),
                   reads: Iterable[tuple[str, bytes]] = ()) -> Begun: ...

    def commit_then_begin(self, write_pointer: int, conflicts: Iterable[bytes] = (),
                          writes: Iterable[tuple[str, bytes, bytes | None]] = (), timeout_s: float | None = None,
                          logs: Iterable[int] = (), reads: Iterable[tuple[str, bytes]] = ()) -> Begun | SeawayError: ...

    def register(self, write_pointer: int, logs: Iterable[int]) -> None: ...

    def commit(self, write_pointer: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None: ...

    def commit_all(self, write_pointers: Iterable[int], conflicts: Iterable[bytes] = (),
                   writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None: ...

    def commit_appending(self, write_pointer: int, batches: Sequence[LinkedBatch], conflicts: Iterable[bytes] = (),
                         writes: Iterable[tuple[str, bytes, bytes | None]] = (),
                         linked_writes: Sequence[LinkedWrite] = ()) -> list[range | SeawayError] | None: ...

    def abort(self, write_pointer: int) -> None: ...

    def status(self, write_pointer: int) -> TxnStatus: ...

    def snapshot(self) -> Snapshot: ...

    def list(self, after: TxnInfo | None = None, limit: int | None = None) -> list[TxnInfo]: ...

    def wait_ended(self, write_pointers: Iterable[int], timeout_s: float) -> builtins.list[int]: ...


def check_timeout(timeout_s: object) -> None:
    """A begin's timeout: None (the manager's default) or a positive number (the manager bounds it)."""
    if timeout_s is not None and (not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool)
                                  or not timeout_s > 0):
        raise InvalidArgumentError(f"a transaction's timeout must be a positive number, got {timeout_s!r}")


@dataclass(frozen=True)
class _NextBegin:
    """The begin a commit carries (see :meth:`Transaction.commit_and_begin`), checked."""

    timeout_s: float | None
    logs: tuple[int, ...]
    reads: tuple[tuple[str, bytes], ...]


@dataclass
class _AtCommit:
    """What a writer asked to append in the commit's step (see :meth:`Transaction.append_at_commit`)."""

    batches: Sequence[LinkedBatch]
    writes: Sequence[LinkedWrite]
    failed: Callable[[list[range | SeawayError]], None]


def _shifted(slots: Sequence[LsnSlot], by: int) -> tuple[LsnSlot, ...]:
    return tuple(LsnSlot(slot.batch + by, slot.record, slot.offset, slot.hex) for slot in slots)


class Transaction:
    """One transaction: commit on leaving a ``with`` block, abort if it raised.

    ``id`` is its write pointer; any process may commit or abort it by id (``sw.txn.commit(id)``).
    """

    def __init__(self, api: TxnApi, snapshot: Snapshot, timeout_s: float, started_s: float,
                 logs: Iterable[int] = (), reads: Mapping[tuple[str, bytes], Versioned | None] | None = None) -> None:
        self._api = api
        self.snapshot = snapshot
        self.reads: Mapping[tuple[str, bytes], Versioned | None] = dict(reads or {})
        """The metadata keys its begin read (``begin(reads=...)``), each's value and version then
        (None: absent), read after its snapshot was taken."""
        self.id = snapshot.write_pointer
        margin = min(DEADLINE_MARGIN_S_MAX, timeout_s / 10)
        self.deadline_s = started_s + timeout_s - margin
        """Monotonic time after which the handle refuses writes and commits."""
        self.status = TxnStatus.IN_PROGRESS
        self._conflicts: set[bytes] = set()
        self._writes: dict[tuple[str, bytes], bytes | None] = {}
        self._logs: set[int] = set(logs)
        """The logs registered: at begin, then by :meth:`register_logs`."""
        self._before_commit: list[Callable[[], None]] = []
        self._after: list[Callable[[bool], None]] = []
        self.end_errors: list[Exception] = []
        """What end hooks raised (each is also logged): the outcome stands all the same."""
        self._numbers: dict[str, int] = {}
        self._at_commit: list[_AtCommit] = []

    def __repr__(self) -> str:
        return f"Transaction({self.id}, {self.status.value})"

    # --- what writers call ------------------------------------------------------------------------

    def check_open(self) -> None:
        """Raise unless the transaction may still write (in progress, before its deadline)."""
        if self.status is TxnStatus.TIMED_OUT:
            raise TransactionTimedOutError(f"transaction {self.id} reached its timeout; begin a new one")
        if self.status is not TxnStatus.IN_PROGRESS:
            raise TransactionNotInProgressError(f"transaction {self.id} already ended: {self.status.value}")
        if time.monotonic() >= self.deadline_s:
            raise TransactionTimedOutError(f"transaction {self.id} reached its timeout; begin a new one")

    def register_logs(self, log_ids: Iterable[int]) -> None:
        """Tell the manager, durably, that this transaction is about to write to ``log_ids``."""
        self.check_open()
        fresh = set(log_ids) - self._logs
        if fresh:
            self._api.register(self.id, sorted(fresh))
            self._logs |= fresh

    def add_conflicts(self, *keys: bytes) -> None:
        """Declare keys this transaction changes: it fails to commit if a transaction that
        committed after it began declared one of them too."""
        self.check_open()
        self._conflicts.update(keys)

    def stage_put(self, namespace: str, key: bytes, value: bytes) -> None:
        """A metadata put applied atomically with the commit (nothing on abort)."""
        self.check_open()
        self._writes[(namespace, key)] = value

    def stage_delete(self, namespace: str, key: bytes) -> None:
        self.check_open()
        self._writes[(namespace, key)] = None

    def take_numbers(self, scope: str, count: int) -> int:
        """Reserve ``count`` numbers unique within this transaction and ``scope`` (a queue's entry
        counters, whichever producer objects enqueue); return the first."""
        first = self._numbers.get(scope, 0)
        self._numbers[scope] = first + count
        return first

    def append_at_commit(self, batches: Sequence[LinkedBatch], writes: Sequence[LinkedWrite],
                         failed: Callable[[list[range | SeawayError]], None]) -> None:
        """Have the commit append ``batches`` (a linked append: see :mod:`seaway.log`) and apply
        ``writes`` (completed with those batches' LSNs; slots count batches within ``batches``) in
        the same step as the commit itself: one call through a server, not one per append plus
        one for the commit. Meant for ``before_commit`` hooks; several writers' batches go in one
        step. The step registers the batches' logs with the transaction before it appends.

        If one of the step's batches fails, it does not commit: each writer's ``failed`` is called
        with its batches' outcomes (their LSNs, or their errors; in order) and writes again what
        failed, by its own appends and stage_put (the linked writes are not applied); then the
        transaction commits as usual. A writer whose batches the step cannot carry (the writers'
        batches together are more than LINKED_BATCHES_MAX) has ``failed`` called with no outcomes
        before the step, and sends them all itself. If ``failed`` raises, the transaction aborts."""
        self.check_open()
        self._at_commit.append(_AtCommit(list(batches), list(writes), failed))

    def before_commit(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the commit starts (a writer sends what it buffered); if it raises, the
        transaction aborts."""
        self._before_commit.append(hook)

    def after_end(self, hook: Callable[[bool], None]) -> None:
        """Call ``hook(committed)`` once the transaction ended (for an abort too). What it raises
        does not change the outcome: it is logged and kept in :attr:`end_errors`, and the other
        hooks run all the same."""
        self._after.append(hook)

    # --- ending -----------------------------------------------------------------------------------

    def commit(self) -> None:
        """Make everything the transaction wrote visible, all together. On
        :class:`TransactionConflictError` or :class:`TransactionTimedOutError` it is aborted
        (its end hooks run), also when it reached the handle's deadline before the call."""
        self._commit(None)

    def commit_and_begin(self, timeout_s: float | None = None, logs: Iterable[int] = (), *,
                         reads: Iterable[tuple[str, bytes]] = ()) -> Transaction:
        """Commit, as :meth:`commit` does, and begin the next transaction (as
        :meth:`Transactions.begin` with the same arguments) in the same call: through a server one
        round trip for both (``TxnCommitBegin``). The next one's snapshot is taken after this commit
        is visible, so it sees this transaction's writes; its ``reads`` are read after that.

        A commit that fails raises as :meth:`commit` does, and nothing is begun. A commit whose
        call was cut off is settled as :meth:`commit` settles it (the status asked, never committed
        twice); committed, the next transaction is then begun by a call of its own (a begin the
        lost call may have made is known to no one, wrote nothing, and times out). A commit that
        appends in its step (a queue producer's) begins by a call of its own too. If the next
        begin is refused once this one committed, its error is raised and :attr:`status` is
        COMMITTED: the commit stands; begin again."""
        wanted, keys = check_txn_logs(logs), check_reads(reads)
        check_timeout(timeout_s)
        started = time.monotonic()
        begun = self._commit(_NextBegin(timeout_s, wanted, keys))
        if isinstance(begun, SeawayError):
            raise begun
        if begun is None:  # the commit could not carry the begin
            started = time.monotonic()
            begun = self._api.begin_with(timeout_s, wanted, keys)
        timeout = self._api.default_timeout_s if timeout_s is None else timeout_s
        return Transaction(self._api, begun.snapshot, float(timeout), started, wanted,
                           dict(zip(keys, begun.reads, strict=True)))

    def _commit(self, after: _NextBegin | None) -> Begun | SeawayError | None:
        """Commit; with ``after``, the next begin goes with the commit's call when it can: its
        answer (or its error: the commit stands), else None (begin it by a call of its own)."""
        if self.status is not TxnStatus.IN_PROGRESS:
            self.check_open()  # raises: it already ended
        begun: Begun | SeawayError | None = None
        try:
            self.check_open()
            for hook in self._before_commit:
                hook()
            self.check_open()
            if not self._at_commit or self._commit_appending():
                writes = [(ns, key, value) for (ns, key), value in self._writes.items()]
                if after is None:
                    self._api.commit(self.id, self._conflicts, writes)
                else:
                    begun = self._api.commit_then_begin(self.id, self._conflicts, writes, after.timeout_s,
                                                        after.logs, after.reads)
        except BaseException as exc:
            if isinstance(exc, SeawayError) and self.status is TxnStatus.IN_PROGRESS and self._committed_after(exc):
                self._end(TxnStatus.COMMITTED)
                return None
            if not isinstance(exc, SeawayError) or self.status is TxnStatus.IN_PROGRESS:
                timed_out = isinstance(exc, TransactionTimedOutError)
                self._abort_quietly(TxnStatus.TIMED_OUT if timed_out else TxnStatus.ABORTED)
            raise
        self._end(TxnStatus.COMMITTED)
        return begun

    def _commit_appending(self) -> bool:
        """Commit with the appends asked for at commit, in one step; whether a plain commit is still
        to be made (one of the appends failed, and the writers wrote again what failed)."""
        queued, self._at_commit = self._at_commit, []
        asked: list[_AtCommit] = []
        total = 0
        for at in queued:  # the writers whose batches the step cannot carry send theirs first
            if total + len(at.batches) > LINKED_BATCHES_MAX:
                at.failed([])
            else:
                asked.append(at)
                total += len(at.batches)
        self.check_open()
        batches: list[LinkedBatch] = []
        writes: list[LinkedWrite] = []
        for at in asked:
            by = len(batches)
            batches.extend(LinkedBatch(b.log_id, b.payloads, [(r, _shifted((s,), by)[0]) for r, s in b.slots])
                           for b in at.batches)
            writes.extend(LinkedWrite(w.namespace, w.key, w.value, _shifted(w.key_slots, by),
                                      _shifted(w.value_slots, by)) for w in at.writes)
        if not batches:
            return True
        staged = [(ns, key, value) for (ns, key), value in self._writes.items()]
        outcomes = self._api.commit_appending(self.id, batches, self._conflicts, staged, writes)
        if outcomes is None:
            return False
        self._logs |= {batch.log_id for batch in batches}  # registered by the step
        start = 0
        for at in asked:
            at.failed(outcomes[start:start + len(at.batches)])
            start += len(at.batches)
        self.check_open()
        return True

    def _committed_after(self, exc: SeawayError) -> bool:
        """Whether a commit that raised ``exc`` committed all the same: an error that does not say
        the manager refused it (a connection cut, an answer lost) is followed by asking it once, so
        that the end hooks learn the true outcome (a consumer that committed must not give back
        what it dequeued). If that fails too, the handle ends as aborted, as before."""
        if isinstance(exc, _REFUSALS):
            return False
        try:
            return self._api.status(self.id) is TxnStatus.COMMITTED
        except SeawayError:
            return False

    def abort(self) -> None:
        """Nothing the transaction wrote becomes visible; what it dequeued is given back."""
        self._abort(TxnStatus.ABORTED)

    def _abort(self, status: TxnStatus) -> None:
        if self.status is not TxnStatus.IN_PROGRESS:
            return
        try:
            self._api.abort(self.id)
        finally:
            self._end(status)

    def _abort_quietly(self, status: TxnStatus = TxnStatus.ABORTED) -> None:
        try:
            self._abort(status)
        except SeawayError as exc:  # it ends by itself at its timeout
            log.warning("abort failed", extra={"txn": self.id, "error": str(exc)})

    def _end(self, status: TxnStatus) -> None:
        self.status = status
        for hook in self._after:
            try:
                hook(status is TxnStatus.COMMITTED)
            except Exception as exc:  # the outcome is decided: the caller must hear it, not this
                self.end_errors.append(exc)
                log.warning("a transaction's end hook failed", exc_info=True,
                            extra={"txn": self.id, "status": status.value, "error": str(exc)})

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            if self.status is TxnStatus.IN_PROGRESS:  # not if the block ended it itself
                self.commit()
        else:
            self._abort_quietly()


class Transactions:
    """``sw.txn``: begin transactions; commit, abort or ask about one by id; snapshots."""

    def __init__(self, api: TxnApi) -> None:
        self._api = api

    @property
    def api(self) -> TxnApi:
        return self._api

    def begin(self, timeout_s: float | None = None, logs: Iterable[int] = (), *,
              reads: Iterable[tuple[str, bytes]] = ()) -> Transaction:
        """Begin a transaction that times out (becomes invalid) after ``timeout_s`` (the manager's
        default when None) unless committed. ``logs``: ids of logs it is about to write to (at most
        10,000), registered by the begin itself (one edit and one sync of the manager, not a begin
        and a :meth:`Transaction.register_logs`). ``reads``: metadata keys (``(namespace, key)``, at
        most READS_MAX) read by the begin itself, after its snapshot was taken, into
        :attr:`Transaction.reads` (one call through a server, not a begin and a get per key)."""
        wanted, keys = check_txn_logs(logs), check_reads(reads)
        check_timeout(timeout_s)
        started = time.monotonic()
        if keys:
            begun = self._api.begin_with(timeout_s, wanted, keys)
            timeout = self._api.default_timeout_s if timeout_s is None else timeout_s
            return Transaction(self._api, begun.snapshot, float(timeout), started, wanted,
                               dict(zip(keys, begun.reads, strict=True)))
        snapshot = self._api.begin(timeout_s, wanted) if wanted else self._api.begin(timeout_s)
        timeout = self._api.default_timeout_s if timeout_s is None else timeout_s
        return Transaction(self._api, snapshot, float(timeout), started, wanted)

    def commit(self, txn_id: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit a transaction by id, from any process (a Spark driver commits what its executors
        wrote)."""
        keys, checked = check_commit(conflicts, writes)
        self._api.commit(txn_id, keys, checked)

    def commit_all(self, txn_ids: Iterable[int], conflicts: Iterable[bytes] = (),
                   writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit the transactions ``txn_ids`` (1 to 10,000, by id, from any process) and apply the
        metadata ``writes`` as one atomic step: after any crash, either all of them are committed
        with the writes, or none is. The ``conflicts`` keys count for all of them (against the
        earliest begin). When they cannot all commit (one ended or is unknown, one timed out, a
        conflict), none commits: those still in progress are aborted and the first failure is
        raised. A Spark driver publishes its tasks' transactions and its batch marker so."""
        ids = check_write_pointers(txn_ids)
        keys, checked = check_commit(conflicts, writes)
        self._api.commit_all(ids, keys, checked)

    def abort(self, txn_id: int) -> None:
        self._api.abort(txn_id)

    def status(self, txn_id: int) -> TxnStatus:
        """How the transaction ended, or IN_PROGRESS; what a client whose commit call was cut off
        asks."""
        return self._api.status(txn_id)

    def snapshot(self) -> Snapshot:
        return self._api.snapshot()

    def wait_ended(self, txn_ids: Iterable[int], timeout_s: float) -> list[int]:
        """Wait until any of the transactions ``txn_ids`` (1 to 1,000) is no longer in progress
        (committed, aborted, timed out, or unknown), at most ``timeout_s`` seconds; returns those
        of them that are no longer in progress, in the order given (empty when the wait timed
        out). The end wakes the wait, embedded and through a server (a long poll, each call held
        by the server at most a few seconds: the client calls again until ``timeout_s``). A
        reader stopped at a transaction in progress waits so for its outcome, then takes a fresh
        snapshot."""
        ids, timeout = check_wait(txn_ids, timeout_s)
        return self._api.wait_ended(ids, timeout)

    def list(self, after: TxnInfo | None = None, limit: int | None = None) -> list[TxnInfo]:
        """Transactions in progress, then invalid ones, each by id. In pages: at most ``limit``
        (all when None), after ``after`` (the last of the page before)::

            page = sw.txn.list(limit=1000)
            while page:
                ...
                page = sw.txn.list(after=page[-1], limit=1000)
        """
        return self._api.list(after, limit)
