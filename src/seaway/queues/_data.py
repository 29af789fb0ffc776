"""A queue's data log: each payload stored once, whatever the number of consumer groups.

A producer's send appends the entries' payloads once, as data chunks of the queue's *data log*
(split by the partitions the groups place them in, so that a consumer's share is in data chunks
of its own), and then, per group, one small *pointer chunk* per queue partition that names the
data chunks (their LSNs) and where each of its entries is in them (see
:mod:`seaway.queues._records`). Readers walk the partition logs as before (a pointer chunk has a
chunk's head: the write pointer that judges it, and the counters) and read the data chunks only to
deliver it, keeping them a while for the other groups that point at them (:class:`DataChunks`).

Eviction stays by ranges: the data log is trimmed below the lowest data chunk anyone may still
read (:func:`evict`), which is the lowest of

- the data chunks pointed at by every pointer chunk still kept in any partition log of the queue
  (every group, every layout a resize drains, FIFO logs kept below their claims): a partition's
  log is trimmed only below what its group acknowledged, so these are all the chunks a consumer,
  a claim, ``read_committed`` or a reset to the head may still deliver;
- the data chunks of transactions still in progress, which may not have appended their pointer
  chunks yet: everything written since (a margin before) the oldest of them began, found by the
  data log's time index;
- everything written after the data log's tail was read, first.

The order of those reads makes it safe: a transaction that committed before the transactions in
progress were listed appended its pointer chunks before its commit, so they are in the partition
logs read after; one that began after the list appends its data after the tail was read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from seaway.errors import LogDeletedError, SeawayError, TimedOutError, UnknownLogError
from seaway.log import Gap, GapType, Record, lsn_str
from seaway.queues._records import DataRef, decode_chunk, pointer_data_lsn
from seaway.txn import TxnStatus

if TYPE_CHECKING:
    from seaway.log import LogsApi
    from seaway.queues._queues import Queues

CACHE_BYTES_MAX = 64 << 20
"""Payload bytes of data chunks a store handle keeps read (for the other partitions and groups
that point at them: each consumer reads the data chunks its share is in)."""
CLOCK_MARGIN_MS = 10_000
"""How long before the oldest transaction in progress began the data log is kept from, beside the
pointed-at chunks: a margin for the clocks of the transaction manager and of the log's records."""
EVICT_INTERVAL_S = 10.0
"""How often a store handle evicts a queue's data log at most (after the trims of its partitions):
an eviction lists the transactions in progress and reads the pointer chunks appended to every
partition log since the previous one, and every consumer process runs it."""
POINTERS_SCANNED_MAX = 100_000
"""Pointer chunks one eviction reads at most: past that it keeps everything (and tries later)."""
LIST_PAGE = 1_000
READ_ITEMS = 64
HANDLES_MAX = 1024
LOWS_KEPT_MAX = 4096
"""Partition logs whose pointer chunks an eviction remembers, beyond those of the queue it evicts."""
READ_WAIT_S = 30.0
"""How long a read waits for data chunks that exist (a bound for a stalled connection)."""
RANGE_GAP_MAX = 2
"""Data chunks not wanted that one read of the wanted ones may step over (see :func:`_ranges`)."""
WORKER_IDLE_S = 2.0
"""How long the reading thread of a store handle waits for more to read before it ends."""
WAIT_S_MAX = 2 * READ_WAIT_S
"""How long :meth:`DataChunks.chunks` waits for a chunk at most (reads asked before it run first)."""


def _ranges(lsns: list[int]) -> list[tuple[int, int]]:
    """Sorted LSNs as the ranges that read them: one range while the next is at most
    ``RANGE_GAP_MAX`` records on, else a new one. A consumer wants the data chunks of its share:
    those of a group placed first in the split are consecutive, those of the next are every few
    records, and the next send's a few records on. Reading the chunks beside costs their bytes on
    the wire, a call costs a call: measured through a server, a gap of 2 cost as little as reading
    only the chunks wanted, a gap of 16 (a read per fill) half as much again in the client. The
    chunks beside are not decoded."""
    out: list[tuple[int, int]] = []
    for lsn in lsns:
        if out and lsn - out[-1][1] <= 1 + RANGE_GAP_MAX:  # within an epoch, LSNs number the records
            out[-1] = (out[-1][0], lsn)
        else:
            out.append((lsn, lsn))
    return out


class _Job:
    """One read of data chunks ``lsns`` of ``log_id`` by the prefetching thread: what it got so far
    (LSN -> payloads), whether it is done, and the error that ended it."""

    __slots__ = ("done", "error", "got", "log_id", "lsns")

    def __init__(self, log_id: int, lsns: list[int]) -> None:
        self.log_id = log_id
        self.lsns = lsns
        self.got: dict[int, list[bytes]] = {}
        self.done = False
        self.error: Exception | None = None


class DataChunks:
    """The data chunks this store handle read, kept by recency up to ``CACHE_BYTES_MAX``. Thread-safe.

    Reads run on one thread of this handle, in the order asked, over one reader: :meth:`prefetch`
    asks for chunks and returns at once (a consumer asks as soon as its pointer chunks came, and
    the read runs while it delivers earlier chunks and commits), :meth:`chunks` waits for what it
    wants, each chunk as soon as it came, not for the whole read it is part of. Through a server
    that takes the data chunks' round trip out of the consumer's path. The thread ends after
    ``WORKER_IDLE_S`` with nothing to read (and starts again when asked)."""

    def __init__(self, logs: LogsApi, bytes_max: int = CACHE_BYTES_MAX) -> None:
        self._logs = logs
        self._bytes_max = bytes_max
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._kept: OrderedDict[tuple[int, int], list[bytes]] = OrderedDict()
        self._bytes = 0
        self._inflight: dict[tuple[int, int], _Job] = {}
        """Chunks asked for and not read yet, with the read that reads them."""
        self._jobs: deque[_Job] = deque()
        self._worker: threading.Thread | None = None
        # The reading thread's own:
        self._reader: Any = None
        self._handles: dict[int, Any] = {}
        """Data logs' handles."""

    def _handle(self, log_id: int) -> Any:
        """The data log's handle, looked up once (a remote lookup is a round trip)."""
        handle = self._handles.get(log_id)
        if handle is None:
            if len(self._handles) >= HANDLES_MAX:
                self._handles.clear()
            handle = self._handles[log_id] = self._logs.get(log_id)
        return handle

    def _read(self, job: _Job, first: int, last: int, wanted: set[int]) -> None:
        """Read data chunks ``first`` to ``last`` of the job's log into ``job.got``, over one reader
        kept for all the reads of this store handle (a remote read of its own would open a stream
        per call), handing each batch of records to the waiters as it comes."""
        if self._reader is None:
            self._reader = self._logs.reader(READ_ITEMS)
        reader = self._reader
        try:
            reader.start_reading(self._handle(job.log_id), first, last)  # a handle: no lookup per read
            deadline = time.monotonic() + READ_WAIT_S
            done = False
            while not done:
                items = reader.read(READ_ITEMS, max(0.0, deadline - time.monotonic()))
                got: list[tuple[int, list[bytes]]] = []
                for item in items:
                    if isinstance(item, Record):
                        if item.lsn in wanted:
                            got.append((item.lsn, decode_chunk(item.payload)[2]))
                        done = done or item.lsn >= last
                    elif isinstance(item, Gap):
                        done = done or item.lsn_hi >= last or item.type is GapType.SEALED
                if got:
                    with self._cv:
                        for lsn, payloads in got:
                            job.got[lsn] = payloads
                            self._keep((job.log_id, lsn), payloads)
                        self._cv.notify_all()
                if not done and not items and time.monotonic() >= deadline:
                    raise TimedOutError(f"queue data log {job.log_id}: data chunks {lsn_str(first)}-{lsn_str(last)} "
                                        f"did not come within {READ_WAIT_S} s")
        except BaseException:
            self._reader = None  # its state is unknown: a later read opens another
            with contextlib.suppress(SeawayError):
                reader.close()
            raise

    def _work(self) -> None:
        """The reading thread: the jobs in the order asked, until none came for ``WORKER_IDLE_S``."""
        while (job := self._next_job()) is not None:
            error: Exception | None = None
            try:
                wanted = set(job.lsns)
                for first, last in _ranges(job.lsns):
                    self._read(job, first, last, wanted)
            except (UnknownLogError, LogDeletedError):
                pass  # gone: what was not read is None
            except Exception as exc:  # handed to the waiters, who raise it
                error = exc
            with self._cv:
                job.error, job.done = error, True
                for lsn in job.lsns:
                    if self._inflight.get((job.log_id, lsn)) is job:
                        del self._inflight[(job.log_id, lsn)]
                self._cv.notify_all()

    def _next_job(self) -> _Job | None:
        """The next job, or None once none came for ``WORKER_IDLE_S`` (the thread then ends: a
        later ask starts another)."""
        with self._cv:
            while not self._jobs:
                if not self._cv.wait(WORKER_IDLE_S) and not self._jobs:
                    self._worker = None
                    reader, self._reader = self._reader, None
                    break
            else:
                return self._jobs.popleft()
        if reader is not None:
            with contextlib.suppress(Exception):  # on its own thread: nothing to tell, nowhere to raise
                reader.close()
        return None

    def _ask(self, wanted: Iterable[tuple[int, int]]) -> None:
        """Queue a read of each chunk of ``wanted`` neither kept nor being read (lock held)."""
        missing: dict[int, list[int]] = {}
        for key in wanted:
            if key not in self._kept and key not in self._inflight:
                missing.setdefault(key[0], []).append(key[1])
        for log_id, lsns in missing.items():
            job = _Job(log_id, sorted(set(lsns)))
            for lsn in job.lsns:
                self._inflight[(log_id, lsn)] = job
            self._jobs.append(job)
        if missing:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, daemon=True, name="seaway-queue-data")
                self._worker.start()
            self._cv.notify_all()

    def prefetch(self, wanted: Iterable[tuple[int, int]]) -> None:
        """Start reading the data chunks ``(data log, LSN)`` of ``wanted`` not kept yet; returns at once."""
        with self._cv:
            self._ask(wanted)

    def _keep(self, key: tuple[int, int], payloads: list[bytes]) -> None:
        if key in self._kept:
            return
        self._kept[key] = payloads
        self._bytes += sum(map(len, payloads))
        while self._bytes > self._bytes_max and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= sum(map(len, dropped))

    def chunks(self, wanted: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[bytes] | None]:
        """The payloads of each wanted data chunk ``(data log, LSN)``; None for one that is gone
        (trimmed, or its log deleted). Those neither kept nor being read are read in one range
        per data log. Raises the error that ended a read (:class:`TimedOutError` for a stalled
        connection, with ``WAIT_S_MAX`` as the bound of the wait here)."""
        keys = set(wanted)
        found: dict[tuple[int, int], list[bytes] | None] = {}
        deadline = time.monotonic() + WAIT_S_MAX
        with self._cv:
            self._ask(keys)
            jobs: dict[tuple[int, int], _Job] = {}
            for key in keys:  # before any wait: a read that ends meanwhile leaves the chunks in flight
                kept = self._kept.get(key)
                if kept is not None:
                    self._kept.move_to_end(key)
                    found[key] = kept
                else:
                    jobs[key] = self._inflight[key]
            for key, job in jobs.items():
                while key[1] not in job.got and not job.done:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimedOutError(f"queue data log {key[0]}: data chunk {lsn_str(key[1])} did not come "
                                            f"within {WAIT_S_MAX} s")
                    self._cv.wait(remaining)
                if key[1] in job.got:
                    found[key] = job.got[key[1]]
                elif job.error is not None:
                    raise job.error
                else:
                    found[key] = None
        return found

    def resolve(self, refs: list[DataRef | None]) -> list[list[bytes] | None]:
        """Each pointer chunk's payloads (None for a chunk of version 1, or whose data is gone)."""
        got = self.chunks(keys(refs))
        out: list[list[bytes] | None] = []
        for ref in refs:
            if ref is None:
                out.append(None)
                continue
            chunks = [got.get((ref.data_log, lsn)) for lsn in ref.lsns]
            try:
                out.append([chunks[r][i] for r, i in zip(ref.refs, ref.indexes, strict=True)])  # type: ignore[index]
            except (IndexError, TypeError):  # a data chunk gone (None), or not the one written
                out.append(None)
        return out


def keys(refs: Iterable[DataRef | None]) -> list[tuple[int, int]]:
    """The data chunks ``(data log, LSN)`` the pointer chunks ``refs`` name."""
    return [(ref.data_log, lsn) for ref in refs if ref is not None for lsn in ref.lsns]


class _Lows:
    """What an eviction knows of one partition log: the pointer chunks read from its trim point up
    to ``next_lsn``, as a sliding-window minimum of the data LSNs they name (each kept entry
    ``(chunk LSN, data LSN)`` names less than every later one), so that each eviction reads only
    the chunks appended since the previous one."""

    def __init__(self, next_lsn: int) -> None:
        self.next_lsn = next_lsn
        self.window: deque[tuple[int, int]] = deque()

    def low(self, partition: Any) -> int | None:
        """The lowest data LSN the partition's kept pointer chunks name (None: none), or -1 when
        more than ``POINTERS_SCANNED_MAX`` are kept (then nothing is known of the others)."""
        trim = partition.trim_point()
        while self.window and self.window[0][0] <= trim:
            self.window.popleft()
        start = max(trim + 1, self.next_lsn)
        if start <= partition.tail_lsn():
            with contextlib.closing(partition.read(start)) as items:
                for item in items:
                    if len(self.window) >= POINTERS_SCANNED_MAX:
                        return -1
                    if isinstance(item, Record):
                        data_lsn = pointer_data_lsn(item.payload)
                        if data_lsn is not None:
                            while self.window and self.window[-1][1] >= data_lsn:
                                self.window.pop()
                            self.window.append((item.lsn, data_lsn))
                        self.next_lsn = item.lsn + 1
                    elif isinstance(item, Gap):
                        self.next_lsn = max(self.next_lsn, item.lsn_hi + 1)
        return self.window[0][1] if self.window else None


class Evictions:
    """When each queue's data log was last evicted by this store handle (at most every
    ``EVICT_INTERVAL_S``), and what its evictions know of the partition logs; the thread that runs
    the evictions asked for after commits (:meth:`soon`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self.running = threading.Lock()
        """Held by an eviction (one at a time per store handle): it reads and updates ``lows``."""
        self.lows: dict[int, _Lows] = {}
        self._cv = threading.Condition(self._lock)
        self._pending: dict[str, None] = {}
        self._worker: threading.Thread | None = None

    def soon(self, queue: str, run: Callable[[str], object]) -> None:
        """``run(queue)`` on this handle's eviction thread if the queue is due (see :meth:`due`);
        returns at once. An eviction is a few dozen calls to a server (the partitions' states and
        their new pointer chunks, the transactions in progress): run by the commit that asked, it
        held that consumer's next dequeue for their time. ``run`` handles its own errors."""
        if not self.due(queue):
            return
        with self._cv:
            self._pending[queue] = None
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, args=(run,), daemon=True,
                                                name="seaway-queue-evict")
                self._worker.start()
            self._cv.notify_all()

    def _work(self, run: Callable[[str], object]) -> None:
        while True:
            with self._cv:
                while not self._pending:
                    if not self._cv.wait(WORKER_IDLE_S) and not self._pending:
                        self._worker = None
                        return
                queue = next(iter(self._pending))
                del self._pending[queue]
            run(queue)

    def due(self, queue: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(queue, -EVICT_INTERVAL_S) < EVICT_INTERVAL_S:
                return False
            if len(self._last) > 4096:
                self._last.clear()
            self._last[queue] = now
            return True


def evict(queues: Queues, queue: str, data_log: int, evictions: Evictions) -> int:
    """Trim ``queue``'s data log below the lowest data chunk anyone may still read (see the module's
    docstring); returns its trim point after (0: nothing done)."""
    with evictions.running:
        return _evict(queues, queue, data_log, evictions)


def _evict(queues: Queues, queue: str, data_log: int, evictions: Evictions) -> int:
    handle = queues.logs.get(data_log)
    low = handle.tail_lsn() + 1  # first: what is appended from now on is kept
    oldest_ms: int | None = None
    after = None
    while True:  # the transactions in progress come first in the listing
        page = queues.txn.list(after, LIST_PAGE)
        for info in page:
            if info.status is TxnStatus.IN_PROGRESS and info.began_ms is not None:
                oldest_ms = info.began_ms if oldest_ms is None else min(oldest_ms, info.began_ms)
        if len(page) < LIST_PAGE or page[-1].status is not TxnStatus.IN_PROGRESS:
            break
        after = page[-1]
    if oldest_ms is not None:
        low = min(low, handle.find_time(max(0, oldest_ms - CLOCK_MARGIN_MS)))
    seen: set[int] = set()
    for record, _ in queues._records(queue):
        for layout in (record.current, record.previous):
            for log_id in () if layout is None else layout.logs:
                seen.add(log_id)
                lows = evictions.lows.get(log_id)
                try:
                    partition = queues.logs.get(log_id)
                    if lows is None:
                        lows = evictions.lows[log_id] = _Lows(partition.trim_point() + 1)
                    found = lows.low(partition)
                except UnknownLogError:
                    # Deleted (with its group, or at a resize's barrier): nothing to read there.
                    evictions.lows.pop(log_id, None)
                    continue
                except BaseException:
                    evictions.lows.pop(log_id, None)  # read partly: start again next time
                    raise
                if found == -1:
                    return 0  # too many to know their lowest: keep everything this time
                if found is not None and found < low:
                    low = found
    if len(evictions.lows) > LOWS_KEPT_MAX:  # logs of queues deleted meanwhile: read again when needed
        for log_id in [log_id for log_id in evictions.lows if log_id not in seen]:
            del evictions.lows[log_id]
    trim_point = handle.trim_point()
    if low - 1 > trim_point:
        handle.trim(low - 1)
        return low - 1
    return trim_point
