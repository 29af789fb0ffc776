"""Helpers for log tests: a reference model of log semantics and normalised read results."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from seaway import Gap, GapType, Record
from seaway.log import ReadItem, make_lsn

Item = tuple[object, ...]


def normalize(items: list[ReadItem]) -> list[Item]:
    """Records as (``"record"``, lsn, timestamp, payload); adjacent gaps of one type merged."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, Gap):
            prev = out[-1] if out else None
            if prev is not None and prev[0] == item.type and prev[2] == item.lsn_lo - 1:
                out[-1] = (item.type, prev[1], item.lsn_hi)
            else:
                out.append((item.type, item.lsn_lo, item.lsn_hi))
        else:
            out.append(("record", item.lsn, item.timestamp_ms, item.payload))
    return out


@dataclass
class LogModel:
    """What a log must hold: LogDevice semantics in a few lines, with no storage at all."""

    records: list[Record] = field(default_factory=list)
    trim_point: int = 0
    epochs_taken: int = 0
    active: bool = False
    next_esn: int = 1
    last_timestamp_ms: int = 0

    def append(self, log_id: int, payloads: list[bytes], now_ms: int) -> range:
        if not self.active:
            self.epochs_taken += 1
            self.active = True
            self.next_esn = 1
        first = make_lsn(self.epochs_taken, self.next_esn)
        self.next_esn += len(payloads)
        self.last_timestamp_ms = max(self.last_timestamp_ms, now_ms)
        for i, p in enumerate(payloads):
            self.records.append(Record(log_id, first + i, self.last_timestamp_ms, p))
        return range(first, first + len(payloads))

    @property
    def tail(self) -> int:
        return self.records[-1].lsn if self.records else 0

    def read(self, log_id: int, lsn_from: int, lsn_until: int) -> list[Item]:
        out: list[Item] = []
        n = lsn_from
        if n <= self.trim_point:
            hi = min(self.trim_point, lsn_until)
            out.append((GapType.TRIM, n, hi))
            n = hi + 1
        for r in self.records:
            if r.lsn < n or r.lsn > lsn_until:
                continue
            if r.lsn > n:  # within an epoch ESNs are dense, so a missing range crosses epochs
                out.append((GapType.BRIDGE, n, r.lsn - 1))
            out.append(("record", r.lsn, r.timestamp_ms, r.payload))
            n = r.lsn + 1
        if n <= lsn_until:
            out.append((GapType.BRIDGE, n, lsn_until))
        return out

    def find_time(self, timestamp_ms: int) -> int:
        for r in self.records:
            if r.lsn > self.trim_point and r.timestamp_ms >= timestamp_ms:
                return r.lsn
        return self.tail + 1


def run_until_killed(module: str, data: Path, acks: Path, run: int, rng: random.Random, seed: int,
                     pause_s_max: float) -> None:
    """Run ``python -m module DATA ACKS RUN`` until it has acknowledged something, then SIGKILL it at
    a random moment up to ``pause_s_max`` later."""
    before = acks.stat().st_size if acks.exists() else 0
    child = subprocess.Popen([sys.executable, "-m", module, str(data), str(acks), str(run)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while ((acks.stat().st_size if acks.exists() else 0) == before and child.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.005)
    assert child.poll() is None, f"seed {seed}: child died: {child.stderr.read() if child.stderr else ''!r}"
    time.sleep(rng.uniform(0, pause_s_max))
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    if child.stderr:
        child.stderr.close()
