"""A small in-memory ledger, a fake clock in seconds, and a target that is down when told to."""

from __future__ import annotations

from seaway._errors import DeliveryError
from seaway.ledger import Change, LedgerEntry
from seaway.notify import Checkpoint, Message


class FakeLedger:
    """The ``sw.ledger`` contract (bounds, read, append, prune) over a list."""

    def __init__(self) -> None:
        self.entries: list[LedgerEntry] = []
        self.tail = 1
        self.now_ms = 1_700_000_000_000

    def append(self, change: Change) -> int:
        index = self.tail + len(self.entries)
        self.entries.append(LedgerEntry(index, self.now_ms, change))
        return index

    def bounds(self) -> tuple[int, int]:
        return self.tail, self.tail + len(self.entries) - 1

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        start = max(index_from, self.tail) - self.tail
        return self.entries[start:start + limit]

    def prune(self, through: int) -> int:
        drop = max(0, min(through, self.bounds()[1]) - self.tail + 1)
        del self.entries[:drop]
        self.tail += drop
        return self.tail


class Clock:
    def __init__(self) -> None:
        self.now_s = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now_s


class Checkpoints:
    def __init__(self) -> None:
        self.saved: dict[str, Checkpoint] = {}
        self.saves = 0

    def checkpoint(self, name: str) -> Checkpoint | None:
        return self.saved.get(name)

    def save_checkpoint(self, name: str, checkpoint: Checkpoint, config_version: int | None) -> None:
        self.saved[name] = checkpoint
        self.saves += 1


class FlakyTarget:
    """Acknowledges what it receives while ``up``; refuses (DeliveryError) while down."""

    def __init__(self) -> None:
        self.up = True
        self.received: list[Message] = []
        self.refused = 0

    def send(self, message: Message) -> None:
        if not self.up:
            self.refused += 1
            raise DeliveryError("target down")
        self.received.append(message)

    def close(self) -> None:
        pass
