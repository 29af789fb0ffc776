"""``sw.queues``: queues and their consumer groups, over logs, the metadata store and transactions.

A queue is a name; each of its consumer groups has a *layout* (a generation: size, strategy, key)
and one log per partition of that layout (one per consumer; a FIFO group has one, shared). The
producer places each entry, per group, in the partition of the consumer that owns it, so a
consumer reads only its own share, in order, and producers and consumers never coordinate. Writes
spread over the partitions' logs, never one hot spot. Every change of a group is one conditional
metadata batch; a resize starts a new generation (see :meth:`Queues.resize_group`).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seaway._clock import Clock, SystemClock
from seaway.errors import (
    ConditionFailedError,
    ConsumerGroupExistsError,
    InvalidArgumentError,
    LogExistsError,
    LogSealedError,
    LsnOutOfRangeError,
    OverloadedError,
    QueueExistsError,
    SeawayError,
    TimedOutError,
    TransactionConflictError,
    UnknownConsumerGroupError,
    UnknownLogError,
    UnknownQueueError,
)
from seaway.ledger import (
    ConsumerGroupCreated,
    ConsumerGroupDeleted,
    ConsumerGroupResized,
    QueueCreated,
    QueueDeleted,
)
from seaway.log import MetaApi, MetaBatch, lsn_str
from seaway.queues._chunks import drained
from seaway.queues._consumer import Consumer
from seaway.queues._count import CommittedCount, count_committed
from seaway.queues._data import DataChunks, Evictions, evict
from seaway.queues._lag import entries_between, forget, prune
from seaway.queues._producer import PRODUCER_GROUPS_REFRESH_S, Producer
from seaway.queues._ranges import CommittedRead, acknowledge, read_committed
from seaway.queues._records import (
    GROUPS_MAX,
    LIST_MAX,
    NAMESPACE,
    PARTITION_LOG_IDS,
    PARTITIONS_GROUP,
    READ_BYTES_DEFAULT,
    SIZE_MAX,
    Claim,
    GroupRecord,
    Layout,
    Position,
    Strategy,
    acknowledged_key,
    check_name,
    claim_key,
    claims_before,
    claims_prefix,
    decode_lsn,
    encode_lsn,
    group_key,
    groups_prefix,
    pointer_key,
    position_key,
    queue_key,
    reset_state_of,
    resets_key,
)
from seaway.txn import WAIT_IDS_MAX, AbortedJudges, TxnStatus

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from seaway.log import LogHandle, LogsApi
    from seaway.txn import Snapshot, Transaction, Transactions

log = logging.getLogger("seaway.queues")

RESET_ATTEMPTS_MAX = 5
"""Times a reset is tried again after losing a conflict to a consumer's commit."""
TRIM_RECORD_ATTEMPTS_MAX = 8
"""Times a trimmer records what it trims again after another trimmer of the log recorded first."""
LOG_ATTEMPTS_MAX = 100
"""Times a group's creation or resize chooses its logs' ids again when one was taken."""
BARRIER_RECHECK_S = 0.5
"""A ``resize_group`` waiting at its barrier checks it again after the end of any transaction in
progress when it last checked, and at least this often (for a consumer transaction begun since)."""


@dataclass(frozen=True)
class PartitionInfo:
    generation: int
    partition: int
    log_id: int
    position: Position
    tail_lsn: int
    final_lsn: int | None
    lag: int = 0
    """Committed entries of the partition not yet acknowledged (its *lag*), counted without reading
    the log: see :mod:`seaway.queues._lag`."""
    lag_bytes: int = 0
    """Their payload bytes (a chunk partly consumed counts in proportion to the entries left)."""

    def __repr__(self) -> str:  # LSNs as everything else prints them: e<epoch>n<esn>
        final = None if self.final_lsn is None else lsn_str(self.final_lsn)
        return f"PartitionInfo(generation={self.generation}, partition={self.partition}, log_id={self.log_id}, " \
               f"position={self.position!r}, tail_lsn={lsn_str(self.tail_lsn)}, final_lsn={final})"

    @property
    def drained(self) -> bool:
        """Read to its sealed end: the committed position past the final LSN."""
        return self.drained_at(self.position)

    def drained_at(self, position: Position) -> bool:
        """Whether a reader at ``position`` (its own record of what it read) read it to its sealed end."""
        return drained(self.final_lsn, position)


@dataclass(frozen=True)
class GroupInfo:
    """A consumer group as ``describe`` shows it: its layout, the previous one while a resize
    drains it, each partition's committed position, and the poison entries skipped."""

    queue: str
    name: str
    size: int
    strategy: Strategy
    key: str | None
    generation: int
    resizing: bool
    partitions: tuple[PartitionInfo, ...]
    skipped: int
    lag: int = 0
    """Committed entries not yet acknowledged, in all partitions (the sum of theirs)."""
    lag_bytes: int = 0
    """Their payload bytes."""

    def to_json(self) -> dict[str, Any]:
        return {"queue": self.queue, "group": self.name, "size": self.size, "strategy": self.strategy.value,
                "key": self.key, "generation": self.generation, "resizing": self.resizing,
                "skipped": self.skipped, "lag": self.lag, "lag_bytes": self.lag_bytes,
                "partitions": [{"generation": p.generation, "partition": p.partition, "log_id": p.log_id,
                                "position": list(p.position), "tail_lsn": p.tail_lsn,
                                "final_lsn": p.final_lsn, "drained": p.drained, "lag": p.lag,
                                "lag_bytes": p.lag_bytes}
                               for p in self.partitions]}


def parse_strategy(strategy: object) -> Strategy:
    try:
        return Strategy(strategy.value if isinstance(strategy, Strategy) else str(strategy).upper())
    except ValueError:
        raise InvalidArgumentError(f"a strategy is FIFO, ROUND_ROBIN or HASH, got {strategy!r}") from None


def check_strategy(size: object, strategy: object, key: object) -> tuple[int, Strategy, str | None]:
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= SIZE_MAX:
        raise InvalidArgumentError(f"a consumer group's size is in [1, {SIZE_MAX}], got {size!r}")
    chosen = parse_strategy(strategy)
    if chosen is Strategy.HASH:
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError("a HASH group names the entry key it partitions on (key=...)")
        return size, chosen, key
    if key is not None:
        raise InvalidArgumentError(f"only a HASH group has a key; {chosen.value} got {key!r}")
    return size, chosen, None


class Queues:
    """Queues and consumer groups of a store, embedded or remote alike. Thread-safe."""

    def __init__(self, logs: LogsApi, meta: MetaApi, txn: Transactions | None, clock: Clock | None = None) -> None:
        self.logs = logs
        self.meta = meta
        self._txn = txn
        self.aborted = AbortedJudges(meta)
        """What every reader of this instance's queue partitions asks about a chunk its snapshot
        calls visible: whether the log lists its transaction as aborted."""
        self.clock = clock or SystemClock()
        self._group_ready = False
        self.data = DataChunks(logs)
        """The data chunks this instance's readers read, kept for the other partitions pointing at them."""
        self._evictions = Evictions()

    @property
    def txn(self) -> Transactions:
        if self._txn is None:
            raise InvalidArgumentError("this connection has no transaction manager")
        return self._txn

    # --- queues -----------------------------------------------------------------------------------

    def create(self, queue: str, *, exist_ok: bool = False) -> None:
        check_name(queue, "queue")
        for _ in range(LOG_ATTEMPTS_MAX):
            batch = self.meta.batch().expect_absent(NAMESPACE, queue_key(queue))
            data_log = self._data_log_created(batch, queue)
            try:
                batch.put(NAMESPACE, queue_key(queue), json.dumps(
                    {"created_ms": self.clock.now_ms(), "data_log": data_log}).encode()).record(
                    QueueCreated(queue)).commit()
                return
            except ConditionFailedError:
                if not exist_ok:
                    raise QueueExistsError(f"queue {queue!r} exists") from None
                return
            except LogExistsError:
                continue  # an id was taken by chance: pick again
        raise InvalidArgumentError(f"queue {queue!r}: its data log could not be created in {LOG_ATTEMPTS_MAX} "
                                   "attempts; try again")

    def _data_log_created(self, batch: MetaBatch, queue: str) -> int:
        """A queue's data log (its payloads, once: see :mod:`seaway.queues._data`), created by
        ``batch``, the one that records it, with a random id of the partitions' group and a tag of
        this call's own in its name (never the log of a namesake being deleted)."""
        self._partition_group()
        lo, hi = PARTITION_LOG_IDS
        log_id = lo + secrets.randbelow((hi - lo + 1) // 2)
        batch.create_log(f"queue/{queue}/data.{secrets.token_hex(6)}", log_id, group=PARTITIONS_GROUP)
        return log_id

    def data_log(self, queue: str) -> int | None:
        """The queue's data log; a queue created by a version without one gets one now (its
        entries sent before stay where they are, in its partitions' logs). None if the queue does
        not exist."""
        for _ in range(LOG_ATTEMPTS_MAX):
            found = self.meta.get(NAMESPACE, queue_key(queue))
            if found is None:
                return None
            record = json.loads(found.value)
            if record.get("data_log") is not None:
                return int(record["data_log"])
            batch = self.meta.batch().expect_version(NAMESPACE, queue_key(queue), found.version)
            record["data_log"] = self._data_log_created(batch, queue)
            with contextlib.suppress(ConditionFailedError, LogExistsError):  # another did: read it again
                batch.put(NAMESPACE, queue_key(queue), json.dumps(record).encode()).commit()
        raise InvalidArgumentError(f"queue {queue!r}: its data log could not be created; try again")

    def evict_data(self, queue: str) -> int:
        """Trim the queue's data log below what every group acknowledged (see
        :mod:`seaway.queues._data`); returns its trim point (0: nothing done)."""
        found = self.meta.get(NAMESPACE, queue_key(queue))
        data_log = None if found is None else json.loads(found.value).get("data_log")
        if data_log is None:
            return 0
        try:
            return evict(self, queue, int(data_log), self._evictions)
        except UnknownLogError:  # the queue was deleted meanwhile
            return 0

    def evict_data_soon(self, queue: str) -> None:
        """:meth:`evict_data`, at most every few seconds per queue and best-effort, on a thread of
        this instance: it is asked for after commits and trims, which neither wait for it nor fail
        for it."""
        self._evictions.soon(queue, self._evict_quietly)

    def _evict_quietly(self, queue: str) -> None:
        try:
            self.evict_data(queue)
        except Exception as exc:  # on its own thread, after the commit: the next one tries again
            log.info("queue data log eviction failed; tried again later",
                     extra={"queue": queue, "error": str(exc)})

    def check_queue(self, queue: str) -> None:
        if self.meta.get(NAMESPACE, queue_key(check_name(queue, "queue"))) is None:
            raise UnknownQueueError(f"queue {queue!r} does not exist")

    def list(self) -> list[str]:
        return [key.decode()[2:] for key, _ in self.meta.scan(NAMESPACE, prefix=b"q/", limit=LIST_MAX)]

    def delete(self, queue: str) -> None:
        """Delete a queue, its groups, their logs and positions."""
        found = self.meta.get(NAMESPACE, queue_key(check_name(queue, "queue")))
        if found is None:
            raise UnknownQueueError(f"queue {queue!r} does not exist")
        for record, _ in self._records(queue):
            self.delete_group(queue, record.name)
        try:  # of two deletes, one applies and is recorded
            self.meta.batch().expect_version(NAMESPACE, queue_key(queue), found.version).delete(
                NAMESPACE, queue_key(queue)).record(QueueDeleted(queue)).commit()
        except ConditionFailedError:
            raise UnknownQueueError(f"queue {queue!r} was deleted meanwhile") from None
        data_log = json.loads(found.value).get("data_log")
        if data_log is not None:
            with contextlib.suppress(UnknownLogError):
                self.logs.delete(int(data_log))

    # --- groups -----------------------------------------------------------------------------------

    def _partition_group(self) -> None:
        if not self._group_ready:
            with contextlib.suppress(LogExistsError):
                self.logs.create_group(PARTITIONS_GROUP, *PARTITION_LOG_IDS)
            self._group_ready = True

    def _layout_logs(self, batch: MetaBatch, queue: str, group: str, generation: int, strategy: Strategy,
                     size: int) -> tuple[int, ...]:
        """A layout's partition logs, created by ``batch`` (the one that records the layout: a
        crash leaves both or neither), with random ids of the partitions' group (taken only by
        chance: the commit then raises :class:`LogExistsError`, and the caller tries again), named
        ``queue/<queue>/<group>/<generation>/<partition>.<tag>`` with a tag of this call's own: never
        the logs of another layout of the same name (those of a group a concurrent ``delete_group``
        is deleting, or of a racing resize)."""
        self._partition_group()
        lo, hi = PARTITION_LOG_IDS
        ids: list[int] = []
        tag = secrets.token_hex(6)
        for p in range(1 if strategy is Strategy.FIFO else size):
            name = f"queue/{queue}/{group}/{generation}/{p}.{tag}"
            log_id = lo + secrets.randbelow((hi - lo + 1) // 2)  # the upper half: for ids the log layer picks
            batch.create_log(name, log_id, group=PARTITIONS_GROUP)
            ids.append(log_id)
        return tuple(ids)

    def create_group(self, queue: str, group: str, size: int = 1, strategy: Strategy | str = Strategy.FIFO,
                     key: str | None = None, *, exist_ok: bool = False) -> None:
        """A consumer group of ``size`` consumers: it receives every entry sent from now on.

        :class:`ConsumerGroupExistsError` if the queue has a group of that name; with ``exist_ok``,
        only if that group's size, strategy or key differs from those asked (the error says which:
        :meth:`resize_group` changes them).

        Returns ``PRODUCER_GROUPS_REFRESH_S`` (0.1 s) after the group's record is written: producers read
        a queue's groups at most that often (a read per send would cost a round trip through a
        server), so by then every producer's next send reads them again and reaches the group."""
        self.check_queue(queue)
        check_name(group, "consumer group")
        size, chosen, key = check_strategy(size, strategy, key)
        if self.meta.get(NAMESPACE, group_key(queue, group)) is not None:
            self._exists(queue, group, (size, chosen, key), exist_ok)
            return
        if len(self._records(queue)) >= GROUPS_MAX:
            raise InvalidArgumentError(f"a queue has at most {GROUPS_MAX} consumer groups")
        for _ in range(LOG_ATTEMPTS_MAX):
            batch = self.meta.batch().expect_absent(NAMESPACE, group_key(queue, group))
            layout = Layout(1, size, chosen, key, self._layout_logs(batch, queue, group, 1, chosen, size))
            try:
                batch.put(NAMESPACE, group_key(queue, group), GroupRecord(group, layout).encode()).record(
                    ConsumerGroupCreated(queue, group, size, chosen.value, key)).commit()
                break
            except ConditionFailedError:
                self._exists(queue, group, (size, chosen, key), exist_ok)  # created meanwhile
                return
            except LogExistsError:
                continue  # an id was taken by chance: pick again
        else:
            raise InvalidArgumentError(f"group {group!r}: its logs could not be created in {LOG_ATTEMPTS_MAX} "
                                       "attempts; try again")
        time.sleep(PRODUCER_GROUPS_REFRESH_S)  # every producer's view of the groups is younger than that

    def _exists(self, queue: str, group: str, asked: tuple[int, Strategy, str | None], exist_ok: bool) -> None:
        """Raise :class:`ConsumerGroupExistsError` for a group that exists, unless ``exist_ok`` and it
        has the size, strategy and key ``asked``."""
        if not exist_ok:
            raise ConsumerGroupExistsError(f"queue {queue!r} has a consumer group {group!r}")
        info = self.describe_group(queue, group)
        size, strategy, key = asked
        differs = [f"{what} is {has!r}, not {wanted!r}" for what, has, wanted in (
            ("size", info.size, size), ("strategy", info.strategy.value, strategy.value), ("key", info.key, key))
            if has != wanted]
        if differs:
            raise ConsumerGroupExistsError(f"queue {queue!r} has a consumer group {group!r} with another layout: "
                                           f"{'; '.join(differs)} (resize_group changes it)")

    def group_record(self, queue: str, group: str) -> tuple[GroupRecord, int]:
        found = self.meta.get(NAMESPACE, group_key(queue, group))
        if found is None:
            self.check_queue(queue)
            raise UnknownConsumerGroupError(f"queue {queue!r} has no consumer group {group!r}")
        return GroupRecord.decode(found.value), found.version

    def _records(self, queue: str) -> builtins.list[tuple[GroupRecord, int]]:
        return [(GroupRecord.decode(v.value), v.version)
                for _, v in self.meta.scan(NAMESPACE, prefix=groups_prefix(queue), limit=GROUPS_MAX + 1)]

    def groups(self, queue: str) -> builtins.list[str]:
        self.check_queue(queue)
        return [record.name for record, _ in self._records(queue)]

    def resize_group(self, queue: str, group: str, size: int | None = None, *, key: str | None = None,
                     strategy: Strategy | str | None = None, wait_s: float | None = 10.0) -> GroupInfo:
        """Change a group's size (and/or strategy or key), keeping per-key order.

        The new layout is a new generation with logs of its own, recorded in one conditional batch;
        the old generation's logs are then sealed, so that producers move to the new layout (an
        append to a sealed log makes them read the group again). Consumers first drain the old
        partitions (consumer ``c`` of the new layout drains old partitions ``p`` with
        ``p % size == c``) up to their sealed ends - the barrier - and only then read the new ones.
        Returns once the old layout is drained (or after ``wait_s``, None: at once); ``describe``
        shows the progress.
        """
        record, version = self.group_record(queue, group)
        if record.previous is not None:
            self._seal(record.previous)
            self.finish_resize(queue, group)
            record, version = self.group_record(queue, group)
            if record.previous is not None:
                raise InvalidArgumentError(f"group {group!r} is still draining its previous resize; try again")
        current = record.current
        wanted = current.strategy if strategy is None else parse_strategy(strategy)
        if key is None and wanted is Strategy.HASH:
            key = current.key  # a HASH group resized keeps its key unless given another
        new_size, chosen, new_key = check_strategy(current.size if size is None else size, wanted, key)
        generation = current.generation + 1
        # Recorded with the new layout, which producers and consumers go by from this batch on;
        # draining the old one afterwards (the barrier) is not a change of the group's layout.
        resized = ConsumerGroupResized(queue, group, new_size, chosen.value, new_key, generation)
        for _ in range(LOG_ATTEMPTS_MAX):
            batch = self.meta.batch().expect_version(NAMESPACE, group_key(queue, group), version)
            layout = Layout(generation, new_size, chosen, new_key,
                            self._layout_logs(batch, queue, group, generation, chosen, new_size))
            try:
                batch.put(NAMESPACE, group_key(queue, group),
                          GroupRecord(group, layout, current, self.clock.now_ms()).encode()).record(resized).commit()
                break
            except ConditionFailedError:
                raise InvalidArgumentError(f"group {group!r} changed during the resize; try again") from None
            except LogExistsError:
                continue  # an id was taken by chance: pick again
        else:
            raise InvalidArgumentError(f"group {group!r}: its new logs could not be created in {LOG_ATTEMPTS_MAX} "
                                       "attempts; try again")
        self._seal(current)
        if wait_s is not None:
            self._await_barrier(queue, group, wait_s)
        return self.describe_group(queue, group)

    def _await_barrier(self, queue: str, group: str, wait_s: float) -> None:
        """Pass the resize's barrier within ``wait_s`` (or raise :class:`TimedOutError`). The old
        layout is drained by consumers' commits: between two checks this waits for the end of a
        transaction in progress before the check (listed first, so that a commit after the check
        is one of theirs or of a transaction begun after the listing), woken by the end itself;
        at most ``BARRIER_RECHECK_S`` at a time, for those begun after the listing."""
        deadline = time.monotonic() + wait_s
        while True:
            in_progress = [info.id for info in self.txn.list(limit=WAIT_IDS_MAX)
                           if info.status is TxnStatus.IN_PROGRESS]
            if self.finish_resize(queue, group):
                return
            remaining_s = deadline - time.monotonic()
            if remaining_s <= 0:
                raise TimedOutError(f"group {group!r}: the old layout was not drained within {wait_s} s "
                                    "(are its consumers running?); the resize goes on")
            step_s = min(remaining_s, BARRIER_RECHECK_S)
            if in_progress:
                try:
                    self.txn.wait_ended(in_progress, step_s)
                    continue
                except OverloadedError:
                    pass  # a server too busy to hold the wait: a pause instead
            time.sleep(step_s)

    def _seal(self, layout: Layout) -> None:
        for log_id in layout.logs:
            with contextlib.suppress(UnknownLogError, LogSealedError):
                self.logs.get(log_id).seal()

    def _readable_end(self, log_id: int) -> int | None:
        """The last LSN a reader of a queue partition log may still find: its final LSN once sealed,
        None while it is open, and 0 once deleted (an old layout's, dropped at a resize's barrier:
        nothing is left to read, so any position is past its end). Not the log's ``final_lsn``,
        which a deleted log does not have."""
        try:
            final: int | None = self.logs.get(log_id).final_lsn()
        except UnknownLogError:
            return 0
        return final

    def position(self, queue: str, group: str, generation: int, partition: int) -> Position:
        found = self.meta.get(NAMESPACE, position_key(queue, group, generation, partition))
        return Position(1, 0) if found is None else Position.decode(found.value)

    def claim_pointer(self, queue: str, group: str, generation: int) -> tuple[int, int]:
        """A FIFO layout's claim pointer (the first LSN no consumer claimed) and its version."""
        found = self.meta.get(NAMESPACE, pointer_key(queue, group, generation))
        return (1, 0) if found is None else (decode_lsn(found.value), found.version)

    def trim_acknowledged(self, log_id: int, lsn: int, handle: LogHandle | None = None) -> None:
        """Trim a queue partition's log up to ``lsn``, every entry up to which its group
        acknowledged. The LSN is recorded first (it only rises), so that a position below it (a
        reset to the head that committed after the trimmer read the positions it trims by) starts
        above it: those entries were acknowledged, not lost (see :meth:`start_position`)."""
        key = acknowledged_key(log_id)
        for _ in range(TRIM_RECORD_ATTEMPTS_MAX):
            found = self.meta.get(NAMESPACE, key)
            if found is not None and decode_lsn(found.value) >= lsn:
                break
            batch = self.meta.batch()
            batch = (batch.expect_absent(NAMESPACE, key) if found is None
                     else batch.expect_version(NAMESPACE, key, found.version))
            try:
                batch.put(NAMESPACE, key, encode_lsn(lsn)).commit()
                break
            except ConditionFailedError:
                continue  # another trimmer of the log recorded meanwhile: look again
        else:
            return  # not recorded: no trim (a later one tries again)
        (handle or self.logs.get(log_id)).trim(lsn)

    def start_position(self, log_id: int, position: Position) -> Position:
        """Where a reader of a queue partition's log starts for a stored ``position``: the position
        itself, or just above the entries the group acknowledged and a trim dropped if it lies
        below them (a reset to the head raced the trim: the group goes on from what is left)."""
        found = self.meta.get(NAMESPACE, acknowledged_key(log_id))
        if found is None:
            return position
        return max(position, Position(decode_lsn(found.value) + 1, 0))

    def evict_claimed(self, queue: str, group: str, generation: int, log_id: int) -> None:
        """Trim a FIFO log below every claim still held and the claim pointer: what lies there
        was acknowledged by every consumer of the group. The claims of rounds before the last
        reset are dropped too (no one reads them; a consumer transaction that held one when the
        reset committed may have written it back)."""
        round_ = self.resets(queue, group)
        low = self.claim_pointer(queue, group, generation)[0]
        for _, found in self.meta.scan(NAMESPACE, prefix=claims_prefix(queue, group, generation, round_),
                                       limit=SIZE_MAX):
            low = min(low, Claim.decode(found.value).position.lsn)
        if round_:
            batch = self.meta.batch()
            for start, end in claims_before(queue, group, generation, round_):
                batch.delete_range(NAMESPACE, start, end)
            batch.commit()
        if low > 1:
            with contextlib.suppress(UnknownLogError):
                self.trim_acknowledged(log_id, low - 1)
                prune(self.meta.batch(), log_id, low).commit()

    def drained(self, queue: str, group: str, layout: Layout, owners: Iterable[int] | None = None) -> bool:
        """Whether ``layout`` (the old one a resize drains) is read to its end and acknowledged, for
        ``owners`` (consumer ids; all when None): each one's partition sealed and its committed
        position past the final LSN; of a FIFO layout, the claim pointer past its log's final LSN
        and no claim of theirs left. The one "drained" check of the queues (with :func:`drained`)."""
        if layout.strategy is Strategy.FIFO:
            if not drained(self._readable_end(layout.logs[0]),
                           Position(self.claim_pointer(queue, group, layout.generation)[0], 0)):
                return False
            round_ = self.resets(queue, group)
            if owners is None:
                return not self.meta.scan(NAMESPACE, prefix=claims_prefix(queue, group, layout.generation, round_),
                                          limit=1)
            return not any(self.meta.get(NAMESPACE, claim_key(queue, group, layout.generation, owner, round_))
                           for owner in owners)
        partitions = range(len(layout.logs)) if owners is None else [p for p in owners if p < len(layout.logs)]
        return all(self._partition_drained(queue, group, layout, p) for p in partitions)

    def _partition_drained(self, queue: str, group: str, layout: Layout, partition: int) -> bool:
        """Sealed, and nothing left to deliver past its committed position: the position is past
        the final LSN, or only chunks of aborted or timed-out transactions (and gaps) lie between.
        A consumer whose dequeue found only those and whose transaction then aborted (nothing to
        commit) never moves the position past them, yet the partition is drained."""
        final = self._readable_end(layout.logs[partition])
        position = self.position(queue, group, layout.generation, partition)
        if final is None or drained(final, position):
            return final is not None
        try:
            left = read_committed(self, queue, group, layout.generation, partition, position, None, 1, None,
                                  READ_BYTES_DEFAULT)
        except UnknownLogError:  # deleted at the barrier meanwhile
            return True
        except LsnOutOfRangeError:
            # The consumer committed past the position read above and trimmed below its new one
            # meanwhile (eviction): not known drained yet; the next check reads the new position.
            return False
        return not left.entries and not left.blocked and drained(final, left.next)

    def finish_resize(self, queue: str, group: str) -> bool:
        """Pass the barrier if every old partition is drained: drop the old layout, its positions
        and its logs. True when no resize is pending."""
        record, version = self.group_record(queue, group)
        old = record.previous
        if old is None:
            return True
        if any(self._readable_end(log_id) is None for log_id in old.logs):
            self._seal(old)  # a resize cut off before it sealed them
            return False
        if not self.drained(queue, group, old):
            return False
        try:
            batch = self.meta.batch()
            for log_id in old.logs:
                batch.delete(NAMESPACE, acknowledged_key(log_id))
            batch.expect_version(NAMESPACE, group_key(queue, group), version).put(
                NAMESPACE, group_key(queue, group), GroupRecord(group, record.current, None,
                                                                record.resized_ms).encode()).delete_prefix(
                NAMESPACE, f"p/{queue}/{group}/{old.generation}/".encode()).delete_prefix(
                NAMESPACE, claims_prefix(queue, group, old.generation)).delete_prefix(  # rounds after resets:
                NAMESPACE, f"cl/{queue}/{group}/{old.generation}.".encode()).delete(
                NAMESPACE, pointer_key(queue, group, old.generation)).commit()
        except ConditionFailedError:
            return False
        self._forget_counts(old.logs)
        for log_id in old.logs:
            with contextlib.suppress(UnknownLogError):
                self.logs.delete(log_id)
        return True

    def delete_group(self, queue: str, group: str) -> None:
        record, version = self.group_record(queue, group)
        try:
            batch = self.meta.batch()
            for layout in (record.current, record.previous):
                for log_id in () if layout is None else layout.logs:
                    batch.delete(NAMESPACE, acknowledged_key(log_id))
            batch.expect_version(NAMESPACE, group_key(queue, group), version).delete(
                NAMESPACE, group_key(queue, group)).delete_prefix(
                NAMESPACE, f"p/{queue}/{group}/".encode()).delete_prefix(
                NAMESPACE, f"s/{queue}/{group}/".encode()).delete_prefix(
                NAMESPACE, f"c/{queue}/{group}/".encode()).delete_prefix(
                NAMESPACE, f"cl/{queue}/{group}/".encode()).delete(
                NAMESPACE, resets_key(queue, group)).record(ConsumerGroupDeleted(queue, group)).commit()
        except ConditionFailedError:
            raise InvalidArgumentError(f"group {group!r} changed while being deleted; try again") from None
        self._forget_counts([*record.current.logs, *(() if record.previous is None else record.previous.logs)])
        for layout in (record.current, record.previous):
            for log_id in () if layout is None else layout.logs:
                with contextlib.suppress(UnknownLogError):
                    self.logs.delete(log_id)

    def reset_group(self, queue: str, group: str, to: str = "head", *, time_ms: int | None = None) -> GroupInfo:
        """Move a group's positions (a FIFO group's claim pointer), as ``kafka-consumer-groups
        --reset-offsets`` does: to ``"head"`` (each partition's oldest entry still kept: entries acknowledged but
        not evicted yet are delivered again), ``"tail"`` (after its newest: only entries enqueued
        from now on, and those of transactions still in progress, are delivered), or, with
        ``time_ms``, the first chunk written at or after that time (``to`` is then ignored).
        Returns the group as described after the reset.

        The reset is a transaction that writes every partition's position and declares them as
        conflict keys, as a consumer's commit does: a consumer's transaction that began before
        the reset committed and moves a position fails its commit (retriable), and one that
        began after it finds the reset when it starts dequeuing (it reads the group's reset count
        once per transaction) and reads from the new positions. So a reset racing a consumer
        never has an entry processed twice by an exactly-once consumer: one of the two commits
        fails. It is retried a few times on conflicts of its own.

        A FIFO group's reset moves its claim pointer and drops every claim, which it declares as
        conflict keys: a consumer transaction delivering from a claim fails its commit. Claims are
        kept by round, the group's reset count: a claim made while the reset commits is of the
        round it ends, which no one reads any more, and a consumer's claim is conditional on the
        count it read at its transaction's first dequeue.

        :class:`InvalidArgumentError` while a resize drains the previous layout, or for another
        ``to``."""
        if time_ms is None and to not in ("head", "tail"):
            raise InvalidArgumentError(f"a reset goes to 'head', 'tail' or a time (time_ms=), got {to!r:.60}")
        if time_ms is not None and (not isinstance(time_ms, int) or isinstance(time_ms, bool) or time_ms < 0):
            raise InvalidArgumentError(f"time_ms is a non-negative integer, got {time_ms!r:.40}")
        record, _ = self.group_record(queue, group)
        if record.previous is not None:
            raise InvalidArgumentError(f"group {group!r} is resizing: reset it once the previous layout is drained")
        layout = record.current
        for attempt in range(RESET_ATTEMPTS_MAX):
            tx = self.txn.begin()
            try:
                if layout.strategy is Strategy.FIFO:
                    self._fence_claims(queue, group, tx.id)
                self._stage_reset(tx, queue, group, layout, to, time_ms)
                tx.commit()
            except (TransactionConflictError, ConditionFailedError):
                if attempt + 1 == RESET_ATTEMPTS_MAX:
                    raise
                continue
            finally:
                tx.abort()  # does nothing once committed
            break
        return self.describe_group(queue, group)

    def _stage_reset(self, tx: Transaction, queue: str, group: str, layout: Layout, to: str,
                     time_ms: int | None) -> None:
        """Stage a reset in ``tx``: each partition's new position (a FIFO layout: its claim pointer,
        and its claims dropped), and the reset count one higher, all of them conflict keys."""
        def stage(key: bytes, value: bytes | None) -> None:
            if value is None:
                tx.stage_delete(NAMESPACE, key)
            else:
                tx.stage_put(NAMESPACE, key, value)
            tx.add_conflicts(NAMESPACE.encode() + b"/" + key)

        bounds = self.logs.bounds(layout.logs)
        for partition, log_id in enumerate(layout.logs):
            b = bounds.get(log_id)
            if b is None:
                raise UnknownLogError(f"queue partition log {log_id} is gone: was the group deleted?")
            if time_ms is not None:
                lsn = self.logs.get(log_id).find_time(time_ms)
            else:
                lsn = b.trim_point + 1 if to == "head" else b.tail_lsn + 1
            if layout.strategy is Strategy.FIFO:
                stage(pointer_key(queue, group, layout.generation), encode_lsn(max(lsn, 1)))
            else:
                stage(position_key(queue, group, layout.generation, partition), Position(max(lsn, 1), 0).encode())
        resets = self.resets(queue, group)
        if layout.strategy is Strategy.FIFO:
            # The claims held now: a consumer transaction delivering from one fails its commit. A
            # claim made after this scan is of this round too, which the new count ends: no one
            # reads it, and the claim a consumer makes is conditional on the count's version.
            for key, _ in self.meta.scan(NAMESPACE, prefix=claims_prefix(queue, group, layout.generation, resets),
                                         limit=SIZE_MAX):
                stage(key, None)
        stage(resets_key(queue, group), str(1 + resets).encode())

    def _fence_claims(self, queue: str, group: str, txn_id: int) -> None:
        """Before a FIFO reset reads the claims: mark the reset count with the reset's transaction,
        which changes its version. A claim is conditional on the version its consumer read, so none
        made from now on lands, and a consumer that finds the mark while that transaction is in
        progress claims nothing; once the transaction ended, the mark is gone (committed: the new
        count replaced it) or void (aborted, timed out: consumers clear it). ConditionFailedError
        if another reset marked it meanwhile."""
        count, version, _ = self.reset_state(queue, group)
        self.meta.batch().expect_version(NAMESPACE, resets_key(queue, group), version).put(
            NAMESPACE, resets_key(queue, group), f"{count}:{txn_id}".encode()).commit()

    def resets(self, queue: str, group: str) -> int:
        """How many times the group's positions were reset (what consumers check for a reset; a
        FIFO group's claims are of the round this count names)."""
        return self.reset_state(queue, group)[0]

    def reset_state(self, queue: str, group: str) -> tuple[int, int, int | None]:
        """The group's reset count, the version of the key that holds it (0: never reset), and the
        transaction of a FIFO reset that marked it (None: none). A FIFO consumer's claim is
        conditional on that version, so that no claim is made of a round a reset ended."""
        return reset_state_of(self.meta.get(NAMESPACE, resets_key(queue, group)), group)

    def _forget_counts(self, log_ids: Iterable[int]) -> None:
        """Drop the entry counts of deleted partition logs (best-effort: only space is at stake)."""
        batch = self.meta.batch()
        for log_id in log_ids:
            forget(batch, log_id)
        with contextlib.suppress(SeawayError):
            batch.commit()

    def _lag(self, queue: str, group: str, layout: Layout, partition: int, position: Position) -> tuple[int, int]:
        """Committed entries of a partition not yet acknowledged (see :mod:`seaway.queues._lag`); of
        a FIFO layout's log, those past the claim pointer and those in claims not yet acknowledged."""
        log_id = layout.logs[partition]
        if self._readable_end(log_id) == 0:
            return 0, 0  # deleted: nothing left to read
        if layout.strategy is not Strategy.FIFO:
            return entries_between(self.meta, log_id, position)
        total, nbytes = entries_between(self.meta, log_id,
                                        Position(self.claim_pointer(queue, group, layout.generation)[0], 0))
        round_ = self.resets(queue, group)
        for _, found in self.meta.scan(NAMESPACE, prefix=claims_prefix(queue, group, layout.generation, round_),
                                       limit=SIZE_MAX):
            claim = Claim.decode(found.value)
            claimed, claimed_bytes = entries_between(self.meta, log_id, claim.position, claim.last_lsn)
            total, nbytes = total + claimed, nbytes + claimed_bytes
        return total, nbytes

    def describe_group(self, queue: str, group: str) -> GroupInfo:
        record, _ = self.group_record(queue, group)
        partitions = []
        for layout in (record.previous, record.current):
            if layout is None:
                continue
            for partition, log_id in enumerate(layout.logs):
                try:
                    handle = self.logs.get(log_id)
                    tail, final = int(handle.tail_lsn()), handle.final_lsn()
                except UnknownLogError:
                    tail, final = 0, 0
                position = self.position(queue, group, layout.generation, partition)
                partitions.append(PartitionInfo(layout.generation, partition, log_id, position, tail, final,
                                                *self._lag(queue, group, layout, partition, position)))
        skipped = sum(int(v.value) for _, v in self.meta.scan(NAMESPACE, prefix=f"s/{queue}/{group}/".encode(),
                                                              limit=SIZE_MAX))
        current = record.current
        return GroupInfo(queue, group, current.size, current.strategy, current.key, current.generation,
                         record.previous is not None, tuple(partitions), skipped, sum(p.lag for p in partitions),
                         sum(p.lag_bytes for p in partitions))

    # --- producers and consumers -----------------------------------------------------------------

    def producer(self, queue: str) -> Producer:
        """A producer of the queue: ``enqueue(tx, payload, keys)`` inside transactions."""
        self.check_queue(queue)
        return Producer(self, queue)

    def consumer(self, queue: str, group: str, consumer_id: int) -> Consumer:
        """Consumer ``consumer_id`` of a group: ``dequeue(tx)`` its own share, acknowledged by the
        transaction's commit."""
        self.group_record(queue, group)
        return Consumer(self, queue, group, consumer_id)

    # --- reading by position, for processors that keep their own checkpoint ----------------------

    def read_committed(self, queue: str, group: str, generation: int, partition: int, start: Position,
                       end: Position | None = None, *, entries_max: int = 500,
                       snapshot: Snapshot | None = None, bytes_max: int = READ_BYTES_DEFAULT) -> CommittedRead:
        """Read partition ``partition`` (consumer ``partition``'s share) of generation ``generation``
        of a ROUND_ROBIN or HASH group from position ``start``, outside any transaction, without
        moving the group's positions.

        Returns up to ``entries_max`` (at most 10,000) committed entries in order and the position
        after them: chunks of aborted or timed-out transactions are stepped over; the read stops
        before the first chunk of a transaction still in progress (``blocked``), at ``end`` (not
        included), at the log's tail as it is when called, after ``entries_max`` entries, or before
        an entry that would take the payloads past ``bytes_max`` bytes (at most 64 MiB; the first
        entry is read whatever its size). It never waits for a transaction. ``snapshot`` judges
        the chunks (default: a fresh one).

        Deterministic: a range ``[start, end)`` whose ``end`` an earlier read returned holds only
        chunks that were committed or aborted then, and reads the same entries every time, until
        the group acknowledges past it. A ``start`` below what was acknowledged and evicted raises
        :class:`LsnOutOfRangeError`; a FIFO layout (claims, no positions) or a generation that is
        not the group's raises :class:`InvalidArgumentError`.
        """
        return read_committed(self, queue, group, generation, partition, start, end, entries_max, snapshot,
                              bytes_max)

    def count_committed(self, queue: str, group: str, generation: int, partition: int, start: Position,
                        end: Position | None = None, *, entries_max: int = 100_000,
                        snapshot: Snapshot | None = None) -> CommittedCount:
        """What :meth:`read_committed` would read from ``start``, counted without reading the
        payloads: the number of committed entries (at most ``entries_max``, up to 10,000,000),
        the position after them and whether the count stopped before a chunk of a transaction in
        progress (``blocked``), as ``read_committed`` with the same arguments would return them
        (without its byte limit). Committed transactions' chunks are counted from the entry counts
        their producers recorded at commit; only what those do not cover (aborted chunks, chunks in
        progress or committed meanwhile, entries written before counts were recorded) is read from
        the log (``records_read``). For a planner that places ranges the readers read later."""
        return count_committed(self, queue, group, generation, partition, start, end, entries_max, snapshot)

    def acknowledge(self, queue: str, group: str, generation: int, positions: Mapping[int, Position]) -> None:
        """Commit the group's positions of ``generation`` (partition -> position) as consumers'
        commits would, in a transaction of its own: what lies before them is acknowledged.

        A position never moves backwards (one at or below the committed one is left as it is), nor
        past its log's tail, nor past or into a chunk of a transaction still in progress
        (:class:`InvalidArgumentError`: acknowledged, its entries would be trimmed away before it
        commits). The positions are conflict keys like a
        dequeue's: a consumer instance that delivered the same entries in a transaction still open
        fails its commit (retriable), and this call retries its own conflicts a few times. Once
        committed, each log is trimmed below its position (eviction); acknowledging the end of the
        generation a resize drains passes the barrier. A generation already dropped at a barrier
        has nothing left to acknowledge: the call does nothing.
        """
        acknowledge(self, queue, group, generation, positions)
