"""Fuzz every request handler of a real server: malformed, truncated, oversized, mistyped requests and
unknown fields. The server never crashes, answers each with a typed error (or a result), every
record acknowledged before and during the fuzzing is still there, byte for byte, and every
transaction committed meanwhile stays committed, with its metadata writes.

The security rules are fuzzed too (docs/security.md): requests into the store's own namespaces,
forged ledger changes, plugins' floors, notification targets outside what the operator allows,
and secrets, which must never come back out (not in the ledger, a listing or the server's log)."""

from __future__ import annotations

import os
import random
import threading
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import grpc
import pytest

import seaway
from seaway import Record, SeawayError, TxnStatus
from seaway.ledger import (
    LogCreated,
    NotifyConfigured,
    ScopeCreated,
    TxnCommitted,
    decode_change,
    encode_change,
)
from seaway.notify import JsonLinesFile, TargetPolicy
from seaway.server import ServerProcess
from seaway.txn import Snapshot
from seaway.wire import error_from_status, seaway_pb2

pb = seaway_pb2
REQUESTS = int(os.environ.get("SEAWAY_FUZZ_REQUESTS", "4000"))
"""Fuzzed requests in a run (SEAWAY_FUZZ_REQUESTS for a longer one): the suite stays under its time."""
TXNS_CHECKED = 2000
METHODS = {
    "Health": pb.Empty, "CreateLog": pb.CreateLogRequest, "CreateGroup": pb.CreateGroupRequest,
    "GetLog": pb.LogRef, "ListLogs": pb.PageRequest, "Append": pb.AppendRequest, "AppendMany": pb.AppendManyRequest,
    "Trim": pb.TrimRequest,
    "GetLogState": pb.LogRef, "FindTime": pb.FindTimeRequest, "ReadMany": pb.ReadControls,
    "SealLog": pb.LogRef, "DeleteLog": pb.LogRef, "AppendCounts": pb.AppendCountsRequest,
    "GetLogBounds": pb.LogBoundsRequest, "CountRecords": pb.CountRecordsRequest,
    "TxnBegin": pb.TxnBeginRequest, "TxnRegister": pb.TxnRegisterRequest, "TxnCommit": pb.TxnCommitRequest,
    "TxnCommitAll": pb.TxnCommitAllRequest, "TxnBeginMany": pb.TxnBeginManyRequest,
    "TxnCommitMany": pb.TxnCommitManyRequest, "MetaCommitMany": pb.MetaCommitManyRequest,
    "TxnAppendCommit": pb.TxnAppendCommitRequest, "TxnCommitBegin": pb.TxnCommitBeginRequest,
    "TxnAbort": pb.TxnRef, "TxnStatus": pb.TxnRef, "TxnSnapshot": pb.TxnSnapshotRequest,
    "TxnInvalid": pb.TxnInvalidRequest, "TxnList": pb.PageRequest,
    "LedgerBounds": pb.Empty, "LedgerRead": pb.LedgerReadRequest, "LedgerAppend": pb.LedgerAppendRequest,
    "LedgerPrune": pb.LedgerPruneRequest, "MetaCommit": pb.MetaBatch,
    "MetaGet": pb.MetaKey, "MetaScan": pb.MetaScanRequest, "LedgerSetFloor": pb.LedgerFloorRequest,
    "NotifySet": pb.NotifySetRequest, "NotifyDelete": pb.NotifyName, "NotifyList": pb.Empty,
    "ListGroups": pb.PageRequest, "ListPartitions": pb.PageRequest, "RunRetention": pb.Empty,
    "MetaRevision": pb.Empty, "TxnWaitEnded": pb.TxnWaitEndedRequest,
}
CHANGES = [encode_change(ScopeCreated("fuzz")), b"", b"junk", b'{"op":"scope.created","f":{"scope":1}}',
           b'{"op":"stream.renamed","f":{}}', b"[" * 70_000, b'{"op":"scope.created","f":{"scope":"a","x":1}}']
"""Changes the fuzzer sends: one valid, the others not decodable by the server."""
FORGED = [encode_change(LogCreated(7, "forged", None)), encode_change(TxnCommitted(1, 0, 0, 0)),
          encode_change(NotifyConfigured("forged", "{}"))]
"""Valid changes only the server may record: a client's batch carrying one is refused."""
NAMESPACES = ["fuzz-meta", "fuzz-meta", "fuzz-meta", "notify", "txn", "seaway.ledger-floors", "seaway.x"]
"""Where fuzzed batches write: mostly a namespace of the fuzzer's own, else the store's (refused)."""
SECRET = "fuzz-s3cret-d7f1"
"""A webhook secret the fuzzer sets: it must never come back out of the server."""
NEVER = {"events": ["txn.timed_out"], "prefix": "never/"}
"""A selection no entry matches: a configuration the server accepts and whose plugin sends nothing."""


def _notify_configs(outside: str) -> list[str]:
    """Configurations' JSON: a few the server accepts, most a hostile client's that it refuses."""
    import json  # noqa: PLC0415 - only the fuzzer's configurations need it

    def webhook(name: str, url: str, **extra: object) -> str:
        return json.dumps({"name": name, "target": {"type": "webhook", "url": url, **extra}, **NEVER})

    refused_urls = ["http://127.0.0.1:1/", "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/",
                    "http://10.0.0.1/", "http://[fd00:ec2::254]/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/"]
    refused_files = [outside, "../escape.jsonl", "/etc/passwd", "data/LOCK", "x.jsonl"]  # no file dir at all
    return [
        webhook("fuzz-ok", "https://hooks.example.invalid/h?token=fuzz-q", secret=SECRET),
        webhook("fuzz-ok2", "https://user:fuzz-pw@hooks.example.invalid/h", secret=SECRET),
        *[webhook(f"fuzz-w{i}", url, secret=SECRET) for i, url in enumerate(refused_urls)],
        webhook("fuzz-slow", "https://hooks.example.invalid/", timeout_s=3600),
        webhook("fuzz-red", "https://hooks.example.invalid/", secret="(redacted)"),
        *[json.dumps({"name": f"fuzz-f{i}", "target": {"type": "file", "path": path}, **NEVER})
          for i, path in enumerate(refused_files)],
        "", "{", "[]", '{"name": "x"}', "[" * 100_000 + "]" * 100_000,  # the last: nested past the parser
    ]
TXN_NAMESPACE = "fuzz-txn"
"""Where the checked transactions stage their metadata writes (fuzzed commits write elsewhere)."""


NOTIFY_CONFIGS: list[str] = []
"""Filled by the test (the refused file paths are under its tmp_path)."""


def _check_security_rules(log: str, entries_text: str, configs: list[Any], floors: dict[str, int],
                          outcomes: dict[str, int], outside: Path, seed: int) -> None:
    """What the fuzzed hostile requests must not have achieved."""
    assert "PERMISSION_DENIED" in outcomes and "NOTIFY_CONFIG_INVALID" in outcomes, outcomes
    for secret in (SECRET, "fuzz-pw", "fuzz-q"):
        assert secret not in entries_text, f"seed {seed}: a secret reached the ledger"
        assert secret not in log, f"seed {seed}: a secret reached the server's log"
        assert secret not in repr(configs), f"seed {seed}: a secret came back in a listing"
    for config in configs:  # (a mutated request may set another one: never one the policy refuses)
        assert not isinstance(config.target, JsonLinesFile), f"seed {seed}: a file target was set: {config}"
        config.check_policy(TargetPolicy())
    assert not outside.exists(), f"seed {seed}: a file target wrote outside"
    names = {c.name for c in configs}
    assert all(not f.startswith("notify/") or f[len("notify/"):] in names for f in floors), (
        f"seed {seed}: a client set a plugin's floor: {floors}")
    assert "forged" not in entries_text, f"seed {seed}: a forged change reached the ledger"


def _u64(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, 3, 2**32, 2**32 + 1, 2**63, 2**64 - 1, rng.randrange(2**64)])


def _valid(method: str, rng: random.Random, known_ids: list[int], txn_ids: Sequence[int] = ()) -> Any:
    """A well-formed message with values from the edges of their ranges (``txn_ids``: transactions
    the fuzzer began, so that some calls find a live one)."""
    log_id = rng.choice([*known_ids, _u64(rng)])
    text = rng.choice(["", "a", "x" * 300, "bad name", "ok/name-1", "\u2603", "a" * 255, "../../etc"])
    if method == "CreateLog":
        attrs = pb.Attributes()
        if rng.random() < 0.5:
            attrs.backlog_s = rng.choice([-1.0, 0.0, 1e-9, 3600.0, float("inf"), float("nan"), 1e308])
        if rng.random() < 0.5:
            attrs.payload_bytes_max = rng.choice([0, 1, 1000, 2**32 - 1])
        if rng.random() < 0.3:
            attrs.durability = rng.choice(["sync", "async", "", "maybe"])
        msg = pb.CreateLogRequest(name=f"{text}{rng.randrange(10**6)}" if rng.random() < 0.7 else text,
                                  attributes=attrs)
        if rng.random() < 0.3:
            msg.log_id = _u64(rng)
        if rng.random() < 0.2:
            msg.group = text
        return msg
    if method == "CreateGroup":
        lo = rng.randrange(2**40, 2**41)
        return pb.CreateGroupRequest(name=f"g{rng.randrange(10**9)}", first_id=rng.choice([lo, _u64(rng)]),
                                     last_id=rng.choice([lo + 10, _u64(rng)]))
    if method in ("GetLog", "GetLogState", "SealLog", "DeleteLog"):
        return pb.LogRef(name=text) if rng.random() < 0.3 else pb.LogRef(log_id=log_id)
    if method == "Append":
        count = rng.choice([0, 1, 5, 50])
        sizes = [rng.choice([0, 10, 999, 1000, 1001, 100_000]) for _ in range(count)]
        msg = pb.AppendRequest(log_id=log_id, payloads=[rng.randbytes(s) for s in sizes])
        if rng.random() < 0.3:
            msg.producer_id = rng.randbytes(rng.choice([1, 16, 64, 65, 300]))
            msg.sequence = _u64(rng)
        if rng.random() < 0.2:
            msg.if_tail = _u64(rng)
        return msg
    if method == "AppendMany":
        count = rng.choice([0, 1, 2, 4, 65])  # 65: over the server's limit of batches a call
        return pb.AppendManyRequest(batches=[_valid("Append", rng, known_ids) for _ in range(count)])
    if method == "Trim":
        return pb.TrimRequest(log_id=log_id, lsn=_u64(rng))
    if method == "FindTime":
        return pb.FindTimeRequest(log_id=log_id, timestamp_ms=rng.choice([-1, 0, 2**63 - 1, -(2**63)]))
    if method == "AppendCounts":  # 100_001: over the server's limit of logs a call
        count = rng.choice([0, 1, 3, 1000, 100_001])
        return pb.AppendCountsRequest(log_ids=[rng.choice([*known_ids, _u64(rng)]) for _ in range(count)])
    if method == "GetLogBounds":
        count = rng.choice([0, 1, 3, 1000, 100_001])
        return pb.LogBoundsRequest(log_ids=[rng.choice([*known_ids, _u64(rng)]) for _ in range(count)])
    if method == "CountRecords":
        count = rng.choice([0, 1, 3, 1000, 100_001])
        return pb.CountRecordsRequest(ranges=[pb.CountRange(log_id=rng.choice([*known_ids, _u64(rng)]),
                                                            lsn_from=_u64(rng), lsn_until=_u64(rng))
                                              for _ in range(count)])
    if method in ("ListLogs", "TxnList"):  # a page after a key of the right width or not
        page = pb.PageRequest()
        if rng.random() < 0.5:
            page.after = rng.randbytes(rng.choice([0, 8, 9, 16]))
        return page
    if method in ("TxnBeginMany", "TxnCommitMany", "MetaCommitMany"):
        return _valid_many(method, rng, known_ids, txn_ids)
    if method.startswith("Txn"):
        return _valid_txn(method, rng, known_ids, txn_ids)
    if method.startswith(("Ledger", "Meta")):
        return _valid_ledger(method, rng)
    if method == "NotifySet":
        return pb.NotifySetRequest(config_json=rng.choice(NOTIFY_CONFIGS))
    if method == "NotifyDelete":
        return pb.NotifyName(name=rng.choice(["fuzz-ok", "fuzz-ok2", "nope", "", text]))
    if method == "ReadMany":  # one message of a stream: a few controls
        return pb.ReadControls(controls=[_control(rng, known_ids) for _ in range(rng.choice([0, 1, 1, 3]))])
    return pb.Empty()


def _valid_many(method: str, rng: random.Random, known_ids: list[int], txn_ids: Sequence[int]) -> Any:
    """A joined call: items as their single call's fuzzing makes them (1001: over the bound of items)."""
    count = rng.choice([0, 1, 2, 5, 1001] if rng.random() < 0.05 else [1, 2, 5])
    if method == "TxnBeginMany":
        return pb.TxnBeginManyRequest(begins=[_valid_txn("TxnBegin", rng, known_ids, txn_ids) for _ in range(count)])
    if method == "TxnCommitMany":
        return pb.TxnCommitManyRequest(commits=[_valid_txn("TxnCommit", rng, known_ids, txn_ids)
                                                for _ in range(count)])
    return pb.MetaCommitManyRequest(batches=[_valid_ledger("MetaCommit", rng) for _ in range(count)])


def _valid_txn(method: str, rng: random.Random, known_ids: list[int], txn_ids: Sequence[int]) -> Any:
    txn_id = rng.choice([*txn_ids, *txn_ids, _u64(rng)])
    if method == "TxnBegin":
        msg = pb.TxnBeginRequest()
        if rng.random() < 0.7:
            msg.timeout_s = rng.choice([-1.0, 0.0, 1e-9, 0.5, 30.0, 3600.0, 3600.5, float("inf"), float("nan"), 1e308])
        if rng.random() < 0.5:  # logs registered by the begin; 10_001: over the limit; 0 is no log id
            count = rng.choice([1, 3, 10_001])
            msg.log_ids.extend(rng.choice([*known_ids, 0, _u64(rng)]) for _ in range(count))
        for known in ("invalid_known", "live_known"):  # copies the client keeps: none, or of any version
            if rng.random() < 0.5:
                getattr(msg, known).CopyFrom(pb.InvalidKnown(epoch=rng.choice([0, _u64(rng)]),
                                                             version=rng.choice([0, 1, _u64(rng)])))
        if rng.random() < 0.3:  # keys read by the begin (17: over the bound), some in the store's own namespaces
            for _ in range(rng.choice([1, 2, 17])):
                msg.reads.add(namespace=rng.choice([*NAMESPACES, TXN_NAMESPACE, "", "bad ns"]),
                              key=rng.choice([b"configs", b"", b"k", rng.randbytes(1025)]))
        return msg
    if method == "TxnSnapshot":
        snap = pb.TxnSnapshotRequest()
        for known in ("invalid_known", "live_known"):
            if rng.random() < 0.5:
                getattr(snap, known).CopyFrom(pb.InvalidKnown(epoch=rng.choice([0, _u64(rng)]),
                                                              version=rng.choice([0, 1, _u64(rng)])))
        return snap
    if method in ("TxnAbort", "TxnStatus"):
        return pb.TxnRef(id=txn_id)
    if method == "TxnRegister":  # 10_001: over the manager's limit of logs a call
        count = rng.choice([0, 1, 3, 10_001])
        return pb.TxnRegisterRequest(id=txn_id, log_ids=[rng.choice([*known_ids, _u64(rng)]) for _ in range(count)])
    if method in ("TxnCommit", "TxnCommitAll"):
        msg = pb.TxnCommitRequest(id=txn_id, conflicts=[rng.randbytes(rng.choice([0, 1, 16, 1024, 1025]))
                                                        for _ in range(rng.choice([0, 1, 3]))])
        for _ in range(rng.choice([0, 1, 2, 1001])):  # 1001: over the limit of writes a commit
            write = msg.writes.add(namespace=rng.choice(["fuzz", "", "bad ns", "x" * 65, "\u2603", "notify", "txn",
                                                         "seaway.ledger-floors"]),
                                   key=rng.randbytes(rng.choice([0, 8, 1025])))
            if rng.random() < 0.7:  # now and then one over the bound of a value
                sizes = [0, 10, 1000, (1 << 20) + 1] if rng.random() < 0.01 else [0, 10]
                write.value = rng.randbytes(rng.choice(sizes))
        if method == "TxnCommitAll":  # 10_001: over the limit of transactions; repeats refused
            count = rng.choice([0, 1, 2, 3, 10_001])
            ids = [rng.choice([*txn_ids, *txn_ids, _u64(rng)]) for _ in range(count)]
            return pb.TxnCommitAllRequest(ids=ids, conflicts=msg.conflicts, writes=msg.writes)
        return msg
    if method == "TxnAppendCommit":
        return _valid_append_commit(rng, known_ids, txn_id)
    if method == "TxnCommitBegin":  # a commit, and the begin it carries
        return pb.TxnCommitBeginRequest(commit=_valid_txn("TxnCommit", rng, known_ids, [txn_id]),
                                        begin=_valid_txn("TxnBegin", rng, known_ids, txn_ids))
    return pb.Empty()


def _slot(rng: random.Random) -> pb.LsnSlot:
    """A slot naming a record of an earlier batch, or not (a later batch, a record or byte past the end)."""
    return pb.LsnSlot(batch=rng.choice([0, 0, 1, 2, 2**32 - 1]), record=rng.choice([0, 0, 1, 50, 2**32 - 1]),
                      offset=rng.choice([0, 0, 2, 8, 993, 2**32 - 1]), hex=rng.random() < 0.3)


def _valid_append_commit(rng: random.Random, known_ids: list[int], txn_id: int) -> pb.TxnAppendCommitRequest:
    """Linked batches (65: over the bound of batches a call) with slots, and a commit's writes, some linked."""
    commit = _valid_txn("TxnCommit", rng, known_ids, [txn_id])
    msg = pb.TxnAppendCommitRequest(id=txn_id, conflicts=commit.conflicts, writes=commit.writes)
    for _ in range(rng.choice([0, 1, 2, 3, 65])):
        append = _valid("Append", rng, known_ids)
        batch = msg.batches.add(log_id=append.log_id, payloads=append.payloads)
        for _ in range(rng.choice([0, 1, 3])):
            batch.slots.add(payload=rng.choice([0, 1, 2**32 - 1]), slot=_slot(rng))
    for _ in range(rng.choice([0, 1, 2])):
        msg.linked_writes.add(namespace=rng.choice(["fuzz", "", "txn", "bad ns"]),
                              key=rng.randbytes(rng.choice([0, 24])), value=rng.randbytes(rng.choice([0, 16])),
                              key_slots=[_slot(rng)],
                              value_slots=[_slot(rng) for _ in range(rng.choice([0, 1]))])
    return msg


def _valid_ledger(method: str, rng: random.Random) -> Any:
    if method == "LedgerRead":
        return pb.LedgerReadRequest(index_from=_u64(rng), limit=rng.choice([0, 1, 10, 10_000, 10_001, 2**32 - 1]))
    if method == "LedgerAppend":
        return pb.LedgerAppendRequest(change=rng.choice(CHANGES))
    if method == "LedgerPrune":  # keeps the ledger, mostly: pruning is legitimate, losing entries is not
        return pb.LedgerPruneRequest(through=rng.choice([0, 1, 2]))
    if method == "MetaCommit":  # a batch with a ledger change, mostly into a namespace of the fuzzer's own
        namespace = rng.choice(NAMESPACES)
        op = rng.choice([pb.MetaOp(put=pb.MetaPutOp(namespace=namespace, key=rng.randbytes(8), value=b"v")),
                         pb.MetaOp(delete=pb.MetaKey(namespace=namespace, key=rng.randbytes(8)))])
        msg = pb.MetaBatch(ops=[op])
        if rng.random() < 0.8:
            msg.ledger = rng.choice(CHANGES + FORGED)
        return msg
    if method == "MetaGet":
        return pb.MetaKey(namespace=rng.choice(NAMESPACES), key=rng.choice([b"configs", b"config/fuzz-ok", b""]))
    if method == "MetaScan":
        return pb.MetaScanRequest(namespace=rng.choice(NAMESPACES), limit=rng.choice([0, 1, 10_001]))
    if method == "LedgerSetFloor":
        msg = pb.LedgerFloorRequest(name=rng.choice(["fuzz", "notify/fuzz-ok", "notify/x", "bad name", "",
                                                     "x" * 300]))
        if rng.random() < 0.7:
            msg.index = rng.choice([0, 1, 2**63 - 1, 2**63, 2**64 - 1])
        return msg
    return pb.Empty()


def _control(rng: random.Random, known_ids: list[int]) -> pb.ReadControl:
    log_id = rng.choice([*known_ids, _u64(rng)])
    kind = rng.randrange(4)
    if kind == 0:
        lo = rng.choice([0, 1, _u64(rng)])
        return pb.ReadControl(start=pb.ReadStart(
            log_id=log_id, lsn_from=lo, lsn_until=rng.choice([0, lo, min(lo + 5, 2**64 - 1), 1]), tag=_u64(rng)))
    if kind == 1:
        return pb.ReadControl(stop=pb.ReadStop(log_id=log_id))
    if kind == 2:
        return pb.ReadControl(grant=pb.ReadGrant(items=_u64(rng), bytes=_u64(rng)))
    return pb.ReadControl()  # carries nothing: refused


def _check_txn_reply(method: str, reply: bytes, txn_ids: list[int]) -> None:
    """A transaction call's answer decodes; a begun transaction is noted for later calls."""
    if method == "TxnBegin":
        txn_ids.append(Snapshot.decode(pb.TxnBeginReply.FromString(reply).snapshot).write_pointer)
    elif method == "TxnCommitBegin":
        answer = pb.TxnCommitBeginReply.FromString(reply)
        if answer.HasField("begun"):
            txn_ids.append(Snapshot.decode(answer.begun.snapshot).write_pointer)
    elif method == "TxnSnapshot":
        Snapshot.decode(pb.TxnSnapshotReply.FromString(reply).snapshot)
    elif method == "TxnList":
        assert all(t.id > 0 for t in pb.TxnListReply.FromString(reply).transactions)
    elif method == "LedgerRead":  # every entry the server answers with is one this version decodes
        entries = pb.LedgerReadReply.FromString(reply).entries
        assert [e.index for e in entries] == sorted(e.index for e in entries)
        for e in entries:
            decode_change(e.change)


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 200))  # garbage
    if kind == 1 and raw:
        return raw[: rng.randrange(len(raw))]  # truncated
    if kind == 2:
        return raw + bytes([0xF8, 0x06]) + rng.randbytes(rng.randrange(1, 8))  # unknown field 111
    if kind == 3 and raw:
        flipped = bytearray(raw)
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        return bytes(flipped)
    return raw


def _touches(method: str, raw: bytes, protected: int) -> bool:
    """Would this request trim, seal or delete (legitimately end or remove records of) the log whose
    records are checked?"""
    if method not in ("Trim", "SealLog", "DeleteLog"):
        return False
    try:
        return METHODS[method].FromString(raw).log_id == protected  # type: ignore[no-any-return]
    except Exception:
        return False


def _prunes_far(method: str, raw: bytes) -> bool:
    """Would this request prune the ledger past index 2 (legitimately: kept out, to check that
    nothing else drops entries)?"""
    if method != "LedgerPrune":
        return False
    try:
        through: int = pb.LedgerPruneRequest.FromString(raw).through
        return through > 2
    except Exception:
        return True


@pytest.mark.slow
def test_every_method_of_the_service_is_fuzzed() -> None:
    service = seaway_pb2.DESCRIPTOR.services_by_name["Seaway"]
    assert {m.name for m in service.methods} == set(METHODS)
    for m in service.methods:
        assert METHODS[m.name].DESCRIPTOR.full_name == m.input_type.full_name, m.name


def test_fuzzed_requests_never_crash_the_server_or_lose_acknowledged_records(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_FUZZ_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    outside = tmp_path / "outside.jsonl"
    NOTIFY_CONFIGS[:] = _notify_configs(str(outside))
    server = ServerProcess(tmp_path / "data", extra_args=("--metrics-listen", "127.0.0.1:0"))
    acked: dict[int, bytes] = {}
    stop = threading.Event()
    producer_errors: list[SeawayError] = []
    try:
        with seaway.connect(server.url) as sw:
            kept = sw.logs.create("kept")
            small = sw.logs.create("small", payload_bytes_max=1000)
            acked.update(zip(kept.append_batch([b"before-%d" % i for i in range(100)]),
                             [b"before-%d" % i for i in range(100)], strict=True))

            def produce() -> None:
                n = 0
                while not stop.is_set():
                    batch = [b"during-%d" % (n + i) for i in range(20)]
                    try:
                        acked.update(zip(kept.append_batch(batch), batch, strict=True))
                    except SeawayError as exc:  # reported by the main thread's checks
                        producer_errors.append(exc)
                        return
                    n += 20

            committed: dict[int, bytes] = {}

            def transact() -> None:
                """Commit transactions that stage a write each, until stopped (at most
                ``TXNS_CHECKED``: the manager keeps that many outcomes and more)."""
                while not stop.is_set() and len(committed) < TXNS_CHECKED:
                    try:
                        with sw.transaction() as tx:
                            tx.add_conflicts(b"fuzz-%d" % len(committed))
                            tx.stage_put(TXN_NAMESPACE, b"%d" % tx.id, b"v%d" % tx.id)
                    except SeawayError as exc:  # reported by the main thread's checks
                        producer_errors.append(exc)
                        return
                    committed[tx.id] = b"v%d" % tx.id

            producer = threading.Thread(target=produce)
            producer.start()
            transactor = threading.Thread(target=transact)
            transactor.start()
            channel = grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 64 << 20)])
            calls: dict[str, Callable[..., Any]] = {}
            for method in METHODS:
                path = f"/seaway.v1.Seaway/{method}"
                calls[method] = (channel.stream_stream(path) if method == "ReadMany" else channel.unary_unary(path))
            outcomes: dict[str, int] = {}
            txn_ids: list[int] = []  # transactions the fuzzer began
            for n in range(REQUESTS):
                method = rng.choice(list(METHODS))
                if method == "ReadMany" and rng.random() < 0.7:
                    method = "GetLog"  # streams are slow to fuzz; keep them to a few percent
                raw = _valid(method, rng, [kept.id, small.id], txn_ids[-50:]).SerializeToString()
                if rng.random() < 0.6:
                    raw = _mutate(raw, rng)
                if rng.random() < 0.05:  # a message of another type
                    raw = _valid(rng.choice(list(METHODS)), rng, [small.id]).SerializeToString()
                if _touches(method, raw, kept.id) or _prunes_far(method, raw):
                    continue
                try:
                    if method == "ReadMany":  # a stream of several controls, each fuzzed alike
                        controls = [raw] + [_mutate(_valid(method, rng, [kept.id, small.id]).SerializeToString(), rng)
                                            if rng.random() < 0.3 else _valid(method, rng, [kept.id, small.id])
                                            .SerializeToString() for _ in range(rng.randrange(8))]
                        for reply in calls[method](iter(controls), timeout=0.3):
                            for part in pb.ReadReply.FromString(reply).logs:
                                if part.HasField("error"):  # a read refused, the stream going on
                                    assert part.error.code not in ("SERVER_ERROR", "UNAVAILABLE", "SEAWAY_ERROR"), (
                                        f"seed {seed}: request {n}: a read got {part.error}")
                                    key = f"{part.error.code} (one read)"
                                    outcomes[key] = outcomes.get(key, 0) + 1
                    else:
                        reply = calls[method](raw, timeout=10)
                        _check_txn_reply(method, reply, txn_ids)
                        if method == "AppendMany":  # each batch has its own result: typed errors too
                            for result in pb.AppendManyReply.FromString(reply).results:
                                if result.HasField("error"):
                                    assert result.error.code not in ("SERVER_ERROR", "UNAVAILABLE", "TRANSPORT_ERROR",
                                                                     "SEAWAY_ERROR"), (
                                        f"seed {seed}: request {n}: a batch got {result.error}")
                                    key = f"{result.error.code} (one batch)"
                                    outcomes[key] = outcomes.get(key, 0) + 1
                    outcomes["ok"] = outcomes.get("ok", 0) + 1
                except grpc.RpcError as exc:
                    call: Any = exc
                    if call.code() == grpc.StatusCode.DEADLINE_EXCEEDED and method == "ReadMany":
                        outcomes["tailing read cut off"] = outcomes.get("tailing read cut off", 0) + 1
                        continue
                    error = error_from_status(call.code(), call.details(), call.trailing_metadata())
                    assert isinstance(error, SeawayError)
                    assert error.code not in ("SERVER_ERROR", "UNAVAILABLE", "TRANSPORT_ERROR"), (
                        f"seed {seed}: request {n} to {method} ({raw[:40]!r}) got {call.code()}: {call.details()}")
                    outcomes[error.code] = outcomes.get(error.code, 0) + 1
                if n % 1000 == 0:
                    assert sw.health() == "SERVING", f"seed {seed}: unhealthy after {n} requests"
            stop.set()
            producer.join(60)
            transactor.join(60)
            channel.close()
            assert not producer_errors, f"seed {seed}: appends failed during the fuzzing: {producer_errors[:3]}"
            assert outcomes.get("ok", 0) > REQUESTS // 20, outcomes
            assert len([c for c in outcomes if c.isupper()]) >= 5, outcomes  # many kinds of typed refusal
            assert any(c.endswith("(one batch)") for c in outcomes), outcomes
            assert any(c.endswith("(one read)") for c in outcomes), outcomes
            stored = {r.lsn: r.payload for r in kept.read() if isinstance(r, Record)}
            assert len(acked) > 100
            for lsn, payload in acked.items():
                assert stored.get(lsn) == payload, f"seed {seed}: acknowledged record at {lsn:#x} lost or changed"
            assert len(committed) > 10
            assert {"UNKNOWN_TRANSACTION", "TRANSACTION_NOT_IN_PROGRESS"} <= set(outcomes), outcomes
            for txn_id, value in committed.items():
                assert sw.txn.status(txn_id) is TxnStatus.COMMITTED, f"seed {seed}: transaction {txn_id} lost"
                assert sw.meta.get(TXN_NAMESPACE, b"%d" % txn_id) == (value, mock.ANY), (
                    f"seed {seed}: the write of transaction {txn_id} lost")
            assert sw.health() == "SERVING"
            tail, head = sw.ledger.bounds()
            assert head > 2 and tail <= 3, (tail, head)  # entries were written; fuzzed prunes go no further than 2
            # Every entry is there, and decodes (a read decodes each: no undecodable change got in).
            entries = sw.ledger.read(0, 10_000)
            assert [e.index for e in entries] == list(range(tail, min(head, tail + 9_999) + 1))
            entries_text = repr([e.change for e in entries])
            configs = sw.notify.list()
            floors = sw.ledger.floors()  # well formed (garbage raises CorruptionError)
        log = server.log_text()
        assert log.count("refused undecodable requests") <= 2, "undecodable requests flood the log"
        assert "Traceback" not in log, f"seed {seed}: the server logged a traceback"
        with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        gauges = {line.split()[0]: float(line.split()[1]) for line in metrics.splitlines()
                  if line.startswith("seaway_ledger_")}
        # The server may write entries of its own meanwhile (a transaction aborted by its timeout): the
        # gauges lie between the bounds read before the scrape and those read after it.
        with seaway.connect(server.url) as sw:
            tail_after, head_after = sw.ledger.bounds()
        assert head <= gauges["seaway_ledger_head_index"] <= head_after, (head, gauges, head_after)
        assert tail <= gauges["seaway_ledger_tail_index"] <= tail_after, (tail, gauges, tail_after)
        undecodable = [line for line in metrics.splitlines() if line.startswith("seaway_undecodable_requests_total")]
        assert undecodable and float(undecodable[0].split()[1]) > 0, "undecodable requests went uncounted"
        _check_security_rules(log, entries_text, configs, floors, outcomes, outside, seed)
    except BaseException:
        stop.set()
        print(server.log_text()[-6000:])
        raise
    finally:
        stop.set()
        server.stop()
