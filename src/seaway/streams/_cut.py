"""Stream cuts: a position in every part of a stream's key space.

A cut maps segments to positions: the LSN of the next event to read in each (``LSN_OLDEST``: the
segment's start). A cut is consistent when its segments' key ranges cover ``[0, 1)`` exactly, with
no gap and no overlap: then every event of the stream is either before it or after it, and reading
from the same cut always yields the same events. Its text form is JSON, readable by people::

    {"stream": "web/access", "positions": {"0.0": 1, "3.7": 4294967313}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seaway.errors import InvalidStreamCutError
from seaway.log import LSN_MAX, LSN_OLDEST, lsn_str
from seaway.streams._names import parse_segment, segment_str, split_stream_name
from seaway.streams._records import Segment, check_cover

CUT_SEGMENTS_MAX = 100_000


@dataclass(frozen=True)
class StreamCut:
    """A position in a stream; see the module docstring. Compare two with ``Stream.compare()``."""

    stream: str
    positions: Mapping[int, int]
    """Segment id -> LSN of the next event to read there."""

    def __post_init__(self) -> None:
        try:
            split_stream_name(self.stream)
        except Exception as exc:
            raise InvalidStreamCutError(f"a stream cut names its stream: {exc}") from None
        if not isinstance(self.positions, Mapping) or not 1 <= len(self.positions) <= CUT_SEGMENTS_MAX:
            raise InvalidStreamCutError(f"a stream cut holds 1-{CUT_SEGMENTS_MAX} segments")
        for segment, lsn in self.positions.items():
            if not isinstance(segment, int) or isinstance(segment, bool) or not 0 <= segment < 2**63:
                raise InvalidStreamCutError(f"a stream cut's segment id is an integer, got {segment!r:.40}")
            if not isinstance(lsn, int) or isinstance(lsn, bool) or not LSN_OLDEST <= lsn <= LSN_MAX:
                raise InvalidStreamCutError(f"a stream cut's position is an LSN in [1, 2**64), got {lsn!r:.40}")
        object.__setattr__(self, "positions", dict(sorted(self.positions.items())))

    def __repr__(self) -> str:  # segments and LSNs as everything else prints them: 1.2, e<epoch>n<esn>
        return f"StreamCut(stream={self.stream!r}, positions={positions_repr(self.positions)})"

    def to_json(self) -> str:
        return json.dumps({"stream": self.stream,
                           "positions": {segment_str(s): lsn for s, lsn in self.positions.items()}})

    @classmethod
    def from_json(cls, text: str | bytes) -> StreamCut:
        """Parse the text form; :class:`InvalidStreamCutError` if it is not one."""
        try:
            data: Any = json.loads(text)
            stream = data["stream"]
            raw = data["positions"]
            if not isinstance(raw, dict):
                raise TypeError("positions is not an object")
            positions = {parse_segment(k): v for k, v in raw.items()}
        except InvalidStreamCutError:
            raise
        except Exception as exc:
            raise InvalidStreamCutError(f"not a stream cut ({exc}): {text!r:.120}") from None
        return cls(stream, positions)

    def __str__(self) -> str:
        return self.to_json()


def check_consistent(cut: StreamCut, records: Mapping[int, Segment]) -> list[tuple[Segment, int]]:
    """The cut's segments with their records, checked to be of the stream (``records`` holds the
    stream's segments that the cut names) and to cover the key space exactly."""
    missing = [segment_str(s) for s in cut.positions if s not in records]
    if missing:
        raise InvalidStreamCutError(f"stream {cut.stream!r} has no segment {', '.join(missing[:5])}")
    pairs = [(records[s], lsn) for s, lsn in cut.positions.items()]
    try:
        check_cover([(s.key_lo, s.key_hi) for s, _ in pairs], what="the key space")
    except Exception as exc:
        raise InvalidStreamCutError(f"not a consistent stream cut of {cut.stream!r}: {exc}") from None
    return sorted(pairs, key=lambda p: p[0].key_lo)


def positions_repr(positions: Mapping[int, int]) -> str:
    """Segment id -> LSN, as reprs show it: ``{'0.1': e1n5}``."""
    return "{" + ", ".join(f"{segment_str(s)!r}: {lsn_str(lsn)}" for s, lsn in positions.items()) + "}"
