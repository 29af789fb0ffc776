"""Fakes, a clock, a seeded simulator and crash helpers shared by Seaway's tests."""

from seaway.testing._clock import FakeClock
from seaway.testing._epochs import MemoryEpochStore
from seaway.testing._faults import failing_rocksdb, failing_wal_syncs
from seaway.testing._sim import SimConfig, SimReport, Simulation, simulate

__all__ = [
    "FakeClock",
    "MemoryEpochStore",
    "SimConfig",
    "SimReport",
    "Simulation",
    "failing_rocksdb",
    "failing_wal_syncs",
    "simulate",
]
