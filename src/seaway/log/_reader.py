"""The reading side of one log, as a state machine with no I/O.

It asks for chunks of stored entries up to the release point, and turns them into records and gaps
in LSN order. Where no entry covers an LSN, the gap's type follows from what is known:

- at or below the trim point: TRIM;
- a hole plug: HOLE;
- damaged bytes: DATALOSS;
- inside an epoch that holds a later record, or at or below a sealed epoch's recorded end: DATALOSS
  (the LSN was issued, so a record may have been written there);
- otherwise, from an epoch's end to the start of the next epoch: BRIDGE.

Every reader of the same log therefore sees the same records and the same gaps.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, repeat

from seaway._invariant import invariant
from seaway._values import CorruptEntry, Entry, HolePlugEntry, RecordsEntry
from seaway.log._lsn import ESN_FIRST, ESN_MAX, LSN_MAX, epoch_of
from seaway.log._types import Gap, GapType, ReadItem, Record, RecordRun

# Record(*fields) without the Python-level __new__ of a named tuple: the read path makes one per record.
_new_record = partial(tuple.__new__, Record)


@dataclass(frozen=True, slots=True)
class ReadChunk:
    """What the driver read for a :class:`ReadWant`: entries overlapping ``[lsn_from, covered_to]``."""

    entries: list[Entry]
    covered_to: int
    """Every entry overlapping ``[lsn_from, covered_to]`` is in ``entries``."""
    trim_point: int
    epoch_ends: dict[int, int]
    """Recorded last LSN of sealed epochs in the range read."""
    next_entry_lsn: int | None = None
    """First LSN of the first entry above ``covered_to``, when the chunk ends in a range with no
    entry (so that range is classified as a longer read would classify it)."""


@dataclass(frozen=True, slots=True)
class ReadWant:
    """Driver: read the log's entries from ``lsn_from`` to ``lsn_to`` (inclusive)."""

    log_id: int
    lsn_from: int
    lsn_to: int


class LogReadState:
    """Reads log ``log_id`` from ``lsn_from`` to ``lsn_until`` (inclusive)."""

    def __init__(self, log_id: int, lsn_from: int, lsn_until: int = LSN_MAX, *, runs: bool = False) -> None:
        """With ``runs``, records come as :class:`RecordRun` items, a run per stored batch (or part)."""
        invariant(lsn_from <= lsn_until, "a read range is not empty")
        self.log_id = log_id
        self.next_lsn = lsn_from
        self.until_lsn = lsn_until
        self._runs = runs
        self._emitted = 0  # records and gaps delivered by the current on_chunk call
        self.emitted_bytes = 0
        """Payload bytes of the records the last :meth:`on_chunk` call delivered."""

    @property
    def done(self) -> bool:
        return self.next_lsn > self.until_lsn

    def want(self, released_lsn: int) -> ReadWant | None:
        """The next range to read, or None when done or waiting for the release point to move."""
        if self.done:
            return None
        to = min(self.until_lsn, released_lsn)
        if to < self.next_lsn:
            return None
        return ReadWant(self.log_id, self.next_lsn, to)

    def on_sealed(self, final_lsn: int) -> list[ReadItem]:
        """The log was sealed for good at ``final_lsn``: once everything up to it is read, the rest
        of the range is one SEALED gap and the read is done."""
        if self.done or self.next_lsn <= final_lsn:
            return []
        out: list[ReadItem] = []
        self._gap(out, GapType.SEALED, self.until_lsn)
        return out

    def on_chunk(self, chunk: ReadChunk, items_max: int | None = None,
                 bytes_max: int | None = None) -> list[ReadItem]:
        """Turn a chunk read for :meth:`want` into records and gaps; advance past them.

        With ``items_max``, stop after about that many items; with ``bytes_max``, once the records'
        payloads reach that many bytes, or before the record that would take them past it (a run
        of records is cut there; the next :meth:`want` starts where this stopped). One record is
        delivered whatever its size, so that a read always makes progress.
        """
        out: list[ReadItem] = []
        self._emitted = 0
        self.emitted_bytes = 0
        limit = min(chunk.covered_to, self.until_lsn)
        cap = max(1, items_max) if items_max is not None else None
        if self.next_lsn <= chunk.trim_point:
            self._gap(out, GapType.TRIM, min(chunk.trim_point, self.until_lsn))
        for entry in chunk.entries:
            if self.next_lsn > limit or self._full(cap, bytes_max):
                return out
            if entry.last_lsn < self.next_lsn:
                continue
            if entry.first_lsn > limit:
                break
            if entry.first_lsn > self.next_lsn:
                self._missing(out, entry.first_lsn - 1, entry.first_lsn, chunk.epoch_ends)
            if isinstance(entry, RecordsEntry) and (cap is not None or bytes_max is not None):
                # Records past the cap stay for the next chunk, which starts where this stopped.
                last = min(entry.last_lsn, limit)
                if cap is not None:
                    last = min(last, self.next_lsn + max(0, cap - self._emitted) - 1)
                window_bytes = None
                if bytes_max is not None:
                    last, window_bytes = self._last_within(entry, last, bytes_max - self.emitted_bytes)
                self._records(out, entry, last, window_bytes)
                if self.next_lsn <= min(entry.last_lsn, limit):
                    return out  # cut short: the rest is neither delivered nor a gap
            else:
                self._deliver(out, entry, limit)
        if self.next_lsn <= limit and not self._full(cap, bytes_max):
            self._missing(out, limit, chunk.next_entry_lsn, chunk.epoch_ends)
        return out

    def _full(self, cap: int | None, bytes_max: int | None) -> bool:
        return (cap is not None and self._emitted >= cap) or (bytes_max is not None and self.emitted_bytes >= bytes_max)

    def _last_within(self, entry: RecordsEntry, last: int, budget_bytes: int) -> tuple[int, int | None]:
        """The last LSN up to ``last`` whose record keeps the payloads from ``next_lsn`` on within
        ``budget_bytes`` (``next_lsn`` itself if nothing has been delivered yet), and the payload
        bytes up to it when they are known without a second pass."""
        window = entry.payloads[self.next_lsn - entry.first_lsn:last - entry.first_lsn + 1]
        if None not in window:
            total = sum(map(len, window))  # type: ignore[arg-type]
            if total <= budget_bytes:  # the common case: all of it fits, one pass in C
                return last, total
        sizes = accumulate(map(len, window) if None not in window  # type: ignore[arg-type]
                           else (len(p) if p is not None else 0 for p in window))
        fits = bisect_right(list(sizes), budget_bytes)
        if fits == 0 and self._emitted == 0:
            fits = 1
        return self.next_lsn + fits - 1, None

    def _gap(self, out: list[ReadItem], kind: GapType, hi: int) -> None:
        lo = self.next_lsn
        previous = out[-1] if out else None
        if isinstance(previous, Gap) and previous.type is kind and previous.lsn_hi + 1 == lo:
            out.pop()
            lo = previous.lsn_lo
            self._emitted -= 1
        out.append(Gap(self.log_id, kind, lo, hi))
        self._emitted += 1
        self.next_lsn = hi + 1

    def _deliver(self, out: list[ReadItem], entry: Entry, limit: int) -> None:
        last = min(entry.last_lsn, limit)
        if isinstance(entry, HolePlugEntry):
            self._gap(out, GapType.HOLE, last)
        elif isinstance(entry, CorruptEntry):
            self._gap(out, GapType.DATALOSS, last)
        else:
            self._records(out, entry, last)

    def _records(self, out: list[ReadItem], entry: RecordsEntry, last: int, window_bytes: int | None = None) -> None:
        log_id, ts, first = self.log_id, entry.timestamp_ms, entry.first_lsn
        payloads = entry.payloads
        start = self.next_lsn
        if start > last:
            return
        window = payloads[start - first:last - first + 1]
        if None not in window:  # the common case, in one pass: this loop is the read path's hot spot
            if self._runs:
                out.append(RecordRun(log_id, start, ts, window))  # type: ignore[arg-type]
            else:
                out.extend(map(_new_record, zip(repeat(log_id), range(start, last + 1), repeat(ts), window)))
            self._emitted += last + 1 - start
            self.emitted_bytes += window_bytes if window_bytes is not None else sum(map(len, window))  # type: ignore[arg-type]
            self.next_lsn = last + 1
            return
        for lsn in range(start, last + 1):
            payload = payloads[lsn - first]
            if payload is None:
                self._gap(out, GapType.DATALOSS, lsn)
            else:
                out.append(RecordRun(log_id, lsn, ts, [payload]) if self._runs  # type: ignore[arg-type]
                           else Record(log_id, lsn, ts, payload))
                self._emitted += 1
                self.emitted_bytes += len(payload)
                self.next_lsn = lsn + 1

    def _missing(self, out: list[ReadItem], hi: int, next_present: int | None,
                 epoch_ends: dict[int, int]) -> None:
        """Classify ``[next_lsn, hi]``, where no entry is stored, epoch by epoch."""
        while self.next_lsn <= hi:
            lo = self.next_lsn
            epoch = epoch_of(lo)
            seg_hi = min(hi, epoch << 32 | ESN_MAX)
            if next_present is not None and epoch_of(next_present) == epoch:
                issued_from = epoch << 32 | ESN_FIRST
                if lo < issued_from:  # ESN 0 is never issued: part of the bridge into this epoch
                    self._gap(out, GapType.BRIDGE, min(seg_hi, issued_from - 1))
                    continue
                self._gap(out, GapType.DATALOSS, seg_hi)
                continue
            end = epoch_ends.get(epoch)
            if end is not None and lo <= end:
                self._gap(out, GapType.DATALOSS, min(seg_hi, end))
                continue
            self._gap(out, GapType.BRIDGE, seg_hi)
