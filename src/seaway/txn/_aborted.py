"""Judging a log's transactional records by a snapshot and by the log's aborted-write entries.

A snapshot skips the records of the transactions on its invalid list. The manager drops an aborted
transaction from that list once every log it registered lists it as aborted (the log layer's
:class:`~seaway.log.AbortedWrites`, written durably first): from then on, snapshots call its
records visible, and only the log's entries say otherwise. A reader therefore asks those entries
about every record its snapshot calls visible, and must have read them *after* taking the
snapshot: an id dropped before the snapshot was taken was listed before that.

Reading them for every snapshot would cost a metadata read per transaction. :class:`LogJudge`
reads them again only when it must: it remembers the snapshot taken before its last read (the
*base*). A record whose transaction the base already called visible (committed, or dropped from
the list, so listed by then) is judged by what was read; one the base did not (in progress then,
invalid then, or begun after) may have been dropped since, so the entries noted since are read
first (:meth:`~seaway.log.AbortedView.refresh`: only those, not all).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from seaway.log import AbortedView, AbortedWrites, MetaApi
from seaway.txn._snapshot import Snapshot, Visibility

JUDGED_LOGS_MAX = 4096
"""Logs whose entries one :class:`AbortedJudges` keeps read; beyond, the least recently judged
one is forgotten (read again, whole, if judged again)."""


def _settled(base: Snapshot | None, write_pointer: int) -> bool:
    """Whether ``base`` already called ``write_pointer`` visible (not as its own write): its fate
    was decided before the entries were last read."""
    return base is not None and write_pointer != base.write_pointer and base.visible(write_pointer)


class LogJudge:
    """How a reader of one log judges its records: a snapshot's verdict, and for a record it
    calls visible, the log's aborted-write entries. Thread-safe."""

    def __init__(self, view: AbortedView) -> None:
        self._view = view
        self._base: Snapshot | None = None

    def judge(self, snapshot: Snapshot, write_pointer: int, seen: Visibility | None = None) -> Visibility:
        """The visibility of a record of transaction ``write_pointer`` in this log to a reader
        holding ``snapshot`` (``seen``: what the snapshot said, when the caller asked already).
        SKIP for a transaction the log lists as aborted, whatever the snapshot says."""
        if seen is None:
            seen = snapshot.visibility(write_pointer)
        if seen is not Visibility.VISIBLE or write_pointer == snapshot.write_pointer:
            return seen
        if _settled(self._base, write_pointer):
            ids = self._view.ids
        else:
            ids = self._view.refresh()  # read after ``snapshot`` was taken
            self._base = snapshot
        return Visibility.SKIP if write_pointer in ids else Visibility.VISIBLE


class AbortedJudges:
    """The :class:`LogJudge` of each log a process reads, over its metadata store (embedded or
    remote): one per log, shared by its readers, at most :data:`JUDGED_LOGS_MAX`."""

    def __init__(self, meta: MetaApi) -> None:
        self._aborted = AbortedWrites(meta)
        self._lock = threading.Lock()
        self._judges: OrderedDict[int, LogJudge] = OrderedDict()

    def of(self, log_id: int) -> LogJudge:
        with self._lock:
            judge = self._judges.get(log_id)
            if judge is None:
                judge = self._judges[log_id] = LogJudge(AbortedView(self._aborted, log_id))
                if len(self._judges) > JUDGED_LOGS_MAX:
                    self._judges.popitem(last=False)
            else:
                self._judges.move_to_end(log_id)
            return judge

    def judge(self, log_id: int, snapshot: Snapshot, write_pointer: int) -> Visibility:
        """:meth:`LogJudge.judge` for a record of log ``log_id``."""
        seen = snapshot.visibility(write_pointer)
        if seen is not Visibility.VISIBLE:  # the snapshot decides: no log's judge needed
            return seen
        return self.of(log_id).judge(snapshot, write_pointer, seen)
