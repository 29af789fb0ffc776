"""The log API users hold: the ``logs`` namespace of a store, a handle per log, and readers."""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future

from seaway._errors import (
    ClosedError,
    InvalidArgumentError,
    LsnOutOfRangeError,
    TrimPastTailError,
    UnknownLogError,
)
from seaway.log._coalesce import AppendCoalescer, CoalesceConfig, Coalescers
from seaway.log._config import LogGroup, LogInfo, LogsConfig
from seaway.log._embedded import EmbeddedLogStore
from seaway.log._handle import UNSET, LogHandle, attribute_overrides
from seaway.log._lsn import LSN_MAX, LSN_OLDEST, check_lsn, lsn_str
from seaway.log._reader import LogReadState, ReadChunk
from seaway.log._types import LogAttributes, ReadItem, Record, take, weight
from seaway.log._writer import BatchingWriter, RetryPolicy
from seaway.logsdb import Durability, PartitionInfo, ProducerMark


class Log(LogHandle):
    """A handle on one log of the embedded store. Cheap to create; all state lives in the store."""

    def __init__(self, logs: Logs, info: LogInfo) -> None:
        super().__init__(info, logs._store)
        self._logs = logs
        self._store = logs._store

    # --- appending ------------------------------------------------------------------------------

    def _make_appends(self) -> AppendCoalescer:
        store, log_id, sync = self._store, self.id, self._sync

        def send(payloads: tuple[bytes, ...], mark: ProducerMark | None) -> Future[range]:
            return store.append_async(log_id, payloads, sync, mark)

        return self._logs._coalescers.get(log_id, send)

    def writer(self, *, flush_records_max: int = 500, flush_bytes_max: int = 1 << 20,
               flush_interval_s: float = 0.05, ordered: bool = True,
               retry: RetryPolicy | None = None, in_flight_batches_max: int = 8) -> BatchingWriter:
        """A writer that gathers single records into batches (see :class:`BatchingWriter`)."""
        producer_id = os.urandom(16)  # one producer per writer: its retries are stored once

        def append(payloads: list[bytes], sequence: int) -> Future[range]:
            return self.append_batch_async(payloads, producer_id=producer_id, sequence=sequence)

        return BatchingWriter(append, flush_records_max=flush_records_max,
                              flush_bytes_max=flush_bytes_max, flush_interval_s=flush_interval_s,
                              ordered=ordered, retry=retry, in_flight_batches_max=in_flight_batches_max,
                              payload_bytes_max=self.attributes.payload_bytes_max)

    # --- the log's state ------------------------------------------------------------------------

    def tail_lsn(self) -> int:
        """The LSN of the last record appended (or trimmed); 0 if the log was never written."""
        self._logs._check_open()
        return self._store.released(self.id)

    def trim_point(self) -> int:
        return self._store.logsdb.trim_point(self.id)

    def is_empty(self) -> bool:
        """True when the log holds no record above its trim point."""
        tail = self.tail_lsn()
        start = self.trim_point() + 1
        if start > tail:
            return True
        state = LogReadState(self.id, start, tail)
        while not state.done:
            want = state.want(tail)
            if want is None:
                break
            if any(isinstance(item, Record) for item in state.on_chunk(self._store.read_chunk(want))):
                return False
        return True

    def data_size(self) -> int:
        """Bytes the log occupies on disk, approximately (trimmed records linger until dropped)."""
        self._logs._check_open()
        return self._store.logsdb.data_size(self.id)

    def trim(self, lsn: int) -> None:
        """Trim the log up to and including ``lsn``; readers then see a TRIM gap there."""
        check_lsn(lsn)
        tail = self.tail_lsn()
        if lsn > tail:
            raise TrimPastTailError(
                f"log {self.name!r}: cannot trim to {lsn_str(lsn)}, the tail is {lsn_str(tail)}")
        self._store.logsdb.trim(self.id, lsn)

    def find_time(self, timestamp_ms: int) -> int:
        """The LSN of the first record (or hole plug) above the trim point stamped at or after
        ``timestamp_ms``; the LSN after the tail if there is none. A binary search, not a scan."""
        if not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise InvalidArgumentError(f"timestamp_ms must be a non-negative integer, got {timestamp_ms!r}")
        self._logs._check_open()
        return min(self._store.logsdb.find_time(self.id, timestamp_ms), self.tail_lsn() + 1)

    def read(self, lsn_from: int = LSN_OLDEST, lsn_until: int | None = None) -> Iterator[ReadItem]:
        """Records and gaps of this log from ``lsn_from`` up to ``lsn_until`` (the tail by default)."""
        return self._logs.read({self: lsn_from}, until=lsn_until)


class Reader:
    """Reads many logs at once, each in LSN order, delivering records and gaps.

    A log read up to ``LSN_MAX`` is tailed: :meth:`read` waits for new records without polling.
    Items of different logs interleave in no particular order. At most ``buffered_items_max``
    items are held; the disk is read only as they are consumed.
    """

    def __init__(self, logs: Logs, buffered_items_max: int = 2_000, *, runs: bool = False) -> None:
        if buffered_items_max < 1:
            raise InvalidArgumentError("buffered_items_max must be at least 1")
        self._runs = runs
        self._buffered = 0  # records and gaps in the buffer (a run counts its records)
        self._logs = logs
        self._store = logs._store
        self._states: dict[int, LogReadState] = {}
        self._buffer: list[ReadItem] = []
        self._buffered_items_max = buffered_items_max
        self._unfinished: dict[int, ReadChunk] = {}
        self._closed = False
        self._lock = threading.Lock()
        self._wake = threading.Event()  # set when a log read here may have more, or on close

    def start_reading(self, log: Log | int | str, lsn_from: int = LSN_OLDEST, lsn_until: int = LSN_MAX) -> None:
        """Read ``log`` from ``lsn_from`` to ``lsn_until`` inclusive (forever if ``LSN_MAX``)."""
        log_id = self._logs._resolve(log).id
        check_lsn(lsn_from, "lsn_from")
        check_lsn(lsn_until, "lsn_until")
        if lsn_from < LSN_OLDEST or lsn_from > lsn_until:
            raise LsnOutOfRangeError(f"cannot read from {lsn_str(lsn_from)} until {lsn_str(lsn_until)}")
        with self._lock:
            self._states[log_id] = LogReadState(log_id, lsn_from, lsn_until, runs=self._runs)
            self._unfinished.pop(log_id, None)
        self._store.watch_releases(log_id, self._wake)
        self._wake.set()

    def stop_reading(self, log: Log | int | str) -> None:
        log_id = self._logs._resolve(log).id
        with self._lock:
            self._states.pop(log_id, None)
            self._buffer = [i for i in self._buffer if i.log_id != log_id]
            self._buffered = sum(map(weight, self._buffer))
            self._unfinished.pop(log_id, None)
        self._store.unwatch_releases(log_id, self._wake)

    @property
    def done(self) -> bool:
        """True when every log has been read up to its ``lsn_until``."""
        with self._lock:
            return not self._buffer and all(s.done for s in self._states.values())

    def read(self, items_max: int = 1000, timeout_s: float | None = None) -> list[ReadItem]:
        """Up to ``items_max`` items; waits up to ``timeout_s`` (None: forever) for the first one.

        Returns an empty list on timeout, or at once when every log is done.
        """
        if items_max < 1:
            raise InvalidArgumentError("items_max must be at least 1")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self._closed:
                raise ClosedError("the reader is closed")
            self._logs._check_open()
            self._wake.clear()  # before looking: a release from here on sets it again
            with self._lock:
                self._fill()
                if self._buffer or all(s.done for s in self._states.values()):
                    return self._take(items_max)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return []
            self._wake.wait(remaining)

    def _take(self, items_max: int) -> list[ReadItem]:
        if not self._runs:
            taken = self._buffer[:items_max]
            del self._buffer[:items_max]
            self._buffered -= len(taken)
            return taken
        taken, count = take(self._buffer, items_max)
        self._buffered -= count
        return taken

    def _fill(self) -> None:
        for state in self._states.values():
            while (room := self._buffered_items_max - self._buffered) > 0:
                want = state.want(self._store.released(state.log_id))
                if want is None:
                    break
                # A chunk cut short by the buffer bound is kept and resumed, not read and decoded again.
                chunk = self._unfinished.pop(state.log_id, None)
                if chunk is None or chunk.covered_to < want.lsn_from:
                    chunk = self._store.read_chunk(want)
                items = state.on_chunk(chunk, room)
                self._buffer.extend(items)
                self._buffered += len(items) if not self._runs else sum(map(weight, items))
                if state.next_lsn <= min(chunk.covered_to, want.lsn_to):
                    self._unfinished[state.log_id] = chunk

    def __iter__(self) -> Iterator[ReadItem]:
        """Every item until all logs are done (forever when tailing)."""
        while True:
            items = self.read()
            if not items:
                return
            yield from items

    def close(self) -> None:
        self._closed = True
        with self._lock:
            log_ids = list(self._states)
        for log_id in log_ids:
            self._store.unwatch_releases(log_id, self._wake)
        self._wake.set()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Logs:
    """The logs of one store: create and find logs and groups, read, run retention."""

    def __init__(self, store: EmbeddedLogStore, defaults: LogAttributes | None = None,
                 coalesce: CoalesceConfig | None = None) -> None:
        self._store = store
        self._config = LogsConfig(store.logsdb, defaults or LogAttributes())
        self._coalescers = Coalescers(coalesce)

    def close_appends(self, drain_s: float = 30.0) -> None:
        """Let the appends made so far go out (waiting up to ``drain_s``), then refuse more: the
        first step of closing the store."""
        self._coalescers.close(drain_s)

    def _check_open(self) -> None:
        if self._store.closed:
            raise ClosedError("the store is closed")

    def create(self, name: str, *, log_id: int | None = None, group: str | None = None,
               backlog_s: float | None = UNSET, payload_bytes_max: int = UNSET,
               durability: Durability = UNSET) -> Log:
        """Create a log. Attributes not given are inherited from its group, then the defaults."""
        self._check_open()
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        return Log(self, self._config.create_log(name, log_id, group, overrides))

    def create_group(self, name: str, first_id: int, last_id: int, *, backlog_s: float | None = UNSET,
                     payload_bytes_max: int = UNSET, durability: Durability = UNSET) -> LogGroup:
        """Create a named range of log ids whose logs inherit the attributes given here."""
        self._check_open()
        overrides = attribute_overrides(backlog_s, payload_bytes_max, durability)
        return self._config.create_group(name, first_id, last_id, overrides)

    def get(self, name_or_id: str | int) -> Log:
        """The log with this name or id; raises :class:`UnknownLogError`."""
        self._check_open()
        return Log(self, self._config.get(name_or_id))

    def _resolve(self, log: Log | int | str) -> Log:
        if isinstance(log, Log):
            if log._store is not self._store:
                raise UnknownLogError(f"{log!r} belongs to another store")
            return log
        return self.get(log)

    def list(self) -> builtins.list[Log]:
        self._check_open()
        return [Log(self, info) for info in self._config.logs()]

    def groups(self) -> builtins.list[LogGroup]:
        return self._config.groups()

    def reader(self, buffered_items_max: int = 2_000, *, runs: bool = False) -> Reader:
        """A reader over any of these logs. With ``runs``, it delivers :class:`RecordRun` items (one
        per stored batch, or part of one) instead of a :class:`Record` each: for bulk consumers, and
        counted by their records against ``buffered_items_max`` and ``read``'s ``items_max``."""
        self._check_open()
        return Reader(self, buffered_items_max, runs=runs)

    def read(self, starts: Mapping[Log | int | str, int], until: int | None = None) -> Iterator[ReadItem]:
        """Records and gaps of several logs, each from its start LSN.

        ``until`` is the last LSN to read of every log; by default each log's tail when called,
        so the iteration ends. Pass ``LSN_MAX`` to tail the logs forever.
        """
        reader = self.reader()
        for log, lsn_from in starts.items():
            resolved = self._resolve(log)
            lsn_until = resolved.tail_lsn() if until is None else until
            if lsn_from <= lsn_until:
                reader.start_reading(resolved, lsn_from, lsn_until)
        return iter(reader)

    def run_retention(self) -> builtins.list[int]:
        """Drop the partitions none of whose records is retained any more; return their ids."""
        self._check_open()
        return self._store.logsdb.drop_expired(self._config.backlog_ms)

    def partitions(self) -> builtins.list[PartitionInfo]:
        self._check_open()
        return self._store.logsdb.partitions()


