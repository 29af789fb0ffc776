"""The records of a stream's metadata (PDP-32's layout, see :mod:`seaway.streams._metadata`).

Plain frozen values with a compact JSON form, except the scale history's delta, which is packed
binary (a cut query decodes every delta the cut spans). Key ranges are floats in ``[0, 1)``; both
forms keep a float exactly (JSON's shortest repr round-trips, the binary form is the IEEE double),
so ranges compare exactly after a reload.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from seaway._invariant import invariant
from seaway.errors import InvalidArgumentError
from seaway.streams._names import segment_id, segment_str

_NUMBER = (int, float)

_DELTA_FORMAT = 1
"""The first byte of a binary delta record (a JSON one, from before, begins with ``{``)."""
_DELTA_HEAD = struct.Struct(">BIqHH")
"""Format, generation, time, how many segments sealed, how many created; then the sealed segments'
ids (8 bytes each), the created segments (:data:`_DELTA_SEGMENT`), and the reason in UTF-8."""
_DELTA_SEGMENT = struct.Struct(">IIqddQ")
"""A created segment: number, generation, creation time, key range, log id (Segment's order)."""
SEGMENT_STRUCT = _DELTA_SEGMENT
"""A segment packed (the other records that hold segments packed use the delta's form)."""
_DELTA_SEGMENTS_MAX = 2**16 - 1
"""Sealed or created segments a delta can hold (a generation holds at most ``SEGMENTS_MAX``)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment: its number, the generation that created it, when, and its key range
    ``[key_lo, key_hi)``. Everything PDP-32's segment record holds; the id is derived."""

    number: int
    generation: int
    created_ms: int
    key_lo: float
    key_hi: float
    log_id: int = 0
    """The segment's log (0 in a scaling's plan, before the log is created)."""

    @property
    def id(self) -> int:
        return segment_id(self.generation, self.number)

    def overlaps(self, other: Segment) -> bool:
        return self.key_lo < other.key_hi and other.key_lo < self.key_hi

    def holds(self, position: float) -> bool:
        return self.key_lo <= position < self.key_hi

    def to_json(self) -> list[Any]:
        return [self.number, self.generation, self.created_ms, self.key_lo, self.key_hi, self.log_id]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Segment:
        number, generation, created_ms, key_lo, key_hi, log_id = data
        if not (type(number) is type(generation) is type(created_ms) is type(log_id) is int
                and type(key_lo) in _NUMBER and type(key_hi) in _NUMBER):
            raise TypeError(f"not a segment record: {data!r:.80}")
        return cls(number, generation, created_ms, float(key_lo), float(key_hi), log_id)

    def __str__(self) -> str:
        return f"{segment_str(self.id)} [{self.key_lo:.6g}, {self.key_hi:.6g})"


def check_cover(ranges: Iterable[tuple[float, float]], lo: float = 0.0, hi: float = 1.0,
                what: str = "the key space") -> list[tuple[float, float]]:
    """``ranges`` sorted, checked to cover ``[lo, hi)`` exactly, without gaps or overlaps."""
    ordered = sorted(ranges)
    expect = lo
    for start, end in ordered:
        if isinstance(start, bool) or isinstance(end, bool) or not (isinstance(start, int | float)
                                                                     and isinstance(end, int | float)):
            raise InvalidArgumentError(f"a key range is a pair of numbers, got {(start, end)!r}")
        if not start < end:
            raise InvalidArgumentError(f"a key range [{start}, {end}) must be non-empty")
        if start != expect:
            raise InvalidArgumentError(f"the ranges must cover {what} [{lo}, {hi}) exactly: "
                                       f"{'a gap' if start > expect else 'an overlap'} at {min(start, expect)}")
        expect = end
    if expect != hi or not ordered:
        raise InvalidArgumentError(f"the ranges must cover {what} [{lo}, {hi}) exactly: they end at {expect}")
    return ordered


def even_ranges(count: int, lo: float = 0.0, hi: float = 1.0) -> list[tuple[float, float]]:
    """``[lo, hi)`` cut into ``count`` ranges of equal width (the last ends exactly at ``hi``)."""
    bounds = [lo + (hi - lo) * i / count for i in range(count)] + [hi]
    return list(itertools.pairwise(bounds))


@dataclass(frozen=True, slots=True)
class Generation:
    """One stream generation: the set of segments between two scalings, and when it began."""

    generation: int
    created_ms: int
    segments: tuple[Segment, ...]
    """Ordered by key range."""

    def segment_at(self, position: float) -> Segment:
        lo, hi = 0, len(self.segments) - 1
        while lo < hi:  # the last segment whose range starts at or below the position
            mid = (lo + hi + 1) // 2
            if self.segments[mid].key_lo <= position:
                lo = mid
            else:
                hi = mid - 1
        return self.segments[lo]

    def find(self, segment: int) -> Segment | None:
        for seg in self.segments:
            if seg.id == segment:
                return seg
        return None

    def encode(self) -> bytes:
        return json.dumps({"g": self.generation, "t": self.created_ms,
                           "s": [s.to_json() for s in self.segments]}, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Generation:
        data = json.loads(raw)
        return cls(data["g"], data["t"], tuple(Segment.from_json(s) for s in data["s"]))


@dataclass(frozen=True, slots=True)
class Delta:
    """What one scaling changed: the segments it sealed and those it created (PDP-32's history
    time-series record), and why."""

    generation: int
    """The generation the scaling began."""
    time_ms: int
    sealed: tuple[int, ...]
    created: tuple[Segment, ...]
    reason: str = ""

    def encode(self) -> bytes:
        """The packed record (see :data:`_DELTA_HEAD`)."""
        invariant(len(self.sealed) <= _DELTA_SEGMENTS_MAX and len(self.created) <= _DELTA_SEGMENTS_MAX,
                  "a scaling seals and creates at most a generation's segments")
        parts = [_DELTA_HEAD.pack(_DELTA_FORMAT, self.generation, self.time_ms, len(self.sealed), len(self.created)),
                 struct.pack(f">{len(self.sealed)}Q", *self.sealed)]
        parts.extend(_DELTA_SEGMENT.pack(s.number, s.generation, s.created_ms, s.key_lo, s.key_hi, s.log_id)
                     for s in self.created)
        parts.append(self.reason.encode())
        return b"".join(parts)

    @classmethod
    def decode(cls, raw: bytes) -> Delta:
        """A record :meth:`encode` made, or a JSON one of the format before it. Raises
        ``ValueError`` or ``struct.error`` for anything else."""
        if raw[:1] == b"{":
            return cls._decode_json(raw)
        fmt, generation, time_ms, sealed_count, created_count = _DELTA_HEAD.unpack_from(raw)
        if fmt != _DELTA_FORMAT:
            raise ValueError(f"not a delta record: format {fmt}")
        at = _DELTA_HEAD.size
        sealed = struct.unpack_from(f">{sealed_count}Q", raw, at)
        at += 8 * sealed_count
        end = at + _DELTA_SEGMENT.size * created_count
        if len(raw) < end:
            raise ValueError(f"a delta record of {len(raw)} bytes is cut short")
        created = tuple(Segment(*fields) for fields in _DELTA_SEGMENT.iter_unpack(memoryview(raw)[at:end]))
        return cls(generation, time_ms, sealed, created, raw[end:].decode())

    @classmethod
    def _decode_json(cls, raw: bytes) -> Delta:
        data = json.loads(raw)
        return cls(data["g"], data["t"], tuple(data["sealed"]), tuple(Segment.from_json(s) for s in data["created"]),
                   data.get("why", ""))
