"""Reading one range of a log into Arrow record batches, on Spark's executors.

The columns Seaway knows are filled from each event (``routing_key``, ``payload``, ``event_time``,
``segment``, ``position``; the routing key is null unless the stream stores keys, see
``StreamConfig.store_routing_keys``); any other column of the schema is decoded from the payload as a JSON
object, by name. What a range holds is fixed by its LSNs (and, on a transactional stream, by a
snapshot that decides every transaction in it), so reading it again gives the same rows.
"""

from __future__ import annotations

import array
import functools
import itertools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from seaway._invariant import invariant
from seaway.errors import CorruptionError, StreamTruncatedError, UnknownLogError
from seaway.log import Gap, GapType, Record, RecordRun
from seaway.spark._plan import Range, read_stored
from seaway.streams import unframe_keyed
from seaway.txn import AbortedJudges, Snapshot, Visibility

LOG = logging.getLogger("seaway.spark")

DEFAULT_SCHEMA = "routing_key string, payload binary, event_time timestamp, segment string, position long"
KNOWN_COLUMNS = ("routing_key", "payload", "event_time", "segment", "position")
BATCH_EVENTS_MAX = 8_192
"""Events per Arrow record batch."""
BUFFER_BYTES_MAX = 32 << 20
"""Payload bytes a range's reader buffers from the server."""
OFFSETS_BYTES_MAX = 2**31 - 1
"""A binary or string column's bytes that 32-bit Arrow offsets can address."""


class _Columns:
    """Events gathered for one record batch."""

    def __init__(self) -> None:
        self.payloads: list[bytes] = []
        self.times_us: list[int] = []
        self.positions: list[int] = []
        self.keys: list[str | None] | None = None
        """Each event's routing key, once an event with one was added (None: all null so far)."""

    def add_run(self, first_lsn: int, timestamp_ms: int, payloads: list[bytes]) -> None:
        if self.keys is not None:
            self.keys.extend([None] * len(payloads))
        self.payloads.extend(payloads)
        self.times_us.extend([timestamp_ms * 1000] * len(payloads))
        self.positions.extend(range(first_lsn, first_lsn + len(payloads)))

    def add(self, lsn: int, timestamp_ms: int, payload: bytes, routing_key: str | bytes | None = None) -> None:
        if routing_key is not None and self.keys is None:
            self.keys = [None] * len(self.payloads)
        if self.keys is not None:
            # The column is a string: a key given as bytes shows as UTF-8 text, as far as it is.
            self.keys.append(routing_key.decode(errors="replace") if isinstance(routing_key, bytes) else routing_key)
        self.payloads.append(payload)
        self.times_us.append(timestamp_ms * 1000)
        self.positions.append(lsn)

    def __len__(self) -> int:
        return len(self.payloads)


def read_range(client: Any, r: Range, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The events of ``r`` as record batches of ``schema``. A range truncated away meanwhile fails
    with :class:`StreamTruncatedError` (or, if ``r.skip_lost``, is skipped with a warning)."""
    snapshot = Snapshot.decode(r.snapshot) if r.snapshot else None
    # The aborted transactions the log lists, read after the snapshot was taken (the driver's):
    # they are aborted for ever, so a read of the range again gives the same rows.
    judge = None if snapshot is None else functools.partial(AbortedJudges(client.meta).of(r.log_id).judge, snapshot)
    columns = _Columns()
    reader = client.logs.reader(BATCH_EVENTS_MAX, runs=True, buffered_bytes_max=BUFFER_BYTES_MAX)
    try:
        reader.start_reading(r.log_id, r.lsn_from, r.lsn_until)
        while True:
            try:
                items = read_stored(reader, BATCH_EVENTS_MAX, f"{r.part} positions {r.lsn_from}-{r.lsn_until}")
            except UnknownLogError:  # deleted under the read: truncated away whole
                _lost(r, r.lsn_from, r.lsn_until)
                return
            if not items:
                break
            for item in items:
                kind = type(item)
                if kind is RecordRun:
                    if not r.framed:
                        columns.add_run(item.first_lsn, item.timestamp_ms, item.payloads)
                    else:
                        for i, payload in enumerate(item.payloads):
                            _add_framed(columns, judge, r, item.first_lsn + i, item.timestamp_ms, payload)
                elif kind is Record:
                    if not r.framed:
                        columns.add(item.lsn, item.timestamp_ms, item.payload)
                    else:
                        _add_framed(columns, judge, r, item.lsn, item.timestamp_ms, item.payload)
                else:
                    _gap(r, item)
            if len(columns) >= BATCH_EVENTS_MAX:
                yield to_batch(columns, r.part, schema)
                columns = _Columns()
    finally:
        reader.close()
    if len(columns):
        yield to_batch(columns, r.part, schema)


def _add_framed(columns: _Columns, judge: Callable[[int], Visibility] | None, r: Range, lsn: int,
                timestamp_ms: int, record: bytes) -> None:
    write_pointer, routing_key, payload = unframe_keyed(record)
    if write_pointer:
        if judge is None:
            raise CorruptionError(f"the seaway source: {r.part} position {lsn} holds a transaction's event, "
                                  "but the stream is not transactional")
        seen = judge(write_pointer)
        invariant(seen is not Visibility.WAIT or r.hide_open,
                  f"segment {r.part} position {lsn}: a transaction in progress inside a micro-batch's range")
        if seen is not Visibility.VISIBLE:
            return
    columns.add(lsn, timestamp_ms, payload, routing_key)


def _gap(r: Range, gap: Gap) -> None:
    if gap.type in (GapType.BRIDGE, GapType.HOLE):
        return  # nothing was ever stored there
    if gap.type is GapType.TRIM:
        _lost(r, gap.lsn_lo, gap.lsn_hi)
        return
    if gap.type is GapType.DATALOSS:
        raise CorruptionError(f"the seaway source: {r.part} positions {gap.lsn_lo}-{gap.lsn_hi} are lost "
                              "(written, but can no longer be read)")
    invariant(gap.type is GapType.SEALED and gap.lsn_lo > r.lsn_until,
              f"{r.part}: a {gap.type.value} gap inside a planned range")


def _lost(r: Range, lsn_from: int, lsn_until: int) -> None:
    what = f"{r.part} positions {max(lsn_from, r.lsn_from)}-{min(lsn_until, r.lsn_until)}"
    if not r.skip_lost:
        raise StreamTruncatedError(
            f"the seaway source lost data: {what} were truncated while the query read them. Set the option "
            "failOnDataLoss=false to skip what is gone")
    LOG.warning("seaway source: skipping %s, truncated while the query read them (failOnDataLoss=false)", what)


def to_batch(columns: _Columns, part: str, schema: pa.Schema) -> pa.RecordBatch:
    """The record batch of ``schema`` for the gathered events."""
    n = len(columns)
    decoded: list[Any] | None = None
    arrays = []
    for field in schema:
        name = field.name
        if name == "payload":
            arrays.append(_binary(columns.payloads, field.type))
        elif name == "position":
            arrays.append(_int64(columns.positions, field.type))
        elif name == "event_time":
            arrays.append(_int64(columns.times_us, pa.int64()).cast(field.type))
        elif name == "segment":
            arrays.append(_binary([part.encode()] * n, field.type) if field.type == pa.string()
                          else pa.array([part] * n, field.type))
        elif name == "routing_key":
            # Null where no key is stored: a stream without store_routing_keys keeps none.
            arrays.append(pa.nulls(n, field.type) if columns.keys is None else pa.array(columns.keys, field.type))
        else:
            if decoded is None:
                decoded = [_json_object(p) for p in columns.payloads]
            arrays.append(_decoded_column(decoded, name, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _binary(values: list[bytes], type_: pa.DataType) -> pa.Array:
    """A binary column (or a string one, of UTF-8 known valid) made from its buffers: one copy of
    the bytes and their offsets, rather than ``pa.array``'s conversion of each value (which also
    imports pandas in each new worker process)."""
    data = b"".join(values)
    if type_ not in (pa.binary(), pa.string()) or len(data) > OFFSETS_BYTES_MAX:
        return pa.array(values, type_)
    offsets = array.array("i", itertools.accumulate(map(len, values), initial=0))
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _int64(values: list[int], type_: pa.DataType) -> pa.Array:
    """A 64-bit integer column made from its buffer (see :func:`_binary`)."""
    if type_ != pa.int64():
        return pa.array(values, type_)
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(array.array("q", values))])


def _json_object(payload: bytes) -> dict[str, Any]:
    """The payload as a JSON object; an empty one for a payload that is not (its columns are null)."""
    try:
        value = json.loads(payload)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _decoded_column(objects: list[dict[str, Any]], name: str, type_: pa.DataType) -> pa.Array:
    values = [o.get(name) for o in objects]
    try:
        return pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        # Some value does not fit the column's type: null for those, as Spark's JSON reader does.
        return pa.array([_fit(v, type_) for v in values], type_)


def _fit(value: Any, type_: pa.DataType) -> Any:
    try:
        pa.array([value], type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return None
    return value
