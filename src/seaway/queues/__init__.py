"""Queues with consumer groups (CDAP's design): entries partitioned per group at enqueue time,
dequeued and acknowledged inside transactions, groups resized with per-key order kept, consumed
ranges evicted."""

from seaway.queues._chunks import Entry
from seaway.queues._consumer import Consumer
from seaway.queues._count import CommittedCount
from seaway.queues._producer import Producer
from seaway.queues._queues import GroupInfo, PartitionInfo, Queues
from seaway.queues._ranges import CommittedRead
from seaway.queues._records import Position, Strategy

__all__ = ["CommittedCount", "CommittedRead", "Consumer", "Entry", "GroupInfo", "PartitionInfo", "Position",
           "Producer", "Queues", "Strategy"]
