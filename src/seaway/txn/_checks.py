"""The checks of a transaction's id and of a commit's contents, and their limits: shared by the
manager and the remote client, so that both refuse the same input the same way."""

from __future__ import annotations

from collections.abc import Iterable

from seaway.errors import InvalidArgumentError
from seaway.log import check_meta_key

CONFLICT_KEYS_MAX = 100_000
WRITES_MAX = 1_000
LOGS_MAX = 10_000
COMMIT_ALL_MAX = 10_000
"""Transactions one ``commit_all`` commits together, at most."""


def check_write_pointer(write_pointer: object) -> int:
    """A transaction id (write pointer), checked: an integer in (0, 2**64); shared with the remote
    client, so that both refuse the same ids the same way."""
    if not isinstance(write_pointer, int) or isinstance(write_pointer, bool) or not 0 < write_pointer < 2**64:
        raise InvalidArgumentError(f"a transaction id is an integer in (0, 2**64), got {write_pointer!r}")
    return write_pointer


def check_txn_logs(log_ids: Iterable[int]) -> tuple[int, ...]:
    """The logs a transaction registers (at its begin, or later): at most LOGS_MAX distinct log ids,
    each an integer in (0, 2**64), sorted (shared with the remote client)."""
    if isinstance(log_ids, (int, bytes, str)):
        raise InvalidArgumentError(f"a transaction registers logs by id, several at once: got {log_ids!r:.80}")
    try:
        wanted = set(log_ids)
    except TypeError:
        raise InvalidArgumentError(f"a transaction's logs are an iterable of log ids, got {log_ids!r:.80}") from None
    if len(wanted) > LOGS_MAX:
        raise InvalidArgumentError(f"a transaction registers at most {LOGS_MAX} logs at once, got {len(wanted)}")
    for log_id in wanted:
        if not isinstance(log_id, int) or isinstance(log_id, bool) or not 0 < log_id < 2**64:
            raise InvalidArgumentError(f"a log id is an integer in (0, 2**64), got {log_id!r:.80}")
    return tuple(sorted(wanted))


def check_write_pointers(write_pointers: Iterable[int]) -> tuple[int, ...]:
    """The transactions of a ``commit_all``: 1 to COMMIT_ALL_MAX distinct ids (shared with the
    remote client)."""
    if isinstance(write_pointers, (int, bytes, str)):
        raise InvalidArgumentError(f"commit_all takes several transaction ids, got {write_pointers!r:.80}")
    pointers = tuple(write_pointers)
    if not 0 < len(pointers) <= COMMIT_ALL_MAX:
        raise InvalidArgumentError(f"commit_all commits 1 to {COMMIT_ALL_MAX} transactions, got {len(pointers)}")
    for write_pointer in pointers:
        check_write_pointer(write_pointer)
    if len(set(pointers)) != len(pointers):
        raise InvalidArgumentError("commit_all names a transaction more than once")
    return pointers


def check_commit(conflicts: Iterable[bytes], writes: Iterable[tuple[str, bytes, bytes | None]],
                 ) -> tuple[frozenset[bytes], tuple[tuple[str, bytes, bytes | None], ...]]:
    """A commit's conflict keys and metadata writes, checked (shared with the remote client)."""
    keys = frozenset(conflicts)
    if len(keys) > CONFLICT_KEYS_MAX:
        raise InvalidArgumentError(f"a transaction declares at most {CONFLICT_KEYS_MAX} conflict keys")
    for key in keys:
        if not isinstance(key, bytes) or not 0 < len(key) <= 1024:
            raise InvalidArgumentError(f"a conflict key is 1-1024 bytes, got {key!r:.80}")
    checked = tuple(writes)
    if len(checked) > WRITES_MAX:
        raise InvalidArgumentError(f"a transaction makes at most {WRITES_MAX} metadata writes")
    for namespace, key, value in checked:
        check_meta_key(namespace, key)
        if value is not None and not isinstance(value, bytes):
            raise InvalidArgumentError(f"a metadata value must be bytes or None, got {type(value).__name__}")
    return keys, checked
