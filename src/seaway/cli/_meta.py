"""``seaway meta``: the metadata store from the shell.

Keys, values and prefixes are given as UTF-8 text (their bytes are the text's UTF-8). Text output
prints them as text, one entry a line, with a backslash escape for a backslash (``\\\\``), a
character that is not printable (``\\n``, ``\\t``, ``\\x1b``, ``\\u200b``) and a byte that is not
UTF-8 (``\\xff``); JSON output gives a string, or ``{"hex": ...}`` for bytes that are not UTF-8.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from seaway.cli._store import open_store, out
from seaway.errors import ConditionFailedError, InvalidArgumentError

_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_RAW_BYTES = range(0xDC80, 0xDD00)
"""Where ``surrogateescape`` puts the bytes that are not UTF-8."""


def add_meta_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``meta get|put|delete|scan`` to ``commands`` (the top-level subparsers)."""
    meta = commands.add_parser("meta", help="get, put, delete and scan keys of the metadata store",
                               description="Keys, values and prefixes are given as UTF-8 text. Text output "
                                           "escapes a backslash (\\\\), a character that is not printable "
                                           "(\\n, \\x1b) and a byte that is not UTF-8 (\\xff); --json gives "
                                           '{"hex": ...} for bytes that are not UTF-8.')
    ops = meta.add_subparsers(dest="op", required=True, metavar="OPERATION")
    get = ops.add_parser("get", parents=[common], help="a key's value and version (status 1 if absent)")
    get.add_argument("namespace")
    get.add_argument("key")
    put = ops.add_parser("put", parents=[common], help="put a key; print its new version")
    put.add_argument("namespace")
    put.add_argument("key")
    put.add_argument("value")
    delete = ops.add_parser("delete", parents=[common], help="delete a key; print the revision")
    delete.add_argument("namespace")
    delete.add_argument("key")
    for op in (put, delete):
        op.add_argument("--expect-version", type=int, metavar="N",
                        help="only if the key's version is N (0: only if it is absent)")
    scan = ops.add_parser("scan", parents=[common], help="a namespace's keys in byte order")
    scan.add_argument("namespace")
    scan.add_argument("--prefix", default="", help="only keys that start with this text")
    scan.add_argument("--limit", type=int, default=1000, help="at most this many keys (default 1000, at most 10000)")


def run_meta(args: argparse.Namespace) -> int:
    """Carry out ``args.op``; return the exit status (1: ``get`` of an absent key). Other failures are
    raised (as :class:`SeawayError`) for the caller to print."""
    with open_store(args, writes=args.op in ("put", "delete")) as sw:
        meta = sw.meta
        ns = args.namespace
        if args.op == "scan":
            rows = meta.scan(ns, prefix=_utf8(args.prefix, "PREFIX"), limit=args.limit)
            if args.json:
                print(json.dumps([_entry_json(key, found.value, found.version) for key, found in rows]))
            else:
                for key, found in rows:
                    print(f"{text_of(key)}\t{text_of(found.value)}\tversion {found.version}")
            return 0
        key = _utf8(args.key, "KEY")
        if args.op == "get":
            found = meta.get(ns, key)
            if found is None:
                print(f"seaway: {ns} {text_of(key)}: no such key", file=sys.stderr)
                return 1
            out(args, _entry_json(key, found.value, found.version), f"{text_of(found.value)}\tversion {found.version}")
            return 0
        try:
            if args.op == "put":
                version = meta.put(ns, key, _utf8(args.value, "VALUE"), expect_version=args.expect_version)
                out(args, {"namespace": ns, "key": _bytes_json(key), "version": version},
                    f"put {ns} {text_of(key)}: version {version}")
            else:
                revision = meta.delete(ns, key, expect_version=args.expect_version)
                out(args, {"namespace": ns, "key": _bytes_json(key), "revision": revision},
                    f"deleted {ns} {text_of(key)} (revision {revision})")
        except ConditionFailedError as exc:
            raise ConditionFailedError(f"{ns} {text_of(key)} is {_version_text(exc.version)}, not "
                                       f"{_version_text(args.expect_version)}: nothing changed",
                                       exc.namespace, exc.key, exc.version) from None
        return 0


def _version_text(version: int) -> str:
    return f"version {version}" if version else "absent"


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # an argument whose bytes were not UTF-8 (Python keeps them as surrogates)
        raise InvalidArgumentError(f"{what} must be UTF-8 text, got {text!r:.80}") from None


def text_of(data: bytes) -> str:
    """``data`` as one line of text: UTF-8 as it is, escaped where it is not printable (see the module)."""
    decoded = data.decode(errors="surrogateescape")
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


def _bytes_json(data: bytes) -> Any:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def _entry_json(key: bytes, value: bytes, version: int) -> dict[str, Any]:
    return {"key": _bytes_json(key), "value": _bytes_json(value), "version": version}
