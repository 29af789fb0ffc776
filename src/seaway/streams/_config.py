"""A stream's configuration: how it scales and how long it keeps its events.

Small frozen values, checked when made, stored as JSON in the stream's configuration record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from seaway.errors import InvalidArgumentError

SEGMENTS_MAX = 10_000
"""Segments of one stream generation at most (a split makes at most ``SPLIT_WAYS_MAX``)."""
SPLIT_WAYS_MAX = 100


def _positive_int(name: str, value: object, most: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise InvalidArgumentError(f"{name} must be an integer in [1, {most}], got {value!r}")


def _positive_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value < math.inf):
        raise InvalidArgumentError(f"{name} must be a positive number, got {value!r}")


def _non_negative(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 <= value < math.inf):
        raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")


def _check_rate_policy(rate_name: str, rate: object, factor: object, min_segments: object) -> None:
    _positive_number(rate_name, rate)
    _positive_int("factor", factor, SPLIT_WAYS_MAX)
    if isinstance(factor, int) and factor < 2:
        raise InvalidArgumentError(f"factor must be at least 2 (the ways a segment splits), got {factor}")
    _positive_int("min_segments", min_segments, SEGMENTS_MAX)


@dataclass(frozen=True)
class FixedSegments:
    """Always ``count`` segments: no automatic scaling (manual scaling still works)."""

    count: int = 1

    def __post_init__(self) -> None:
        _positive_int("count", self.count, SEGMENTS_MAX)

    @property
    def min_segments(self) -> int:
        return self.count


@dataclass(frozen=True)
class ByEventRate:
    """Scale so that each segment takes about ``events_per_s``: a segment above it for a sustained
    time splits in ``factor``; adjacent segments well below it for longer merge; never fewer than
    ``min_segments`` (the count the stream starts with)."""

    events_per_s: float
    factor: int = 2
    min_segments: int = 1

    def __post_init__(self) -> None:
        _check_rate_policy("events_per_s", self.events_per_s, self.factor, self.min_segments)


@dataclass(frozen=True)
class ByDataRate:
    """As :class:`ByEventRate`, by payload bytes per second per segment."""

    bytes_per_s: float
    factor: int = 2
    min_segments: int = 1

    def __post_init__(self) -> None:
        _check_rate_policy("bytes_per_s", self.bytes_per_s, self.factor, self.min_segments)


ScalingPolicy = FixedSegments | ByEventRate | ByDataRate


@dataclass(frozen=True)
class RetentionByTime:
    """Keep events at least ``min_s`` seconds. Without subscribed reader groups, older ones are
    truncated; with them, the stream is truncated below the slowest group's position, but never
    keeping less than ``min_s`` nor more than ``max_s`` (None: no upper bound) of events."""

    min_s: float
    max_s: float | None = None

    def __post_init__(self) -> None:
        _non_negative("min_s", self.min_s)
        if self.max_s is not None:
            _positive_number("max_s", self.max_s)
            if self.max_s < self.min_s:
                raise InvalidArgumentError(f"max_s ({self.max_s}) must be at least min_s ({self.min_s})")


@dataclass(frozen=True)
class RetentionBySize:
    """As :class:`RetentionByTime`, by the stream's stored bytes."""

    min_bytes: int
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.min_bytes, int) or isinstance(self.min_bytes, bool) or self.min_bytes < 0:
            raise InvalidArgumentError(f"min_bytes must be an integer >= 0, got {self.min_bytes!r}")
        if self.max_bytes is not None:
            _positive_int("max_bytes", self.max_bytes, 2**62)
            if self.max_bytes < self.min_bytes:
                raise InvalidArgumentError(f"max_bytes ({self.max_bytes}) must be at least min_bytes "
                                           f"({self.min_bytes})")


RetentionPolicy = RetentionByTime | RetentionBySize


@dataclass(frozen=True)
class StreamConfig:
    scaling: ScalingPolicy = field(default_factory=FixedSegments)
    retention: RetentionPolicy | None = None
    """None: keep everything until truncated by hand."""
    transactional: bool = False
    """Whether events may be written in transactions (see :mod:`seaway.streams._framing`). Fixed
    when the stream is created: every record of such a stream's segments carries a small header
    (1 byte, or 9 in a transaction), which a stream without it does not pay for."""
    store_routing_keys: bool = False
    """Whether each event is stored with the routing key it was written with, for readers to see
    (``Event.routing_key``). Fixed when the stream is created: every record then carries a header
    (1 byte; with a key, 2 more and the key's bytes). A transactional stream stores
    keys anyway, since its records carry a header already; a stream with neither flag stores
    events as they are, and its readers see no key."""

    def __post_init__(self) -> None:
        for name in ("transactional", "store_routing_keys"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise InvalidArgumentError(f"{name} is a bool, got {value!r:.40}")
        if not isinstance(self.scaling, FixedSegments | ByEventRate | ByDataRate):
            raise InvalidArgumentError(f"scaling must be FixedSegments, ByEventRate or ByDataRate, got "
                                       f"{self.scaling!r:.80}")
        if self.retention is not None and not isinstance(self.retention, RetentionByTime | RetentionBySize):
            raise InvalidArgumentError(f"retention must be RetentionByTime, RetentionBySize or None, got "
                                       f"{self.retention!r:.80}")

    def to_json(self) -> dict[str, Any]:
        return {"scaling": {"type": type(self.scaling).__name__, **vars(self.scaling)},
                "retention": None if self.retention is None
                else {"type": type(self.retention).__name__, **vars(self.retention)},
                "transactional": self.transactional,
                "store_routing_keys": self.store_routing_keys}

    @property
    def framed(self) -> bool:
        """Whether the segments' records carry a header (see :mod:`seaway.streams._framing`), which
        holds the routing key of every event written with one."""
        return self.transactional or self.store_routing_keys

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StreamConfig:
        kinds: dict[str, Any] = {k.__name__: k for k in (FixedSegments, ByEventRate, ByDataRate,
                                                          RetentionByTime, RetentionBySize)}
        scaling = dict(data["scaling"])
        retention = None if data.get("retention") is None else dict(data["retention"])
        return cls(kinds[scaling.pop("type")](**scaling),
                   None if retention is None else kinds[retention.pop("type")](**retention),
                   bool(data.get("transactional", False)), bool(data.get("store_routing_keys", False)))
