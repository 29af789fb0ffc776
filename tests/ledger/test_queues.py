"""Queues and consumer groups: created, resized, deleted each write one ledger entry in the batch
that makes the change; a refused change writes none."""

from __future__ import annotations

import pytest

import seaway
from seaway._errors import ConsumerGroupExistsError, QueueExistsError, UnknownQueueError
from seaway.ledger import (
    ConsumerGroupCreated,
    ConsumerGroupDeleted,
    ConsumerGroupResized,
    QueueCreated,
    QueueDeleted,
)
from tests.ledger.helpers import changes, head


def test_a_queue_and_its_groups_created_resized_and_deleted(sw: seaway.Seaway) -> None:
    mark = head(sw)
    sw.queues.create("q")
    with pytest.raises(QueueExistsError):
        sw.queues.create("q")
    sw.queues.create("q", exist_ok=True)
    sw.queues.create_group("q", "h", 2, "HASH", key="user")
    with pytest.raises(ConsumerGroupExistsError):
        sw.queues.create_group("q", "h")
    sw.queues.create_group("q", "f")
    assert changes(sw, mark) == [QueueCreated("q"), ConsumerGroupCreated("q", "h", 2, "HASH", "user"),
                                 ConsumerGroupCreated("q", "f", 1, "FIFO", None)]
    assert changes(sw, mark)[1].resource() == "queue/q/group/h"

    mark = head(sw)
    sw.queues.resize_group("q", "h", 3, wait_s=None)
    # Passing the barrier (the old layout drained: nothing was enqueued) is not another change.
    assert sw.queues.finish_resize("q", "h")
    assert changes(sw, mark) == [ConsumerGroupResized("q", "h", 3, "HASH", "user", 2)]

    mark = head(sw)
    sw.queues.delete_group("q", "f")
    sw.queues.delete("q")
    with pytest.raises(UnknownQueueError):
        sw.queues.delete("q")
    assert changes(sw, mark) == [ConsumerGroupDeleted("q", "f"), ConsumerGroupDeleted("q", "h"), QueueDeleted("q")]
