"""The change ledger's API (``sw.ledger``), embedded and through a server: an entry for each change
of a log, written with it; reads by index; entries on their own; pruning by range; floors.

The remote server is shared by the suite: tests look only at entries written after they start,
and at their own resources."""

from __future__ import annotations

import pytest

import seaway
from seaway import (
    ConditionFailedError,
    InvalidArgumentError,
    LogDeletedError,
    PayloadTooLargeError,
    PermissionDeniedError,
)
from seaway.ledger import (
    CHANGE_BYTES_MAX,
    LedgerEntry,
    LogCreated,
    LogGroupCreated,
    LogRemoved,
    LogSealed,
    LogTrimmed,
    NotifyConfigured,
    ScopeCreated,
)
from seaway.log import READ_LIMIT_MAX
from seaway.server import ServerProcess
from seaway.wire import seaway_pb2 as pb
from tests.api.conftest import Api


def _since(api: Api, head: int, prefix: str) -> list[LedgerEntry]:
    """Entries after ``head`` whose resource starts with ``prefix``."""
    out: list[LedgerEntry] = []
    index = head + 1
    while batch := api.sw.ledger.read(index, 1000):
        out += [e for e in batch if e.resource.startswith(prefix)]
        index = batch[-1].index + 1
    return out


def test_each_change_of_a_log_writes_one_entry_with_it(api: Api) -> None:
    sw = api.sw
    _, head = sw.ledger.bounds()
    group, name = api.name("grp"), api.name("ledgered")
    first = 10**9 + api.number() * 1000
    sw.logs.create_group(group, first, first + 99)
    log = sw.logs.create(name, group=group)
    lsns = log.append_batch([b"a", b"b", b"c"])
    log.trim(lsns[1])
    log.trim(lsns[0])  # lower: no change, no entry
    final = log.seal()
    assert log.seal() == final  # sealed already: no entry
    log.delete()
    changes = [e.change for e in _since(api, head, f"log/{name}")]
    assert changes == [LogCreated(log.id, name, group), LogTrimmed(log.id, name, lsns[1]),
                       LogSealed(log.id, name, final), LogRemoved(log.id, name)]
    assert [e.change for e in _since(api, head, f"log-group/{group}")] == [LogGroupCreated(group, first, first + 99)]
    entries = _since(api, head, "")
    assert [e.index for e in entries] == sorted(e.index for e in entries)
    assert all(e.time_ms > 0 for e in entries)
    with pytest.raises(LogDeletedError):
        sw.logs.get(log.id)


def _refused_remote(api: Api) -> bool:
    """Through a server, the ledger is written by the store's own changes only: a client's append
    or prune is refused, and changes nothing."""
    if api.kind != "remote":
        return False
    bounds = api.sw.ledger.bounds()
    with pytest.raises(PermissionDeniedError):
        api.sw.ledger.append(ScopeCreated(api.name("forged")))
    with pytest.raises(PermissionDeniedError):
        api.sw.ledger.prune(bounds[1])
    assert api.sw.ledger.bounds()[1] == bounds[1]
    return True


def test_append_read_and_bounds(api: Api) -> None:
    if _refused_remote(api):
        return
    sw = api.sw
    tail, head = sw.ledger.bounds()
    name = api.name("cfg")
    changes = [NotifyConfigured(name, f'{{"n":{i}}}') for i in range(5)]
    indexes = [sw.ledger.append(c) for c in changes]
    assert indexes == list(range(head + 1, head + 6))
    assert sw.ledger.bounds() == (tail, head + 5)
    entries = sw.ledger.read(head + 1, 3)
    assert [(e.index, e.change) for e in entries] == list(zip(indexes[:3], changes[:3], strict=True))
    assert entries[0].operation == "notify.configured" and entries[0].resource == f"notify/{name}"
    assert sw.ledger.read(head + 6) == []
    assert [e.change for e in sw.ledger.read(head + 4, READ_LIMIT_MAX)] == changes[3:]


def test_pruning_drops_a_range_and_a_reader_learns_exactly_what_it_missed(api: Api) -> None:
    if _refused_remote(api):
        return
    sw = api.sw
    name = api.name("pr")
    indexes = [sw.ledger.append(ScopeCreated(f"{name}-{i}")) for i in range(6)]
    checkpoint = indexes[1]  # a reader that processed up to the second entry
    assert sw.ledger.missed(checkpoint) == range(checkpoint + 1, checkpoint + 1)
    assert sw.ledger.prune(indexes[3]) == indexes[4]
    assert sw.ledger.bounds()[0] == indexes[4]
    assert sw.ledger.missed(checkpoint) == range(indexes[2], indexes[4])  # exactly the third and fourth
    assert sw.ledger.missed(indexes[5]) == range(indexes[5] + 1, indexes[5] + 1)
    assert [e.index for e in sw.ledger.read(0)][:2] == indexes[4:]  # from the tail
    assert sw.ledger.prune(indexes[0]) == indexes[4]  # below the tail: nothing more
    _, head = sw.ledger.bounds()
    assert sw.ledger.prune(head + 1000) == head + 1  # never past the head
    assert sw.ledger.bounds() == (head + 1, head)
    assert sw.ledger.append(ScopeCreated(name)) == head + 1  # indexes never go back


def test_a_metadata_batch_writes_its_entry_with_it_or_not_at_all(api: Api) -> None:
    sw = api.sw
    _, head = sw.ledger.bounds()
    scope = api.name("scope")
    sw.meta.batch().expect_absent("ledger-test", scope.encode()).put(
        "ledger-test", scope.encode(), b"1").record(ScopeCreated(scope)).commit()
    with pytest.raises(ConditionFailedError):
        sw.meta.batch().expect_absent("ledger-test", scope.encode()).put(
            "ledger-test", scope.encode(), b"2").record(ScopeCreated(scope)).commit()
    assert [e.change for e in _since(api, head, f"scope/{scope}")] == [ScopeCreated(scope)]
    assert sw.meta.get("ledger-test", scope.encode()).value == b"1"


def test_reads_of_the_largest_entries_at_the_largest_limit_return_a_bounded_part(sw: seaway.Seaway) -> None:
    # 40 changes near the 64 KiB most: 2.5 MB, more than one server reply carries. Embedded only:
    # a client may not append to a server's ledger (docs/security.md); tests/server/test_pages.py
    # reads a server's ledger at its reply bound.
    name = "big"
    changes = [NotifyConfigured(f"{name}-{i}", "x" * (CHANGE_BYTES_MAX - 200)) for i in range(40)]
    first = sw.ledger.append(changes[0])
    for change in changes[1:]:
        sw.ledger.append(change)
    got = sw.ledger.read(first, READ_LIMIT_MAX)
    assert 0 < len(got) < 40 and sum(len(e.change.config) for e in got) <= 1 << 20  # type: ignore[attr-defined]
    index, read = first, []
    while len(read) < 40:
        part = sw.ledger.read(index, READ_LIMIT_MAX)
        read += [e for e in part if e.resource.startswith(f"notify/{name}-")]
        index = part[-1].index + 1
    assert [e.change for e in read] == changes


def test_floors_are_registered_moved_and_removed(api: Api) -> None:
    sw = api.sw
    name = api.name("reader")
    sw.ledger.set_floor(name, 7)
    assert sw.ledger.floors()[name] == 7
    batch = sw.meta.batch().put("ledger-test", name.encode(), b"checkpoint 9")
    if api.kind == "remote":  # the floors' namespace is the server's: a client's batch may not write it
        with pytest.raises(PermissionDeniedError):
            sw.ledger.put_floor(batch, name, 9).commit()
        sw.ledger.set_floor(name, 9)
    else:
        sw.ledger.put_floor(batch, name, 9).commit()  # moved with the reader's checkpoint
    assert sw.ledger.floors()[name] == 9
    sw.ledger.remove_floor(name)
    assert name not in sw.ledger.floors()
    with pytest.raises(InvalidArgumentError):
        sw.ledger.set_floor("bad name", 1)
    with pytest.raises(InvalidArgumentError):
        sw.ledger.set_floor(name, -1)


@pytest.mark.parametrize(("index_from", "limit"), [(-1, 10), (0, 0), (0, READ_LIMIT_MAX + 1), (2**63, 1),
                                                   (True, 1), (0, 1.5)])
def test_bad_reads_are_refused(api: Api, index_from: object, limit: object) -> None:
    with pytest.raises(InvalidArgumentError):
        api.sw.ledger.read(index_from, limit)


def test_what_is_not_a_change_or_is_too_large_is_refused(api: Api) -> None:
    _, head = api.sw.ledger.bounds()
    with pytest.raises(InvalidArgumentError):
        api.sw.ledger.append("scope.created")
    with pytest.raises(PayloadTooLargeError):
        api.sw.ledger.append(NotifyConfigured("big", "x" * CHANGE_BYTES_MAX))
    with pytest.raises(InvalidArgumentError):
        api.sw.ledger.prune(-1)
    assert api.sw.ledger.bounds()[1] == head


@pytest.mark.parametrize("change", [b"junk", b'{"op":"stream.renamed","f":{}}',
                                    b'{"op":"scope.created","f":{"scope":1}}', b"[" * 50_000,
                                    b"x" * (CHANGE_BYTES_MAX + 1)])
def test_the_server_refuses_a_change_it_cannot_decode(server: ServerProcess, change: bytes) -> None:
    """Only through a server: the embedded API takes changes as objects, never as bytes."""
    with seaway.connect(server.url, timeout_s=30) as sw:
        _, head = sw.ledger.bounds()
        key = b"undecodable-%d" % len(change)
        put = pb.MetaOp(put=pb.MetaPutOp(namespace="ledger-test", key=key, value=b"v"))
        with pytest.raises((InvalidArgumentError, PayloadTooLargeError)):
            sw._call("MetaCommit", pb.MetaBatch(ops=[put], ledger=change), idempotent=False)
        with pytest.raises(PermissionDeniedError):  # whatever it carries
            sw._call("LedgerAppend", pb.LedgerAppendRequest(change=change), idempotent=False)
        assert sw.meta.get("ledger-test", key) is None  # the change refused with its entry
        assert sw.ledger.bounds()[1] == head
