"""How transactions commit: checked (in progress, not timed out, no conflict), logged as one edit
for one or several transactions, their metadata writes applied, then visible; a commit whose append
failed is aborted so that the live outcome and the recovered one agree.

Part of :class:`~seaway.txn.TransactionManager`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from seaway.errors import (
    InternalError,
    SeawayError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    UnknownTransactionError,
)
from seaway.ledger import TxnCommitted
from seaway.txn._chain import ChainedBegins
from seaway.txn._checks import check_commit, check_write_pointer, check_write_pointers
from seaway.txn._durable import commit_change, log_failure
from seaway.txn._expiry import ExpiringManager
from seaway.txn._state import Abort, Commit, InProgress, TimeOut, TxnStatus, Visible

_PENDING = 2**64
"""The commit pointer of a commit being logged: later than any transaction's begin."""


@dataclass(frozen=True)
class _Started:
    """A commit checked and appended, not yet durable."""

    pointers: tuple[int, ...]
    checked: tuple[tuple[str, bytes, bytes | None], ...]
    edit: Commit
    committed: TxnCommitted
    durable: Future[int]


def _answer(exc: Exception) -> SeawayError:
    """A commit's error as :meth:`CommittingManager.commit_many` answers it: typed."""
    return exc if isinstance(exc, SeawayError) else InternalError(f"the commit failed: {exc!r}")


class CommittingManager(ExpiringManager, ChainedBegins):
    """Commits (and, from :class:`ChainedBegins`, begins with reads and commits with the next begin)."""

    def commit(self, write_pointer: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit: every write the transaction made becomes visible, and its metadata ``writes``
        are applied, all together. Raises :class:`TransactionConflictError` (and aborts it) if a
        transaction that committed after it began declared one of the same ``conflicts`` keys."""
        self.commit_all((check_write_pointer(write_pointer),), conflicts, writes)

    def commit_all(self, write_pointers: Iterable[int], conflicts: Iterable[bytes] = (),
                   writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None:
        """Commit several transactions as one: one edit in the log, so that after a crash either
        all of them are committed, with the metadata ``writes``, or none is (a Spark driver
        publishes what its tasks staged, each in a transaction of its own).

        The ``conflicts`` keys count for all of them: the commit fails if a transaction that
        committed after the earliest of them began declared one of the keys. When it cannot commit
        them all (one is not in progress, one timed out, a conflict), it commits none, aborts those
        that could have committed (a timed-out one is timed out), and raises the error of the first
        that could not."""
        pointers = check_write_pointers(write_pointers)
        keys, checked = check_commit(conflicts, writes)
        self._finish_commit(self._start_commit(pointers, keys, checked))

    def commit_many(self, commits: Sequence[tuple[int, Iterable[bytes], Iterable[tuple[str, bytes, bytes | None]]]],
                    ) -> list[SeawayError | None]:
        """Commit several transactions, each on its own (``(write_pointer, conflicts, writes)``, as
        :meth:`commit` takes them): their edits are appended before any is waited for, so they
        share the log's syncs. Returns, in order, each one's error (None: committed); the error of
        one does not stop the others. For a server answering many clients' commits in one call."""
        started: list[_Started | SeawayError] = []
        for write_pointer, conflicts, writes in commits:
            try:
                keys, checked = check_commit(conflicts, writes)
                # Once one of them is started, a save that begins waits for it: the next ones do
                # not wait for the save (they would wait for each other for ever).
                started.append(self._start_commit((check_write_pointer(write_pointer),), keys, checked,
                                                  after_save=not any(isinstance(s, _Started) for s in started)))
            except Exception as exc:  # this commit's answer; the others, started, are finished
                started.append(_answer(exc))
        out: list[SeawayError | None] = []
        for item in started:
            if isinstance(item, SeawayError):
                out.append(item)
                continue
            try:
                self._finish_commit(item)
                out.append(None)
            except Exception as exc:  # the ones after it are still finished (a save waits for them)
                out.append(_answer(exc))
        return out

    def _start_commit(self, pointers: tuple[int, ...], keys: frozenset[bytes],
                      checked: tuple[tuple[str, bytes, bytes | None], ...], *, after_save: bool = True) -> _Started:
        """Check and append a commit (not waited for); raises the refusal (the transactions ended).
        ``after_save``: wait for a save in progress first (so that commits do not keep a save
        waiting for ever); False for a caller that has started commits of its own, which the save
        waits for (the save still finds no commit being logged when it takes the state: it holds
        the lock from that moment until its mark is appended)."""
        # A commit record of a transaction whose begin is not in the log commits nothing after a
        # restart: one that writes no log (no register waited for its begin) must wait here.
        unlogged = self._unlogged_begin(pointers)
        with self._cond:
            while self._saving and after_save:
                self._cond.wait()
            self._check_running()
            failure, ends = self._refusal(pointers, keys, unlogged)
            if failure is None:
                edit = Commit(pointers[0], tuple(sorted(keys)), checked, pointers[1:], self._clock.now_ms())
                committed = commit_change(self.state, edit)
                # Appended first: an append refused at once (an edit over the log's payload bound)
                # leaves the transactions in progress, not "being committed" for ever.
                durable = self._append(edit)
                # Until it is visible, a commit conflicts with every transaction in progress that
                # declares one of its keys: none of their snapshots can have seen it.
                for i, write_pointer in enumerate(pointers):
                    self._committing[write_pointer] = (_PENDING, keys if i == 0 else frozenset())
            else:
                pending = self._end_all(ends)
        if failure is not None:
            self._finish_ends(pending)
            raise failure
        return _Started(pointers, checked, edit, committed, durable)

    def _finish_commit(self, started: _Started) -> None:
        """Wait for a started commit's edit, apply its writes and make it visible."""
        pointers, edit = started.pointers, started.edit
        try:
            lsn = started.durable.result()
        except BaseException as exc:
            self._cancel(pointers, exc)
            raise
        try:  # every commit has a ledger entry: a batch even when it has no metadata writes
            self._apply_edit(started.checked, lsn, started.committed)
        except SeawayError as exc:
            # Logged but not applied: a restart applies it from the log. Until then the manager
            # stops (rather than let saves wait for this commit forever).
            raise self._stop(f"transaction {pointers[0]} is logged as committed but its writes failed", exc) from exc
        with self._cond:
            # Its conflict keys date from now, when it becomes visible: a transaction that began
            # while it was being logged did not see it either. Logged (not waited for), so that
            # recovery dates it the same; one lost in a crash dates it later, never earlier.
            self.state.apply(edit)
            if edit.conflicts:
                visible = Visible(edit.write_pointer, self.state.last_write_pointer)
                self.state.apply(visible)
                self._append(visible).add_done_callback(log_failure)
            for write_pointer in pointers:
                del self._committing[write_pointer]
                self._begins.pop(write_pointer, None)
            self._cond.notify_all()

    def _cancel(self, pointers: tuple[int, ...], exc: BaseException) -> None:
        """The commit of ``pointers`` failed to append: it may be written all the same (a reply
        lost), and a restart would find it committed. Abort them, waited for, so that the live
        outcome and the recovered one agree: recovery commits nothing by a commit record whose
        transactions have an abort in the log (before or after it). If that fails too, stop: the
        outcome is the log's, which the next opening reads."""
        with self._cond:
            now_ms = self._clock.now_ms()
            for write_pointer in pointers:
                del self._committing[write_pointer]
            self._cond.notify_all()
            try:
                futures = [self._end(Abort(write_pointer, now_ms)) for write_pointer in pointers]
            except SeawayError as refused:
                futures, failure = [], refused
        try:
            for future in futures:
                future.result()
            return
        except SeawayError as refused:
            failure = refused
        raise self._stop(f"transaction {pointers[0]}'s commit failed to append ({exc}) and so did its abort",
                         failure) from exc

    def _unlogged_begin(self, pointers: tuple[int, ...]) -> SeawayError | None:
        """Wait for the begins of ``pointers`` not logged yet; the error of the first that failed
        (refused, or its reply lost: a restart may not know that transaction), else None."""
        for write_pointer in pointers:
            begun = self._begins.get(write_pointer)
            if begun is not None and isinstance(error := begun.exception(), SeawayError):
                return error
        return None

    def _refusal(self, pointers: tuple[int, ...], keys: frozenset[bytes], unlogged: SeawayError | None = None,
                 ) -> tuple[SeawayError | None, list[Abort | TimeOut]]:
        """Why ``pointers`` cannot commit together now (``unlogged``: the error of a begin not
        logged), and the edits that end those of them still in progress; (None, []) when they can.
        Called under the lock."""
        now_ms = self._clock.now_ms()
        failure = unlogged
        for write_pointer in pointers if failure is None else ():
            try:
                txn = self._live(write_pointer)
            except SeawayError as exc:
                failure = exc
                break
            if txn.expiry_ms <= now_ms:
                failure = TransactionTimedOutError(f"transaction {write_pointer} timed out")
                break
        if failure is None:
            key = self.state.conflicting(min(pointers), keys, self._committing.values())
            if key is None:
                return None, []
            failure = TransactionConflictError(f"transaction {min(pointers)} conflicts on key {key!r:.80} "
                                               "with a transaction that committed after it began")
        ends: list[Abort | TimeOut] = []
        for write_pointer in pointers:
            live = self.state.in_progress.get(write_pointer)
            if live is None or write_pointer in self._committing:
                continue
            timed_out = live.expiry_ms <= now_ms
            ends.append(TimeOut(write_pointer, now_ms) if timed_out else Abort(write_pointer, now_ms))
        return failure, ends

    def _live(self, write_pointer: int) -> InProgress:
        """The transaction, in progress and not being committed; else the error that says why."""
        self._check_running()
        txn = self.state.in_progress.get(write_pointer)
        if txn is not None and write_pointer not in self._committing:
            return txn
        status = TxnStatus.IN_PROGRESS if txn is not None else self.state.status(write_pointer)
        if status is TxnStatus.UNKNOWN:
            raise UnknownTransactionError(f"no transaction {write_pointer} is known (never begun, or finished "
                                          f"before the outcomes the manager keeps: outcomes_s after it ended)")
        if status is TxnStatus.TIMED_OUT:
            raise TransactionTimedOutError(f"transaction {write_pointer} timed out")
        what = "is being committed" if status is TxnStatus.IN_PROGRESS else f"already ended: {status.value}"
        raise TransactionNotInProgressError(f"transaction {write_pointer} {what}")
