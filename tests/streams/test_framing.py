"""The header of a framed stream's records (:mod:`seaway.streams._framing`): every variant round
trips, the records written before keys were stored still decode, and anything else is corruption."""

from __future__ import annotations

import pytest

from seaway import CorruptionError
from seaway.streams._framing import frame, header, unframe, unframe_keyed
from seaway.streams._routing import ROUTING_KEY_BYTES_MAX

KEYS: list[str | bytes | None] = [None, "user-7", "", b"", b"\x00\xff raw", "ключ", "k" * ROUTING_KEY_BYTES_MAX,
                                  b"\xff" * ROUTING_KEY_BYTES_MAX]


@pytest.mark.parametrize("routing_key", KEYS)
@pytest.mark.parametrize("write_pointer", [0, 1, 2**64 - 1])
@pytest.mark.parametrize("event", [b"", b"payload", b"\x00\x01\x02" * 100])
def test_every_header_round_trips(event: bytes, write_pointer: int, routing_key: str | bytes | None) -> None:
    record = frame(event, write_pointer, routing_key)
    got = unframe_keyed(record)
    assert got == (write_pointer, routing_key, event)
    assert type(got[1]) is type(routing_key)  # a str key comes back a str, a bytes key bytes
    assert unframe(record) == (write_pointer, event)  # the key-less decoding skips the key
    assert record == header(write_pointer, routing_key) + event


def test_the_layout_is_fixed() -> None:
    """The bytes on disk, spelled out: a change here breaks every stored stream."""
    assert frame(b"e", 0) == b"\x00e"
    assert frame(b"e", 5) == b"\x01" + (5).to_bytes(8, "big") + b"e"
    assert frame(b"e", 0, b"k") == b"\x02\x00\x01ke"
    assert frame(b"e", 0, "k") == b"\x06\x00\x01ke"
    assert frame(b"e", 5, "ké") == b"\x07" + (5).to_bytes(8, "big") + b"\x00\x03k\xc3\xa9e"


def test_records_written_before_keys_were_stored_decode_as_before() -> None:
    old_plain, old_txn = b"\x00event", b"\x01" + (9).to_bytes(8, "big") + b"event"
    assert unframe_keyed(old_plain) == (0, None, b"event")
    assert unframe_keyed(old_txn) == (9, None, b"event")
    assert unframe(old_plain) == (0, b"event") and unframe(old_txn) == (9, b"event")


@pytest.mark.parametrize("bad", [
    b"",                                          # no header at all
    b"\x08e", b"\x80e", b"\xffe",                 # unknown flags
    b"\x04\x00\x01ke",                            # a text key flag without a key
    b"\x01short",                                 # a cut write pointer
    b"\x01" + bytes(8) + b"e",                    # a transaction's write pointer of 0
    b"\x02", b"\x02\x00",                         # a cut key length
    b"\x02\x00\x05key",                           # a key longer than what follows
    b"\x02" + (ROUTING_KEY_BYTES_MAX + 1).to_bytes(2, "big") + bytes(ROUTING_KEY_BYTES_MAX + 1),  # over the limit
    b"\x06\x00\x02\xff\xfee",                     # a text key that is not UTF-8
    b"\x03" + (1).to_bytes(8, "big") + b"\x00",   # keyed in a transaction, key length cut
])
def test_bad_headers_are_corruption(bad: bytes) -> None:
    with pytest.raises(CorruptionError):
        unframe_keyed(bad)
    with pytest.raises(CorruptionError):
        unframe(bad)
