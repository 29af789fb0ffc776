"""Producers: entries enqueued inside a transaction, their payloads written once per queue at commit.

A producer buffers a transaction's entries and sends them when the transaction commits (or when
they reach ``flush_bytes``): it reads the queue's groups, places each entry in the partition of
the consumer that owns it in each group, appends the payloads once to the queue's data log while
it registers the partitions' logs with the transaction, and then appends one pointer chunk per
partition (and data chunk), all at once (see :mod:`seaway.queues._data`). What it sends at the
commit goes in the commit's own step (:meth:`Transaction.append_at_commit`): the data chunks, the
pointer chunks completed with their LSNs, and the entry counts completed with the pointer chunks'
LSNs, in the one call that commits (see :class:`_Step`). The entries become
visible when the transaction commits; if an append finds its log sealed (the group was resized),
the entries of that chunk are placed again under the group's new layout (pointing at the data
chunks already written). A send that fails (an entry without its HASH group's key, an
append whose outcome is unknown) fails the transaction: whatever the caller does next, its commit
raises that error and aborts it, so its data, wherever it landed, is never visible.

A producer reads the queue's groups at most every ``PRODUCER_GROUPS_REFRESH_S``, and ``create_group``
returns only that long after its record was written: a send that begins after ``create_group``
returned uses a read begun after the record was written, so the new group gets its entries (a
resized or deleted group's entries are redirected at once, its old logs being sealed or gone).

A ROUND_ROBIN group's entries are dealt to its consumers in turn, continuing where the producer's
previous send to that group stopped (see :meth:`Layout.place`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seaway.errors import (
    InvalidArgumentError,
    LogDeletedError,
    LogSealedError,
    PayloadTooLargeError,
    SeawayError,
    UnknownLogError,
)
from seaway.log import LINKED_BATCHES_MAX, LinkedBatch, LsnSlot
from seaway.queues._lag import COUNT_BYTES, counts_key, encode_counts
from seaway.queues._records import (
    CHUNK_BYTES_MAX,
    ENTRY_BYTES_MAX,
    NAMESPACE,
    POINTER_ENTRIES_MAX,
    Chunk,
    DataRef,
    Layout,
    Strategy,
    chunk_overhead,
    encode_pointer,
)
from seaway.txn import LinkedWrite

if TYPE_CHECKING:
    from seaway.queues._queues import Queues
    from seaway.txn import Transaction

FLUSH_BYTES = 8 << 20
"""A transaction's entries buffered before they are sent ahead of its commit."""
RELAYOUTS_MAX = 8
HANDLES_MAX = 4096
PRODUCER_GROUPS_REFRESH_S = 0.1
"""How long a producer goes on with the groups it read (timed from before the read), and how long
``create_group`` waits after writing a group's record before it returns: together, a send that
begins after ``create_group`` returned reaches the new group."""
COUNTED_LOGS_MAX = 500
"""Partition logs per transaction whose entry counts a producer stages for lag (one metadata write
each, of the transaction's 1,000): entries a transaction writes to more are sent, not counted."""
DATA_BATCH_BYTES = 4 << 20
"""Data chunks a send appends together, in one batch of consecutive records, at most (bytes)."""
DATA_PARTS_MAX = 64
"""Data chunks a send splits its entries into at most by where the groups placed them (see
:func:`_data_parts`; more past CHUNK_BYTES_MAX)."""
STEP_BYTES_MAX = FLUSH_BYTES + CHUNK_BYTES_MAX
"""Payload bytes a commit's own step appends at most (more are sent before it, as a flush sends them):
within a server's request bound with room to spare."""
TURNS_MAX = 1024
"""Groups whose ROUND_ROBIN turn a producer remembers (forgetting one only moves where that
group's next send starts)."""


@dataclass
class _Pending:
    entries: list[tuple[int, bytes, Mapping[str, Any] | None]] = field(default_factory=list)
    nbytes: int = 0
    failed: BaseException | None = None
    """The error a send of this transaction's entries failed with: its commit raises it again."""
    chunks: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    """Partition log -> the chunks sent to it, as (LSN, entries, payload bytes): staged at commit for lag (see
    :mod:`seaway.queues._lag`)."""


def _first_turn(write_pointer: int) -> int:
    """Where a producer's first send to a ROUND_ROBIN group starts dealing: a mix of the write
    pointer (splitmix64), so that short-lived producers do not all start at consumer 0 (write
    pointers are multiples of 10**6)."""
    z = (write_pointer + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def _split(write_pointer: int, share: list[tuple[int, bytes, Mapping[str, Any] | None]]) -> list[Chunk]:
    """A partition's entries as chunks of at most CHUNK_BYTES_MAX bytes each."""
    parts = [Chunk(write_pointer)]
    for counter, payload, _ in share:
        if parts[-1].nbytes + len(payload) + chunk_overhead(len(parts[-1].payloads) + 1) > CHUNK_BYTES_MAX:
            parts.append(Chunk(write_pointer))
        parts[-1].add(counter, payload)
    return parts


def _data_parts(write_pointer: int, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
                placed: list[tuple[int, list[int]]]) -> list[Chunk]:
    """A send's entries as data chunks: one (or more past CHUNK_BYTES_MAX) per combination of the
    partitions the groups placed an entry in, so that each consumer reads the data chunks of its
    share and no others' payloads. The largest groups first, and the smallest left out of the
    combination while it makes more than DATA_PARTS_MAX chunks (their consumers then read the
    chunks their entries are in, with others' entries beside)."""
    order = sorted(placed, key=lambda group: -group[0])
    while True:
        keys = list(zip(*(partitions for _, partitions in order), strict=True)) if order else [()] * len(entries)
        if len(order) <= 1 or len(set(keys)) <= DATA_PARTS_MAX:
            break
        order = order[:-1]
    buckets: dict[tuple[int, ...], list[tuple[int, bytes, Mapping[str, Any] | None]]] = {}
    for key, entry in zip(keys, entries, strict=True):
        buckets.setdefault(key, []).append(entry)
    return [part for key in sorted(buckets) for part in _split(write_pointer, buckets[key])]


def _pointer_chunks(write_pointer: int, share: list[tuple[int, bytes, Mapping[str, Any] | None]],
                    data: dict[int, tuple[int, int, int]]) -> list[tuple[list[int], int, bytes]]:
    """A partition's entries as pointer chunks (at most POINTER_ENTRIES_MAX entries each): their
    counters, payload bytes and encoded chunk."""
    out = []
    for start in range(0, len(share), POINTER_ENTRIES_MAX):
        run = share[start:start + POINTER_ENTRIES_MAX]
        counters = [counter for counter, _, _ in run]
        lsns: dict[int, int] = {}
        refs, indexes = [], []
        data_log = 0
        for counter in counters:
            data_log, lsn, index = data[counter]
            refs.append(lsns.setdefault(lsn, len(lsns)))
            indexes.append(index)
        ref = DataRef(data_log, list(lsns), refs, indexes)
        out.append((counters, sum(len(payload) for _, payload, _ in run), encode_pointer(write_pointer, counters, ref)))
    return out


_Entry = tuple[int, bytes, Mapping[str, Any] | None]
_Placement = tuple[dict[tuple[str, int], list[_Entry]], dict[tuple[str, int], int], list[tuple[int, list[int]]]]


@dataclass
class _Step:
    """A send made by the commit's own step (see :meth:`Producer._with_commit`): the data chunks'
    batches first, then one batch of pointer chunks per partition log, whose slots take the data
    chunks' LSNs; and per partition log a count record (see :mod:`seaway.queues._lag`) whose key
    and value take the pointer chunks' LSNs."""

    entries: list[_Entry]
    placement: _Placement
    data_log: int
    batches: list[LinkedBatch]
    writes: list[LinkedWrite]
    data_batches: int
    data_counters: list[list[list[int]]]
    """Per data batch, per record, the counters of its entries."""
    pointers: list[tuple[int, tuple[str, int], int, list[tuple[list[int], int]], list[_Entry]]]
    """Per pointer batch: its index, (group, partition), log, each record's (counters, payload
    bytes), and the share it carries."""

    @staticmethod
    def build(write_pointer: int, data_log: int, entries: list[_Entry], placed: list[tuple[int, list[int]]],
              shares: dict[tuple[str, int], list[_Entry]], logs: dict[tuple[str, int], int],
              earlier: dict[int, list[tuple[int, int, int]]]) -> _Step | None:
        """The step for a send (``earlier``: the chunks earlier sends of the transaction put in
        each partition log, counted with these); None if it takes more than LINKED_BATCHES_MAX batches."""
        data: list[list[bytes]] = []
        data_counters: list[list[list[int]]] = []
        size = DATA_BATCH_BYTES
        for part in _data_parts(write_pointer, entries, placed):  # a few batches of consecutive records
            if size + part.nbytes > DATA_BATCH_BYTES:
                data.append([])
                data_counters.append([])
                size = 0
            data[-1].append(part.encode())
            data_counters[-1].append(list(part.counters))
            size += part.nbytes
        if len(data) + len(shares) > LINKED_BATCHES_MAX:
            return None
        batches = [LinkedBatch(data_log, payloads) for payloads in data]
        chunk_at: list[tuple[int, int]] = []  # a data chunk's number -> (batch, record)
        where: dict[int, tuple[int, int, int]] = {}  # counter -> (data log, data chunk's number, index)
        for b, chunks in enumerate(data_counters):
            for r, counters in enumerate(chunks):
                for index, counter in enumerate(counters):
                    where[counter] = (data_log, len(chunk_at), index)
                chunk_at.append((b, r))
        step = _Step(entries, (shares, logs, placed), data_log, batches, [], len(batches), data_counters, [])
        for place, share in shares.items():
            at = len(batches)
            payloads: list[bytes] = []
            slots: list[tuple[int, LsnSlot]] = []
            records: list[tuple[list[int], int]] = []
            for counters, nbytes, pointer in _pointer_chunks(write_pointer, share, where):
                numbers = list(dict.fromkeys(where[counter][1] for counter in counters))  # as the chunk names them
                first = len(pointer) - 8 * len(counters) - 8 * len(numbers)  # LSNs u64 * refs | ref, index u32 * count
                slots.extend((len(payloads), LsnSlot(*chunk_at[number], first + 8 * j))
                             for j, number in enumerate(numbers))
                payloads.append(pointer)
                records.append((counters, nbytes))
            batches.append(LinkedBatch(logs[place], payloads, slots))
            step.pointers.append((at, place, logs[place], records, share))
            before = earlier.get(logs[place], [])
            if len(step.writes) < COUNTED_LOGS_MAX:
                key = counts_key(logs[place], 0)
                value = encode_counts([*before, *((0, len(counters), nbytes) for counters, nbytes in records)])
                step.writes.append(LinkedWrite(
                    NAMESPACE, key, value, [LsnSlot(at, len(payloads) - 1, len(key) - 16, hex=True)],
                    [LsnSlot(at, r, COUNT_BYTES * (len(before) + r)) for r in range(len(records))]))
        return step


def _copied(keys: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if keys is None:
        return None
    if not isinstance(keys, Mapping):
        raise InvalidArgumentError(f"an entry's keys are a mapping (or None), got {type(keys).__name__}")
    return dict(keys)


class Producer:
    """Enqueues entries to one queue inside transactions. Thread-safe; one producer may serve
    many transactions at once."""

    def __init__(self, queues: Queues, queue: str) -> None:
        self._queues = queues
        self.queue = queue
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._handles: dict[int, Any] = {}
        self._groups: tuple[list[tuple[str, Layout]] | None, float] = (None, 0.0)
        self._data_log_id: int | None = None
        self._turns: dict[str, int] = {}
        """Per ROUND_ROBIN group, the turn (consumer, modulo its size) the next send starts at."""

    def logs(self) -> list[int]:
        """The logs a transaction's entries go to, as the producer knows the groups now (its data
        log and every partition log of their current layouts): declared at its begin
        (``sw.transaction(logs=producer.logs())``), the commit's step registers none of them, which
        saves the manager an edit and a sync per transaction. A log the groups change to meanwhile
        is registered by the step as usual. Refreshed as :meth:`enqueue` refreshes the groups."""
        data_log = self._data_log()
        found = [] if data_log is None else [data_log]
        for _, layout in self._targets():
            found.extend(layout.logs)
        return found

    def enqueue(self, tx: Transaction, payload: bytes, keys: Mapping[str, Any] | None = None) -> None:
        """Add an entry to the queue as part of ``tx``; ``keys`` are the named keys HASH groups
        partition on (a HASH group's key missing from them raises :class:`MissingHashKeyError`
        when the entry is placed, at the latest at commit)."""
        self.enqueue_batch(tx, [payload], None if keys is None else [keys])

    def enqueue_batch(self, tx: Transaction, payloads: Iterable[bytes],
                      keys: Iterable[Mapping[str, Any] | None] | None = None) -> None:
        tx.check_open()
        batch = list(payloads)
        # The mappings are copied now: a caller may reuse one mapping for every enqueue, and the
        # entries are placed only when they are sent.
        key_list = [None] * len(batch) if keys is None else [_copied(k) for k in keys]
        if len(key_list) != len(batch):
            raise InvalidArgumentError("give one keys mapping per payload")
        for payload in batch:
            if not isinstance(payload, bytes):
                raise InvalidArgumentError(f"an entry's payload is bytes, got {type(payload).__name__}")
            if len(payload) > ENTRY_BYTES_MAX:
                raise PayloadTooLargeError(f"an entry is at most {ENTRY_BYTES_MAX} bytes, got {len(payload)}")
        with self._lock:
            pending = self._pending.get(tx.id)
            if pending is None:
                pending = self._pending[tx.id] = _Pending()
                tx.before_commit(lambda: self._flush(tx, last=True))
                tx.after_end(lambda committed: self._forget(tx.id))
            if pending.failed is not None:
                raise pending.failed
            # Counters are the transaction's, per queue: another producer object of the same queue
            # enqueuing in the same transaction never repeats an entry id.
            counter = tx.take_numbers(f"queue/{self.queue}", len(batch))
            for payload, entry_keys in zip(batch, key_list, strict=True):
                pending.entries.append((counter, payload, entry_keys))
                counter += 1
                pending.nbytes += len(payload)
            full = pending.nbytes >= FLUSH_BYTES
        if full:
            self._flush(tx)

    def _handle(self, log_id: int) -> Any:
        """The partition log's handle, looked up once (a remote lookup is a round trip)."""
        handle = self._handles.get(log_id)
        if handle is None:
            if len(self._handles) >= HANDLES_MAX:
                self._handles.clear()
            handle = self._handles[log_id] = self._queues.logs.get(log_id)
        return handle

    def _forget(self, txn_id: int) -> None:
        with self._lock:
            self._pending.pop(txn_id, None)

    def flush(self, tx: Transaction) -> None:
        """Send the entries ``tx`` enqueued here so far (a commit does it anyway): they are in the
        queue's logs from now on, visible when ``tx`` commits, never if it aborts."""
        tx.check_open()
        self._flush(tx)

    def _flush(self, tx: Transaction, last: bool = False) -> None:
        """Send what ``tx`` holds here (``last``: at its commit, then stage the entry counts of what
        was sent). If the send fails, the error is remembered and raised again by every later
        flush, enqueue and the commit (which then aborts ``tx``): the entries taken for the failed
        send are gone from the buffer, so the transaction can never be committed whole."""
        with self._lock:
            pending = self._pending.get(tx.id)
            if pending is None:
                return
            if pending.failed is not None:
                raise pending.failed
            entries, pending.entries, pending.nbytes = pending.entries, [], 0
        if entries:
            try:
                if last and self._with_commit(tx, entries, pending):
                    return
                self._send(tx, entries, self._targets(), 0, pending.chunks)
            except BaseException as exc:
                with self._lock:
                    pending.failed = exc
                raise
        if last:
            self._stage_counts(tx, pending)

    @staticmethod
    def _stage_counts(tx: Transaction, pending: _Pending) -> None:
        """Stage the entry counts of the chunks sent (see :mod:`seaway.queues._lag`)."""
        for log_id, chunks in list(pending.chunks.items())[:COUNTED_LOGS_MAX]:
            tx.stage_put(NAMESPACE, counts_key(log_id, max(c[0] for c in chunks)), encode_counts(chunks))
        pending.chunks = {}

    def _with_commit(self, tx: Transaction, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
                     pending: _Pending) -> bool:
        """Have the commit's own step append ``entries`` (their data chunks, and the pointer chunks
        that name them) and write their counts: one call through a server for the whole commit
        (see :meth:`Transaction.append_at_commit`). False (nothing done) when they do not fit one
        step: then they are sent first, as a flush sends them."""
        if sum(len(payload) for _, payload, _ in entries) > STEP_BYTES_MAX:
            return False
        data_log = self._data_log()
        if data_log is None:
            return False
        targets = self._targets()
        placement = self._placement(tx, entries, targets)
        shares, logs, placed = placement
        if not shares:
            self._stage_counts(tx, pending)  # no group: nobody is to get them, and nothing is kept
            return True
        step = _Step.build(tx.id, data_log, entries, placed, shares, logs, pending.chunks)
        if step is None:  # more batches than a step carries: sent first, placed as they are
            self._send(tx, entries, targets, 0, pending.chunks, placement=placement)
            self._stage_counts(tx, pending)
            return True
        tx.append_at_commit(step.batches, step.writes, lambda outcomes: self._step_failed(tx, step, outcomes, pending))
        stepped = {log_id for _, _, log_id, _, _ in step.pointers}
        others = [(log_id, chunks) for log_id, chunks in pending.chunks.items() if log_id not in stepped]
        for log_id, chunks in others[:max(0, COUNTED_LOGS_MAX - len(step.writes))]:  # sent by earlier flushes only
            tx.stage_put(NAMESPACE, counts_key(log_id, max(c[0] for c in chunks)), encode_counts(chunks))
        return True

    def _step_failed(self, tx: Transaction, step: _Step, outcomes: list[range | SeawayError],
                     pending: _Pending) -> None:
        """A batch of the commit's step failed, so it did not commit: count what landed, place
        again what found its log sealed or gone (as a send does), then stage the counts; the
        transaction then commits as usual. Any other failure is raised (the transaction aborts)."""
        if not outcomes:  # the step could not carry them (other writers' batches): sent now, as placed
            self._send(tx, step.entries, [], 0, pending.chunks, placement=step.placement)
            self._stage_counts(tx, pending)
            return
        data: dict[int, tuple[int, int, int]] = {}
        data_gone = False
        for i, outcome in enumerate(outcomes[:step.data_batches]):
            if isinstance(outcome, range):
                for lsn, counters in zip(outcome, step.data_counters[i], strict=True):
                    for index, counter in enumerate(counters):
                        data[counter] = (step.data_log, lsn, index)
            elif isinstance(outcome, (UnknownLogError, LogDeletedError)):
                data_gone = True
            else:
                raise outcome
        moved: dict[str, list[tuple[int, bytes, Mapping[str, Any] | None]]] = {}
        for at, where, log_id, records, share in step.pointers:
            outcome = outcomes[at]
            if isinstance(outcome, range):
                for lsn, (counters, nbytes) in zip(outcome, records, strict=True):
                    pending.chunks.setdefault(log_id, []).append((lsn, len(counters), nbytes))
            elif isinstance(outcome, (LogSealedError, UnknownLogError, LogDeletedError)):
                moved.setdefault(where[0], []).extend(share)  # resized or deleted (or its data log gone)
            else:
                raise outcome
        if moved and data_gone:  # the queue's data log is gone: their payloads are written again
            self._data_log(refresh=True)
            current = dict(self._targets(refresh=True))
            for group, again in moved.items():
                if group in current:
                    again.sort(key=lambda entry: entry[0])
                    self._send(tx, again, [(group, current[group])], 1, pending.chunks)
        elif moved:
            self._again(tx, moved, 0, pending.chunks, data)
        self._stage_counts(tx, pending)

    def _targets(self, refresh: bool = False) -> list[tuple[str, Layout]]:
        """The queue's groups and their current layouts, read again once PRODUCER_GROUPS_REFRESH_S passed
        since the last read began (and when an append finds a log sealed or gone: the group was
        resized or deleted). A group whose ``create_group`` returned before this call is among
        them: it waited that long after writing the group's record."""
        with self._lock:
            cached, read_s = self._groups
        now_s = time.monotonic()
        if refresh or cached is None or now_s - read_s >= PRODUCER_GROUPS_REFRESH_S:
            cached = [(record.name, record.current) for record, _ in self._queues._records(self.queue)]
            with self._lock:
                self._groups = (cached, now_s)  # timed from before the read: never younger than it is
        return cached

    def _place(self, group: str, layout: Layout, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
               write_pointer: int) -> list[int]:
        if layout.strategy is not Strategy.ROUND_ROBIN:
            return layout.place(entries, 0)
        with self._lock:
            turn = self._turns.get(group)
            if turn is None:
                if len(self._turns) >= TURNS_MAX:
                    self._turns.clear()
                turn = _first_turn(write_pointer)
            self._turns[group] = (turn + len(entries)) % layout.size
        return layout.place(entries, turn)

    def _data_log(self, refresh: bool = False) -> int | None:
        """The queue's data log (None: the queue is gone), read once (and again when ``refresh``)."""
        with self._lock:
            cached = self._data_log_id
        if cached is None or refresh:
            cached = self._queues.data_log(self.queue)
            with self._lock:
                self._data_log_id = cached
        return cached

    def _placement(self, tx: Transaction, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
                   targets: list[tuple[str, Layout]]) -> _Placement:
        """Where each group places ``entries``: the share of each (group, partition), its log, and
        each group's size and partitions (see :func:`_data_parts`)."""
        shares: dict[tuple[str, int], list[tuple[int, bytes, Mapping[str, Any] | None]]] = {}
        logs: dict[tuple[str, int], int] = {}
        placed: list[tuple[int, list[int]]] = []
        # ROUND_ROBIN groups last: placing takes their turns, and a HASH group's placement may
        # still fail (a missing key), which would leave a turn taken by entries never sent.
        for group, layout in sorted(targets, key=lambda target: target[1].strategy is Strategy.ROUND_ROBIN):
            partitions = self._place(group, layout, entries, tx.id)
            placed.append((layout.size, partitions))
            for entry, partition in zip(entries, partitions, strict=True):
                shares.setdefault((group, partition), []).append(entry)
            for partition in set(partitions):
                logs[(group, partition)] = layout.logs[partition]
        return shares, logs, placed

    def _send(self, tx: Transaction, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
              targets: list[tuple[str, Layout]], relayouts: int,
              counted: dict[int, list[tuple[int, int, int]]], data: dict[int, tuple[int, int, int]] | None = None,
              placement: _Placement | None = None) -> None:
        """Send ``entries``: their payloads once, as data chunks of the queue's data log, then per
        group one pointer chunk per partition and data chunk (``data``: where the payloads of a
        send placed again after a resize already are, counter -> (data log, LSN, index);
        ``placement``: where ``targets`` placed them, if done already)."""
        shares, logs, placed = placement or self._placement(tx, entries, targets)
        if not shares:
            return  # no group: nobody is to get them, and nothing is kept
        if data is None:
            data = self._send_data(tx, entries, placed, logs.values())
            if data is None:  # the queue's data log is gone: deleted (and maybe created again)
                if relayouts >= RELAYOUTS_MAX:
                    raise LogSealedError(f"queue {self.queue!r}: its data log kept changing while entries were sent")
                self._data_log(refresh=True)
                self._send(tx, entries, self._targets(refresh=True), relayouts + 1, counted)
                return
        else:
            tx.register_logs(logs.values())
        sent: list[tuple[tuple[str, int], list[int], int, Future[int]]] = []
        moved: dict[str, list[tuple[int, bytes, Mapping[str, Any] | None]]] = {}
        by_counter = {counter: (counter, payload, keys) for counter, payload, keys in entries}
        for where, share in shares.items():
            try:
                handle = self._handle(logs[where])
            except UnknownLogError:  # the group was deleted, or resized twice
                moved.setdefault(where[0], []).extend(share)
                continue
            for counters, nbytes, pointer in _pointer_chunks(tx.id, share, data):
                sent.append((where, counters, nbytes, handle.append_async(pointer)))
        for (group, partition), counters, nbytes, future in sent:
            try:
                lsn = future.result()
            except (LogSealedError, UnknownLogError):  # the group was resized or deleted
                moved.setdefault(group, []).extend(by_counter[c] for c in counters)
                continue
            counted.setdefault(logs[(group, partition)], []).append((lsn, len(counters), nbytes))
        if moved:
            self._again(tx, moved, relayouts, counted, data)

    def _again(self, tx: Transaction, moved: dict[str, list[tuple[int, bytes, Mapping[str, Any] | None]]],
               relayouts: int, counted: dict[int, list[tuple[int, int, int]]],
               data: dict[int, tuple[int, int, int]]) -> None:
        """Send again, under the groups' layouts as they are now, what found its logs sealed or
        gone: per group, the entries ``moved`` (a group deleted meanwhile gets none), pointing at
        the data chunks already written (``data``)."""
        if relayouts >= RELAYOUTS_MAX:
            raise LogSealedError(f"queue {self.queue!r}: the groups kept changing while entries were sent")
        current = dict(self._targets(refresh=True))
        for group, again in moved.items():
            if group in current:  # else deleted meanwhile: nobody is to get them
                again.sort(key=lambda entry: entry[0])  # in the order enqueued: per-key order
                self._send(tx, again, [(group, current[group])], relayouts + 1, counted, data)

    def _send_data(self, tx: Transaction, entries: list[tuple[int, bytes, Mapping[str, Any] | None]],
                   placed: list[tuple[int, list[int]]], logs: Iterable[int]) -> dict[int, tuple[int, int, int]] | None:
        """Append the payloads of ``entries`` to the queue's data log (while the transaction
        registers the partition logs ``logs`` its pointers go to), split by where the groups
        placed them (``placed``: each group's size and each entry's partition in it, see
        :func:`_data_parts`); where each one is, counter -> (data log, LSN, index); None if the
        data log is gone."""
        data_log = self._data_log()
        if data_log is None:
            tx.register_logs(logs)
            return None
        parts = _data_parts(tx.id, entries, placed)
        # A few appends of consecutive records, not one per data chunk (a call each).
        batches: list[list[Chunk]] = [[]]
        size = 0
        for part in parts:
            if batches[-1] and size + part.nbytes > DATA_BATCH_BYTES:
                batches.append([])
                size = 0
            batches[-1].append(part)
            size += part.nbytes
        try:
            handle = self._handle(data_log)
            futures = [handle.append_batch_async([part.encode() for part in batch]) for batch in batches]
        except UnknownLogError:
            tx.register_logs(logs)
            return None
        tx.register_logs(logs)
        where: dict[int, tuple[int, int, int]] = {}
        for batch, future in zip(batches, futures, strict=True):
            try:
                lsns = future.result()
            except UnknownLogError:
                return None
            for part, lsn in zip(batch, lsns, strict=True):
                for index, counter in enumerate(part.counters):
                    where[counter] = (data_log, lsn, index)
        return where
