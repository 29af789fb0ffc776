"""The log store's configuration (its partitions, entry limits, compression and producer windows)."""

from __future__ import annotations

from dataclasses import dataclass

from seaway.errors import InvalidArgumentError
from seaway.logsdb._format import ENTRY_BYTES_LIMIT


@dataclass(frozen=True)
class LogsDBConfig:
    """Tuning of the local log store. The defaults suit a laptop or a small server."""

    partition_duration_s: float = 900.0
    """A new partition is started once the newest is this old."""
    partition_bytes_max: int = 1 << 30
    """... or once it holds this many bytes of entries."""
    entry_bytes_max: int = 64 << 20
    """The largest encoded batch one write may store (at most 1 GiB). Lowering it later leaves the
    larger entries stored before readable."""
    write_bytes_max: int = 256 << 20
    """The largest write batch (all entries and metadata of one write)."""
    compression: str = "lz4"
    """RocksDB compression of partition files: none, snappy, lz4, zstd."""
    segment_min_bytes: int = 32 << 10
    """Entries of at least this many bytes are kept in their partition's segment file, with only a
    reference in RocksDB: their bytes are written without holding Python's GIL, but are not
    compressed. 0 puts every batch of records there; ``entry_bytes_max + 1``, none."""
    producer_window: int = 128
    """How many recent batches of each producer, per log, are remembered for deduplication."""
    producers_per_log_max: int = 65_536
    """How many producers each log remembers. Past that, the one that appended least recently is
    forgotten, but only once it has not appended for ``producer_idle_s_min``; until one has, a new
    producer's batches are refused as overloaded (retriable) rather than an active producer forgotten.
    So a log takes new producers at ``producers_per_log_max / producer_idle_s_min`` a second (about 218
    with the defaults) for ever, and bursts of up to ``producers_per_log_max``: every connection,
    writer, command or task that appends is a new producer. A producer that appended one batch takes
    about 250 bytes of memory (65,536 of them: 16 MiB), and 20 bytes more for each further batch kept.
    A log that forgot a producer refuses an unknown producer's batches with a sequence above 0
    (``SequenceTooOldError``): they may be retries of a forgotten producer."""
    producer_idle_s_min: float = 300.0
    """How long a producer must have been silent on a log before it may be forgotten: a retry sent
    within this time of the producer's last append is always recognized. The default outlasts the
    retries of a default client (5 attempts of at most 30 s each)."""
    ledger_hard_entries_max: int = 1_000_000
    """The most change ledger entries kept, whatever their readers have read: a write whose entry
    would pass it drops the oldest tenth of them (one range) in the same batch. It protects the
    disk; the soft bound (``seaway.LedgerConfig``) is what waits for slow readers."""
    ledger_hard_bytes_max: int = 1 << 30
    """The most bytes of change ledger entries kept (each entry's change and its 8-byte time),
    whatever their readers have read: a write whose entries would pass it drops the oldest entries
    (one range) down to nine tenths of it, in the same batch. At least 1 MiB (a change is at most
    64 KiB): with the entry bound, the ledger holds at most ``min(ledger_hard_entries_max entries,
    ledger_hard_bytes_max bytes)``."""

    def __post_init__(self) -> None:
        if self.partition_duration_s <= 0:
            raise InvalidArgumentError("partition_duration_s must be positive")
        if self.partition_bytes_max <= 0 or self.entry_bytes_max <= 0 or self.write_bytes_max <= 0:
            raise InvalidArgumentError("byte limits must be positive")
        if self.entry_bytes_max > ENTRY_BYTES_LIMIT:
            raise InvalidArgumentError(f"entry_bytes_max must be at most {ENTRY_BYTES_LIMIT} (1 GiB)")
        if self.segment_min_bytes < 0:
            raise InvalidArgumentError("segment_min_bytes must not be negative")
        if not 1 <= self.producer_window <= 4096:
            raise InvalidArgumentError("producer_window must be in [1, 4096]")
        if not self.producer_idle_s_min >= 0:
            raise InvalidArgumentError("producer_idle_s_min must not be negative")
        if not 1 <= self.producers_per_log_max <= 1 << 20:
            raise InvalidArgumentError("producers_per_log_max must be in [1, 2**20]")
        if self.compression not in ("none", "snappy", "lz4", "zstd"):
            raise InvalidArgumentError(f"unknown compression {self.compression!r}")
        if not isinstance(self.ledger_hard_entries_max, int) or not 1 <= self.ledger_hard_entries_max <= 2**40:
            raise InvalidArgumentError("ledger_hard_entries_max must be in [1, 2**40]")
        if not isinstance(self.ledger_hard_bytes_max, int) or not 1 << 20 <= self.ledger_hard_bytes_max <= 2**50:
            raise InvalidArgumentError("ledger_hard_bytes_max must be in [2**20 (1 MiB), 2**50]")
