"""A set of transaction ids whose every version can be viewed in O(1): what a begin's snapshot
holds of the transactions in progress and of the invalid list, instead of a copy of them.

Every change (an id added or removed) is an *event* with a version, counted from the set's start.
The events are kept in *generations*: a generation holds the set as it was when it started (a
frozenset, its *base*) and the events since, in order, with each id's position among them. A view
at version ``v`` is a generation and a count of its events (O(1) to take); an id is in it when the
base holds it or it was added among those events, and it was not removed among them (an id is
added at most once and removed at most once in a generation: O(1) to ask). Once a generation holds
more events than twice the set's size (plus ``slack``), the next change starts a new one from the
set as it is: O(size) once per as many events, so O(1) per event. A view keeps its generation
alive (a reader that holds an old snapshot holds that generation), and a generation replaced
points at the next, so that a view at any later version can be found from an earlier one
(a client's copy of the server's set, :class:`LiveCopy`, takes its views so).

Versions are those of one :class:`IdLog` (a manager's incarnation); a client's copy counts with
the server's, so that a reply's version names the same set on both sides.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

SLACK = 1024
"""Events a generation holds beyond twice the set's size before a change starts a new one."""
CHANGES_MAX = 65_536
"""Events one reply carries, at most: a client further behind gets the whole set instead."""


class _Generation:
    __slots__ = ("added", "base", "flags", "ids", "next", "removed", "sorted", "start")

    def __init__(self, start: int, base: frozenset[int]) -> None:
        self.start = start
        self.base = base
        self.ids: list[int] = []
        """The ids of its events, in order; ``flags`` says whether each was added (or removed)."""
        self.flags: list[bool] = []
        self.added: dict[int, int] = {}
        """Ids added in this generation: their position among its events."""
        self.removed: dict[int, int] = {}
        self.next: _Generation | None = None
        self.sorted: tuple[int, tuple[int, ...]] | None = None
        """The ids after some count of events, sorted: shared by the views at that version."""

    @property
    def end(self) -> int:
        return self.start + len(self.ids)

    def holds(self, id_: int, count: int) -> bool:
        """Whether ``id_`` is in the set after the first ``count`` events."""
        removed = self.removed.get(id_)
        if removed is not None and removed < count:
            return False
        if id_ in self.base:
            return True
        added = self.added.get(id_)
        return added is not None and added < count


class IdView:
    """The set at one version: ``id in view`` is O(1); :meth:`ids` lists them (sorted, built once)."""

    __slots__ = ("_count", "_gen", "_sorted", "version")

    def __init__(self, gen: _Generation, count: int) -> None:
        self._gen = gen
        self._count = count
        self.version = gen.start + count
        self._sorted: tuple[int, ...] | None = None

    @classmethod
    def of(cls, ids: Iterable[int], version: int = 0) -> IdView:
        """A view that is just these ids (a snapshot built from a list, or decoded)."""
        view = cls(_Generation(version, frozenset(ids)), 0)
        return view

    def __contains__(self, id_: object) -> bool:
        return isinstance(id_, int) and self._gen.holds(id_, self._count)

    def ids(self) -> tuple[int, ...]:
        """The ids, sorted: O(size) the first time, for what needs them all (an encoding)."""
        if self._sorted is None:
            gen, count = self._gen, self._count
            cached = gen.sorted
            if cached is not None and cached[0] == count:
                self._sorted = cached[1]
                return self._sorted
            present = set(gen.base)
            for id_, add in zip(gen.ids[:count], gen.flags[:count], strict=True):
                if add:
                    present.add(id_)
                else:
                    present.discard(id_)
            self._sorted = tuple(sorted(present))
            gen.sorted = (count, self._sorted)
        return self._sorted

    def changes_since(self, version: int, most: int = CHANGES_MAX) -> tuple[list[int], list[bool]] | None:
        """The events from ``version`` to this view's (their ids and flags, in order), when its
        generation still holds them all and they are at most ``most``; else None. Two slices: no
        Python work per event."""
        gen = self._gen
        if not gen.start <= version <= self.version or self.version - version > most:
            return None
        first = version - gen.start
        return gen.ids[first:self._count], gen.flags[first:self._count]


class IdLog:
    """The set, changed by :meth:`add` and :meth:`remove` (not thread-safe: the owner's lock; its
    views may be read from any thread)."""

    def __init__(self, ids: Iterable[int] = (), version: int = 0, slack: int | None = None) -> None:
        self._current: set[int] = set(ids)
        self._slack = SLACK if slack is None else slack
        self._gen = _Generation(version, frozenset(self._current))
        self._sorted: tuple[int, int, tuple[int, ...]] | None = None

    @property
    def version(self) -> int:
        return self._gen.end

    @property
    def generation(self) -> _Generation:
        return self._gen

    def __contains__(self, id_: object) -> bool:
        return id_ in self._current

    def __len__(self) -> int:
        return len(self._current)

    def __iter__(self) -> Iterator[int]:
        return iter(self._current)

    def add(self, id_: int) -> None:
        """Add ``id_`` (nothing if it is in the set already)."""
        if id_ in self._current:
            return
        self._make_room(id_)
        self._current.add(id_)
        self._event(id_, True, self._gen.added)

    def remove(self, id_: int) -> None:
        """Remove ``id_`` (nothing if it is not in the set)."""
        if id_ not in self._current:
            return
        self._make_room(id_)
        self._current.discard(id_)
        self._event(id_, False, self._gen.removed)

    def _event(self, id_: int, add: bool, where: dict[int, int]) -> None:
        gen = self._gen
        where[id_] = len(gen.ids)
        gen.flags.append(add)  # the flag first: a view counts ids, and its events' flags are there
        gen.ids.append(id_)

    def _make_room(self, id_: int) -> None:
        gen = self._gen
        # An id changed twice the same way in one generation (added again after its removal) would
        # lose its first position: a new generation first (never, for transactions' ids).
        if (len(gen.ids) > 2 * len(self._current) + self._slack
                or id_ in gen.removed or (id_ in gen.added and id_ not in self._current)):
            self.restart()

    def restart(self, ids: Iterable[int] | None = None, version: int | None = None, *, link: bool = True) -> None:
        """Start a new generation from the set as it is (or from ``ids`` at ``version``: a copy
        replaced whole). ``link``: the versions go on (else they are another count, another
        incarnation's: a view at an earlier version is not looked for in the new generation)."""
        if ids is not None:
            self._current = set(ids)
        start = self.version if version is None else version
        gen = _Generation(start, frozenset(self._current))
        if link:
            self._gen.next = gen
        self._gen = gen

    def view(self) -> IdView:
        """The set as it is now: O(1)."""
        return IdView(self._gen, len(self._gen.ids))

    def sorted(self) -> tuple[int, ...]:
        """The ids as they are now, sorted: built once per version."""
        gen, count = self._gen, len(self._gen.ids)
        if self._sorted is None or self._sorted[:2] != (id(gen), count):
            self._sorted = (id(gen), count, tuple(sorted(self._current)))
        return self._sorted[2]


def view_at(gen: _Generation, version: int) -> IdView | None:
    """The view at ``version`` found from ``gen`` or a later generation, when one holds it."""
    while gen.next is not None and gen.next.start <= version:
        gen = gen.next
    if not gen.start <= version <= gen.end:
        return None
    return IdView(gen, version - gen.start)


@dataclass(frozen=True)
class LiveChanges:
    """What brings a client's copy of the server's set to ``version`` (the version of the reply's
    snapshot): the events since ``since`` (its ids and whether each was added), or the whole set
    (``reset``)."""

    epoch: int
    version: int
    since: int = 0
    reset: bool = False
    ids: tuple[int, ...] = ()
    added: tuple[bool, ...] = ()
    """Per id of ``ids``, when not a reset: added (True) or removed."""


def live_changes(epoch: int, view: IdView, known_epoch: int, known_version: int) -> LiveChanges:
    """The changes that bring a copy at (``known_epoch``, ``known_version``) to ``view``."""
    if known_epoch == epoch:
        events = view.changes_since(known_version)
        if events is not None:
            return LiveChanges(epoch, view.version, known_version, ids=tuple(events[0]), added=tuple(events[1]))
    return LiveChanges(epoch, view.version, reset=True, ids=view.ids())


class LiveCopy:
    """A client's copy of the server's set of transactions in progress, kept by the changes each
    reply carries, with the server's versions: a snapshot is the view at its own version, exactly
    (a copy newer than a begin would make transactions that ended since visible to it). Replies
    of concurrent calls come in any order: one older than the copy is viewed in the generation
    that held the copy when its call was sent (:meth:`known` returns it). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = 0
        self._set = IdLog()

    def known(self) -> tuple[int, int, _Generation]:
        """(epoch, version, generation) to send with a call (the generation to view its reply in)."""
        with self._lock:
            return self._epoch, self._set.version, self._set.generation

    def view(self, changes: LiveChanges, sent: tuple[int, int, _Generation]) -> IdView | None:
        """The set at ``changes.version``, the copy brought up to it when it is older; None when
        the changes do not fit what was sent (the server's fault)."""
        with self._lock:
            if changes.reset:
                if changes.epoch != self._epoch or changes.version >= self._set.version:
                    self._set.restart(changes.ids, changes.version, link=changes.epoch == self._epoch)
                    self._epoch = changes.epoch
                    return self._set.view()
                return IdView.of(changes.ids, changes.version)  # older than the copy: on its own
            if (changes.epoch != sent[0] or changes.since != sent[1] or changes.version < changes.since
                    or len(changes.ids) != changes.version - changes.since or len(changes.added) != len(changes.ids)):
                return None
            if changes.epoch == self._epoch and changes.version > self._set.version:
                skip = self._set.version - changes.since
                for id_, add in zip(changes.ids[skip:], changes.added[skip:], strict=True):
                    if add:
                        self._set.add(id_)
                    else:
                        self._set.remove(id_)
                if self._set.version != changes.version:  # an event that changed nothing: not the server's set
                    self._epoch = 0  # the next reply brings it whole
            if changes.epoch == self._epoch and (found := view_at(sent[2], changes.version)) is not None:
                return found
            # The copy moved on meanwhile (replaced whole, or by another incarnation's set): the
            # set as sent, with the reply's changes, on its own.
            base = view_at(sent[2], changes.since)
        if base is None:
            return None
        present = set(base.ids())
        for id_, add in zip(changes.ids, changes.added, strict=True):
            if add:
                present.add(id_)
            else:
                present.discard(id_)
        return IdView.of(present, changes.version)
