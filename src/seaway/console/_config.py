"""The console's settings: one small frozen value, with safe defaults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seaway.errors import InvalidArgumentError


@dataclass(frozen=True)
class ConsoleConfig:
    listen: str = "127.0.0.1:7080"
    """host:port the console's web server listens on; a port of 0 picks a free one."""
    token: str | None = None
    """The server's shared secret: every page and every JSON answer needs it (a bearer token, or the
    cookie the login form sets). None: no token (loopback only)."""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    lag_sample_interval_s: float = 5.0
    """How often the console samples every group's lag, for the lag-over-time chart."""
    lag_samples_max: int = 720
    """Samples kept per group (720 at 5 s: the last hour); older ones are dropped."""
    groups_max: int = 200
    """Reader groups, and consumer groups, that the console describes and samples (the first by name)."""
    refresh_s: float = 2.0
    """How often a page asks for fresh figures."""
    ledger_entries_max: int = 200
    """Ledger entries one answer carries at most."""
    ledger_scan_entries_max: int = 10_000
    """Ledger entries one answer looks at at most to find those a filter selects."""

    def __post_init__(self) -> None:
        if not self.lag_sample_interval_s > 0 or not self.refresh_s > 0:
            raise InvalidArgumentError("the console's intervals are above 0 seconds")
        if min(self.lag_samples_max, self.groups_max, self.ledger_entries_max, self.ledger_scan_entries_max) < 1:
            raise InvalidArgumentError("the console's limits are at least 1")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidArgumentError("the console's TLS needs both a certificate and a key")
