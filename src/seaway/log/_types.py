"""What readers receive (records and gaps) and the attributes a log has."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, NamedTuple

from seaway._values import Durability
from seaway.errors import InvalidArgumentError
from seaway.log._lsn import lsn_str


class GapType(Enum):
    """Why a range of LSNs holds no records for a reader."""

    BRIDGE = "BRIDGE"
    """No records were ever written there: the end of one epoch to the start of the next."""
    HOLE = "HOLE"
    """A slot that was sequenced but whose append never completed (plugged)."""
    TRIM = "TRIM"
    """At or below the log's trim point (trimmed, or dropped by retention)."""
    DATALOSS = "DATALOSS"
    """Records were written there but can no longer be read (damaged or lost)."""
    SEALED = "SEALED"
    """Past the final LSN of a log sealed for good: no record will ever be there. A reader reaches
    it once it has read the whole log, and is then done with that log."""


class Record(NamedTuple):
    """One record of a log, as a reader receives it."""

    log_id: int
    lsn: int
    timestamp_ms: int
    payload: bytes

    def __repr__(self) -> str:  # LSNs as everything else prints them: e<epoch>n<esn>
        return f"Record(log_id={self.log_id}, lsn={lsn_str(self.lsn)}, timestamp_ms={self.timestamp_ms}, " \
               f"payload={self.payload!r})"


class Gap(NamedTuple):
    """A range ``[lsn_lo, lsn_hi]`` of a log holding no records, and why."""

    log_id: int
    type: GapType
    lsn_lo: int
    lsn_hi: int

    def __repr__(self) -> str:
        return f"Gap(log_id={self.log_id}, type={self.type.value}, lsn_lo={lsn_str(self.lsn_lo)}, " \
               f"lsn_hi={lsn_str(self.lsn_hi)})"


class RecordRun(NamedTuple):
    """Records at consecutive LSNs from ``first_lsn`` on, all stamped ``timestamp_ms``: what a reader
    made with ``runs=True`` delivers instead of one :class:`Record` each, for bulk consumers."""

    log_id: int
    first_lsn: int
    timestamp_ms: int
    payloads: list[bytes]

    @property
    def last_lsn(self) -> int:
        return self.first_lsn + len(self.payloads) - 1

    def __repr__(self) -> str:
        return f"RecordRun(log_id={self.log_id}, first_lsn={lsn_str(self.first_lsn)}, " \
               f"timestamp_ms={self.timestamp_ms}, payloads={self.payloads!r})"

    def records(self) -> list[Record]:
        return [Record(self.log_id, self.first_lsn + i, self.timestamp_ms, p) for i, p in enumerate(self.payloads)]


ReadItem = Record | Gap
RunItem = RecordRun | Gap


def weight(item: ReadItem | RunItem) -> int:
    """How many records an item stands for (a gap counts as one), for buffer bounds."""
    return len(item.payloads) if type(item) is RecordRun else 1


def take(buffer: list[Any], items_max: int) -> tuple[list[Any], int]:
    """Remove from the front of ``buffer`` whole items worth at most ``items_max`` records (at least
    one item); return them and what they weigh."""
    count = end = 0
    while end < len(buffer) and (end == 0 or count + weight(buffer[end]) <= items_max):
        count += weight(buffer[end])
        end += 1
    taken = buffer[:end]
    del buffer[:end]
    return taken, count


BUFFERED_BYTES_MAX_DEFAULT = 16 << 20
"""What a reader holds of record payloads by default (besides ``buffered_items_max``)."""

def check_buffer_bounds(buffered_items_max: int, buffered_bytes_max: int) -> None:
    """Refuse reader bounds that could never hold an item."""
    for name, value in (("buffered_items_max", buffered_items_max), ("buffered_bytes_max", buffered_bytes_max)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")


def payload_bytes(items: Iterable[ReadItem | RunItem]) -> int:
    """The payload bytes of records and runs (a gap has none)."""
    total = 0
    for item in items:
        kind = type(item)
        if kind is Record:
            total += len(item[3])  # type: ignore[arg-type]
        elif kind is RecordRun:
            total += sum(map(len, item[3]))  # type: ignore[arg-type]
    return total


def take_within(buffer: list[Any], items_max: int,
                bytes_max: int | None) -> tuple[list[Any], int, int]:
    """Remove from the front of ``buffer`` items worth at most ``items_max`` records and ``bytes_max``
    payload bytes (a run is cut between records to fit); return them, their records and their bytes.

    At least one record or gap is taken, however large: a read always makes progress."""
    if bytes_max is None:
        taken, count = take(buffer, items_max)
        return taken, count, payload_bytes(taken)
    out: list[Any] = []
    count = size = end = 0
    while end < len(buffer):
        item = buffer[end]
        item_size = payload_bytes((item,))
        if count + weight(item) <= items_max and size + item_size <= bytes_max:
            out.append(item)
            count += weight(item)
            size += item_size
            end += 1
            continue
        if type(item) is RecordRun:
            fits = 0
            room_bytes = bytes_max - size
            for payload in item.payloads[:items_max - count]:
                if len(payload) > room_bytes and (fits or out):
                    break
                room_bytes -= len(payload)
                fits += 1
            if fits:
                head, rest = item.payloads[:fits], item.payloads[fits:]
                out.append(RecordRun(item.log_id, item.first_lsn, item.timestamp_ms, head))
                buffer[end] = RecordRun(item.log_id, item.first_lsn + fits, item.timestamp_ms, rest)
                count += fits
                size += bytes_max - size - room_bytes
        elif not out:
            out.append(item)
            count, size = weight(item), item_size
            end += 1
        break
    del buffer[:end]
    return out, count, size


PAYLOAD_BYTES_MAX_LIMIT = 32 << 20
"""No log may allow records larger than this."""


@dataclass(frozen=True)
class LogAttributes:
    """The resolved attributes of a log.

    ``backlog_s``: records older than this may be dropped by retention; ``None`` keeps them until
    trimmed. ``payload_bytes_max``: the largest record payload accepted. ``durability``: when an
    append is acknowledged (see :class:`Durability`).
    """

    backlog_s: float | None = None
    payload_bytes_max: int = 1 << 20
    durability: Durability = Durability.SYNC

    def __post_init__(self) -> None:
        if self.backlog_s is not None and not self.backlog_s > 0:
            raise InvalidArgumentError(f"backlog_s must be positive or None, got {self.backlog_s!r}")
        if not isinstance(self.payload_bytes_max, int) or not (
            1 <= self.payload_bytes_max <= PAYLOAD_BYTES_MAX_LIMIT
        ):
            raise InvalidArgumentError(
                f"payload_bytes_max must be in [1, {PAYLOAD_BYTES_MAX_LIMIT}], got {self.payload_bytes_max!r}")
        if not isinstance(self.durability, Durability):
            raise InvalidArgumentError(f"durability must be a Durability, got {self.durability!r}")

    def with_overrides(self, overrides: dict[str, Any]) -> LogAttributes:
        """These attributes with some replaced (the inheritance step of log groups)."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise InvalidArgumentError(f"unknown log attributes: {sorted(unknown)}")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(overrides)
        return LogAttributes(**values)


def overrides_to_json(overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, Durability) else v) for k, v in overrides.items()}


def overrides_from_json(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: (Durability(v) if k == "durability" else v) for k, v in raw.items()}
