"""Lists answered in pages bounded by bytes and items (see ``PageRequest`` in the protocol).

A reply that could grow with what the store holds (every log, partition, group, transaction) is cut
once its messages pass a byte bound; the reply then carries ``next``, the key of its last item,
which the client sends back as ``after`` for the rest. Keys are fixed-width big-endian, so that
byte order is the lists' order. Nothing is kept between calls: each page is read again from the
store (a list read in pages is not one snapshot).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from seaway.errors import InvalidArgumentError
from seaway.wire import log_info_to_msg, overrides_to_msg, seaway_pb2, txn_info_to_msg, txn_page_cursor, txn_page_key

if TYPE_CHECKING:
    from seaway.log import LogGroup, LogInfo
    from seaway.logsdb import PartitionInfo
    from seaway.txn import TxnInfo

pb = seaway_pb2


class _Message(Protocol):
    def ByteSize(self) -> int: ...  # protobuf's name


_M = TypeVar("_M", bound=_Message)
_U64 = struct.Struct(">Q")
ITEMS_MAX = 10_000
"""The most items one page holds, whatever their size."""
_FIELD_OVERHEAD = 6
"""Bytes a repeated message field adds to each item besides the item (its tag and length)."""


def _u64(value: int) -> bytes:
    return _U64.pack(value)


def _after(request: pb.PageRequest, width: int) -> bytes | None:
    if not request.HasField("after"):
        return None
    if len(request.after) != width:
        raise InvalidArgumentError(f"a page's 'after' is the 'next' of the reply before ({width} bytes), "
                                   f"got {len(request.after)} bytes")
    return request.after


def fill(items: Iterable[tuple[bytes, _M]], bytes_max: int) -> tuple[list[_M], bytes | None]:
    """The first items of ``items`` (key, message) that fit in ``bytes_max`` bytes and
    ``ITEMS_MAX`` items (at least one), and the key to read on after, if any are left."""
    out: list[_M] = []
    size = 0
    last = b""
    for key, msg in items:
        size += msg.ByteSize() + _FIELD_OVERHEAD
        if out and (size > bytes_max or len(out) >= ITEMS_MAX):
            return out, last
        out.append(msg)
        last = key
    return out, None


def logs_page(logs: Sequence[LogInfo], request: pb.PageRequest, bytes_max: int) -> pb.LogList:
    after = _after(request, 8)

    def items() -> Iterator[tuple[bytes, pb.LogInfo]]:
        for info in sorted(logs, key=lambda i: i.log_id):
            key = _u64(info.log_id)
            if after is None or key > after:
                yield key, log_info_to_msg(info)

    found, more = fill(items(), bytes_max)
    reply = pb.LogList(logs=found)
    if more is not None:
        reply.next = more
    return reply


def groups_page(groups: Sequence[LogGroup], request: pb.PageRequest, bytes_max: int) -> pb.GroupList:
    after = _after(request, 8)

    def items() -> Iterator[tuple[bytes, pb.GroupInfo]]:
        for g in sorted(groups, key=lambda g: g.first_id):
            key = _u64(g.first_id)
            if after is None or key > after:
                yield key, pb.GroupInfo(name=g.name, first_id=g.first_id, last_id=g.last_id,
                                        attributes=overrides_to_msg(g.overrides))

    found, more = fill(items(), bytes_max)
    reply = pb.GroupList(groups=found)
    if more is not None:
        reply.next = more
    return reply


def partitions_page(partitions: Sequence[PartitionInfo], request: pb.PageRequest,
                    bytes_max: int) -> pb.PartitionList:
    """Partitions by id; one with more log ids than fit a page goes in pieces, each repeating the
    partition's id, time and size (the client joins them). A key is the partition's id and the
    last log id its piece holds."""
    after = _after(request, 16)
    after_pid, after_log = (_U64.unpack(after[:8])[0], _U64.unpack(after[8:])[0]) if after else (0, -1)
    ids_max = max(1, bytes_max // 11)  # a log id takes at most 10 bytes, and a piece has a header

    def items() -> Iterator[tuple[bytes, pb.PartitionInfo]]:
        for p in sorted(partitions, key=lambda p: p.partition_id):
            if after is not None and p.partition_id < after_pid:
                continue
            ids = sorted(p.log_ids)
            if after is not None and p.partition_id == after_pid:
                ids = [i for i in ids if i > after_log]
                if not ids:
                    continue
            for at in range(0, max(len(ids), 1), ids_max):
                piece = ids[at:at + ids_max]
                key = _u64(p.partition_id) + _u64(piece[-1] if piece else 0)
                yield key, pb.PartitionInfo(partition_id=p.partition_id, created_ms=p.created_ms,
                                            size_bytes=p.size_bytes, log_ids=piece)

    found, more = fill(items(), bytes_max)
    reply = pb.PartitionList(partitions=found)
    if more is not None:
        reply.next = more
    return reply


def txns_page(list_page: Callable[[TxnInfo | None, int], Sequence[TxnInfo]], request: pb.PageRequest,
              bytes_max: int) -> pb.TxnListReply:
    """Transactions in progress, then the others, each by id: a key is 0 or 1, then the id
    (:func:`txn_page_key`). ``list_page(after, limit)`` is the manager's paged list: a page costs
    what one page holds, not a copy of every transaction."""
    after = _after(request, 9)
    txns = list_page(None if after is None else txn_page_cursor(after), ITEMS_MAX)
    found, more = fill(((txn_page_key(info), txn_info_to_msg(info)) for info in txns), bytes_max)
    reply = pb.TxnListReply(transactions=found)
    if more is None and len(txns) >= ITEMS_MAX:
        more = txn_page_key(txns[-1])
    if more is not None:
        reply.next = more
    return reply
