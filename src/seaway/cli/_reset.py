"""What ``reader-group reset`` and ``queue group reset`` share: where to move a group's position."""

from __future__ import annotations

import argparse


def add_target(parser: argparse.ArgumentParser, *, cut: bool) -> None:
    """The one target a reset takes, ``--to``: ``head``, ``tail``, a time, or (reader groups) a cut."""
    parser.add_argument("--to", required=True, metavar="CUT" if cut else "WHERE",
                        help="head: the oldest event or entry still kept; tail: after the newest (only new ones); "
                             "a time, ISO 8601 (2026-11-27T05:00:00Z; UTC if no zone) or ms since 1970: the first "
                             "written at or after it" + ("; or a stream cut as JSON (as stream cut prints it)"
                                                          if cut else ""))
