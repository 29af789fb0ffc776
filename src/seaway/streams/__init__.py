"""Streams (Pravega): scopes, streams of auto-scaling segments, routing keys, stream cuts,
writers and reader groups, with the controller's metadata in PDP-32's layout.

Built only on the public API of :mod:`seaway.log`: each segment is a log, and every control-plane
change is one atomic batch of the log layer's metadata store, so the same code runs over an
embedded store and over a server.
"""

from __future__ import annotations

from seaway.streams._autoscaling import AutoScaling, AutoScalingConfig
from seaway.streams._config import (
    ByDataRate,
    ByEventRate,
    FixedSegments,
    RetentionBySize,
    RetentionByTime,
    RetentionPolicy,
    ScalingPolicy,
    StreamConfig,
)
from seaway.streams._controller import SEGMENT_LOG_IDS
from seaway.streams._cut import StreamCut
from seaway.streams._framing import unframe, unframe_keyed
from seaway.streams._metadata import StreamMetadata
from seaway.streams._names import parse_segment, segment_id, segment_str
from seaway.streams._reader_group import Event, EventReader, ReaderConfig, ReaderGroup, ReaderGroupInfo
from seaway.streams._records import Delta, Generation, Segment
from seaway.streams._retention import RetentionConfig, StreamRetention
from seaway.streams._routing import key_position
from seaway.streams._streams import Stream, StreamInfo, Streams
from seaway.streams._writer import EventWriter, WriteAck, WriterConfig

__all__ = [
    "SEGMENT_LOG_IDS",
    "AutoScaling",
    "AutoScalingConfig",
    "ByDataRate",
    "ByEventRate",
    "Delta",
    "Event",
    "EventReader",
    "EventWriter",
    "FixedSegments",
    "Generation",
    "ReaderConfig",
    "ReaderGroup",
    "ReaderGroupInfo",
    "RetentionBySize",
    "RetentionByTime",
    "RetentionConfig",
    "RetentionPolicy",
    "ScalingPolicy",
    "Segment",
    "Stream",
    "StreamConfig",
    "StreamCut",
    "StreamInfo",
    "StreamMetadata",
    "StreamRetention",
    "Streams",
    "WriteAck",
    "WriterConfig",
    "key_position",
    "parse_segment",
    "segment_id",
    "segment_str",
    "unframe",
    "unframe_keyed",
]
