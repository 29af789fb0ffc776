"""Aborted writes: per log, the transactions known to have been aborted that may have records in it.

The log layer does not read its records' payloads, so it cannot tell whose a record is; the layers
above tag each transactional record with its transaction's id (a *write pointer*). What this
module keeps is a list per log of such ids, each with the last LSN the transaction's records can
lie at (the log's tail once no write of it could still land). A reader of the log treats a record
tagged with a listed id as aborted; the transaction manager lists an id in every log it
registered, then may drop it from its invalid list, which every snapshot carries: a log that is
never trimmed (a queue group nobody reads, a stream without retention) keeps the entry, not the
invalid list, growing.

The entries live in the metadata store (namespace :data:`ABORTED_NAMESPACE`), so that they are
the same embedded and through a server, and durable as its batches are. Per log:

- ``<log id>\\0<seq>`` -> ``<write pointer><last LSN>``, with ``seq`` counting up per log (noted in
  that order, so that a reader reads only the entries added since it last looked);
- ``<log id>`` -> the next ``seq``;
- ``<log id>\\1<write pointer>`` -> its ``seq`` (what tells a noted id at once).

An entry goes once the log is trimmed past its last LSN (no record of it is left to judge) and
with the log's deletion; a log holds at most :data:`ABORTED_PER_LOG_MAX`, beyond which
:meth:`AbortedWrites.note` refuses (the caller keeps relying on its invalid list). An id is
aborted for ever, so a reader that still holds an entry a trim dropped judges nothing wrongly.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterable

from seaway.errors import ConditionFailedError, InvalidArgumentError
from seaway.log._api import LogsApi
from seaway.log._handle import APPEND_COUNTS_LOGS_MAX
from seaway.log._meta import MetaApi

ABORTED_NAMESPACE = "log.aborted"
"""The metadata namespace of the aborted-write entries (reserved for the log layer)."""
ABORTED_PER_LOG_MAX = 100_000
"""Entries one log holds at most (24 bytes of key and value each, about 2.4 MB in all);
:meth:`AbortedWrites.note` refuses more until trims drop some."""
_ID = struct.Struct(">Q")
_ENTRY = struct.Struct(">QQ")
_PAGE = 10_000
_NOTE_ATTEMPTS_MAX = 100
_BATCH_ENTRIES_MAX = 2_000
"""Entries one metadata batch lists (two keys each, under the batch's 10,000 operations)."""
_ENTRIES = b"\0"
_INDEX = b"\1"


def _check_u64(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**64:
        raise InvalidArgumentError(f"{what} is an integer in (0, 2**64), got {value!r}")
    return value


class AbortedWrites:
    """The aborted-write entries of every log, over a metadata store (embedded or remote)."""

    def __init__(self, meta: MetaApi) -> None:
        self._meta = meta

    def note(self, log_id: int, aborted: Iterable[tuple[int, int]]) -> set[int]:
        """List ``aborted`` in log ``log_id``: pairs of an aborted transaction's id (write
        pointer) and the last LSN its records in the log can lie at. Durable when it returns;
        return the ids listed (those listed before included). An id already listed keeps its
        entry. Once the log holds :data:`ABORTED_PER_LOG_MAX` entries, the rest are refused:
        not listed, not returned."""
        _check_u64(log_id, "a log id")
        wanted: dict[int, int] = {}
        for write_pointer, last_lsn in aborted:
            wanted[_check_u64(write_pointer, "a write pointer")] = _check_u64(last_lsn, "an LSN")
        # By last LSN: entries stay in that order (a trim drops a prefix of them).
        pending = sorted(wanted.items(), key=lambda item: (item[1], item[0]))
        listed: set[int] = set()
        attempts = 0
        while pending:
            attempts += 1
            if attempts > _NOTE_ATTEMPTS_MAX:
                raise ConditionFailedError(f"log {log_id}'s aborted writes changed under {_NOTE_ATTEMPTS_MAX} "
                                           "attempts to note some", ABORTED_NAMESPACE, _ID.pack(log_id))
            done, refused = self._note_some(log_id, pending[:_BATCH_ENTRIES_MAX])
            if done is None:  # another noted meanwhile: look again
                continue
            listed |= done
            if refused:
                return listed
            pending = pending[_BATCH_ENTRIES_MAX:]
        return listed

    def _note_some(self, log_id: int, items: list[tuple[int, int]]) -> tuple[set[int] | None, bool]:
        """One batch of :meth:`note`: the ids listed (None: the log's entries changed meanwhile)
        and whether some were refused (the log is full)."""
        head_key = _ID.pack(log_id)
        head = self._meta.get(ABORTED_NAMESPACE, head_key)
        next_seq = 0 if head is None else _ID.unpack(head.value)[0]
        first = self._meta.scan(ABORTED_NAMESPACE, prefix=head_key + _ENTRIES, limit=1)
        held = next_seq - _seq_of(first[0][0]) if first else 0
        batch = self._meta.batch()
        if head is None:
            batch.expect_absent(ABORTED_NAMESPACE, head_key)
        else:
            batch.expect_version(ABORTED_NAMESPACE, head_key, head.version)
        listed = self._listed(log_id, {write_pointer for write_pointer, _ in items})
        refused = False
        for write_pointer, last_lsn in items:
            if write_pointer in listed:
                continue
            if held >= ABORTED_PER_LOG_MAX:
                refused = True
                break
            batch.put(ABORTED_NAMESPACE, _entry_key(log_id, next_seq), _ENTRY.pack(write_pointer, last_lsn))
            batch.put(ABORTED_NAMESPACE, _index_key(log_id, write_pointer), _ID.pack(next_seq))
            listed.add(write_pointer)
            next_seq += 1
            held += 1
        batch.put(ABORTED_NAMESPACE, head_key, _ID.pack(next_seq))
        try:
            batch.commit()
        except ConditionFailedError:
            return None, False
        return listed, refused

    def _listed(self, log_id: int, ids: set[int]) -> set[int]:
        """Those of ``ids`` the log lists already: one scan of its index between the least and
        the greatest (the ids noted together are mostly the latest aborted, above the others)."""
        found: set[int] = set()
        start, end = _index_key(log_id, min(ids)), _index_key(log_id, max(ids)) + b"\0"
        while True:
            rows = self._meta.scan(ABORTED_NAMESPACE, start=start, end=end, limit=_PAGE)
            found.update(wp for key, _ in rows if (wp := _ID.unpack_from(key, _ID.size + 1)[0]) in ids)
            if len(rows) < _PAGE:
                return found
            start = rows[-1][0] + b"\0"

    def entries(self, log_id: int, after_seq: int = -1) -> list[tuple[int, int, int]]:
        """The log's entries noted after ``after_seq``: ``(seq, write pointer, last LSN)``, in
        the order noted (reading them costs what they hold, not what came before)."""
        prefix = _ID.pack(_check_u64(log_id, "a log id"))
        start = _entry_key(log_id, after_seq + 1) if after_seq >= 0 else None
        out = []
        while True:
            rows = self._meta.scan(ABORTED_NAMESPACE, prefix=prefix + _ENTRIES, start=start, limit=_PAGE)
            for key, found in rows:
                write_pointer, last_lsn = _ENTRY.unpack(found.value)
                out.append((_seq_of(key), write_pointer, last_lsn))
            if len(rows) < _PAGE:
                return out
            start = _entry_key(log_id, out[-1][0] + 1)

    def forget_trimmed(self, log_id: int, trim_lsn: int) -> None:
        """Drop the log's entries whose records lie at or below ``trim_lsn`` (the log was trimmed
        there). Entries are noted in the order of their last LSN (a log's tail only grows), so
        these are the first ones: it stops at the first entry above (one noted out of order, late
        after a restart, goes with a later trim)."""
        prefix = _ID.pack(log_id) + _ENTRIES
        while True:
            batch = self._meta.batch()
            end: int | None = None
            for key, found in self._meta.scan(ABORTED_NAMESPACE, prefix=prefix, limit=_BATCH_ENTRIES_MAX):
                write_pointer, last_lsn = _ENTRY.unpack(found.value)
                if last_lsn > trim_lsn:
                    break
                end = _seq_of(key) + 1
                batch.delete(ABORTED_NAMESPACE, _index_key(log_id, write_pointer))
            if end is None:
                return
            batch.delete_range(ABORTED_NAMESPACE, prefix, _entry_key(log_id, end)).commit()

    def forget_log(self, log_id: int) -> None:
        """Drop every entry of the log (deleted)."""
        self._meta.batch().delete_prefix(ABORTED_NAMESPACE, _ID.pack(log_id)).commit()

    def sweep(self, logs: LogsApi) -> int:
        """Drop the entries of the logs ``logs`` says were trimmed past them or deleted; return how
        many logs were looked at. For a store whose logs live in another store (a control node's:
        their trims and deletions do not reach this metadata store, as :meth:`Log.trim` and
        :meth:`Logs.delete` reach their own): its transaction manager's pruning pass runs it. One
        seek per log that has entries, and one ``bounds`` call per ``APPEND_COUNTS_LOGS_MAX`` of them."""
        looked = 0
        after = 0
        while ids := self._logs_listed(after, APPEND_COUNTS_LOGS_MAX):
            found = logs.bounds(ids)
            for log_id in ids:
                bounds = found.get(log_id)
                if bounds is None:  # deleted (or unknown: no record of it can be read)
                    self.forget_log(log_id)
                elif bounds.trim_point > 0:
                    self.forget_trimmed(log_id, bounds.trim_point)
            looked += len(ids)
            after = ids[-1]
        return looked

    def _logs_listed(self, after: int, limit: int) -> list[int]:
        """Up to ``limit`` ids of logs above ``after`` that have entries, in order: a seek each."""
        ids: list[int] = []
        while len(ids) < limit and after < 2**64 - 1:
            rows = self._meta.scan(ABORTED_NAMESPACE, start=_ID.pack(after + 1), limit=1)
            if not rows:
                break
            after = _ID.unpack_from(rows[0][0])[0]
            ids.append(after)
        return ids


def _entry_key(log_id: int, seq: int) -> bytes:
    return _ID.pack(log_id) + _ENTRIES + _ID.pack(seq)


def _index_key(log_id: int, write_pointer: int) -> bytes:
    return _ID.pack(log_id) + _INDEX + _ID.pack(write_pointer)


def _seq_of(key: bytes) -> int:
    seq: int = _ID.unpack_from(key, _ID.size + 1)[0]
    return seq


class AbortedView:
    """What one process knows of one log's aborted writes: the ids read so far, topped up by the
    entries noted since when asked to (:meth:`refresh`). Thread-safe; its ids only grow (an id is
    aborted for ever), up to twice :data:`ABORTED_PER_LOG_MAX`, when it reads them all again."""

    def __init__(self, aborted: AbortedWrites, log_id: int) -> None:
        self._aborted = aborted
        self.log_id = log_id
        self._lock = threading.Lock()
        self._ids: frozenset[int] = frozenset()
        self._after_seq = -1

    def refresh(self) -> frozenset[int]:
        """Read the entries noted since the last refresh; return every id known. Everything noted
        before this call began is in it."""
        with self._lock:
            fresh = self._aborted.entries(self.log_id, self._after_seq)
            if fresh:
                self._after_seq = fresh[-1][0]
                ids: Iterable[int] = (wp for _, wp, _ in fresh)
                if len(self._ids) + len(fresh) > 2 * ABORTED_PER_LOG_MAX:
                    self._ids = frozenset(wp for _, wp, _ in self._aborted.entries(self.log_id))
                else:
                    self._ids = self._ids.union(ids)
            return self._ids

    @property
    def ids(self) -> frozenset[int]:
        """The ids known as of the last refresh."""
        return self._ids
