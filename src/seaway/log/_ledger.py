"""The change ledger's API (``sw.ledger``): its bounds, reads by index, entries on their own,
pruning by range, and the *floors* that hold the soft bound back for slow readers.

Entries are written by the layers that make the changes, each in the same atomic write as its
change (see :mod:`seaway.ledger`). This module reads them and keeps the ledger bounded:

- the hard bound (``LogsDBConfig.ledger_hard_entries_max`` entries and ``ledger_hard_bytes_max``
  bytes) is exact and applied in the write that would pass it, which drops the oldest entries as
  one range, down to nine tenths of the bound, whoever has read them;
- the soft bound (:class:`LedgerConfig`) keeps at most ``soft_entries_max`` entries, but never
  drops an entry above a registered reader's *floor* (the last index it has processed, see
  :meth:`LedgerApi.set_floor`). A pass applies it every ``prune_interval_s`` in the process that
  holds the store (a server's, for its clients), so it is a bound between passes, not at every write.

A reader that was outrun learns exactly what it missed: indexes go up by one and pruning only ever
drops the oldest range, so what is gone after its checkpoint is ``range(checkpoint + 1, tail)``
(:meth:`LedgerApi.missed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seaway.errors import CorruptionError, InvalidArgumentError
from seaway.ledger import Change, LedgerEntry, encode_change
from seaway.log._meta import MetaApi, MetaBatch

if TYPE_CHECKING:  # the remote client uses this module and must not load RocksDB
    from seaway.logsdb import LogsDB

READ_LIMIT_MAX = 10_000
"""The most entries one read returns."""
READ_BYTES_MAX = 1 << 20
"""The most bytes of changes one read returns (at least one entry, which is at most
``seaway.ledger.CHANGE_BYTES_MAX``): a read may return fewer than its limit; read on from the last
index returned + 1."""
INDEX_MAX = 2**63 - 1
FLOORS_NAMESPACE = "seaway.ledger-floors"
"""The metadata namespace of the readers' floors: key the reader's name, value its floor in decimal."""
FLOORS_MAX = 1000
"""The most readers with a floor; :meth:`LedgerApi.set_floor` refuses a new one past it."""
_FLOOR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


@dataclass(frozen=True)
class LedgerConfig:
    """The ledger's soft bound (its hard bound is ``LogsDBConfig.ledger_hard_entries_max`` and
    ``ledger_hard_bytes_max``)."""

    soft_entries_max: int = 100_000
    """Entries kept once every registered reader has read them; older ones are pruned only up to
    the lowest floor."""
    prune_interval_s: float | None = 30.0
    """How often the soft bound is applied; None: only by :meth:`LedgerStore.enforce_bounds`."""

    def __post_init__(self) -> None:
        if not isinstance(self.soft_entries_max, int) or not 1 <= self.soft_entries_max <= 2**40:
            raise InvalidArgumentError(f"soft_entries_max must be in [1, 2**40], got {self.soft_entries_max!r}")
        if self.prune_interval_s is not None and not 0 < self.prune_interval_s <= 86_400:
            raise InvalidArgumentError(f"prune_interval_s must be in (0, 86400] or None, got {self.prune_interval_s!r}")


def check_ledger_index(index: object, what: str = "a ledger index") -> int:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= INDEX_MAX:
        raise InvalidArgumentError(f"{what} is an integer in [0, 2**63), got {index!r:.80}")
    return index


def check_ledger_read(index_from: object, limit: object) -> tuple[int, int]:
    """A read's arguments, checked (for both implementations)."""
    index = check_ledger_index(index_from, "index_from")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= READ_LIMIT_MAX:
        raise InvalidArgumentError(f"a ledger read's limit is in [1, {READ_LIMIT_MAX}], got {limit!r:.80}")
    return index, limit


def check_floor_name(name: object) -> str:
    if not isinstance(name, str) or not _FLOOR_NAME.match(name):
        raise InvalidArgumentError(f"a floor's name is 1-200 letters, digits and ._/- starting with a letter "
                                   f"or digit, got {name!r:.80}")
    return name


class LedgerApi:
    """What the embedded ledger and the remote client share: :meth:`bounds`, :meth:`read`,
    :meth:`append` and :meth:`prune` are each implementation's; floors live in the metadata store."""

    def __init__(self, meta: MetaApi) -> None:
        self._meta = meta

    def bounds(self) -> tuple[int, int]:
        """``(tail, head)``: the first index kept and the last written (``tail == head + 1`` when
        none is kept). Both only go up, across restarts."""
        raise NotImplementedError

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        """Entries from ``max(index_from, tail)`` on, in index order: at most ``limit`` (1 to
        ``READ_LIMIT_MAX``) and ``READ_BYTES_MAX`` bytes of changes, never none while there is an
        entry at or after ``index_from``. Sees every change whose write returned."""
        raise NotImplementedError

    def append(self, change: Change) -> int:
        """Write an entry on its own, durably; return its index. For a change with no other write
        to ride in: a change that has one records it in that write (``MetaBatch.record``)."""
        raise NotImplementedError

    def prune(self, through: int) -> int:
        """Drop every entry up to index ``through`` (one range delete, durably), whatever the
        floors say; return the new tail. Pruning below the tail or past the head drops nothing more."""
        raise NotImplementedError

    def missed(self, checkpoint: int) -> range:
        """The indexes after ``checkpoint`` (the last a reader processed) that were pruned before
        it read them: empty unless the reader was outrun."""
        tail, _ = self.bounds()
        return range(check_ledger_index(checkpoint, "a checkpoint") + 1, max(tail, checkpoint + 1))

    # --- floors: what the soft bound waits for ------------------------------------------------------

    def set_floor(self, name: str, index: int) -> None:
        """Register (or move) reader ``name``'s floor: the soft bound prunes no entry above
        ``index``. Set it to what the reader has durably processed, after saving that: a floor
        behind the reader's checkpoint only keeps more. Raises :class:`InvalidArgumentError` for
        a new reader past ``FLOORS_MAX``."""
        check_ledger_index(index, "a floor")
        key = check_floor_name(name).encode()
        if self._meta.get(FLOORS_NAMESPACE, key) is None and len(self.floors()) >= FLOORS_MAX:
            raise InvalidArgumentError(f"at most {FLOORS_MAX} ledger readers have a floor")
        self._meta.put(FLOORS_NAMESPACE, key, b"%d" % index)

    @staticmethod
    def put_floor(batch: MetaBatch, name: str, index: int) -> MetaBatch:
        """Move reader ``name``'s floor in ``batch`` (the batch that saves its checkpoint, so that
        both move together). Does not count floors: register a new reader with :meth:`set_floor`."""
        floor = check_ledger_index(index, "a floor")
        return batch.put(FLOORS_NAMESPACE, check_floor_name(name).encode(), b"%d" % floor)

    @staticmethod
    def drop_floor(batch: MetaBatch, name: str) -> MetaBatch:
        """Forget reader ``name``'s floor in ``batch`` (the batch that removes the reader)."""
        return batch.delete(FLOORS_NAMESPACE, check_floor_name(name).encode())

    def remove_floor(self, name: str) -> None:
        """Forget reader ``name``'s floor (a removed reader); nothing if it has none."""
        self._meta.delete(FLOORS_NAMESPACE, check_floor_name(name).encode())

    def floors(self) -> dict[str, int]:
        """Every registered reader's floor."""
        floors = {}
        for key, v in self._meta.scan(FLOORS_NAMESPACE, limit=FLOORS_MAX + 1):
            if not v.value.isdigit():  # written by hand into the namespace: not a floor
                raise CorruptionError(f"the ledger floor of {key!r} is {v.value[:40]!r}, not an index")
            floors[key.decode(errors="replace")] = int(v.value)
        return floors


class LedgerStore(LedgerApi):
    """The change ledger of an embedded store (``sw.ledger``). Thread-safe."""

    def __init__(self, db: LogsDB, meta: MetaApi, config: LedgerConfig | None = None) -> None:
        super().__init__(meta)
        self._db = db
        self.config = config or LedgerConfig()

    def bounds(self) -> tuple[int, int]:
        return self._db.ledger_bounds()

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        check_ledger_read(index_from, limit)
        # Bounded by bytes in the store, before the entries are loaded: a limit of 10,000 entries
        # of up to 64 KiB each would otherwise load 655 MB to return 1 MiB.
        return [LedgerEntry.decode(index, stored)
                for index, stored in self._db.ledger_read(index_from, limit, READ_BYTES_MAX)]

    def append(self, change: Change) -> int:
        return self._db.ledger_append(encode_change(change))

    def watch(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake()`` whenever entries are written (a reader in this process, such as a
        notification plugin, reads at once instead of polling); return what stops it. ``wake``
        runs in the writer's thread: it must only signal (set an event), never read or block."""
        self._db.add_ledger_listener(wake)
        return lambda: self._db.remove_ledger_listener(wake)

    def prune(self, through: int) -> int:
        return self._db.ledger_prune(check_ledger_index(through, "through"))

    def enforce_bounds(self) -> int:
        """Apply the soft bound now: keep the newest ``soft_entries_max`` entries, and every entry
        above the lowest floor. Return the tail. (What the periodic pass runs.)"""
        tail, head = self.bounds()
        through = head - self.config.soft_entries_max
        floors = self.floors()
        if floors:
            through = min(through, *floors.values())
        return self.prune(through) if through >= tail else tail
