"""What ``reader-group reset`` and ``queue group reset`` share: where to move a group's position."""

from __future__ import annotations

import argparse


def add_target(parser: argparse.ArgumentParser, *, cut: bool) -> None:
    """The one target a reset takes: ``--to head|tail``, ``--to-time``, or (reader groups) ``--to-cut``."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", choices=["head", "tail"],
                        help="head: the oldest event or entry still kept; tail: after the newest (only new ones)")
    target.add_argument("--to-time", metavar="TIME",
                        help="the first written at or after TIME: ISO 8601 (2026-11-27T05:00:00Z; UTC if no "
                             "offset) or milliseconds since the epoch")
    if cut:
        target.add_argument("--to-cut", metavar="JSON",
                            help='a stream cut (as "describe --json" prints the checkpoint)')

