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

from seaway.cli._store import EXIT_ABSENT, bytes_json, open_store, out, text_of
from seaway.errors import ConditionFailedError, InvalidArgumentError


def add_meta_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``meta get|put|delete|scan`` to ``commands`` (the top-level subparsers)."""
    meta = commands.add_parser("meta", help="get, put, delete and scan keys of the metadata store",
                               description="Keys, values and prefixes are given as UTF-8 text. Text output "
                                           "escapes a backslash (\\\\), a character that is not printable "
                                           "(\\n, \\x1b) and a byte that is not UTF-8 (\\xff); --json gives "
                                           '{"hex": ...} for bytes that are not UTF-8.')
    ops = meta.add_subparsers(dest="op", required=True, metavar="OPERATION")
    get = ops.add_parser("get", parents=[common], help=f"a key's value and version (status {EXIT_ABSENT} if absent)")
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
    """Carry out ``args.op``; return the exit status (EXIT_ABSENT: ``get`` of an absent key). Other failures are
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
                message = f"{ns} {text_of(key)}: no such key"
                print(json.dumps({"error": message, "code": "NO_SUCH_KEY", "retriable": False}) if args.json
                      else f"seaway: {message}", file=sys.stderr)
                return EXIT_ABSENT
            out(args, _entry_json(key, found.value, found.version), f"{text_of(found.value)}\tversion {found.version}")
            return 0
        try:
            if args.op == "put":
                version = meta.put(ns, key, _utf8(args.value, "VALUE"), expect_version=args.expect_version)
                out(args, {"namespace": ns, "key": bytes_json(key), "version": version},
                    f"put {ns} {text_of(key)}: version {version}")
            else:
                revision = meta.delete(ns, key, expect_version=args.expect_version)
                out(args, {"namespace": ns, "key": bytes_json(key), "revision": revision},
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


def _entry_json(key: bytes, value: bytes, version: int) -> dict[str, Any]:
    return {"key": bytes_json(key), "value": bytes_json(value), "version": version}
