"""The transaction manager's state and the edits that change it. Pure: no I/O, no clock.

The manager changes its state only by applying *edits*, each of which it first appends to its
write-ahead log; recovery applies the same edits from the log on top of the last saved state, so
the state after a crash is the state the acknowledged edits describe (Tephra's TransactionEdit).

- ``Begin``: a write pointer is issued and its transaction is in progress until ``expiry_ms``
  (with the logs it registers at once, if any).
- ``Register``: the transaction is about to write to these logs (kept so that its data can be found
  when it is aborted or times out; see pruning below).
- ``Commit``: its writes are visible from now on; its metadata writes are applied by the manager.
  One edit may commit several transactions (``also``) as one atomic step: after a crash, all of
  them are committed or none. It is logged before it is visible (the manager applies its writes
  first), and a transaction that begins in between does not see it:
- ``Visible``: the commit became visible, and its conflict keys date from here: they are kept, and
  count, against every transaction that began before (at or below ``commit_pointer``), while one
  is still in progress. A commit recovered without its ``Visible`` may have been seen by none of
  the transactions in progress: its keys count against all of them (:meth:`TxnState.date_commits`).
- ``Abort`` / ``TimeOut``: its writes will never be visible. A transaction that registered logs
  goes to the *invalid list*, which every snapshot carries so that readers skip its data; one that
  wrote nothing is simply forgotten.
- ``Settle``: an invalid transaction's logs' tails, noted once no write of it can still be in
  flight; ``Prune``: each of those logs was trimmed past them, deleted, or lists it as aborted
  (the log layer's aborted writes, which readers honour), so no reader can see its data without
  the invalid list, and it leaves that list.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from seaway.errors import CorruptionError
from seaway.txn._idlog import IdLog
from seaway.txn._invalid import InvalidJournal
from seaway.txn._snapshot import Snapshot

POINTERS_PER_MS = 1_000_000
"""Write pointers are ``max(last + 1, now_ms * POINTERS_PER_MS)``: time-ordered, and unique even
when the clock stands still or steps back."""


class TxnStatus(Enum):
    IN_PROGRESS = "IN_PROGRESS"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"
    TIMED_OUT = "TIMED_OUT"
    UNKNOWN = "UNKNOWN"
    """Never begun, or finished before the outcomes the manager keeps."""


@dataclass
class InProgress:
    began_ms: int
    expiry_ms: int
    logs: set[int] = field(default_factory=set)


@dataclass
class Invalid:
    status: TxnStatus
    since_ms: int
    logs: tuple[int, ...]
    tails: tuple[int, ...] | None = None
    """The logs' tail LSNs once settled: the transaction's data lies at or below them."""
    expiry_ms: int = 0
    """Its own expiry: a writer that was not told of an abort by id may write until its handle's
    deadline, just before it, so it settles no earlier than this (plus ``settle_s``)."""

    @property
    def ended_ms(self) -> int:
        """When no new write of it can begin any more: the later of its end and its expiry."""
        return max(self.since_ms, self.expiry_ms)


@dataclass(frozen=True)
class Begin:
    write_pointer: int
    now_ms: int
    timeout_ms: int
    logs: tuple[int, ...] = ()
    """Logs registered by the begin itself (one edit, one sync, instead of a begin and a register)."""


@dataclass(frozen=True)
class Register:
    write_pointer: int
    logs: tuple[int, ...]


@dataclass(frozen=True)
class Commit:
    write_pointer: int
    conflicts: tuple[bytes, ...] = ()
    writes: tuple[tuple[str, bytes, bytes | None], ...] = ()
    """Metadata writes applied with the commit: ``(namespace, key, value)``, None to delete."""
    also: tuple[int, ...] = ()
    """Other transactions committed by the same edit, all together with ``write_pointer``."""
    now_ms: int = 0
    """When it was logged (0 in records from before it was kept: the last begin's time stands in)."""

    @property
    def write_pointers(self) -> tuple[int, ...]:
        return (self.write_pointer, *self.also)


@dataclass(frozen=True)
class Visible:
    """The commit of ``write_pointer`` became visible when ``commit_pointer`` was the last write
    pointer issued: a transaction at or below it began before and did not see it."""

    write_pointer: int
    commit_pointer: int


@dataclass(frozen=True)
class Abort:
    write_pointer: int
    now_ms: int


@dataclass(frozen=True)
class TimeOut:
    write_pointer: int
    now_ms: int


@dataclass(frozen=True)
class Settle:
    write_pointer: int
    tails: tuple[int, ...]


@dataclass(frozen=True)
class Prune:
    write_pointers: tuple[int, ...]


@dataclass(frozen=True)
class SaveMark:
    """Marks where a saved state ends in the log; changes nothing."""


@dataclass(frozen=True)
class Reserve:
    """Write pointers up to ``write_pointer`` are used: logged (and waited for) when recovery
    raises its floor, so that a begin lost in the next crash cannot have its pointer issued again."""

    write_pointer: int


Edit = Begin | Register | Commit | Visible | Abort | TimeOut | Settle | Prune | SaveMark | Reserve

_KINDS: dict[str, type[Any]] = {cls.__name__: cls for cls in (Begin, Register, Commit, Visible, Abort, TimeOut,
                                                              Settle, Prune, SaveMark, Reserve)}


def encode_edit(edit: Edit) -> bytes:
    fields: dict[str, Any] = {"k": type(edit).__name__}
    fields.update(vars(edit))
    if isinstance(edit, Commit):
        fields["conflicts"] = [key.hex() for key in edit.conflicts]
        fields["writes"] = [[ns, key.hex(), None if v is None else v.hex()] for ns, key, v in edit.writes]
        if not edit.also:  # the encoding of a single commit stays what it always was
            del fields["also"]
        if not edit.now_ms:
            del fields["now_ms"]
    if isinstance(edit, Begin) and not edit.logs:  # the encoding of a plain begin stays what it always was
        del fields["logs"]
    return json.dumps(fields, separators=(",", ":")).encode()


def decode_edit(raw: bytes) -> Edit:
    try:
        fields = json.loads(raw)
        cls = _KINDS[fields.pop("k")]
        if cls is Commit:
            fields.pop("commit_pointer", None)  # logged before Visible edits existed; see date_commits
            fields["conflicts"] = tuple(bytes.fromhex(key) for key in fields["conflicts"])
            fields["writes"] = tuple((ns, bytes.fromhex(key), None if v is None else bytes.fromhex(v))
                                     for ns, key, v in fields["writes"])
        for name in ("logs", "tails", "write_pointers", "also"):
            if name in fields:
                fields[name] = tuple(fields[name])
        edit: Edit = cls(**fields)
        _check_types(edit)
        return edit
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptionError(f"a transaction log record does not decode: {exc!r:.200}") from None


def _check_types(edit: Edit) -> None:
    """Valid JSON is not yet a valid edit: every number of it is a 64-bit unsigned integer (not a
    string, a float or a bool), every namespace a string."""
    for name, value in vars(edit).items():
        if name in ("conflicts", "writes"):  # bytes once decoded (fromhex checked them)
            continue
        for number in value if isinstance(value, tuple) else (value,):
            if type(number) is not int or not 0 <= number < 2**64:
                raise ValueError(f"{name} holds {number!r:.40}, not a 64-bit unsigned integer")
    if isinstance(edit, Commit) and any(type(namespace) is not str for namespace, _, _ in edit.writes):
        raise ValueError("a metadata write's namespace is not a string")


_CODES = (TxnStatus.COMMITTED, TxnStatus.ABORTED, TxnStatus.TIMED_OUT)
_CODE = {status: code for code, status in enumerate(_CODES)}
_CHUNK = 4096


class _Chunk:
    __slots__ = ("codes", "ended", "first", "high", "low", "pointers")

    def __init__(self) -> None:
        self.pointers = array("Q")
        self.codes = bytearray()
        self.ended = array("Q")
        self.first = 0
        """Entries before it are forgotten."""
        self.low, self.high = 2**64, 0


def encode_columns(pointers: array[int], codes: bytearray, ended: array[int]) -> dict[str, Any]:
    """Outcomes' three columns, each the base64 of its little-endian bytes, not one Python object each."""
    if sys.byteorder == "big":  # pragma: no cover - the format is little-endian everywhere
        pointers, ended = array("Q", pointers), array("Q", ended)
        pointers.byteswap()
        ended.byteswap()
    return {"p": base64.b64encode(pointers.tobytes()).decode(), "s": base64.b64encode(codes).decode(),
            "t": base64.b64encode(ended.tobytes()).decode()}


class Outcomes:
    """How finished transactions ended, each for ``keep_ms`` after it ended, at most ``most`` of
    them (the oldest go first): 17 bytes each, in chunks in the order they ended. Looking one up
    searches the chunks whose range of pointers holds it (``status`` calls are rare)."""

    def __init__(self, most: int, keep_ms: int) -> None:
        self.most = most
        self.keep_ms = keep_ms
        self._chunks: deque[_Chunk] = deque()
        self._count = 0
        self.forgotten_early = 0
        """Outcomes forgotten before ``keep_ms`` because ``most`` were kept."""

    def __len__(self) -> int:
        return self._count

    def add(self, write_pointer: int, status: TxnStatus, ended_ms: int) -> None:
        if not self._chunks or len(self._chunks[-1].pointers) >= _CHUNK:
            self._chunks.append(_Chunk())
        chunk = self._chunks[-1]
        chunk.pointers.append(write_pointer)
        chunk.codes.append(_CODE[status])
        chunk.ended.append(ended_ms)
        chunk.low, chunk.high = min(chunk.low, write_pointer), max(chunk.high, write_pointer)
        self._count += 1
        self._forget(ended_ms - self.keep_ms)

    def _forget(self, before_ms: int) -> None:
        while self._chunks:
            oldest = self._chunks[0]
            if self._count > self.most:
                self.forgotten_early += oldest.ended[oldest.first] >= before_ms
            elif oldest.ended[oldest.first] >= before_ms:
                return
            oldest.first += 1
            self._count -= 1
            if oldest.first == len(oldest.pointers):
                self._chunks.popleft()

    def get(self, write_pointer: int) -> TxnStatus | None:
        for chunk in reversed(self._chunks):
            if chunk.low <= write_pointer <= chunk.high:
                try:
                    return _CODES[chunk.codes[chunk.pointers.index(write_pointer, chunk.first)]]
                except ValueError:
                    continue
        return None

    def __iter__(self) -> Iterator[tuple[int, TxnStatus, int]]:
        for chunk in self._chunks:
            for i in range(chunk.first, len(chunk.pointers)):
                yield chunk.pointers[i], _CODES[chunk.codes[i]], chunk.ended[i]

    def columns(self) -> tuple[array[int], bytearray, array[int]]:
        """A copy of the outcomes as three columns (pointers, codes, end times): what a save takes
        under the manager's lock (copies of arrays, a million outcomes in a few milliseconds)."""
        pointers, ended, codes = array("Q"), array("Q"), bytearray()
        for chunk in self._chunks:
            pointers.extend(chunk.pointers[chunk.first:])
            ended.extend(chunk.ended[chunk.first:])
            codes.extend(chunk.codes[chunk.first:])
        return pointers, codes, ended

    def encode(self) -> dict[str, Any]:
        return encode_columns(*self.columns())

    def decode(self, data: Any, legacy_ms: int) -> None:
        if isinstance(data, list):  # saved before outcomes were kept by time: [[wp, status], ...]
            for wp, status in data:
                self.add(int(wp), TxnStatus(status), legacy_ms)
            return
        pointers, ended = array("Q"), array("Q")
        pointers.frombytes(base64.b64decode(data["p"], validate=True))
        ended.frombytes(base64.b64decode(data["t"], validate=True))
        codes = base64.b64decode(data["s"], validate=True)
        if sys.byteorder == "big":  # pragma: no cover
            pointers.byteswap()
            ended.byteswap()
        if not len(pointers) == len(codes) == len(ended):
            raise ValueError("the outcomes' columns differ in length")
        for wp, code, ms in zip(pointers, codes, ended, strict=True):
            self.add(wp, _CODES[code], ms)


class TxnState:
    """Write pointers, transactions in progress, the invalid list, recent conflict keys and
    outcomes. ``outcomes_max`` bounds the finished transactions whose status is remembered, each
    for ``outcomes_ms`` after it ended."""

    def __init__(self, outcomes_max: int = 1_000_000, outcomes_ms: int = 900_000) -> None:
        self.last_write_pointer = 0
        self.in_progress: dict[int, InProgress] = {}
        self.invalid: dict[int, Invalid] = {}
        self.committed: list[tuple[int, frozenset[bytes]]] = []
        """(commit pointer, conflict keys), in the order they became visible, while a transaction
        may conflict: what to forget, in order."""
        self._latest: dict[bytes, int] = {}
        """Each key of ``committed``: the latest commit pointer that declared it (what a commit
        check looks up, per key of its own, however many commits are kept)."""
        self.undated: dict[int, frozenset[bytes]] = {}
        """The conflict keys of commits applied whose ``Visible`` is not applied yet: only while
        recovery replays the log (the manager applies both edits at once)."""
        self.outcomes = Outcomes(outcomes_max, outcomes_ms)
        self.live = IdLog()
        """The ids of ``in_progress``, versioned: a snapshot is a view of it, O(1) to take."""
        self.dead = IdLog()
        """The ids of ``invalid``, versioned likewise."""
        self.invalid_journal = InvalidJournal()
        """The invalid list's numbered changes, for clients that keep a copy of it."""

    # --- edits ------------------------------------------------------------------------------------

    def next_write_pointer(self, now_ms: int) -> int:
        return max(self.last_write_pointer + 1, now_ms * POINTERS_PER_MS)

    def apply(self, edit: Edit) -> None:
        if isinstance(edit, Begin):
            self.last_write_pointer = max(self.last_write_pointer, edit.write_pointer)
            self.in_progress[edit.write_pointer] = InProgress(edit.now_ms, edit.now_ms + edit.timeout_ms,
                                                              set(edit.logs))
            self.live.add(edit.write_pointer)
        elif isinstance(edit, Register):
            if (txn := self.in_progress.get(edit.write_pointer)) is not None:
                txn.logs.update(edit.logs)
        elif isinstance(edit, Commit):
            if not self.takes(edit):
                return
            now_ms = edit.now_ms or self.last_write_pointer // POINTERS_PER_MS
            for write_pointer in edit.write_pointers:
                self.in_progress.pop(write_pointer, None)
                self.live.remove(write_pointer)
                self._finish(write_pointer, TxnStatus.COMMITTED, now_ms)
            if edit.conflicts:
                self.undated[edit.write_pointer] = frozenset(edit.conflicts)
            self._forget_conflicts()
        elif isinstance(edit, Visible):
            if (keys := self.undated.pop(edit.write_pointer, None)) is not None:
                self._keep(edit.commit_pointer, keys)
                self._forget_conflicts()
        elif isinstance(edit, (Abort, TimeOut)):
            status = TxnStatus.ABORTED if isinstance(edit, Abort) else TxnStatus.TIMED_OUT
            if (txn := self.in_progress.pop(edit.write_pointer, None)) is not None:
                if txn.logs:  # on the invalid list before it leaves the in-progress set: never visible between
                    self.invalid[edit.write_pointer] = Invalid(status, edit.now_ms, tuple(sorted(txn.logs)),
                                                               expiry_ms=txn.expiry_ms)
                    self.dead.add(edit.write_pointer)
                    self.invalid_journal.added(edit.write_pointer)
                self.live.remove(edit.write_pointer)
                self._finish(edit.write_pointer, status, edit.now_ms)
                self._forget_conflicts()
            elif self.status(edit.write_pointer) is TxnStatus.UNKNOWN:
                # Its begin is not in the log (refused, while the manager went on): it ended as
                # this says all the same, having written nothing (its register or commit failed).
                self._finish(edit.write_pointer, status, edit.now_ms)
        elif isinstance(edit, Settle):
            if (entry := self.invalid.get(edit.write_pointer)) is not None:
                entry.tails = edit.tails
        elif isinstance(edit, Prune):
            for write_pointer in edit.write_pointers:
                if self.invalid.pop(write_pointer, None) is not None:
                    self.dead.remove(write_pointer)
                    self.invalid_journal.removed(write_pointer)
        elif isinstance(edit, Reserve):
            self.last_write_pointer = max(self.last_write_pointer, edit.write_pointer)

    def takes(self, edit: Commit) -> bool:
        """Whether ``edit`` commits: all its transactions are in progress. The manager logs a commit
        only then, and aborts them if its append fails, not knowing whether it was written: such a
        record, found after their abort (or before it, see the manager's recovery), commits nothing."""
        return all(write_pointer in self.in_progress for write_pointer in edit.write_pointers)

    def date_commits(self) -> list[Visible]:
        """Date the commits applied without their ``Visible`` (at the end of a recovery): they may
        have been visible to none of the transactions in progress, so they count against all.
        Return those ``Visible`` edits, for the manager to log: the next recovery must date them
        the same, not again later (against transactions begun since, which did see them)."""
        dated = [Visible(write_pointer, self.last_write_pointer) for write_pointer in self.undated]
        for edit in dated:
            self.apply(edit)
        return dated

    def _keep(self, commit_pointer: int, keys: frozenset[bytes]) -> None:
        self.committed.append((commit_pointer, keys))
        for key in keys:
            self._latest[key] = max(commit_pointer, self._latest.get(key, 0))

    def _finish(self, write_pointer: int, status: TxnStatus, now_ms: int) -> None:
        self.outcomes.add(write_pointer, status, now_ms)

    def _forget_conflicts(self) -> None:
        """Conflict keys matter only to transactions that began before their commit and are still
        in progress."""
        # Begins are applied in the order of their pointers (issued increasing, logged in that
        # order, saved in it): the first in progress is the oldest.
        oldest = next(iter(self.in_progress), None)
        if oldest is None:
            self.committed.clear()
            self._latest.clear()
            return
        keep = 0
        while keep < len(self.committed) and self.committed[keep][0] < oldest:
            commit_pointer, keys = self.committed[keep]
            for key in keys:
                if self._latest.get(key, 0) <= commit_pointer:  # no later commit declared it
                    self._latest.pop(key, None)
            keep += 1
        del self.committed[:keep]

    # --- queries ----------------------------------------------------------------------------------

    def conflicting(self, write_pointer: int, keys: frozenset[bytes],
                    pending: Iterable[tuple[int, frozenset[bytes]]] = ()) -> bytes | None:
        """A key of ``keys`` that a transaction committed since ``write_pointer`` began also wrote."""
        if not keys:
            return None
        common = {key for key in keys if self._latest.get(key, 0) >= write_pointer}
        for commit_pointer, written in pending:  # being committed now: few
            if commit_pointer >= write_pointer:
                common |= keys & written
        return min(common) if common else None

    def status(self, write_pointer: int) -> TxnStatus:
        if write_pointer in self.in_progress:
            return TxnStatus.IN_PROGRESS
        if (entry := self.invalid.get(write_pointer)) is not None:
            return entry.status
        return self.outcomes.get(write_pointer) or TxnStatus.UNKNOWN

    def snapshot(self, write_pointer: int = 0) -> Snapshot:
        """A begin's cost is O(1): views of the in-progress ids and of the invalid list at their
        versions now (see :mod:`._idlog`), not copies; nothing is sorted or copied per begin."""
        return Snapshot(self.last_write_pointer, self.live.view(), self.dead.view(), write_pointer)

    def invalid_page(self, after: int, limit: int) -> tuple[tuple[int, ...], bool]:
        """Up to ``limit`` ids of the invalid list above ``after``, in order, and whether more follow."""
        ids = self.dead.sorted()
        start = bisect_right(ids, after)
        return ids[start:start + limit], start + limit < len(ids)

    # --- saving -----------------------------------------------------------------------------------

    def copy_for_save(self) -> SavedState:
        """What a save encodes, copied (under the manager's lock, O(state) of plain copies): the
        encoding, which costs many times more, is done from it outside the lock, while commits go
        on (:func:`encode_saved`)."""
        return SavedState(
            self.last_write_pointer,
            [(wp, t.began_ms, t.expiry_ms, tuple(t.logs)) for wp, t in self.in_progress.items()],
            [(wp, e.status.value, e.since_ms, e.logs, e.tails, e.expiry_ms) for wp, e in self.invalid.items()],
            list(self.committed),
            self.outcomes.columns())

    def encode(self) -> bytes:
        return encode_saved(self.copy_for_save())

    @classmethod
    def decode(cls, raw: bytes, outcomes_max: int = 1_000_000, outcomes_ms: int = 900_000) -> TxnState:
        state = cls(outcomes_max, outcomes_ms)
        try:
            data = json.loads(raw)
            state.last_write_pointer = int(data["last"])
            state.in_progress = {int(wp): InProgress(int(began), int(expiry), set(map(int, logs)))
                                 for wp, began, expiry, logs in data["in_progress"]}
            # A state saved before invalid entries kept their expiry: the end stands for it.
            state.invalid = {int(wp): Invalid(TxnStatus(status), int(since), tuple(map(int, logs)),
                                              None if tails is None else tuple(map(int, tails)),
                                              int(expiry[0]) if expiry else int(since))
                             for wp, status, since, logs, tails, *expiry in data["invalid"]}
            state.live = IdLog(state.in_progress)
            state.dead = IdLog(state.invalid)
            for cp, keys in data["committed"]:
                state._keep(int(cp), frozenset(bytes.fromhex(k) for k in keys))
            state.outcomes.decode(data["outcomes"], state.last_write_pointer // POINTERS_PER_MS)
        except (ValueError, KeyError, TypeError, IndexError, OverflowError, binascii.Error) as exc:
            raise CorruptionError(f"the transaction manager's saved state does not decode: {exc!r:.200}") from None
        return state


@dataclass(frozen=True)
class SavedState:
    """A copy of a :class:`TxnState` to save: nothing in it changes with the state."""

    last: int
    in_progress: list[tuple[int, int, int, tuple[int, ...]]]
    invalid: list[tuple[int, str, int, tuple[int, ...], tuple[int, ...] | None, int]]
    committed: list[tuple[int, frozenset[bytes]]]
    outcomes: tuple[array[int], bytearray, array[int]]


def encode_saved(saved: SavedState) -> bytes:
    """A saved state's encoding (what :meth:`TxnState.decode` reads)."""
    return json.dumps({
        "last": saved.last,
        "in_progress": [[wp, began, expiry, sorted(logs)] for wp, began, expiry, logs in saved.in_progress],
        "invalid": [[wp, status, since, list(logs), None if tails is None else list(tails), expiry]
                    for wp, status, since, logs, tails, expiry in saved.invalid],
        "committed": [[cp, sorted(k.hex() for k in keys)] for cp, keys in saved.committed],
        "outcomes": encode_columns(*saved.outcomes),
    }, separators=(",", ":")).encode()
