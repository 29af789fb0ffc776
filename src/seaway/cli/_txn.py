"""``seaway txn``: the transactions a store's manager holds, from the shell.

``list`` prints those in progress and the invalid ones (aborted or timed out, whose data is not gone
yet); ``status`` how one ended (or IN_PROGRESS, or UNKNOWN); ``abort`` ends one that is in progress,
so that nothing it wrote becomes visible (an operator's way out of a stuck writer).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from seaway.cli._store import open_store, out, time_text
from seaway.errors import InvalidArgumentError

if TYPE_CHECKING:
    from seaway.txn import TxnInfo


def add_txn_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``txn list|status|abort`` to ``commands`` (the top-level subparsers)."""
    txn = commands.add_parser("txn", help="list transactions; the status of one; abort one",
                              description="A transaction is named by its id (its write pointer), as "
                                          "'txn list' prints it.")
    ops = txn.add_subparsers(dest="op", required=True, metavar="OPERATION")
    listing = ops.add_parser("list", parents=[common],
                             help="transactions in progress, then invalid ones (aborted, timed out)")
    listing.add_argument("--limit", type=int, default=None,
                         help="print at most this many (all by default; read in pages either way)")
    ops.add_parser("status", parents=[common], help="IN_PROGRESS, COMMITTED, ABORTED, TIMED_OUT or UNKNOWN") \
        .add_argument("id")
    ops.add_parser("abort", parents=[common], help="abort a transaction in progress").add_argument("id")


def run_txn(args: argparse.Namespace) -> None:
    """Carry out ``args.op``; failures are raised (as :class:`SeawayError`) for the caller to print."""
    txn_id = _txn_id(args.id) if args.op != "list" else 0  # checked before the store opens
    if args.op == "list" and args.limit is not None and args.limit < 1:
        raise InvalidArgumentError(f"--limit is a positive number, got {args.limit}")
    with open_store(args, writes=args.op == "abort") as sw:
        if args.op == "list":
            if args.json:
                print(json.dumps([_info_json(info) for info in _pages(sw.txn, args.limit)]))
            else:
                for info in _pages(sw.txn, args.limit):
                    print(_info_text(_info_json(info)))
        elif args.op == "status":
            status = sw.txn.status(txn_id)
            out(args, {"id": txn_id, "status": status.value}, status.value)
        else:
            sw.txn.abort(txn_id)
            status = sw.txn.status(txn_id)
            out(args, {"id": txn_id, "status": status.value}, f"aborted {txn_id}: {status.value}")


PAGE = 1000
"""Transactions ``txn list`` asks for at once: what it holds stays small however many there are."""


def _pages(txn: Any, limit: int | None) -> Iterator[TxnInfo]:
    """``limit`` transactions (all when None), read a page at a time."""
    left = limit
    page = txn.list(limit=PAGE if left is None else min(PAGE, left))
    while page:
        yield from page
        if left is not None:
            left -= len(page)
            if left <= 0:
                return
        page = txn.list(after=page[-1], limit=PAGE if left is None else min(PAGE, left))


def _txn_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 2**64:
        raise InvalidArgumentError(f"a transaction id is a positive integer, as 'txn list' prints it; got {text!r}")
    return value


def _info_json(info: TxnInfo) -> dict[str, Any]:
    return {"id": info.id, "status": info.status.value, "began": time_text(info.began_ms),
            "began_ms": info.began_ms, "expiry": time_text(info.expiry_ms), "expiry_ms": info.expiry_ms,
            "logs": list(info.logs)}


def _info_text(row: dict[str, Any]) -> str:
    parts = [str(row["id"]), row["status"]]
    if row["began_ms"] is not None:
        parts.append(f"began {row['began']}")
    if row["expiry_ms"] is not None:
        parts.append(f"times out {row['expiry']}")
    parts.append(f"logs {','.join(map(str, row['logs'])) or '-'}")
    return "\t".join(parts)

