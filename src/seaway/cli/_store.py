"""Where a command finds its store (a server, or a data directory in-process), and how it answers.

One output style for every command (docs/cli.md): times in ISO 8601 UTC with milliseconds
(``2026-11-27T04:30:00.123Z``), LSNs as ``e<epoch>n<esn>``, segments as ``generation.number``, and
text output with every byte that could move the cursor or change colours escaped (:func:`text_of`).

This module is imported by every command, ``seaway --help`` included: it loads nothing heavy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import seaway
from seaway.errors import InvalidArgumentError

EXIT_OK = 0
EXIT_FAILED = 1
"""The store refused or could not carry out the command (the message says why)."""
EXIT_USAGE = 2
"""The command line is wrong: an unknown option, a missing argument, a value that is not valid."""
EXIT_ABSENT = 3
"""What the command names does not exist (a log, stream, queue, group, transaction, key)."""
EXIT_UNAVAILABLE = 4
"""No store to talk to: the server refused the connection or is unreachable."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT), as shells report it."""
EXIT_CODES_HELP = (f"exit status: {EXIT_OK} ok, {EXIT_FAILED} failed, {EXIT_USAGE} usage (a bad option or value), "
                   f"{EXIT_ABSENT} not found, {EXIT_UNAVAILABLE} unavailable (no server to connect to), "
                   f"{EXIT_INTERRUPTED} interrupted")

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
    """Print ``figures`` as JSON with ``--json``, else ``text`` (nothing for an empty text: an empty
    listing prints no blank line)."""
    if args.json:
        print(json.dumps(figures))
    elif text:
        print(text)


def stdin_lines() -> list[bytes]:
    """The lines of standard input, as bytes (each without its newline; a last empty line is none)."""
    data = sys.stdin.buffer.read()
    lines = data.split(b"\n")
    return lines[:-1] if lines and not lines[-1] else lines


def arg_bytes(text: str) -> bytes:
    """A command-line argument's bytes, as the shell gave them (bytes that are not UTF-8 included)."""
    return text.encode(errors="surrogateescape")


def time_text(ms: int | float | None) -> str | None:
    """A time in milliseconds since 1970 as the command prints every time: ISO 8601 UTC with
    milliseconds and a ``Z`` (``2026-11-27T04:30:00.123Z``); None stays None."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: str) -> int:
    """Milliseconds since 1970 from a time as given on the command line: ISO 8601
    (``2026-11-27T04:30:00.123Z``, ``2026-11-27 04:30``; UTC unless it names a zone), or an integer
    of milliseconds since 1970. :class:`InvalidArgumentError` for anything else."""
    spelled = text.strip()
    if spelled.isdigit():
        return int(spelled)
    try:
        when = datetime.fromisoformat(spelled.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(f"a time is ISO 8601 (2026-11-27T04:30:00Z; UTC if no zone) or milliseconds "
                                   f"since 1970, got {text!r:.80}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return round(when.timestamp() * 1000)


def plural(count: int, noun: str) -> str:
    """``1 record``, ``2 records``, ``1 entry``, ``3 entries``."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun[:-1]}ies" if noun.endswith("y") else f"{count} {noun}s"


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_RAW_BYTES = range(0xDC80, 0xDD00)
"""Where ``surrogateescape`` puts the bytes that are not UTF-8."""


def text_of(data: bytes | str) -> str:
    """``data`` (bytes, or text) as one line that is safe on a terminal: UTF-8 as it is, with a
    backslash escape for a backslash (``\\\\``), a character that is not printable (``\\n``, ``\\t``,
    ``\\x1b`` of an ANSI escape, ``\\u200b``) and a byte that is not UTF-8 (``\\xff``)."""
    decoded = data.decode(errors="surrogateescape") if isinstance(data, bytes) else data
    if decoded.isprintable() and "\\" not in decoded:
        return decoded
    return "".join(_escape(ch) for ch in decoded)


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if code in _RAW_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    if ch.isprintable():
        return ch
    if code < 0x80:  # \x80-\xff mean bytes that are not UTF-8; characters above use \u
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def bytes_json(data: bytes) -> Any:
    """Bytes in JSON: a string when they are UTF-8, else ``{"hex": ...}``."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"hex": data.hex()}
