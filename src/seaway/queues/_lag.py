"""What a consumer group's lag is counted from: the entries of each committed chunk, kept in the
metadata store where no payload needs reading.

A producer knows how many entries each chunk it appends holds; it stages, with the transaction that
wrote them, one key per partition log it wrote to: ``n/<log id>/<LSN of its last chunk there>`` ->
each of its chunks there as ``(LSN, entries, payload bytes)``. Staged, the key is written by the commit or never:
a transaction in progress, aborted or timed out leaves none, so lag counts only committed entries
(those a consumer will be given). The lag of a position is the sum over the keys at or after it
(keys are ordered by their last chunk, so a transaction with a chunk at or after the position is
found), less the entries of its chunk before it: one scan of the keys of the transactions not yet
consumed, never a read of the log.

Keys go when the consumed part of the log is trimmed (eviction, see
:meth:`seaway.queues._cursor.Cursor.trim`) and with the log; entries written by a version that did
not keep these keys are not counted.
"""

from __future__ import annotations

import struct

from seaway.errors import CorruptionError
from seaway.log import MetaApi, MetaBatch
from seaway.queues._records import NAMESPACE, Position

_CHUNK = struct.Struct(">QII")
COUNT_BYTES = _CHUNK.size
"""Bytes of one chunk's count in a count record, its LSN first."""
_PAGE = 1_000
KEYS_SCANNED_MAX = 100_000
"""Keys one lag count reads at most (each a transaction's chunks in one partition): past that the
count is a lower bound (a partition that many transactions behind is far behind anyway)."""


def counts_prefix(log_id: int) -> bytes:
    return b"n/%016x/" % log_id


def counts_key(log_id: int, last_lsn: int) -> bytes:
    return counts_prefix(log_id) + b"%016x" % last_lsn


def encode_counts(chunks: list[tuple[int, int, int]]) -> bytes:
    return b"".join(_CHUNK.pack(lsn, count, nbytes) for lsn, count, nbytes in chunks)


def decode_counts(raw: bytes) -> list[tuple[int, int, int]]:
    if len(raw) % _CHUNK.size:
        raise CorruptionError(f"a queue chunk count record does not decode: {len(raw)} bytes")
    return [_CHUNK.unpack_from(raw, at) for at in range(0, len(raw), _CHUNK.size)]


def entries_between(meta: MetaApi, log_id: int, position: Position, last_lsn: int | None = None) -> tuple[int, int]:
    """Committed entries of partition log ``log_id`` from ``position`` on (up to the chunk at
    ``last_lsn``, inclusive, if given), and their payload bytes, counted from the keys above (the
    bytes of a chunk partly consumed in proportion to the entries left in it)."""
    prefix = counts_prefix(log_id)
    start: bytes | None = counts_key(log_id, position.lsn)
    total = total_bytes = scanned = 0
    while start is not None and scanned < KEYS_SCANNED_MAX:
        rows = meta.scan(NAMESPACE, prefix=prefix, start=start, limit=_PAGE)
        scanned += len(rows)
        for _, found in rows:
            for lsn, count, nbytes in decode_counts(found.value):
                if lsn < position.lsn or (last_lsn is not None and lsn > last_lsn):
                    continue
                left = max(0, count - position.entry) if lsn == position.lsn else count
                total += left
                total_bytes += nbytes * left // count if count else 0
        start = rows[-1][0] + b"\0" if len(rows) == _PAGE else None
    return total, total_bytes


def prune(batch: MetaBatch, log_id: int, below_lsn: int) -> MetaBatch:
    """Drop the keys whose chunks all lie below ``below_lsn`` (consumed and trimmed away)."""
    return batch.delete_range(NAMESPACE, counts_prefix(log_id), counts_key(log_id, below_lsn))


def forget(batch: MetaBatch, log_id: int) -> MetaBatch:
    """Drop every key of a partition log (deleted)."""
    return batch.delete_prefix(NAMESPACE, counts_prefix(log_id))
