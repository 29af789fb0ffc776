"""The invalid list sent as changes: what a remote client's snapshots need, without a reply that
grows with every transaction ever aborted.

Every snapshot carries the invalid list (aborted and timed-out transactions whose data may remain).
Embedded, snapshots share one sorted tuple. Through a server, a begin's reply would carry the whole
list each time, under the reply bound; instead the client keeps a copy, and each begin or snapshot
reply carries the changes since the version of the list the client holds:

- the manager numbers the list's changes (``version``) within one incarnation (``epoch``, drawn at
  start: versions of another incarnation mean nothing) and keeps the last ``JOURNAL_MAX`` of them;
- a client within reach gets the ids added and removed since its version; one out of reach (new,
  or after a restart of the server) gets the whole list when it has at most ``CHANGES_IDS_MAX``
  ids, and otherwise reads it in pages (:meth:`TransactionManager.invalid_page`) and then asks for
  the changes since the version of the first page.

An id is added to the list once and removed at most once, after which it never comes back. So
the changes since version ``v`` (``added``: those added since and still there; ``removed``: every
one removed since) turn any copy that holds the list as it was at some version from ``v`` on (or a
mix of such, like pages read one after another) into the list as it is. A snapshot built from a
copy newer than its begin is sound: an id added since belongs to a transaction that was in
progress or had not begun (invisible either way), and one removed since has no data left.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

from seaway.txn._idlog import IdLog, IdView

JOURNAL_MAX = 262_144
"""Changes of the invalid list the manager keeps (an id and a flag each), to answer clients that
are behind with what changed."""
CHANGES_IDS_MAX = 65_536
"""Ids in one reply's changes (about 600 KB through a server, with the in-progress ids well under
the 2 MiB reply bound): a client further behind gets the whole list instead, or reads it in pages."""
PAGE_IDS_MAX = 65_536
"""Ids in one page of the invalid list."""


@dataclass(frozen=True)
class InvalidVersion:
    """Which invalid list a client holds: the manager's incarnation and the list's version in it
    (0, 0: none)."""

    epoch: int = 0
    version: int = 0


@dataclass(frozen=True)
class InvalidChanges:
    """What turns a client's copy of the invalid list into the manager's list at ``version``."""

    epoch: int
    version: int
    reset: bool = False
    """``added`` is the whole list: it replaces the copy."""
    fetch: bool = False
    """Too far behind, and the list too long to send whole: read it in pages."""
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()


class InvalidJournal:
    """The manager's numbered changes of its invalid list (not thread-safe: the manager's lock)."""

    def __init__(self, journal_max: int = JOURNAL_MAX) -> None:
        self.version = 0
        self._changes: deque[tuple[int, bool]] = deque(maxlen=journal_max)

    def added(self, write_pointer: int) -> None:
        self.version += 1
        self._changes.append((write_pointer, True))

    def removed(self, write_pointer: int) -> None:
        self.version += 1
        self._changes.append((write_pointer, False))

    def since(self, version: int, ids_max: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The ids added since ``version`` and still listed, and those removed since; None when
        ``version`` is out of reach (older than the journal, or not one of these) or the changes
        hold more than ``ids_max`` ids."""
        first = self.version - len(self._changes)
        if not first <= version <= self.version or self.version - version > 2 * ids_max:
            return None
        added: set[int] = set()
        removed: set[int] = set()
        for write_pointer, add in islice(self._changes, version - first, None):
            if add:
                added.add(write_pointer)
            else:
                added.discard(write_pointer)
                removed.add(write_pointer)
        if len(added) + len(removed) > ids_max:
            return None
        return tuple(sorted(added)), tuple(sorted(removed))


class InvalidCopy:
    """A client's copy of the manager's invalid list, kept up to date by the changes its replies
    carry. Thread-safe: replies to concurrent calls may come in any order (an older one than the
    copy is ignored; it is never needed, a newer copy serving as well). A snapshot takes a view of
    it (O(1), see :mod:`._idlog`), not a copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = IdLog()
        self.known = InvalidVersion()

    def apply(self, changes: InvalidChanges) -> bool:
        """Bring the copy to ``changes``; False when they say to read the list in pages first."""
        with self._lock:
            if changes.fetch:
                return False
            same = changes.epoch == self.known.epoch
            if same and changes.version <= self.known.version:
                return True  # the copy is as new already
            if changes.reset:
                self._ids.restart(changes.added)
            elif not same:
                return False  # changes of another incarnation's list: never applied to this copy
            else:
                for write_pointer in changes.added:
                    self._ids.add(write_pointer)
                for write_pointer in changes.removed:
                    self._ids.remove(write_pointer)
            self.known = InvalidVersion(changes.epoch, changes.version)
            return True

    def load(self, epoch: int, version: int, ids: Iterable[int]) -> None:
        """Pages read from ``version`` on: the caller then applies the changes since ``version``."""
        with self._lock:
            self._ids.restart(ids)
            self.known = InvalidVersion(epoch, version)

    def take(self, other: InvalidCopy) -> None:
        """Become ``other`` (a copy built aside, from pages) unless this one is newer: a copy is
        never seen half-built by the snapshots of concurrent calls."""
        with other._lock:
            ids, known = set(other._ids), other.known
        with self._lock:
            if known.epoch == self.known.epoch and known.version <= self.known.version:
                return
            self._ids.restart(ids)
            self.known = known

    def ids(self) -> tuple[int, ...]:
        """The copy's ids, sorted."""
        with self._lock:
            return self._ids.sorted()

    def view(self) -> IdView:
        """The copy as it is now, for a snapshot: O(1)."""
        with self._lock:
            return self._ids.view()
