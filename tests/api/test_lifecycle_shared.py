"""Sealed and deleted logs, conditional appends and get-or-create, embedded and through a server."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from seaway import (
    LSN_MAX,
    Gap,
    GapType,
    LogDeletedError,
    LogExistsError,
    LogSealedError,
    Record,
    TailMismatchError,
    UnknownLogError,
)
from tests.api.conftest import Api


def records(items: list[object]) -> list[bytes]:
    return [i.payload for i in items if isinstance(i, Record)]


def read_until_done(reader: object, timeout_s: float = 30) -> list[object]:
    items: list[object] = []
    deadline = time.monotonic() + timeout_s
    while not reader.done and time.monotonic() < deadline:  # type: ignore[attr-defined]
        items += reader.read(1000, timeout_s=1)  # type: ignore[attr-defined]
    assert reader.done, f"the reader did not finish: {items[-3:]}"  # type: ignore[attr-defined]
    return items


def test_sealed_log_refuses_appends_and_readers_reach_its_end(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    lsns = log.append_batch([b"a", b"b", b"c"])
    assert log.final_lsn() is None
    with api.sw.logs.reader() as tailing:
        tailing.start_reading(log, 1, LSN_MAX)
        before = []
        deadline = time.monotonic() + 30
        while len(records(before)) < 3 and time.monotonic() < deadline:
            before += tailing.read(100, timeout_s=1)
        assert not tailing.done
        final = log.seal()
        assert final == lsns[-1] == log.tail_lsn() == log.final_lsn()
        after = read_until_done(tailing)  # a tailing reader is told, without polling the log
        assert after == [Gap(log.id, GapType.SEALED, final + 1, LSN_MAX)]
    with pytest.raises(LogSealedError):
        log.append(b"late")
    with pytest.raises(LogSealedError):
        log.append_batch_async([b"late"]).result(30)
    assert log.seal() == final  # idempotent
    assert log.tail_lsn() == final
    again = api.sw.logs.get(log.name)
    assert again.final_lsn() == final
    assert records(list(again.read())) == [b"a", b"b", b"c"]
    with api.sw.logs.reader() as reader:  # a new reader from the start reads it all, then the end
        reader.start_reading(log, 1, LSN_MAX)
        items = read_until_done(reader)
        assert records(items) == [b"a", b"b", b"c"]
        assert items[-1] == Gap(log.id, GapType.SEALED, final + 1, LSN_MAX)
    with api.sw.logs.reader() as bounded:  # a read that ends at or before the final LSN sees no seal
        bounded.start_reading(log, 1, final)
        assert all(not (isinstance(i, Gap) and i.type is GapType.SEALED) for i in read_until_done(bounded))


def test_seal_decides_appends_accepted_before_it(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    futures: list[Future[range]] = [log.append_batch_async([b"%d" % i]) for i in range(200)]
    final = log.seal()
    outcomes = []
    for f in futures:
        try:
            outcomes.append(f.result(30)[0])
        except LogSealedError:
            outcomes.append(None)
    stored = [lsn for lsn in outcomes if lsn is not None]
    # Whatever was acknowledged is at or below the final LSN, and every record there is readable.
    assert stored and max(stored) <= final
    assert [i.lsn for i in log.read() if isinstance(i, Record)] == sorted(stored)
    # The appends refused are the last ones: acknowledged appends form a prefix of the calls.
    first_refused = next((k for k, lsn in enumerate(outcomes) if lsn is None), len(outcomes))
    assert all(lsn is None for lsn in outcomes[first_refused:])


def test_deleted_log_is_unreadable_and_its_id_never_comes_back(api: Api) -> None:
    name = api.name()
    log = api.sw.logs.create(name)
    log.append_batch([b"x" * 100] * 20)
    with api.sw.logs.reader() as reader:
        reader.start_reading(log, 1, LSN_MAX)
        deadline = time.monotonic() + 30
        seen: list[object] = []
        while len(records(seen)) < 20 and time.monotonic() < deadline:
            seen += reader.read(100, timeout_s=1)
        log.delete()
        with pytest.raises(LogDeletedError):  # said once, then the reader goes on with its other logs
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                reader.read(100, timeout_s=0.5)
    with pytest.raises(LogDeletedError):
        log.append(b"late")
    with pytest.raises(LogDeletedError):
        log.tail_lsn()
    with pytest.raises(LogDeletedError):
        list(log.read())
    with pytest.raises(LogDeletedError):
        api.sw.logs.get(log.id)
    with pytest.raises(UnknownLogError):
        api.sw.logs.get(name)
    with pytest.raises(LogDeletedError):
        api.sw.logs.delete(log)
    assert name not in [x.name for x in api.sw.logs.list()]
    reborn = api.sw.logs.create(name)  # the name may be used again, the id never
    assert reborn.id != log.id and list(reborn.read()) == []
    with pytest.raises(LogExistsError):
        api.sw.logs.create(api.name(), log_id=log.id)


def test_conditional_append_fences_other_writers(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    first = log.append_batch([b"a"], if_tail=0)  # an empty log's tail is 0
    second = log.append_batch([b"b", b"c"], if_tail=first[-1])
    with pytest.raises(TailMismatchError):
        log.append_batch([b"stale"], if_tail=first[-1])
    with pytest.raises(TailMismatchError):
        log.append_batch_async([b"stale"], if_tail=0).result(30)
    # Pipelined: each batch names the last LSN of the one before, before that one is answered.
    pipelined = log.append_batch_async([b"d"], if_tail=second[-1])
    assert log.append_batch([b"e"], if_tail=second[-1] + 1)[0] == second[-1] + 2
    assert pipelined.result(30)[0] == second[-1] + 1
    assert records(list(log.read())) == [b"a", b"b", b"c", b"d", b"e"]


def test_racing_conditional_appends_let_one_writer_win_each_slot(api: Api) -> None:
    log = api.sw.logs.create(api.name())
    wins: list[list[int]] = [[], [], []]
    stop = time.monotonic() + 2

    def writer(k: int) -> None:
        while time.monotonic() < stop:
            tail = log.tail_lsn()
            try:
                wins[k].append(log.append_batch([b"%d" % k], if_tail=tail)[0])
            except TailMismatchError:
                continue

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    won = sorted(lsn for w in wins for lsn in w)
    assert won, "no conditional append succeeded"
    stored = [i.lsn for i in log.read() if isinstance(i, Record)]
    assert stored == won  # every slot has exactly one winner, and only winners are stored


def test_get_or_create(api: Api) -> None:
    name = api.name()
    created = api.sw.logs.get_or_create(name, payload_bytes_max=500)
    again = api.sw.logs.get_or_create(name, payload_bytes_max=500)
    assert created == again and again.attributes.payload_bytes_max == 500
    assert api.sw.logs.get_or_create(name) == created  # nothing asked: as it is
    with pytest.raises(LogExistsError, match="payload_bytes_max is 500, not 900"):  # says what differs
        api.sw.logs.get_or_create(name, payload_bytes_max=900)
    with pytest.raises(LogExistsError, match="backlog_s is None, not 60"):
        api.sw.logs.get_or_create(name, backlog_s=60)


def test_a_deleted_log_leaves_no_append_state_in_the_store_or_connection(api: Api) -> None:
    sw = api.sw
    gone, kept = sw.logs.create(api.name()), sw.logs.create(api.name())
    for log in (gone, kept):  # held: their handles keep their coalescers
        log.append(b"one at a time")
        log.append_batch([b"a", b"batch"])
    held = [sw.logs._coalescers] if api.kind == "embedded" else [sw._coalescers, sw._producers]
    assert all(gone.id in h and kept.id in h for h in held)
    sw.logs.delete(gone)
    assert all(gone.id not in h and kept.id in h for h in held)
    with pytest.raises(LogDeletedError):  # a handle kept on it still says why
        gone.append(b"late")
    assert kept.append(b"still") > 0
