"""A seeded simulator for the log layer's state machines.

It runs one sequencer per log and one storage node over a real LogsDB, with a fake clock, a fake
network (per-link FIFO delivery with random delays and lost messages) and a fake disk (random
latency and failed writes), crashes sequencers and the whole process at random, and reads
continuously. Everything random comes from one seed, so a failure replays from its seed.

It checks the guarantees of the log layer:
- every acknowledged append is read back, byte for byte, at its LSNs;
- no record is read that was never sent, and none whose append definitely failed;
- reads are repeatable: a reader that followed the log as it grew saw exactly what a reader
  that reads it all at the end sees.
"""

from __future__ import annotations

import functools
import heapq
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from seaway.errors import StorageError, TimedOutError
from seaway.log import (
    LSN_MAX,
    LSN_OLDEST,
    AppendAcked,
    AppendFailed,
    AppendRequest,
    DiskWrite,
    DiskWriteDone,
    EpochGranted,
    Gap,
    LogReadState,
    ReadItem,
    Record,
    RequestEpoch,
    SealReply,
    Sequencer,
    SequencerConfig,
    StorageConfig,
    StorageNode,
    StoreMsg,
    StoreReply,
    Tick,
    bump_epoch,
    lsn_str,
    read_chunk,
)
from seaway.logsdb import LogsDB, LogsDBConfig
from seaway.testing._clock import FakeClock
from seaway.testing._epochs import MemoryEpochStore


@dataclass(frozen=True)
class SimConfig:
    logs: int = 3
    appends: int = 400
    records_per_append_max: int = 4
    drop_p: float = 0.03
    disk_fail_p: float = 0.05
    sequencer_crash_p: float = 0.01
    process_crash_p: float = 0.005
    delay_ms_max: int = 20
    disk_ms_max: int = 8
    append_gap_ms_max: int = 6
    read_every_ms: int = 15
    tick_every_ms: int = 10
    writes_in_flight_max: int = 1
    """As the embedded store's storage config: with 2, a write is applied when it starts (or fails
    then) and completes later, in order, as the store's WAL syncer completes them."""


@dataclass
class SimReport:
    seed: int
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    records_read: int = 0
    gaps: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    violations: list[str] = field(default_factory=list)


_Action = Callable[[], None]


class Simulation:
    def __init__(self, seed: int, path: Path, config: SimConfig | None = None) -> None:
        self.seed = seed
        self.config = config or SimConfig()
        self.rng = random.Random(seed)
        self.clock = FakeClock()
        self.db = LogsDB(path, LogsDBConfig(partition_duration_s=0.5), self.clock)
        self.epochs = MemoryEpochStore()
        self.seq_config = SequencerConfig(store_timeout_ms=60, store_attempts_max=4, plug_attempts_max=6)
        self.report = SimReport(seed)
        self._queue: list[tuple[int, int, int, _Action]] = []
        self._order = 0
        self._incarnation = 0  # bumps when the whole process crashes: its in-flight work vanishes
        self._link_last: dict[tuple[str, int], int] = {}
        self.log_ids = list(range(1, self.config.logs + 1))
        self.sequencers = {log: Sequencer(log, self.seq_config) for log in self.log_ids}
        self._seq_generation = dict.fromkeys(self.log_ids, 0)
        self._disk_done_at_ms = 0
        self._failed_apply: int | None = None
        self.storage = self._new_storage()
        self._next_request = 0
        self.requests: dict[int, tuple[int, tuple[bytes, ...]]] = {}
        self.acked: dict[int, range] = {}
        self.failed: set[int] = set()
        self.sent: dict[tuple[int, int], bytes] = {}  # (log, lsn) -> payload of every StoreMsg
        self.followers = {log: LogReadState(log, LSN_OLDEST, LSN_MAX) for log in self.log_ids}
        self.followed: dict[int, list[ReadItem]] = {log: [] for log in self.log_ids}

    def _new_storage(self) -> StorageNode:
        logs = self.db.log_ids()
        return StorageNode({i: self.db.last_lsn(i) for i in logs}, {i: self.db.sealed_epoch(i) for i in logs},
                           StorageConfig(writes_in_flight_max=self.config.writes_in_flight_max))

    # --- the event loop -------------------------------------------------------------------------

    def _at(self, delay_ms: int, action: _Action, survives_crash: bool = False) -> None:
        self._order += 1
        incarnation = -1 if survives_crash else self._incarnation
        heapq.heappush(self._queue, (self.clock.now_ms() + delay_ms, self._order, incarnation, action))

    def run(self) -> SimReport:
        t = 0
        for _ in range(self.config.appends):
            t += self.rng.randint(0, self.config.append_gap_ms_max)
            self._at(t, self._client_append, survives_crash=True)
        horizon = t + 5_000
        for every, action in ((self.config.read_every_ms, self._follow), (self.config.tick_every_ms, self._tick)):
            for when in range(0, horizon, every):
                self._at(when, action, survives_crash=True)
        while self._queue:
            when, _, incarnation, action = heapq.heappop(self._queue)
            self.clock.set_ms(max(when, self.clock.now_ms()))
            if incarnation in (-1, self._incarnation):
                action()
        self._check()
        self.db.close()
        return self.report

    def _send(self, link: tuple[str, int], action: _Action) -> None:
        """Deliver over a FIFO link after a random delay, unless the message is lost."""
        if self.rng.random() < self.config.drop_p:
            return
        when = self.clock.now_ms() + self.rng.randint(0, self.config.delay_ms_max)
        when = max(when, self._link_last.get(link, 0))
        self._link_last[link] = when
        self._at(when - self.clock.now_ms(), action)

    # --- clients and crashes ----------------------------------------------------------------------

    def _client_append(self) -> None:
        if self.rng.random() < self.config.process_crash_p:
            self._crash_process()
        log = self.rng.choice(self.log_ids)
        if self.rng.random() < self.config.sequencer_crash_p:
            self._crash_sequencer(log)
        self._next_request += 1
        rid = self._next_request
        count = self.rng.randint(1, self.config.records_per_append_max)
        payloads = tuple(f"{self.seed}/{rid}/{i}/".encode() + self.rng.randbytes(self.rng.randint(0, 40))
                         for i in range(count))
        self.requests[rid] = (log, payloads)
        self._to_sequencer(log, AppendRequest(rid, payloads))

    def _crash_sequencer(self, log: int) -> None:
        self.report.crashes += 1
        self._seq_generation[log] += 1
        self.sequencers[log] = Sequencer(log, self.seq_config)

    def _crash_process(self) -> None:
        """Every role restarts from what is on disk; messages and disk writes in flight vanish."""
        self.report.crashes += 1
        self._incarnation += 1
        self._link_last.clear()
        for log in self.log_ids:
            self._seq_generation[log] += 1
            self.sequencers[log] = Sequencer(log, self.seq_config)
        self._failed_apply = None
        self.storage = self._new_storage()

    def _tick(self) -> None:
        for log in self.log_ids:
            self._to_sequencer(log, Tick())

    # --- roles --------------------------------------------------------------------------------

    def _to_sequencer(self, log: int, event: object, generation: int | None = None) -> None:
        if generation is not None and generation != self._seq_generation[log]:
            return  # addressed to a sequencer that has crashed since
        generation = self._seq_generation[log]
        sequencer = self.sequencers[log]
        for effect in sequencer.handle(event, self.clock.now_ms()):  # type: ignore[arg-type]
            if isinstance(effect, AppendAcked):
                self.acked[effect.request_id] = range(effect.first_lsn, effect.first_lsn + effect.count)
            elif isinstance(effect, AppendFailed):
                if not isinstance(effect.error, TimedOutError):
                    self.failed.add(effect.request_id)
            elif isinstance(effect, RequestEpoch):
                granted = EpochGranted(bump_epoch(self.epochs, log))
                self._at(self.rng.randint(0, 5), functools.partial(self._to_sequencer, log, granted, generation))
            else:
                if isinstance(effect, StoreMsg):
                    for i, payload in enumerate(effect.payloads):
                        self.sent[(log, effect.first_lsn + i)] = payload
                self._send(("seq", log * 1000 + generation), functools.partial(self._to_storage, effect))

    def _to_storage(self, event: object) -> None:
        effects = self.storage.handle(event)  # type: ignore[arg-type]
        effects += self.storage.flush()
        for effect in effects:
            if isinstance(effect, DiskWrite):
                if self.config.writes_in_flight_max > 1:
                    self._pipelined_disk(effect)
                else:
                    self._at(self.rng.randint(0, self.config.disk_ms_max), functools.partial(self._disk, effect))
            elif isinstance(effect, StoreReply | SealReply):
                generation = self._seq_generation[effect.log_id]
                self._send(("storage", effect.log_id * 1000 + generation),
                           functools.partial(self._to_sequencer, effect.log_id, effect, generation))

    def _pipelined_disk(self, write: DiskWrite) -> None:
        """The embedded store's two-stage commit: apply now, complete later and in order; a write
        issued while an earlier one's failure is not yet reported is not applied."""
        error: StorageError | None = None
        if self._failed_apply is not None:
            error = StorageError("an earlier disk write failed")
        elif self.rng.random() < self.config.disk_fail_p:
            error = StorageError("simulated disk failure")
            self._failed_apply = write.write_id
        else:
            self.db.write(write.ops, sync=False)
        done_at = max(self.clock.now_ms() + self.rng.randint(0, self.config.disk_ms_max), self._disk_done_at_ms)
        self._disk_done_at_ms = done_at

        def complete() -> None:
            if write.write_id == self._failed_apply:
                self._failed_apply = None
            self._to_storage(DiskWriteDone(write.write_id, error))

        self._at(done_at - self.clock.now_ms(), complete)

    def _disk(self, write: DiskWrite) -> None:
        error = None
        if self.rng.random() < self.config.disk_fail_p:
            error = StorageError("simulated disk failure")
        else:
            self.db.write(write.ops, sync=False)
        self._to_storage(DiskWriteDone(write.write_id, error))

    # --- readers and checks ---------------------------------------------------------------------

    def _follow(self) -> None:
        for log in self.log_ids:
            state = self.followers[log]
            want = state.want(self.storage.released(log))
            if want is not None:
                self.followed[log].extend(state.on_chunk(read_chunk(self.db, want, 1 << 12)))

    def _read_all(self, log: int) -> list[ReadItem]:
        released = self.storage.released(log)
        if released < LSN_OLDEST:
            return []
        state = LogReadState(log, LSN_OLDEST, released)
        items: list[ReadItem] = []
        while (want := state.want(released)) is not None:
            items.extend(state.on_chunk(read_chunk(self.db, want, 1 << 12)))
        return items

    def _check(self) -> None:
        violations = self.report.violations
        records: dict[tuple[int, int], bytes] = {}
        for log in self.log_ids:
            final = _normalize(self._read_all(log))
            followed = _normalize(self.followed[log])
            if not _is_prefix(followed, final):
                violations.append(f"log {log}: a following reader saw {followed[:3]}... unlike the final "
                                  f"reader {final[:3]}...")
            last = 0
            for item in self._read_all(log):
                if isinstance(item, Record):
                    self.report.records_read += 1
                    if item.lsn <= last:
                        violations.append(f"log {log}: LSN {lsn_str(item.lsn)} not increasing")
                    last = item.lsn
                    records[(log, item.lsn)] = item.payload
                    if self.sent.get((log, item.lsn)) != item.payload:
                        violations.append(f"log {log}: record at {lsn_str(item.lsn)} was never sent")
                else:
                    self.report.gaps[item.type.value] += 1
        for rid, lsns in self.acked.items():
            log, payloads = self.requests[rid]
            for lsn, payload in zip(lsns, payloads, strict=True):
                if records.get((log, lsn)) != payload:
                    violations.append(f"acknowledged append {rid} lost or changed at {lsn_str(lsn)} of log {log}")
        for rid in self.failed:
            log, payloads = self.requests[rid]
            if any(p in records.values() for p in payloads):
                violations.append(f"append {rid} failed definitively but its record is readable")
        self.report.acked = len(self.acked)
        self.report.failed = len(self.failed)
        self.report.unknown = len(self.requests) - len(self.acked) - len(self.failed)


def _normalize(items: list[ReadItem]) -> list[tuple[object, ...]]:
    """Records as they are; runs of same-type gaps merged (chunk boundaries may split a gap)."""
    out: list[tuple[object, ...]] = []
    for item in items:
        if isinstance(item, Gap):
            if out and out[-1][0] == item.type and out[-1][2] + 1 == item.lsn_lo:  # type: ignore[operator]
                out[-1] = (item.type, out[-1][1], item.lsn_hi)
            else:
                out.append((item.type, item.lsn_lo, item.lsn_hi))
        else:
            out.append(("record", item.lsn, item.payload))
    return out


def _is_prefix(part: list[tuple[object, ...]], whole: list[tuple[object, ...]]) -> bool:
    if len(part) > len(whole):
        return False
    if not part:
        return True
    if part[:-1] != whole[: len(part) - 1]:
        return False
    last, other = part[-1], whole[len(part) - 1]
    if last[0] == "record":
        return last == other
    return last[0] == other[0] and last[1] == other[1] and last[2] <= other[2]  # type: ignore[operator]


def simulate(seed: int, path: Path, config: SimConfig | None = None) -> SimReport:
    """Run one simulation; the report lists every violated guarantee (none, when all is well)."""
    return Simulation(seed, path, config).run()
