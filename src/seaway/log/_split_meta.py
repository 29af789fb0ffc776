"""The metadata store of a split store: the metadata stays in this store, the logs its batches
create (:meth:`MetaBatch.create_log`: stream segments, queue partitions) live in another
:class:`LogsApi` (a cluster's, in a control node).

Embedded, a batch and the logs it creates are one RocksDB write. Across two stores they cannot be,
so a batch that creates logs is three steps, each durable before the next:

1. an *intent* that names the logs (namespace :data:`CREATING_NAMESPACE`, a key of its own);
2. the logs, created in the other store, with the ids the batch gives;
3. the batch itself, which deletes the intent in the same write.

An intent left behind is a batch that did not apply (step 3 deletes it atomically with the batch):
its logs, if created, are named by nothing, and :meth:`SplitMetadataStore.undo_unfinished` deletes
them when the store opens, before anything can meet them. A batch refused by a condition, or whose
log names or ids are taken (:class:`LogExistsError`, as embedded), deletes what it created at once.
So, as embedded, metadata never names a missing log, and no log is left that nothing names once the
store has opened again.

The logs' own changes (created, trimmed, sealed, deleted) are recorded by the store that holds
them, not in this store's ledger.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Sequence

from seaway.errors import (
    ConditionFailedError,
    InvalidArgumentError,
    LogExistsError,
    PayloadTooLargeError,
    SeawayError,
    UnknownLogError,
)
from seaway.log._api import LogsApi
from seaway.log._meta import COMMIT_MANY_MAX, MetaBatch, MetadataStore, MetaDelete, MetaNewLog

log = logging.getLogger("seaway.log")

CREATING_NAMESPACE = "seaway.log.creating"
"""Intents of batches that create logs in another store (reserved: clients cannot write it)."""
_INTENT_BYTES = 8
_UNDO_PAGE = 1000


def _intent_value(new_logs: Sequence[MetaNewLog]) -> bytes:
    return json.dumps([[n.name, n.log_id] for n in new_logs]).encode()


class SplitMetadataStore(MetadataStore):
    """``sw.meta`` of a store whose user logs live in ``user_logs``: this store's metadata, and
    batches that create their logs there (see the module's docstring). Thread-safe."""

    def __init__(self, inner: MetadataStore, user_logs: LogsApi) -> None:
        super().__init__(inner._db)
        self.user_logs = user_logs

    def commit(self, batch: MetaBatch, *, sync: bool = True) -> int:
        """As :meth:`MetadataStore.commit`; a batch that creates logs creates them in the user
        logs' store first, and must give each its id (:class:`InvalidArgumentError` otherwise:
        an intent must name what it may leave behind). Always synced then."""
        if not batch.new_logs:
            return super().commit(batch, sync=sync)
        if any(new.log_id is None for new in batch.new_logs):
            raise InvalidArgumentError("a store whose logs live elsewhere creates logs in a metadata batch "
                                       "only with their ids given (MetaBatch.create_log(name, log_id))")
        intent = secrets.token_bytes(_INTENT_BYTES)
        super().commit(MetaBatch().put(CREATING_NAMESPACE, intent, _intent_value(batch.new_logs)))
        created: list[int] = []
        try:
            for new in batch.new_logs:
                created.append(self.user_logs.create(new.name, log_id=new.log_id, group=new.group).id)
            return super().commit(MetaBatch(conditions=list(batch.conditions),
                                            ops=[*batch.ops, MetaDelete(CREATING_NAMESPACE, intent)],
                                            ledger=batch.ledger))
        except (ConditionFailedError, LogExistsError, UnknownLogError, InvalidArgumentError):
            # Refused for good, nothing applied: what was created goes now (else at the next opening).
            self._undo(intent, batch.new_logs[:len(created)])
            raise

    def commit_many(self, batches: Sequence[MetaBatch]) -> list[int | SeawayError]:
        if not any(batch.new_logs for batch in batches):
            return super().commit_many(batches)
        if len(batches) > COMMIT_MANY_MAX:
            raise PayloadTooLargeError(f"commit_many takes at most {COMMIT_MANY_MAX} batches, got {len(batches)}")
        out: list[int | SeawayError] = []
        for batch in batches:  # each synced: the logs of one are created before it applies
            try:
                out.append(self.commit(batch))
            except SeawayError as exc:
                out.append(exc)
        return out

    def undo_unfinished(self) -> int:
        """Delete the logs of batches that never applied (a crash, or a failure whose outcome was
        unknown, between their intent and their commit); return how many intents were undone. For
        the store's opening, before anything else uses it."""
        undone = 0
        while rows := self.scan(CREATING_NAMESPACE, limit=_UNDO_PAGE):
            for key, found in rows:
                new_logs = [MetaNewLog(str(name), int(log_id)) for name, log_id in json.loads(found.value)]
                self._undo(key, new_logs)
                undone += 1
        return undone

    def _undo(self, intent: bytes, new_logs: Sequence[MetaNewLog]) -> None:
        """Delete each of ``new_logs`` that exists in the user logs' store with that name and id
        (an id or a name taken by another log is that log's), then the intent."""
        for new in new_logs:
            try:
                found = self.user_logs.get(int(new.log_id or 0))
            except UnknownLogError:  # never created, or deleted already
                continue
            if found.name == new.name:
                self.user_logs.delete(found)
        super().commit(MetaBatch().delete(CREATING_NAMESPACE, intent))
