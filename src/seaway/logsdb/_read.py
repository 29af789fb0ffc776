"""Reading one partition's entries of a log, damaged blocks included.

RocksDB checks each block it reads against the block's checksum. When a block of a partition fails,
an iterator that reaches it stops with an error, and so does any seek whose key falls in it; the
blocks after it are still readable, by a seek that lands past the damaged one. A read therefore
turns the keys it cannot get into one :class:`CorruptEntry` per damaged stretch and goes on from
the first key it can read again.

For every reader of a log to see the same records and the same gaps wherever it starts, the bounds
of a damaged stretch depend only on what is stored, never on where the read started:

- it starts right after the last entry readable before the damage (at the partition's first LSN if
  there is none), since any LSN from there on may have been in the damaged block;
- it ends right before the first key a seek can reach after it (at the partition's last LSN if
  there is none): the lowest LSN whose seek succeeds is found by galloping then bisecting over
  seeks, and every LSN of a damaged stretch leads there.

A reader that starts inside the stretch reports it from its start on, which is the same stretch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from rocksdict import ReadOptions

from seaway._values import CorruptEntry, Entry, HolePlugEntry, RecordsEntry
from seaway.errors import StorageError
from seaway.logsdb import _format as fmt

_T = TypeVar("_T")


class Unreadable(Exception):
    """RocksDB could not read the keys at an iterator's position (a block failed its checksum, say)."""


def read_options(log_id: int) -> ReadOptions:
    """Options for an iterator over one log's keys: it stops at the next log's first key."""
    opts = ReadOptions()
    opts.set_iterate_upper_bound(fmt.encode_key(log_id + 1, 0) if log_id < 2**64 - 1 else b"\xff" * 17)
    return opts


def check(it: Any) -> None:
    """Raise :class:`Unreadable` if ``it`` stopped on an error rather than at the end of its range."""
    try:
        it.status()
    except Exception as exc:
        # rocksdict reports RocksDB errors (a damaged block, say) as a bare Exception; anything
        # more specific is a bug and must not be dressed up as data loss.
        if type(exc) is not Exception:
            raise
        raise Unreadable(str(exc)) from None


def first_key_from(cf: Any, log_id: int, lsn: int) -> int | None:
    """The LSN of the log's first key at or above ``lsn`` in the partition ``cf``, or None if there
    is none. Raises :class:`Unreadable` if RocksDB cannot tell."""
    opts = read_options(log_id)  # kept alive with the iterator: it holds the bound by reference
    it = cf.iter(opts)
    it.seek(fmt.encode_key(log_id, lsn))
    if it.valid():
        return fmt.decode_key(it.key())[1]
    check(it)
    return None


class _NoPrevious(Exception):
    """A walk could not find the entry that covers its first LSN (RocksDB failed looking back)."""


@dataclass(frozen=True, slots=True)
class _Seekable:
    """An LSN whose seek succeeds, and the LSN of the key it finds (None: none of the log's)."""

    seek_lsn: int
    key_lsn: int | None


def _try_seek(cf: Any, log_id: int, lsn: int) -> _Seekable | None:
    try:
        return _Seekable(lsn, first_key_from(cf, log_id, lsn))
    except Unreadable:
        return None


def _lowest(lsn_min: int, lsn_max: int, probe: Callable[[int], _T | None]) -> _T | None:
    """What the lowest LSN in ``[lsn_min, lsn_max]`` whose probe succeeds gives, or None.

    Gallops up from ``lsn_min`` by doubling steps to a probe that succeeds, then bisects between it
    and the last that failed (at most about 128 probes). Exact when the probes that fail from
    ``lsn_min`` on form one run, as seeks do around one damaged block (or adjacent ones); with two
    damaged blocks close together, the intact keys between them may be skipped as damaged.
    """
    failed, at, step = lsn_min - 1, lsn_min, 1
    while (found := probe(at)) is None:
        if at >= lsn_max:
            return None
        failed, at, step = at, min(lsn_max, at + step), step * 2
    while at - failed > 1:
        mid = (failed + at) // 2
        if (found_mid := probe(mid)) is None:
            failed = mid
        else:
            found, at = found_mid, mid
    return found


def _highest(lsn_min: int, lsn_max: int, probe: Callable[[int], _T | None]) -> _T | None:
    """What the highest LSN in ``[lsn_min, lsn_max]`` whose probe succeeds gives, or None: the
    mirror of :func:`_lowest`, galloping down from ``lsn_max``."""
    failed, at, step = lsn_max + 1, lsn_max, 1
    while (found := probe(at)) is None:
        if at <= lsn_min:
            return None
        failed, at, step = at, max(lsn_min, at - step), step * 2
    while failed - at > 1:
        mid = (at + failed) // 2
        if (found_mid := probe(mid)) is None:
            failed = mid
        else:
            found, at = found_mid, mid
    return found


def _readable_from(cf: Any, log_id: int, lsn: int, lsn_max: int) -> _Seekable | None:
    """The first key RocksDB can reach by a seek from ``lsn`` on: past the damage at ``lsn``."""
    return _lowest(lsn, lsn_max, functools.partial(_try_seek, cf, log_id))


def _key_at_or_below(cf: Any, log_id: int, lsn_min: int, lsn: int) -> int | None:
    """A key of the log at or below ``lsn`` from which a walk reaches the entry covering ``lsn`` (or
    the damage that hides it), or None if RocksDB cannot reach any: where a walk starts when
    RocksDB fails looking back from ``lsn``.

    Seeks fail over one run of LSNs around a damaged block, from just above the last readable key
    before it; elsewhere they find the first key at or above the LSN. So a search down from
    ``lsn`` for the highest seek that finds a key at or below ``lsn`` either finds the highest
    such key, or stops below that run; then the keys above the run are looked at too.
    """
    seek = functools.partial(_try_seek, cf, log_id)

    def at_or_below(seek_lsn: int) -> _Seekable | None:
        found = seek(seek_lsn)
        return found if found is not None and found.key_lsn is not None and found.key_lsn <= lsn else None

    below = _highest(lsn_min, lsn, at_or_below)
    if below is None or below.seek_lsn == lsn or seek(below.seek_lsn + 1) is not None:
        return below.key_lsn if below is not None else None
    # Stopped below the run of failing seeks: is there a key at or below `lsn` above it?
    past = _lowest(below.seek_lsn + 1, lsn, seek)
    if past is None or past.key_lsn is None or past.key_lsn > lsn:
        return below.key_lsn
    above = _highest(past.seek_lsn, lsn, at_or_below)
    return above.key_lsn if above is not None else below.key_lsn


@dataclass(slots=True)
class _Cursor:
    position: int
    """Every key of the log below this LSN was read (or lies below the read's start)."""
    pending: int | None = None
    """First LSN of a damaged entry whose extent is unknown: up to the next key."""


def read_partition(cf: Any, read_segment: Callable[[int, int], bytes], d: fmt.DirEntry, log_id: int, lsn_from: int,
                   lsn_to: int, budget: list[int], out: list[Entry]) -> bool:
    """Append the partition's entries of the log overlapping ``[lsn_from, lsn_to]`` to ``out``, in
    LSN order; True once ``budget[0]`` bytes are spent (it is decreased by each entry's size).

    Damaged entries come back as :class:`CorruptEntry`, never as data; keys RocksDB cannot read
    are one per damaged stretch (see the module's docstring), after which reading goes on.
    Raises :class:`StorageError` if a key RocksDB just found readable cannot be read.
    """
    cursor = _Cursor(max(lsn_from, d.lsn_min))
    # None: start from the entry covering cursor.position. From the log's first LSN in the
    # partition, no entry starts below: a seek to it finds the first, without looking back.
    seek_lsn: int | None = cursor.position if cursor.position == d.lsn_min else None
    resumed_at: int | None = None  # the first readable key after damage, where the walk went on
    while True:
        try:
            spent = _walk(cf, read_segment, log_id, lsn_from, lsn_to, cursor, seek_lsn, budget, out)
        except _NoPrevious:
            # RocksDB fails looking back from the first LSN (it reads the key before the one it
            # returns, so this happens next to damage too): start from the highest key at or
            # below it that a seek reaches.
            seek_lsn = _key_at_or_below(cf, log_id, d.lsn_min, cursor.position)
            if seek_lsn is not None:
                continue
            # The log's first keys in the partition, up to the first LSN, are all damaged.
            after = _readable_from(cf, log_id, cursor.position, d.lsn_max)
        except Unreadable as exc:
            if resumed_at is not None and cursor.position == resumed_at and cursor.pending is None:
                raise StorageError(f"log {log_id}: cannot read the entry at {fmt.lsn_text(resumed_at)}, "
                                   f"though a seek just found it: {exc}") from None
            after = _readable_from(cf, log_id, cursor.position, d.lsn_max) if cursor.position <= d.lsn_max else None
        else:
            if cursor.pending is not None and cursor.pending <= d.lsn_max:
                out.append(CorruptEntry(log_id, cursor.pending, d.lsn_max))
            return spent
        start = cursor.pending if cursor.pending is not None else cursor.position
        resume = after.key_lsn if after is not None else None
        if start <= d.lsn_max and (resume is None or resume > start):
            out.append(CorruptEntry(log_id, start, d.lsn_max if resume is None else resume - 1))
        if resume is None or resume > lsn_to:
            return False
        cursor, seek_lsn, resumed_at = _Cursor(resume), resume, resume


def _walk(cf: Any, read_segment: Callable[[int, int], bytes], log_id: int, lsn_from: int, lsn_to: int, cursor: _Cursor,
          seek_lsn: int | None, budget: list[int], out: list[Entry]) -> bool:
    """Read entries from ``cursor.position`` until past ``lsn_to``, the end of the log or the
    budget; True once the budget is spent. Starts from the entry covering ``cursor.position``
    (raising :class:`_NoPrevious` if RocksDB cannot find it), or from the first key at or above
    ``seek_lsn``. Raises :class:`Unreadable` where RocksDB fails, ``cursor`` telling how far the
    walk got."""
    opts = read_options(log_id)  # kept alive with the iterator: it holds the bound by reference
    it = cf.iter(opts)
    start = fmt.encode_key(log_id, cursor.position)
    if seek_lsn is None:
        it.seek_for_prev(start)
        if not it.valid():
            try:
                check(it)
            except Unreadable:
                raise _NoPrevious from None
        if not it.valid() or it.key()[:8] != start[:8]:
            it.seek(start)
    else:
        it.seek(fmt.encode_key(log_id, seek_lsn))
    while it.valid():
        key = it.key()
        lsn = fmt.decode_key(key)[1]
        if cursor.pending is not None:
            out.append(CorruptEntry(log_id, cursor.pending, lsn - 1))
            cursor.pending = None
        if lsn > lsn_to:
            return False
        value = it.value()
        try:
            header = fmt.decode_header(key, value)
        except fmt.HeaderCorrupt:
            cursor.pending = lsn
            cursor.position = max(cursor.position, lsn + 1)
            it.next()
            continue
        entry, size = read_entry(read_segment, log_id, lsn, key, header, value)
        cursor.position = max(cursor.position, entry.last_lsn + 1)
        if entry.last_lsn >= lsn_from:
            out.append(entry)
            budget[0] -= size
            if budget[0] <= 0:
                return True
        it.next()
    check(it)
    return False


def read_entry(read_segment: Callable[[int, int], bytes], log_id: int, lsn: int, key: bytes, header: fmt.EntryHeader,
               value: bytes) -> tuple[Entry, int]:
    """The entry stored under ``key`` (the log's, at ``lsn``; its header verified) and its size in bytes."""
    last = lsn + header.count - 1
    if header.kind is fmt.EntryKind.HOLE_PLUG:
        return HolePlugEntry(log_id, lsn, last, header.timestamp_ms), len(value)
    if header.kind is fmt.EntryKind.SEGMENT_REF:
        try:
            offset, length = fmt.decode_segment_ref(value)
            if length > fmt.ENTRY_BYTES_LIMIT:  # not the configured limit: it may have been lowered since
                raise fmt.HeaderCorrupt("segment reference longer than any entry")
            value = read_segment(offset, length)
            stored = fmt.decode_header(key, value)
        except (fmt.HeaderCorrupt, OSError):
            return CorruptEntry(log_id, lsn, last), len(value)
        if stored.kind is not fmt.EntryKind.RECORDS or stored.count != header.count:
            return CorruptEntry(log_id, lsn, last), len(value)
    return RecordsEntry(log_id, lsn, header.timestamp_ms, fmt.decode_payloads(value, header.count)), len(value)
