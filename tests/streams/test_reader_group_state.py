"""The size of a reader group's one state record at the maxima (docs/streams.md, "What the one
record costs"): every reader rewrites it whole, and it must fit one metadata value."""

from __future__ import annotations

from seaway.log._meta import VALUE_BYTES_MAX
from seaway.streams._config import SEGMENTS_MAX
from seaway.streams._names import GENERATION_MAX, NAME_CHARS_MAX, SEGMENT_NUMBER_MAX
from seaway.streams._reader_group import READERS_MAX, _State


def _largest(segments: int, readers: int) -> _State:
    """A state of ``segments`` held segments with the largest ids, positions and log ids, shared
    by ``readers`` readers of the longest names."""
    state = _State()
    ids = [(GENERATION_MAX << 32) | (SEGMENT_NUMBER_MAX - i) for i in range(segments)]
    for r in range(readers):
        state.readers[f"{r:0{NAME_CHARS_MAX}d}"] = {s: 2**64 - 1 - s % 1000 for s in ids[r::readers]}
    state.log_ids = {s: 2**63 - 1 - n for n, s in enumerate(ids)}
    return state


def test_a_group_at_the_most_segments_and_readers_fits_one_value_and_the_documented_limit_holds() -> None:
    full = len(_largest(SEGMENTS_MAX, READERS_MAX).encode())
    assert full <= VALUE_BYTES_MAX
    per_segment = (len(_largest(2_000, 1).encode()) - len(_largest(1_000, 1).encode())) / 1_000
    assert 80 <= per_segment <= 85  # "up to 84 bytes a segment"
    assert len(_largest(12_000, 1).encode()) <= VALUE_BYTES_MAX < len(_largest(12_500, 1).encode())
