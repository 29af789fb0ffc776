"""Where a command finds its store (a server, or a data directory in-process), and how it answers."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import seaway
from seaway.errors import InvalidArgumentError

DEFAULT_ADDRESS = "seaway://127.0.0.1:7070"
STORE_MARK = "logsdb"
"""What ``seaway.open`` creates in every data directory (with ``epochs/``): a directory without it is
not a store."""


def where_parser() -> argparse.ArgumentParser:
    """The options every store command takes: ``--address`` or ``--data-dir``, and ``--json``."""
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument("--address", default=os.environ.get("SEAWAY_ADDRESS", DEFAULT_ADDRESS),
                       help=f"server URL (default $SEAWAY_ADDRESS or {DEFAULT_ADDRESS})")
    where.add_argument("--data-dir", type=Path,
                       help="use this data directory in-process instead of a server (commands that only read "
                            "refuse a directory that is not a store; commands that write create one)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    return common


def check_store_dir(data_dir: Path) -> None:
    """Raise :class:`InvalidArgumentError` unless ``data_dir`` holds a Seaway store; create nothing."""
    if not data_dir.is_dir():
        raise InvalidArgumentError(f"no Seaway data directory at {data_dir}: it does not exist "
                                   f"(only commands that write create one)")
    if not (data_dir / STORE_MARK).is_dir():
        raise InvalidArgumentError(f"{data_dir} is not a Seaway data directory: it has no {STORE_MARK}/ "
                                   f"(only commands that write create one)")


@contextmanager
def open_store(args: argparse.Namespace, *, writes: bool) -> Iterator[Any]:
    """The store ``args`` name, open: a client of ``--address``, or ``--data-dir`` in-process.

    A command that only reads (``writes=False``) refuses a data directory that is not a store, so a
    mistyped path is an error rather than a new, empty store.
    """
    if args.data_dir is not None:
        if not writes:
            check_store_dir(args.data_dir)
        with seaway.open(args.data_dir) as sw:
            yield sw
    else:
        with seaway.connect(args.address, token=os.environ.get("SEAWAY_TOKEN") or None) as sw:
            yield sw


def out(args: argparse.Namespace, figures: Any, text: str) -> None:
    """Print ``figures`` as JSON with ``--json``, else ``text``."""
    print(json.dumps(figures) if args.json else text)
