"""How the transaction manager stays durable: the write-ahead log of its edits, the saved state
(checkpoint) and the log trimmed below it, recovery from the two, and the applied markers that make a
commit's metadata writes and ledger entry happen once across crashes.

Part of :class:`~seaway.txn.TransactionManager` (a base class: the manager's other parts build on it).
"""

from __future__ import annotations

import heapq
import json
import logging
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from seaway._clock import Clock
from seaway.errors import CorruptionError, SeawayError, StorageError
from seaway.ledger import TxnAbortedByTimeout, TxnCommitted
from seaway.log import LSN_OLDEST, AbortedWrites, Gap, GapType, LogsApi, MetaApi, Record
from seaway.txn._config import TxnConfig
from seaway.txn._state import (
    POINTERS_PER_MS,
    Abort,
    Commit,
    Edit,
    SavedState,
    SaveMark,
    TimeOut,
    TxnState,
    Visible,
    decode_edit,
    encode_edit,
    encode_saved,
)

if TYPE_CHECKING:
    from seaway.log import Log, Logs

log = logging.getLogger("seaway.txn")

WAL_LOG = "seaway.txn.wal"
"""The log that holds the manager's edits (a reserved name)."""
NAMESPACE = "txn"
_STATE_HEAD = b"state"
_STATE_CHUNK = b"state/"
_APPLIED = b"applied/"
"""``applied/<LSN>``: the metadata writes of the commit logged at LSN are in place, with its ledger
entry (put with them, so that recovery applies only those of commits cut off before; applying the
others again would put back values written since, outside the transaction, and record the commit
twice). The same for a time-out logged at LSN and its ledger entry. Those at or below a saved state
are deleted."""
_CHUNK_BYTES = 512 << 10
RECOVERY_GAP_POINTERS = 1000 * POINTERS_PER_MS


def log_failure(future: Future[int]) -> None:
    if (exc := future.exception()) is not None:
        log.warning("a transaction log append failed", extra={"error": str(exc)})



def _applied_key(lsn: int) -> bytes:
    return _APPLIED + b"%020d" % lsn


def commit_change(state: TxnState, edit: Commit) -> TxnCommitted:
    """A commit's ledger change, from the state before it (which still holds its logs)."""
    logs = sum(len(txn.logs) for wp in edit.write_pointers if (txn := state.in_progress.get(wp)) is not None)
    return TxnCommitted(edit.write_pointer, logs, len(edit.writes), len(edit.write_pointers))


def ledger_change(state: TxnState, edit: Edit) -> TxnCommitted | TxnAbortedByTimeout | None:
    """The ledger change an edit makes, from the state before it: a commit, or a time-out of a
    transaction in progress (one the state no longer holds ends nothing); None for other edits."""
    if isinstance(edit, Commit):
        return commit_change(state, edit)
    if isinstance(edit, TimeOut) and (txn := state.in_progress.get(edit.write_pointer)) is not None:
        return TxnAbortedByTimeout(edit.write_pointer, len(txn.logs))
    return None



class DurableManager:
    """The manager's state, its log and its saves (the attributes are set by the manager's
    ``__init__``)."""

    config: TxnConfig
    state: TxnState
    _logs: Logs
    """The store's own logs: the write-ahead log's."""
    _user_logs: LogsApi
    """The logs transactions write to (``_logs``, or another store's)."""
    _meta: MetaApi
    _aborted: AbortedWrites
    _clock: Clock
    _cond: threading.Condition
    _committing: dict[int, tuple[int, frozenset[bytes]]]
    """Transactions being committed: the commit pointer (pending until visible) and the keys."""
    _begins: dict[int, Future[int]]
    """Begins whose append has not succeeded (yet), by write pointer, until their transaction ends."""
    _unrecorded: int
    """Time-outs logged whose ledger entry is not written yet: a save waits for them, as for
    commits (the log below it is trimmed, and recovery could not write them any more)."""
    _saving: bool
    _save_lock: threading.Lock
    """One save at a time: a save that began earlier must not land its state after a later
    one trimmed the log past that earlier state's end."""
    _stopped: StorageError | None
    _edits_since_save: int
    _saved_at_s: float
    _expiries: list[tuple[int, int]]
    _wal: Log | None
    _dated: list[Visible]

    def _recover(self) -> TxnState:
        head = self._meta.get(NAMESPACE, _STATE_HEAD)
        start = LSN_OLDEST
        state = TxnState(*self._outcome_bounds)
        if head is not None:
            try:
                saved = json.loads(head.value)
                chunks = [self._meta.get(NAMESPACE, _STATE_CHUNK + b"%06d" % i) for i in range(int(saved["chunks"]))]
                if any(c is None for c in chunks):
                    raise ValueError("a chunk is missing")
                raw = b"".join(c.value for c in chunks if c is not None)
                start = int(saved["lsn"]) + 1
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptionError(f"the transaction manager's saved state is damaged: {exc!r:.200}") from None
            state = TxnState.decode(raw, *self._outcome_bounds)
        edits: list[tuple[int, Edit]] = []  # since the saved state: at most about save_edits
        for item in () if self._wal is None else self._wal.read(start):
            if isinstance(item, Gap):
                # Trimmed past the saved state: the edits in between are gone as surely as lost ones.
                if item.type in (GapType.DATALOSS, GapType.TRIM):
                    raise CorruptionError(f"the transaction log lost records {item.lsn_lo}-{item.lsn_hi}")
                continue
            if not isinstance(item, Record):  # pragma: no cover - plain reads yield records and gaps
                continue
            edits.append((item.lsn, decode_edit(item.payload)))
        # A commit whose append failed, and whose transactions were aborted then (see _cancel),
        # commits nothing, whichever of the two records came first.
        cancelled = {edit.write_pointer for _, edit in edits if isinstance(edit, Abort)}
        for lsn, edit in edits:
            if isinstance(edit, Commit) and (not state.takes(edit) or cancelled.intersection(edit.write_pointers)):
                continue
            change = ledger_change(state, edit)  # from the state before the edit: its logs
            state.apply(edit)
            if change is not None and self._meta.get(NAMESPACE, _applied_key(lsn)) is None:
                self._apply_edit(edit.writes if isinstance(edit, Commit) else (), lsn, change)
        self._dated = state.date_commits()
        for write_pointer, txn in state.in_progress.items():
            heapq.heappush(self._expiries, (txn.expiry_ms, write_pointer))
        # Begins are not waited for (see begin): write pointers issued before a crash may be
        # missing from the log. Issue the next ones a second of pointers above any of them (the
        # caller logs that floor, so that the next recovery starts above what this run issues).
        if self._wal is not None:  # made by the first edit, before any write pointer was issued
            state.last_write_pointer = max(state.last_write_pointer,
                                           self._clock.now_ms() * POINTERS_PER_MS) + RECOVERY_GAP_POINTERS
        return state

    @property
    def _outcome_bounds(self) -> tuple[int, int]:
        return self.config.outcomes_max, int(self.config.outcomes_s * 1000)

    def save(self) -> None:
        """Save the whole state and trim the log below it (done by itself every so often)."""
        with self._save_lock:
            self._save()

    def _save(self) -> None:
        with self._cond:
            self._saving = True
            try:
                while (self._committing or self._unrecorded) and self._stopped is None:
                    self._cond.wait()
                self._check_running()
                # A copy, under the lock (plain copies: milliseconds for a large state); encoded
                # outside it, while begins and commits go on (their edits come after the mark).
                saved = self.state.copy_for_save()
                marker = self._append(SaveMark())
                self._edits_since_save = 0
            finally:
                self._saving = False
                self._cond.notify_all()
        raw = self._encode_saved(saved)
        lsn = marker.result()
        chunks = [raw[i:i + _CHUNK_BYTES] for i in range(0, len(raw), _CHUNK_BYTES)] or [b""]
        # Every commit logged before the checkpoint has applied its writes, and every edit its
        # ledger entry (saving waited for them).
        batch = (self._meta.batch().delete_prefix(NAMESPACE, _STATE_CHUNK)
                 .delete_range(NAMESPACE, _APPLIED, _applied_key(lsn + 1)))
        for i, chunk in enumerate(chunks):
            batch.put(NAMESPACE, _STATE_CHUNK + b"%06d" % i, chunk)
        batch.put(NAMESPACE, _STATE_HEAD, json.dumps({"lsn": lsn, "chunks": len(chunks)}).encode()).commit()
        if self._wal is not None:
            self._wal.trim(lsn)
        self._saved_at_s = self._clock.monotonic_s()

    def _encode_saved(self, saved: SavedState) -> bytes:
        """Encode a save's copy of the state (outside the lock; a seam for tests that hold it)."""
        return encode_saved(saved)

    def _append(self, edit: Edit) -> Future[int]:
        """Append ``edit`` (called under the lock, so that the log's order is the order applied)."""
        self._edits_since_save += 1
        if self._wal is None:
            self._wal = self._logs.get_or_create(WAL_LOG)
        return self._wal.append_async(encode_edit(edit))

    def _apply_edit(self, writes: Iterable[tuple[str, bytes, bytes | None]], lsn: int,
                    change: TxnCommitted | TxnAbortedByTimeout) -> None:
        """Apply the metadata writes of the edit logged at ``lsn`` (a commit's) and write its ledger
        entry, with its applied marker, in one batch."""
        batch = self._meta.batch().put(NAMESPACE, _applied_key(lsn), b"").record(change)
        for namespace, key, value in writes:
            if value is None:
                batch.delete(namespace, key)
            else:
                batch.put(namespace, key, value)
        # Not synced: the edit's log record is, and recovery applies again every edit whose marker
        # (written in this same batch) is missing; a save's synced batch makes it durable before
        # the log below it is trimmed.
        self._meta.commit(batch, sync=False)

    def _stop(self, what: str, exc: SeawayError) -> StorageError:
        """Stop the manager (rather than let saves wait for ever for an edit logged but not
        applied): a restart applies it from the log."""
        with self._cond:
            self._stopped = StorageError(f"the transaction manager stopped: {what} ({exc}); reopen the store")
            self._cond.notify_all()
        return self._stopped

    def _check_running(self) -> None:
        if self._stopped is not None:
            raise self._stopped
