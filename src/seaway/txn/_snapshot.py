"""Snapshots: which transactions' writes a reader may see (Tephra's visibility rule).

Every transactional write carries its transaction's *write pointer*. A snapshot taken from the
manager says which write pointers are committed as of that moment::

    visible(v) = v == own write pointer
                 or (v <= read_pointer and v not in in_progress and v not in invalid)

Readers of logs need one more distinction than visible or not: a write pointer that is in progress
(or issued after the snapshot) may still commit, so a reader that keeps order must *wait* at it,
never step over it; one on the invalid list (aborted, timed out) will never be visible, so a reader
*skips* it. That wait is what keeps a transaction that commits late from being missed by readers
that had already moved past its position.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from enum import Enum

from seaway.errors import CorruptionError
from seaway.txn._idlog import IdView

_HEAD = struct.Struct(">BQQII")
_VERSION = 1


class Visibility(Enum):
    VISIBLE = "visible"
    """Committed as of the snapshot (or the reader's own transaction's write)."""
    WAIT = "wait"
    """In progress, or begun after the snapshot: it may still commit. Do not step over it."""
    SKIP = "skip"
    """Aborted or timed out: never visible. Step over it."""


class Snapshot:
    """What was committed when the snapshot was taken. ``write_pointer`` is 0 for a reader outside
    any transaction; a transaction's own snapshot carries its write pointer, whose writes it sees.

    The ids in progress and invalid are given as tuples, or (the manager's snapshots, a client's)
    as :class:`IdView` s of the sets at the snapshot's version: a begin takes them in O(1), not a
    copy of each set, and a visibility question looks an id up in O(1). ``in_progress`` and
    ``invalid`` list them (sorted, built at the first call, for what needs them all)."""

    __slots__ = ("_dead", "_excluded", "_invalid", "_invalid_frozen", "_live", "_progress", "_progress_frozen",
                 "read_pointer", "write_pointer")

    def __init__(self, read_pointer: int, in_progress: Iterable[int] | IdView = (),
                 invalid: Iterable[int] | IdView = (), write_pointer: int = 0) -> None:
        self.read_pointer = read_pointer
        self.write_pointer = write_pointer
        self._live: IdView | None = in_progress if isinstance(in_progress, IdView) else None
        self._progress: tuple[int, ...] | None = None if isinstance(in_progress, IdView) else tuple(in_progress)
        self._dead: IdView | None = invalid if isinstance(invalid, IdView) else None
        self._invalid: tuple[int, ...] | None = None if isinstance(invalid, IdView) else tuple(invalid)
        self._excluded: frozenset[int] | None = None
        self._progress_frozen: frozenset[int] | None = None
        self._invalid_frozen: frozenset[int] | None = None

    @property
    def in_progress(self) -> tuple[int, ...]:
        if self._progress is None:
            assert self._live is not None
            self._progress = self._live.ids()
        return self._progress

    @property
    def invalid(self) -> tuple[int, ...]:
        if self._invalid is None:
            assert self._dead is not None
            self._invalid = self._dead.ids()
        return self._invalid

    @property
    def in_progress_view(self) -> IdView:
        """The ids in progress as a view (O(1) when the snapshot holds one)."""
        return self._live if self._live is not None else IdView.of(self.in_progress)

    def with_invalid(self, invalid: Iterable[int] | IdView) -> Snapshot:
        """This snapshot with another invalid list (a client's copy of the server's)."""
        return Snapshot(self.read_pointer, self._live if self._live is not None else self.in_progress, invalid,
                        self.write_pointer)

    def with_in_progress(self, in_progress: Iterable[int] | IdView) -> Snapshot:
        return Snapshot(self.read_pointer, in_progress, self._dead if self._dead is not None else self.invalid,
                        self.write_pointer)

    def _given(self) -> frozenset[int]:
        """The ids given as tuples, as one set: built by the first visibility question."""
        if self._excluded is None:
            self._excluded = frozenset(self._progress or ()) | frozenset(self._invalid or ())
        return self._excluded

    def visible(self, write_pointer: int) -> bool:
        if write_pointer == self.write_pointer:
            return True
        if write_pointer > self.read_pointer:
            return False
        if self._live is None and self._dead is None:
            return write_pointer not in self._given()
        if self._in_progress_has(write_pointer):
            return False
        if self._dead is not None:
            return write_pointer not in self._dead
        if self._invalid_frozen is None:
            self._invalid_frozen = frozenset(self.invalid)
        return write_pointer not in self._invalid_frozen

    def visibility(self, write_pointer: int) -> Visibility:
        if self.visible(write_pointer):
            return Visibility.VISIBLE
        if write_pointer > self.read_pointer or self._in_progress_has(write_pointer):
            return Visibility.WAIT
        return Visibility.SKIP

    def _in_progress_has(self, write_pointer: int) -> bool:
        if self._live is not None:
            return write_pointer in self._live
        if self._progress_frozen is None:
            self._progress_frozen = frozenset(self.in_progress)
        return write_pointer in self._progress_frozen

    def _key(self) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
        return self.read_pointer, self.write_pointer, self.in_progress, self.invalid

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Snapshot) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Snapshot(read_pointer={self.read_pointer}, in_progress={self.in_progress!r:.200}, "
                f"invalid={self.invalid!r:.200}, write_pointer={self.write_pointer})")

    def __reduce__(self) -> tuple[type[Snapshot], tuple[int, tuple[int, ...], tuple[int, ...], int]]:
        return Snapshot, (self.read_pointer, self.in_progress, self.invalid, self.write_pointer)

    def encode(self) -> bytes:
        return b"".join((_HEAD.pack(_VERSION, self.read_pointer, self.write_pointer, len(self.in_progress),
                                    len(self.invalid)),
                         struct.pack(f">{len(self.in_progress)}Q", *self.in_progress),
                         struct.pack(f">{len(self.invalid)}Q", *self.invalid)))

    @classmethod
    def decode(cls, raw: bytes) -> Snapshot:
        try:
            version, read_pointer, write_pointer, n_progress, n_invalid = _HEAD.unpack_from(raw)
            if version != _VERSION or len(raw) != _HEAD.size + 8 * (n_progress + n_invalid):
                raise ValueError(f"version {version}, {len(raw)} bytes")
            values = struct.unpack_from(f">{n_progress + n_invalid}Q", raw, _HEAD.size)
        except (struct.error, ValueError) as exc:
            raise CorruptionError(f"a transaction snapshot does not decode: {exc}") from None
        return cls(read_pointer, values[:n_progress], values[n_progress:], write_pointer)
