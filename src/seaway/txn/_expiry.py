"""How transactions end without a commit: aborts and time-outs logged (a time-out with its ledger
entry), idle transactions timed out, and the invalid list pruned once no reader can see their data.

Part of :class:`~seaway.txn.TransactionManager`.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from seaway.errors import SeawayError, UnknownLogError
from seaway.ledger import TxnAbortedByTimeout
from seaway.txn._durable import DurableManager, ledger_change
from seaway.txn._state import Abort, Edit, Prune, Settle, TimeOut

log = logging.getLogger("seaway.txn")

PRUNE_IDS_MAX = 10_000
"""Transactions one ``Prune`` edit drops from the invalid list (an edit is one log record)."""
EXPIRIES_SLACK = 1024
"""The expiry order is rebuilt from the transactions in progress once it holds more than twice
as many entries as they are, plus this: entries of ended transactions go then, not at their
timeout (one ended in a heap is not cheap to find)."""


@dataclass(frozen=True)
class Ending:
    """An abort or time-out applied and appended: its append, and a time-out's ledger entry."""

    edit: Abort | TimeOut
    logged: Future[int]
    change: TxnAbortedByTimeout | None


class ExpiringManager(DurableManager):
    """Ends, time-outs and pruning."""

    def _end_all(self, ends: Iterable[Abort | TimeOut]) -> list[Ending]:
        """Apply and log ``ends`` (called under the lock); each time-out with its ledger entry, to
        write once it is logged (:meth:`_finish_ends`)."""
        ended = []
        for edit in ends:
            change = ledger_change(self.state, edit)
            timed_out = change if isinstance(change, TxnAbortedByTimeout) else None
            ended.append(Ending(edit, self._end(edit), timed_out))
            self._unrecorded += timed_out is not None
        return ended

    def _finish_ends(self, ended: Iterable[Ending]) -> None:
        """Wait for ends logged by :meth:`_end_all`; write the time-outs' ledger entries. Raise the
        first failure, once all are done."""
        failure: BaseException | None = None
        for ending in ended:
            try:
                self._finish_end(ending)
            except BaseException as exc:  # the others are finished all the same
                failure = failure or exc
        if failure is not None:
            raise failure

    def _finish_end(self, ending: Ending) -> None:
        """An end is applied at once (readers step over the transaction's data, a commit of it
        is refused), so one the log refused would come back in progress after a restart: it is
        appended again (twice is harmless), and if that fails too the manager stops, and the log
        decides what the next opening finds."""
        edit = ending.edit
        try:
            try:
                lsn = ending.logged.result()
            except SeawayError as exc:
                try:
                    with self._cond:
                        self._check_running()
                        again = self._append(edit)
                    lsn = again.result()
                except SeawayError as refused:
                    raise self._stop(f"transaction {edit.write_pointer}'s end failed to append ({exc}), twice",
                                     refused) from exc
            if ending.change is not None:
                # (Should the refused first append have landed after all, recovery may record
                # this time-out once more: a ledger entry twice, which notifications, at least
                # once, already allow.)
                try:
                    self._apply_edit((), lsn, ending.change)
                except SeawayError as exc:
                    raise self._stop(f"transaction {edit.write_pointer} is logged as timed out but its ledger "
                                     "entry failed", exc) from exc
        finally:
            if ending.change is not None:
                with self._cond:
                    self._unrecorded -= 1
                    self._cond.notify_all()

    def _end(self, edit: Abort | TimeOut) -> Future[int]:
        self._begins.pop(edit.write_pointer, None)
        self.state.apply(edit)
        self._cond.notify_all()  # wait_ended: the transaction is no longer in progress
        return self._append(edit)

    def _tick(self) -> None:
        """Time out the transactions past their expiry; save the state when it is due."""
        if self.run_timeouts():
            self.save()

    def run_timeouts(self) -> bool:
        """Time out the transactions past their expiry now (done by itself every ``tick_s``);
        return whether saving the state is due. Public for tests that drive the manager with a
        fake clock and no background passes."""
        now_ms = self._clock.now_ms()
        pending: list[Ending] = []
        later: list[tuple[int, int]] = []
        with self._cond:
            while self._expiries and self._expiries[0][0] <= now_ms:
                _, write_pointer = heapq.heappop(self._expiries)
                txn = self.state.in_progress.get(write_pointer)
                if txn is None:
                    continue
                if write_pointer in self._committing or txn.expiry_ms > now_ms:
                    # Being committed (it ends by itself, or is looked at again next time): the
                    # others behind it time out all the same.
                    later.append((max(txn.expiry_ms, now_ms + 1), write_pointer))
                    continue
                pending.extend(self._end_all([TimeOut(write_pointer, now_ms)]))
            for entry in later:
                heapq.heappush(self._expiries, entry)
            if len(self._expiries) > 2 * len(self.state.in_progress) + EXPIRIES_SLACK:
                # Mostly ended transactions: rebuilt, O(in progress), at most once per as many ends.
                self._expiries = [(txn.expiry_ms, wp) for wp, txn in self.state.in_progress.items()]
                heapq.heapify(self._expiries)
            due = self._edits_since_save > 0 and (
                self._edits_since_save >= self.config.save_edits
                or self._clock.monotonic_s() - self._saved_at_s >= self.config.save_interval_s)
        self._finish_ends(pending)
        return due

    def run_pruning(self) -> int:
        """Settle and prune the invalid list now (done by itself every ``prune_interval_s``);
        return how many transactions left it.

        A transaction settles ``settle_s`` after it ended (or expired, if later): no write of it
        can land any more, and its logs' tails are noted (logged). A settled one leaves the list
        once each of its logs is trimmed past its tail, deleted, or lists it as aborted (the log
        layer's :class:`~seaway.log.AbortedWrites`, whose readers skip its records whatever their
        snapshot says): listed first, durably, then pruned (a crash in between leaves it on the
        list, listed again by the next pass). A log that holds as many entries as it may keeps
        it on the list until trims make room."""
        now_ms = self._clock.now_ms()
        settle_ms = int(self.config.settle_s * 1000)
        with self._cond:
            entries = list(self.state.invalid.items())
        settled: list[Settle] = []
        for write_pointer, entry in entries:
            if entry.tails is None and now_ms - entry.ended_ms >= settle_ms:
                settled.append(Settle(write_pointer, tuple(self._tail(log_id) for log_id in entry.logs)))
        self._log_edits(settled)
        tails = {edit.write_pointer: edit.tails for edit in settled}
        done = [(wp, entry.logs, tails.get(wp, entry.tails)) for wp, entry in entries]
        gone = self._unreadable([(wp, logs, t) for wp, logs, t in done if t is not None])
        for i in range(0, len(gone), PRUNE_IDS_MAX):
            self._log_edits([Prune(tuple(gone[i:i + PRUNE_IDS_MAX]))])
        if self._user_logs is not self._logs:
            # The user logs live in another store: their trims and deletions drop no aborted-write
            # entries here by themselves.
            try:
                self._aborted.sweep(self._user_logs)
            except SeawayError as exc:  # tried again by the next pass
                log.warning("dropping aborted-write entries of trimmed and deleted logs failed",
                            extra={"error": str(exc)})
        return len(gone)

    def _log_edits(self, edits: Iterable[Edit]) -> None:
        """Apply and log ``edits``; wait until they are durable."""
        with self._cond:
            futures = []
            for edit in edits:
                self.state.apply(edit)
                futures.append(self._append(edit))
        for future in futures:
            future.result()

    def _unreadable(self, settled: Sequence[tuple[int, tuple[int, ...], tuple[int, ...]]]) -> list[int]:
        """Those of the ``settled`` transactions (id, logs, tails) no reader can see data of any
        more: in each of their logs it was trimmed away, or the log lists them as aborted (listed
        now where it does not yet, durably)."""
        wanted: dict[int, list[tuple[int, int]]] = {}
        for write_pointer, logs, tails in settled:
            for log_id, tail in zip(logs, tails, strict=True):
                if tail > 0 and not self._trimmed_past(log_id, tail):
                    wanted.setdefault(log_id, []).append((write_pointer, tail))
        unlisted: set[int] = set()
        for log_id, items in wanted.items():
            try:
                listed = self._aborted.note(log_id, items)
            except SeawayError as exc:  # tried again by the next pass; it stays on the list until then
                log.warning("listing aborted transactions in a log failed", extra={"log_id": log_id, "error": str(exc)})
                listed = set()
            unlisted.update(wp for wp, _ in items if wp not in listed)
        return [write_pointer for write_pointer, _, _ in settled if write_pointer not in unlisted]

    def _tail(self, log_id: int) -> int:
        try:
            return self._user_logs.get(log_id).tail_lsn()
        except UnknownLogError:
            return 0

    def _trimmed_past(self, log_id: int, tail: int) -> bool:
        try:
            return self._user_logs.get(log_id).trim_point() >= tail
        except UnknownLogError:
            return True
