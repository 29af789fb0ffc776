"""Begins that carry reads, and a commit that carries the next begin: what lets a transaction in
steady state cost one call through a server (a queue consumer's: its commit and its next begin,
with the group's reset count it reads at its first dequeue).

- ``begin_with(timeout_s, logs, reads)``: a begin whose answer holds the values (and versions) of
  the metadata keys ``reads``, read after its snapshot was taken. A change that committed before
  the snapshot is in the values; one that commits after the read conflicts with the transaction on
  whatever conflict keys both declare, as for any read the transaction makes after it began.
- ``commit_then_begin(write_pointer, conflicts, writes, timeout_s, logs, reads)``: a commit, then
  (only once it committed) a begin as ``begin_with`` makes it, whose snapshot is taken after the
  commit is visible (its own writes are seen). A commit that fails begins nothing.

Part of :class:`~seaway.txn.TransactionManager` (a base of it); the remote client answers the same
calls in one round trip each (``TxnBegin`` with reads, ``TxnCommitBegin``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from seaway.errors import InvalidArgumentError, SeawayError
from seaway.log import MetaApi, Versioned, check_meta_key
from seaway.txn._checks import check_txn_logs
from seaway.txn._config import TxnConfig
from seaway.txn._snapshot import Snapshot

READS_MAX = 16
"""Metadata keys one begin reads at most (each value up to 1 MiB: an answer stays far below a
server's message bound)."""


@dataclass(frozen=True)
class Begun:
    """A begin's answer: the snapshot, and the values of the keys it read (None: absent), in the
    order asked."""

    snapshot: Snapshot
    reads: tuple[Versioned | None, ...] = ()


def check_reads(reads: Iterable[tuple[str, bytes]]) -> tuple[tuple[str, bytes], ...]:
    """A begin's reads, checked: at most READS_MAX ``(namespace, key)`` pairs (shared with the remote
    client, so that both refuse the same input the same way)."""
    if isinstance(reads, (str, bytes)):
        raise InvalidArgumentError(f"a begin's reads are (namespace, key) pairs, got {reads!r:.80}")
    try:
        pairs = tuple(reads)
    except TypeError:
        raise InvalidArgumentError(f"a begin's reads are (namespace, key) pairs, got {reads!r:.80}") from None
    if len(pairs) > READS_MAX:
        raise InvalidArgumentError(f"a begin reads at most {READS_MAX} keys, got {len(pairs)}")
    out = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidArgumentError(f"a begin's read is a (namespace, key) pair, got {pair!r:.80}")
        out.append(check_meta_key(*pair))
    return tuple(out)


def check_begin_timeout(timeout_s: float | None, config: TxnConfig) -> None:
    """Refuse a next begin's timeout before the commit it follows (the begin checks it again)."""
    if timeout_s is None:
        return
    if (not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool)
            or not 0 < timeout_s <= config.timeout_s_max):
        raise InvalidArgumentError(f"a transaction's timeout is in (0, {config.timeout_s_max}] s, got {timeout_s!r}")


class _Manager(Protocol):
    """What the mixin uses of the manager."""

    config: TxnConfig

    @property
    def _meta(self) -> MetaApi: ...

    def begin(self, timeout_s: float | None = None, logs: Iterable[int] = ()) -> Snapshot: ...

    def commit(self, write_pointer: int, conflicts: Iterable[bytes] = (),
               writes: Iterable[tuple[str, bytes, bytes | None]] = ()) -> None: ...

    def abort(self, write_pointer: int) -> None: ...


class ChainedBegins:
    """Begins with reads and commits with the next begin (see the module's docstring)."""

    def begin_with(self: _Manager, timeout_s: float | None = None, logs: Iterable[int] = (),
                   reads: Iterable[tuple[str, bytes]] = ()) -> Begun:
        """Begin, as :meth:`begin`, and read ``reads`` (at most READS_MAX metadata keys) after the
        snapshot was taken. If a read fails, the transaction is aborted (its caller never learns
        its id) and the error raised."""
        keys = check_reads(reads)
        snapshot = self.begin(timeout_s, logs)
        return Begun(snapshot, ChainedBegins.read_at_begin(self, snapshot.write_pointer, keys))

    def read_at_begin(self: _Manager, write_pointer: int, keys: tuple[tuple[str, bytes], ...],
                      ) -> tuple[Versioned | None, ...]:
        """The values of ``keys`` (checked), read for transaction ``write_pointer`` just begun; if a
        read fails, the transaction is aborted and the error raised. For a server answering
        joined begins too."""
        try:
            return tuple(self._meta.get(namespace, key) for namespace, key in keys)
        except BaseException:
            with contextlib.suppress(SeawayError):  # else it times out: it wrote nothing
                self.abort(write_pointer)
            raise

    def commit_then_begin(self: _Manager, write_pointer: int, conflicts: Iterable[bytes] = (),
                          writes: Iterable[tuple[str, bytes, bytes | None]] = (), timeout_s: float | None = None,
                          logs: Iterable[int] = (), reads: Iterable[tuple[str, bytes]] = ()) -> Begun | SeawayError:
        """Commit, as :meth:`commit` (raising what it raises: then nothing is begun), then begin
        the next transaction as :meth:`begin_with`, its snapshot taken after the commit is visible.
        The next begin's arguments are checked before the commit. Returns the next transaction's
        :class:`Begun`, or the error that refused its begin (the commit stands)."""
        check_begin_timeout(timeout_s, self.config)
        wanted, keys = check_txn_logs(logs), check_reads(reads)
        self.commit(write_pointer, conflicts, writes)
        try:
            return ChainedBegins.begin_with(self, timeout_s, wanted, keys)
        except SeawayError as exc:
            return exc
