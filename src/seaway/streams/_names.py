"""Names of scopes and streams, and the ids of segments.

A scope groups streams; a stream is named ``scope/stream``. Both parts are 1-63 letters, digits,
``.``, ``_`` and ``-``, starting with a letter or digit (Pravega's rule, with ``_`` allowed).

A segment's id is ``generation << 32 | number``: the stream generation that created it and its
number, unique within the stream (PDP-32's segment id, with *generation* for Pravega's stream epoch,
since *epoch* is the LSN's). It is written ``generation.number`` in text, as in ``3.17``.
"""

from __future__ import annotations

import re

from seaway.errors import InvalidArgumentError

NAME_CHARS_MAX = 63
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SEGMENT_NUMBER_MAX = 2**32 - 1
GENERATION_MAX = 2**31 - 1


def check_part(name: object, what: str) -> str:
    """A scope or stream name (one part), checked."""
    if not isinstance(name, str) or not _PART.match(name) or len(name) > NAME_CHARS_MAX:
        raise InvalidArgumentError(f"a {what} name is 1-{NAME_CHARS_MAX} letters, digits and ._- starting with a "
                                   f"letter or digit, got {name!r:.80}")
    return name


def split_stream_name(name: object) -> tuple[str, str]:
    """``scope/stream`` split into its checked parts."""
    if not isinstance(name, str) or name.count("/") != 1:
        raise InvalidArgumentError(f"a stream is named scope/stream, got {name!r:.80}")
    scope, stream = name.split("/")
    return check_part(scope, "scope"), check_part(stream, "stream")


def segment_id(generation: int, number: int) -> int:
    return generation << 32 | number


def generation_of(segment: int) -> int:
    """The stream generation that created the segment."""
    return segment >> 32


def number_of(segment: int) -> int:
    return segment & SEGMENT_NUMBER_MAX


def segment_str(segment: int) -> str:
    """The text form of a segment id: ``generation.number``."""
    return f"{segment >> 32}.{segment & SEGMENT_NUMBER_MAX}"


def parse_segment(text: object) -> int:
    """A segment id from its text form (``generation.number``) or an integer."""
    if isinstance(text, int) and not isinstance(text, bool) and 0 <= text < 2**63:
        return text
    if isinstance(text, str):
        generation, dot, number = text.partition(".")
        if dot and generation.isdigit() and number.isdigit():
            g, n = int(generation), int(number)
            if g <= GENERATION_MAX and n <= SEGMENT_NUMBER_MAX:
                return segment_id(g, n)
    raise InvalidArgumentError(f"a segment id is written generation.number (as 3.17), got {text!r:.80}")
