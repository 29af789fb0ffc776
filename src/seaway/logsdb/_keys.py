"""The names LogsDB gives things: metadata keys, column families, files."""

from __future__ import annotations

import re

from seaway.logsdb import _format as fmt

META_CF = "meta"
LOCK_FILE = "SEAWAY.lock"
SEGMENTS_DIR = "segments"

# Metadata key prefixes.
P_PARTITION = b"P"  # + partition id -> created_ms
P_DIRECTORY = b"D"  # + partition id + log id -> DirEntry
P_TRIM = b"T"  # + log id -> trim point
P_SEAL = b"S"  # + log id -> sealed epoch
P_EPOCH_END = b"E"  # + log id + epoch -> last LSN of that epoch
P_USER = b"U"  # + upper layer's key -> its value
P_PRODUCER = b"I"  # + log id + producer id -> its recent batches (idempotent appends)
P_FINAL = b"F"  # + log id -> the last LSN of a log sealed for good (no more appends)
P_KV = b"K"  # + metadata store key -> version + sum + value (see kv_commit)
P_KV_REVISION = b"R"  # -> the metadata store's last revision
P_FORGOT = b"G"  # + log id -> empty: the log has forgotten a producer (see LogsDBConfig.producers_per_log_max)
P_LEDGER = b"L"  # + index -> a change ledger entry (time + change; see seaway.ledger), written with its change
P_LEDGER_HEAD = b"H"  # -> the last ledger index written (kept when its entry is pruned)
P_LEDGER_START = b"C"  # + index -> bytes of every ledger entry written before it (for the byte bound)
P_LEDGER_WRITTEN = b"W"  # -> bytes of every ledger entry ever written
P_HOLE = b"O"  # + log id + first LSN -> LSNs a hole plug covers (so that counting records skips them)


def u64(value: int) -> bytes:
    return fmt.encode_u64(value)


def cf_name(partition_id: int) -> str:
    return f"p{partition_id:016x}"


def segment_name(partition_id: int) -> str:
    return f"{cf_name(partition_id)}.seg"


SEGMENT_NAME = re.compile(r"p[0-9a-f]{16}\.seg")

