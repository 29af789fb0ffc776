"""Named crash points inside multi-step control-plane changes (stream creation, scaling, sealing,
deletion, truncation, a stream's configuration update, a notification configuration replaced, a
reader group's creation, a consumer group's resize, a queue's deletion).

Each step of such a change that reaches the disk is one metadata batch, so a crash point is a batch
of the change, before it applies or just after (written, its caller never told), with everything
after it not happening: what a process killed there leaves. :class:`CrashingMeta` stands in for the
metadata store the change's component was given (the same seam a user's code has: the component's
``meta``), names each batch by what it does (:attr:`CrashingMeta.steps`), and crashes at the one
armed: by raising (the in-process variant: the harness closes the store) or, with ``kill``, by
killing its own process with SIGKILL there, as a crash does (the real variant: a child process run
by :mod:`seaway.testing._named_crash`). The harness then reopens the store, which finishes or
forgets what was left half-done, and checks that the change is made and recorded once, or neither.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from seaway.errors import StorageError
from seaway.ledger import decode_change
from seaway.log import MetaApi, MetaBatch, MetaDeleteRange, MetaOp, Versioned


@dataclass(frozen=True, slots=True)
class CrashPoint:
    """The ``commit``-th metadata batch of a change (from 1), which does ``step``; the crash comes
    before the batch applies, or just after (``applied``)."""

    commit: int
    step: str
    applied: bool

    @property
    def name(self) -> str:
        return f"{self.step} (batch {self.commit}), {'after' if self.applied else 'before'} it applies"


def step_name(batch: MetaBatch) -> str:
    """What a batch does, by the ledger entry it records, else by the keys it writes, and the
    logs it creates: ``records stream.scaled``, ``creates 3 logs, writes streams:s/…/trans``."""
    logs = f"creates {len(batch.new_logs)} logs, " if batch.new_logs else ""
    if batch.ledger is not None:
        return f"{logs}records {decode_change(batch.ledger).OPERATION}"
    kinds = dict.fromkeys(f"{op.namespace}:{_kind(op)}" for op in batch.ops)
    return logs + ("writes " + ", ".join(kinds) if kinds else "checks only")


def _kind(op: MetaOp) -> str:
    """A key's shape, without its numbers: ``s/…/gen`` for ``s/scope/stream/gen/00000001``."""
    key = op.start if isinstance(op, MetaDeleteRange) else op.key
    parts = [p for p in key.decode(errors="replace").split("/") if p and not _is_number(p)]
    if len(parts) > 2:
        parts = [parts[0], "…", parts[-1]]
    return "/".join(parts) or "?"


def _is_number(part: str) -> bool:
    return len(part) >= 6 and all(c in "0123456789abcdef" for c in part)


class CrashingMeta(MetaApi):
    """A metadata store that "crashes" at a crash point: its batch and every later one fail with
    :class:`StorageError` (``injected``), either before the batch applies or just after it
    (``applied``: the write is made but its caller never hears of it). ``crash_at``: a
    :class:`CrashPoint`, or the number of the batch (from 1) with ``applied``; None: no crash, only
    naming the batches (:attr:`steps`), to learn a change's crash points (:meth:`points`).
    ``kill``: the crash is real: the process kills itself with SIGKILL at the point (nothing after
    it runs, no ``finally``, no close)."""

    def __init__(self, meta: MetaApi, crash_at: CrashPoint | int | None = None, *, applied: bool = False,
                 kill: bool = False) -> None:
        self._meta = meta
        self.kill = kill
        self.crash_at = crash_at.commit if isinstance(crash_at, CrashPoint) else crash_at
        self.applied = crash_at.applied if isinstance(crash_at, CrashPoint) else applied
        self.steps: list[str] = []
        """What each batch committed through this store did, in order."""

    @property
    def commits(self) -> int:
        return len(self.steps)

    def points(self) -> list[CrashPoint]:
        """Every crash point of the batches seen: before and after each."""
        return [CrashPoint(n, step, applied) for n, step in enumerate(self.steps, 1) for applied in (False, True)]

    def get(self, namespace: str, key: bytes) -> Versioned | None:
        return self._meta.get(namespace, key)

    def scan(self, namespace: str, *, prefix: bytes = b"", start: bytes | None = None,
             end: bytes | None = None, limit: int = 1000) -> list[tuple[bytes, Versioned]]:
        return self._meta.scan(namespace, prefix=prefix, start=start, end=end, limit=limit)

    @property
    def revision(self) -> int:
        return self._meta.revision

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        self.steps.append(step_name(batch))
        at = self.commits
        crashed = self.crash_at is not None and at >= self.crash_at
        if crashed and not (self.applied and at == self.crash_at):
            self._killed()
            raise StorageError(f"injected: crashed before metadata batch {self.crash_at} applied")
        revision = self._meta.commit(batch, sync=sync)
        if crashed:
            self._killed()
            raise StorageError(f"injected: crashed just after metadata batch {self.crash_at} applied")
        return revision

    def _killed(self) -> None:
        if self.kill:
            os.kill(os.getpid(), signal.SIGKILL)
