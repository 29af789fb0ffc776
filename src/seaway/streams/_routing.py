"""Routing keys to key-space positions in ``[0, 1)``.

The function is part of the on-disk format: a stream's segments own ranges of this space, and a
key must land in the same place for as long as the stream lives, in every process and version.
It is the first 8 bytes of BLAKE2b (digest size 8, no key, no salt) of the key's UTF-8 bytes, read
as a big-endian unsigned integer and divided by 2**64. Never change it.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading

from seaway.errors import InvalidArgumentError

ROUTING_KEY_BYTES_MAX = 1024
_BELOW_ONE = math.nextafter(1.0, 0.0)


def key_position(routing_key: str | bytes) -> float:
    """Where ``routing_key`` falls in ``[0, 1)``; stable forever (see the module docstring)."""
    raw = routing_key.encode() if isinstance(routing_key, str) else routing_key
    if not isinstance(raw, bytes) or len(raw) > ROUTING_KEY_BYTES_MAX:
        raise InvalidArgumentError(f"a routing key is a str or bytes of at most {ROUTING_KEY_BYTES_MAX} bytes, "
                                   f"got {routing_key!r:.80}")
    value = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")
    return min(value / 2**64, _BELOW_ONE)  # the largest values round up to 1.0 as floats


class Spreader:
    """Positions for events without a key: evenly spread, in turn (a golden-ratio sequence, which
    fills ``[0, 1)`` evenly at any count). Thread-safe."""

    _STEP = 0.618_033_988_749_894_9

    def __init__(self, start: float = 0.0) -> None:
        self._counter = itertools.count()
        self._start = start
        self._lock = threading.Lock()

    def next(self) -> float:
        with self._lock:
            n = next(self._counter)
        return (self._start + n * self._STEP) % 1.0
