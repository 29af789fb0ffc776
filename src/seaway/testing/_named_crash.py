"""The child side of the named-crash-point tests: make one control-plane change and die for real at
one of its crash points.

Run as ``python -m seaway.testing._named_crash DATA_DIR CHANGE BATCH APPLIED``: open the store at
``DATA_DIR`` (set up beforehand by the parent with ``CHANGES[CHANGE].setup``), arm a
:class:`~seaway.testing.CrashingMeta` that kills this process with SIGKILL at metadata batch
``BATCH`` of the change (``APPLIED`` 1: just after the batch applies, 0: before), and make the
change. The process never exits on its own: an exit code of 3 means the change ended without
reaching the point. The parent then reopens the store and checks what the crash left.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import seaway
from seaway.notify import Notifications, NotifyConfig, SeawayStream
from seaway.streams import AutoScalingConfig, RetentionByTime, StreamCut
from seaway.testing._crash_points import CrashingMeta, CrashPoint

CONFIG = seaway.SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None), retention=None)
NOT_CRASHED = 3
"""The child's exit code when the change ended before its crash point."""


def stream_setup(sw: seaway.Seaway) -> None:
    sw.streams.create_scope("s")
    stream = sw.streams.create("s/x", segments=2)
    for segment in stream.current_segments():
        sw.logs.get(segment.log_id).append_batch([b"e"] * 3)


def sealed_setup(sw: seaway.Seaway) -> None:
    stream_setup(sw)
    sw.streams.get("s/x").seal()


def truncate(sw: seaway.Seaway) -> None:
    stream = sw.streams.get("s/x")
    stream.truncate(StreamCut("s/x", {s.id: 3 for s in stream.current_segments()}))


def notify_config(prefix: str) -> NotifyConfig:
    return NotifyConfig("n", SeawayStream("feed/x"), prefix=prefix)  # selects nothing: its plugin writes nothing


def queue_setup(sw: seaway.Seaway) -> None:
    sw.queues.create("q")
    sw.queues.create_group("q", "a", 2, "ROUND_ROBIN")
    sw.queues.create_group("q", "b")


@dataclass(frozen=True)
class Change:
    """A control-plane change made of one or more metadata batches, and what it needs first."""

    setup: Callable[[seaway.Seaway], object]
    make: Callable[[seaway.Seaway], object]


CHANGES = {
    "create stream": Change(lambda sw: sw.streams.create_scope("s"), lambda sw: sw.streams.create("s/x", segments=2)),
    "scale": Change(stream_setup, lambda sw: sw.streams.get("s/x").split("0.0", 3)),
    "seal": Change(stream_setup, lambda sw: sw.streams.get("s/x").seal()),
    "delete stream": Change(sealed_setup, lambda sw: sw.streams.get("s/x").delete()),
    "truncate": Change(stream_setup, truncate),
    "update stream config": Change(stream_setup,
                                   lambda sw: sw.streams.get("s/x").update(retention=RetentionByTime(3600))),
    "replace notify config": Change(lambda sw: sw.notify.set(notify_config("log/none.")),
                                    lambda sw: sw.notify.set(notify_config("log/nothing."))),
    "reader group": Change(stream_setup, lambda sw: sw.streams.create_reader_group("g", "s/x")),
    "create consumer group": Change(lambda sw: sw.queues.create("q"),
                                    lambda sw: sw.queues.create_group("q", "a", 2, "ROUND_ROBIN")),
    "resize": Change(queue_setup, lambda sw: sw.queues.resize_group("q", "a", 3, wait_s=None)),
    "delete queue": Change(queue_setup, lambda sw: sw.queues.delete("q")),
}


def arm(sw: seaway.Seaway, crashing: CrashingMeta) -> None:
    """Make every component that changes the control plane commit through ``crashing``."""
    sw.streams.controller.meta = crashing
    sw.queues.meta = crashing
    sw.notify = Notifications(crashing, sw.ledger)


def main(argv: list[str]) -> None:
    data_dir, change, batch, applied = argv[0], argv[1], int(argv[2]), argv[3] == "1"
    sw = seaway.Seaway(data_dir, CONFIG)
    arm(sw, CrashingMeta(sw.meta, CrashPoint(batch, "", applied), kill=True))
    CHANGES[change].make(sw)
    sw.close()
    raise SystemExit(NOT_CRASHED)


if __name__ == "__main__":
    main(sys.argv[1:])
