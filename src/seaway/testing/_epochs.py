"""An in-memory epoch store, for the simulator and unit tests."""

from __future__ import annotations

import threading
from collections.abc import Mapping


class MemoryEpochStore:
    """Epoch counters in a dict; same contract as the durable stores, durable for a process only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epochs: dict[int, int] = {}
        self.cas_calls = 0

    def get(self, log_id: int) -> int:
        with self._lock:
            return self._epochs.get(log_id, 0)

    def compare_and_set(self, log_id: int, expected: int, new: int) -> bool:
        with self._lock:
            self.cas_calls += 1
            if self._epochs.get(log_id, 0) != expected:
                return False
            self._epochs[log_id] = new
            return True

    def compare_and_set_many(self, changes: Mapping[int, tuple[int, int]]) -> bool:
        with self._lock:
            self.cas_calls += 1
            if any(self._epochs.get(log_id, 0) != expected for log_id, (expected, _) in changes.items()):
                return False
            for log_id, (_, new) in changes.items():
                self._epochs[log_id] = new
            return True

    def close(self) -> None:
        pass
