"""The transaction manager's settings."""

from __future__ import annotations

from dataclasses import dataclass

from seaway.errors import InvalidArgumentError


@dataclass(frozen=True)
class TxnConfig:
    timeout_s: float = 30.0
    """How long a transaction may stay in progress unless it asks for another timeout at begin."""
    timeout_s_max: float = 3600.0
    in_progress_max: int = 100_000
    """Transactions in progress at once; a begin beyond it fails with OverloadedError."""
    outcomes_s: float = 900.0
    """How long after a transaction ended ``status`` still reports its outcome (then: UNKNOWN),
    also across restarts: what a client whose commit call was cut off has to ask."""
    outcomes_max: int = 1_000_000
    """A memory bound on those outcomes (17 bytes each): beyond, the oldest are forgotten earlier."""
    tick_s: float = 0.1
    """How often idle transactions are timed out."""
    prune_interval_s: float = 10.0
    settle_s: float = 60.0
    """How long after an invalid transaction's end, or its expiry if later, its writes may still
    land. A writer aborted by id is not told: its handle goes on writing until its own deadline,
    just before the expiry; an append sent by then is answered within this time. Then its logs'
    tails are noted, it is listed as aborted in each of them (the log layer's aborted writes,
    which readers honour), and it leaves the invalid list."""
    save_edits: int = 10_000
    save_interval_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("timeout_s", "timeout_s_max", "tick_s", "prune_interval_s", "save_interval_s", "outcomes_s"):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(f"TxnConfig.{name} must be positive")
        if self.timeout_s > self.timeout_s_max:
            raise InvalidArgumentError("TxnConfig.timeout_s must not exceed timeout_s_max")
        for name in ("in_progress_max", "outcomes_max", "save_edits"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"TxnConfig.{name} must be at least 1")
        if self.settle_s < 0:
            raise InvalidArgumentError("TxnConfig.settle_s must not be negative")
