"""Fakes, a clock, a seeded simulator, crash helpers and a power-loss filesystem shared by Seaway's tests."""

from seaway.cluster import ZooKeeperProcess, zookeeper_unavailable
from seaway.testing._append_faults import AppendFaults, InjectedFault
from seaway.testing._clock import FakeClock
from seaway.testing._crash_points import CrashingMeta, CrashPoint
from seaway.testing._epochs import MemoryEpochStore
from seaway.testing._faults import WRITE_CALLS, CallBudget, failing_rocksdb, failing_rocksdb_after, failing_wal_syncs
from seaway.testing._powerloss import (
    PAGE_BYTES,
    CutMode,
    CutReport,
    PowerLossFS,
    PowerLossUnavailableError,
    powerloss_unavailable,
)
from seaway.testing._sim import SimConfig, SimReport, Simulation, simulate

__all__ = [
    "PAGE_BYTES",
    "WRITE_CALLS",
    "AppendFaults",
    "CallBudget",
    "CrashPoint",
    "CrashingMeta",
    "CutMode",
    "CutReport",
    "FakeClock",
    "InjectedFault",
    "MemoryEpochStore",
    "PowerLossFS",
    "PowerLossUnavailableError",
    "SimConfig",
    "SimReport",
    "Simulation",
    "ZooKeeperProcess",
    "failing_rocksdb",
    "failing_rocksdb_after",
    "failing_wal_syncs",
    "powerloss_unavailable",
    "simulate",
    "zookeeper_unavailable",
]
