"""Transactions' contract, embedded and through a server: begin, commit, abort and status by id,
snapshots and visibility, staged metadata writes, conflicts, timeouts, and each error by its class."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any
from unittest.mock import ANY

import grpc
import pytest

import seaway
from seaway import (
    InvalidArgumentError,
    PayloadTooLargeError,
    PermissionDeniedError,
    SeawayError,
    TransactionConflictError,
    TransactionNotInProgressError,
    TransactionTimedOutError,
    TxnStatus,
    UnavailableError,
    UnknownTransactionError,
)
from seaway.client import RemoteTxn
from seaway.server import ServerProcess
from seaway.txn import LOGS_MAX, Transactions, Visibility
from seaway.wire import seaway_pb2 as pb
from tests.api.conftest import Api, Refused

SPLIT = True
CLUSTER = True
"""Also run over a split store (a control node's shape: user logs in another store), embedded and served."""

WAIT_S = 10.0
"""How long a test waits for the manager's timeout pass (it runs every 0.1 s)."""


@contextmanager
def other_handle(api: Api) -> Iterator[Any]:
    """The store as another process would reach it: a second connection to the server (embedded, the
    same store: one process holds a data directory)."""
    if api.kind == "embedded":
        yield api.sw
    else:
        with seaway.connect(api.sw_url) as other:
            yield other


def raises_exactly(cls: type[SeawayError], call: Callable[[], object]) -> SeawayError:
    """``call()`` raises ``cls`` itself (not a subclass), with its code."""
    with pytest.raises(cls) as raised:
        call()
    assert type(raised.value) is cls, f"{type(raised.value).__name__}: {raised.value}"
    assert raised.value.code == cls.code
    return raised.value


def wait_for_status(sw: Any, txn_id: int, status: TxnStatus) -> None:
    deadline = time.monotonic() + WAIT_S
    while sw.txn.status(txn_id) is not status:
        assert time.monotonic() < deadline, f"transaction {txn_id} is {sw.txn.status(txn_id)}, not {status}"
        time.sleep(0.02)


def test_commit_and_abort_end_a_transaction_and_status_tells_how(api: Api) -> None:
    sw = api.sw
    committed = sw.transaction()
    aborted = sw.transaction()
    assert committed.id != aborted.id and committed.snapshot.write_pointer == committed.id
    assert sw.txn.status(committed.id) is TxnStatus.IN_PROGRESS
    live = {info.id: info for info in sw.txn.list()}
    assert live[committed.id].status is TxnStatus.IN_PROGRESS
    began_ms, expiry_ms = live[committed.id].began_ms, live[committed.id].expiry_ms
    assert began_ms is not None and expiry_ms is not None and expiry_ms > began_ms
    committed.commit()
    aborted.abort()
    assert committed.status is TxnStatus.COMMITTED and aborted.status is TxnStatus.ABORTED
    assert sw.txn.status(committed.id) is TxnStatus.COMMITTED
    assert sw.txn.status(aborted.id) is TxnStatus.ABORTED
    assert {committed.id, aborted.id}.isdisjoint(info.id for info in sw.txn.list())
    with sw.transaction() as scoped:
        pass
    assert sw.txn.status(scoped.id) is TxnStatus.COMMITTED
    with pytest.raises(RuntimeError), sw.transaction() as failed:
        raise RuntimeError("the work failed")
    assert sw.txn.status(failed.id) is TxnStatus.ABORTED


def test_snapshots_see_only_what_committed_before_them(api: Api) -> None:
    sw = api.sw
    early = sw.transaction()
    writer = sw.transaction()
    before = sw.txn.snapshot()
    assert before.write_pointer == 0 and {early.id, writer.id} <= set(before.in_progress)
    assert not before.visible(writer.id) and before.visibility(writer.id) is Visibility.WAIT
    assert writer.snapshot.visible(writer.id)  # its own writes
    writer.commit()
    after = sw.txn.snapshot()
    assert after.visible(writer.id) and after.visibility(writer.id) is Visibility.VISIBLE
    assert not before.visible(writer.id)  # a snapshot does not change
    assert not early.snapshot.visible(writer.id)  # begun before the commit: never sees it
    late = sw.transaction()
    assert late.snapshot.visible(writer.id) and not late.snapshot.visible(early.id)
    early.abort()
    late.abort()


def test_an_aborted_transaction_that_wrote_is_invalid_and_skipped(api: Api) -> None:
    sw = api.sw
    log = sw.logs.create(api.name())
    tx = sw.transaction()
    tx.register_logs([log.id])
    assert [info.logs for info in sw.txn.list() if info.id == tx.id] == [(log.id,)]
    tx.abort()
    snapshot = sw.txn.snapshot()
    assert tx.id in snapshot.invalid and snapshot.visibility(tx.id) is Visibility.SKIP
    (info,) = [info for info in sw.txn.list() if info.id == tx.id]
    assert (info.status, info.logs, info.began_ms, info.expiry_ms) == (TxnStatus.ABORTED, (log.id,), None, None)


def test_a_begin_registers_the_logs_it_is_given(api: Api) -> None:
    """``begin(logs=...)``: the logs are the transaction's from its begin (one edit of the manager,
    not a begin and a register), and its handle knows them."""
    sw = api.sw
    first, second = (sw.logs.create(api.name()).id for _ in range(2))
    tx = sw.txn.begin(logs=[second, first, second])
    assert [info.logs for info in sw.txn.list() if info.id == tx.id] == [tuple(sorted((first, second)))]
    asked: list[object] = []
    real = sw.txn.api

    class Watching:
        def __getattr__(self, name: str) -> Any:
            asked.append(name)
            return getattr(real, name)

    tx._api = Watching()
    tx.register_logs([first, second])  # registered already: nothing to ask the manager
    assert "register" not in asked
    tx.abort()
    (info,) = [info for info in sw.txn.list() if info.id == tx.id]
    assert (info.status, info.logs) == (TxnStatus.ABORTED, tuple(sorted((first, second))))
    assert sw.txn.snapshot().visibility(tx.id) is Visibility.SKIP  # it registered logs: invalid
    with sw.transaction(logs=[first]) as scoped:
        assert [info.logs for info in sw.txn.list() if info.id == scoped.id] == [(first,)]
        scoped.stage_put(api.name("begun-with-logs"), b"k", b"v")
    assert sw.txn.status(scoped.id) is TxnStatus.COMMITTED


def test_a_begin_refuses_bad_logs_and_begins_nothing(api: Api) -> None:
    sw = api.sw
    before = {info.id for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}
    for bad in ([0], [-1], [2**64], ["7"], [True], [1.5], 7, b"\x01", range(1, LOGS_MAX + 2)):
        raises_exactly(InvalidArgumentError, partial(sw.txn.begin, logs=bad))  # type: ignore[arg-type]
        raises_exactly(InvalidArgumentError, partial(sw.txn.api.begin, None, bad))  # type: ignore[arg-type]
        raises_exactly(InvalidArgumentError, partial(sw.transaction, None, bad))  # type: ignore[arg-type]
    after = {info.id for info in sw.txn.list() if info.status is TxnStatus.IN_PROGRESS}
    assert after <= before, after - before  # none of them began a transaction (some may have timed out since)
    widest = sw.txn.begin(logs=range(1, LOGS_MAX + 1))  # the limit itself is fine
    assert [len(info.logs) for info in sw.txn.list() if info.id == widest.id] == [LOGS_MAX]
    widest.commit()  # committed: not on the invalid list, whose pruning would look at each log
    tx = sw.txn.begin()
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.register(tx.id, ["7"]))  # type: ignore[list-item]
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.register(tx.id, [0]))
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.register(tx.id, range(1, LOGS_MAX + 2)))
    assert [info.logs for info in sw.txn.list() if info.id == tx.id] == [()]
    tx.abort()


def test_staged_metadata_writes_apply_with_the_commit_only(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    sw.meta.put(ns, b"doomed", b"old")
    kept = sw.transaction()
    kept.stage_put(ns, b"offset", b"42")
    kept.stage_delete(ns, b"doomed")
    dropped = sw.transaction()
    dropped.stage_put(ns, b"never", b"x")
    assert sw.meta.get(ns, b"offset") is None and sw.meta.get(ns, b"doomed") is not None
    dropped.abort()
    kept.commit()
    assert sw.meta.get(ns, b"offset").value == b"42"
    assert sw.meta.get(ns, b"doomed") is None and sw.meta.get(ns, b"never") is None


def test_a_conflict_aborts_the_later_commit(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    first, second, unrelated = sw.transaction(), sw.transaction(), sw.transaction()
    for tx in (first, second):
        tx.add_conflicts(b"row/7")
    unrelated.add_conflicts(b"row/8")
    second.stage_put(ns, b"lost", b"x")
    first.commit()
    error = raises_exactly(TransactionConflictError, second.commit)
    assert error.retriable
    assert sw.txn.status(second.id) is TxnStatus.ABORTED and sw.meta.get(ns, b"lost") is None
    unrelated.commit()
    after = sw.transaction()  # began after the first committed: no conflict with it
    after.add_conflicts(b"row/7")
    after.commit()
    assert sw.txn.status(after.id) is TxnStatus.COMMITTED


def test_any_handle_commits_or_aborts_by_id(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    to_commit, to_abort = sw.txn.begin(), sw.txn.begin()
    with other_handle(api) as other:
        other.txn.commit(to_commit.id, conflicts=[b"k"], writes=[(ns, b"by-id", b"yes"), (ns, b"absent", None)])
        other.txn.abort(to_abort.id)
        assert other.txn.status(to_commit.id) is TxnStatus.COMMITTED
    assert sw.txn.status(to_commit.id) is TxnStatus.COMMITTED
    assert sw.txn.status(to_abort.id) is TxnStatus.ABORTED
    assert sw.meta.get(ns, b"by-id").value == b"yes"
    raises_exactly(TransactionNotInProgressError, to_commit.commit)  # the handle learns it already ended


def test_a_transaction_times_out_and_cannot_commit_after(api: Api) -> None:
    sw = api.sw
    log = sw.logs.create(api.name())
    idle = sw.transaction(timeout_s=0.3)
    idle.register_logs([log.id])
    ends: list[bool] = []
    idle.after_end(ends.append)
    late = sw.txn.begin(timeout_s=0.3)
    wait_for_status(sw, idle.id, TxnStatus.TIMED_OUT)
    raises_exactly(TransactionTimedOutError, idle.commit)  # the handle's own deadline passed
    # ... and it ended: its end hooks ran (a consumer gives back what it dequeued), and it says so.
    assert ends == [False] and idle.status is TxnStatus.TIMED_OUT
    raises_exactly(TransactionTimedOutError, idle.commit)
    assert ends == [False]
    raises_exactly(TransactionTimedOutError, lambda: sw.txn.commit(idle.id))  # the manager's answer
    assert idle.id in sw.txn.snapshot().invalid
    sw.txn.abort(idle.id)  # aborting a timed-out transaction does nothing
    assert sw.txn.status(idle.id) is TxnStatus.TIMED_OUT
    wait_for_status(sw, late.id, TxnStatus.TIMED_OUT)
    raises_exactly(TransactionTimedOutError, lambda: sw.txn.api.register(late.id, [log.id]))
    assert sw.txn.api.default_timeout_s == 30.0  # the default configuration's
    patient = sw.transaction()
    assert patient.deadline_s - time.monotonic() > 25  # the default timeout, less the handle's margin
    patient.abort()


def test_a_commit_whose_end_hook_raises_still_returns_committed(api: Api) -> None:
    """Finding 9: a hook run once the transaction ended (a consumer's trim, say) cannot turn a
    commit into a failure (the caller would retry, and duplicate): its error is logged and kept on
    the handle, and the other hooks run all the same."""
    sw = api.sw
    ns = api.name()
    tx = sw.txn.begin()
    tx.stage_put(ns, b"k", b"v")
    seen: list[bool] = []

    def broken(committed: bool) -> None:
        raise UnavailableError("the trim's call failed")

    tx.after_end(broken)
    tx.after_end(seen.append)
    tx.commit()
    assert tx.status is TxnStatus.COMMITTED and seen == [True]
    assert sw.txn.status(tx.id) is TxnStatus.COMMITTED
    assert [type(exc) for exc in tx.end_errors] == [UnavailableError]
    with sw.transaction() as aborted:  # an abort too
        aborted.after_end(broken)
        aborted.abort()
    assert aborted.status is TxnStatus.ABORTED and len(aborted.end_errors) == 1


class _ReplyLost:
    """The manager, whose commit goes through but whose answer is lost on the way back (the remote
    client's own retries could not learn the outcome either)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def commit(self, *args: Any) -> None:
        self._real.commit(*args)
        raise UnavailableError("injected: the commit's answer was lost")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_handle_whose_commit_answer_was_lost_learns_the_outcome(api: Api) -> None:
    """Review item 54: a handle whose commit ended in an error that does not say how it ended asks
    the manager before it runs its end hooks: committed, it ends committed (a consumer must not
    give back what it dequeued and committed) and the commit returns."""
    sw = api.sw
    tx = sw.txn.begin()
    ends: list[bool] = []
    tx.after_end(ends.append)
    tx._api = _ReplyLost(tx._api)  # type: ignore[assignment]
    tx.commit()
    assert tx.status is TxnStatus.COMMITTED and ends == [True]
    assert sw.txn.status(tx.id) is TxnStatus.COMMITTED


def test_errors_cross_with_their_classes(api: Api) -> None:
    sw = api.sw
    unknown = 12345
    raises_exactly(UnknownTransactionError, lambda: sw.txn.commit(unknown))
    raises_exactly(UnknownTransactionError, lambda: sw.txn.abort(unknown))
    raises_exactly(UnknownTransactionError, lambda: sw.txn.api.register(unknown, [1]))
    assert sw.txn.status(unknown) is TxnStatus.UNKNOWN
    tx = sw.txn.begin()
    sw.txn.commit(tx.id)
    raises_exactly(TransactionNotInProgressError, lambda: sw.txn.commit(tx.id))  # a double commit
    raises_exactly(TransactionNotInProgressError, lambda: sw.txn.abort(tx.id))  # an abort after the commit
    raises_exactly(TransactionNotInProgressError, lambda: sw.txn.api.register(tx.id, [1]))
    gone = sw.txn.begin()
    sw.txn.abort(gone.id)
    sw.txn.abort(gone.id)  # again: nothing to do
    raises_exactly(TransactionNotInProgressError, lambda: sw.txn.commit(gone.id))
    for bad in (0, -1, 2**64, True, "7"):
        raises_exactly(InvalidArgumentError, partial(sw.txn.status, bad))
        raises_exactly(InvalidArgumentError, partial(sw.txn.commit, bad))
    for timeout_s in (0, -1.0, float("nan"), True):
        raises_exactly(InvalidArgumentError, partial(sw.txn.begin, timeout_s))
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.begin(1e9))  # beyond the longest (an hour)
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.begin(float("nan")))
    live = sw.txn.begin()
    raises_exactly(InvalidArgumentError, lambda: sw.txn.commit(live.id, conflicts=[b""]))
    raises_exactly(InvalidArgumentError, lambda: sw.txn.commit(live.id, writes=[("bad namespace", b"k", b"v")]))
    raises_exactly(InvalidArgumentError, lambda: sw.txn.api.commit(live.id, writes=[("ns", b"k", "text")]))
    sw.txn.commit(live.id)  # the refused commits changed nothing
    assert sw.txn.status(live.id) is TxnStatus.COMMITTED


def test_commit_all_commits_several_transactions_as_one_with_their_writes(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    log = sw.logs.create(api.name())
    tasks = [sw.txn.begin() for _ in range(3)]
    for tx in tasks:
        tx.register_logs([log.id])
        log.append(b"%d" % tx.id)
    bystander = sw.txn.begin()
    with other_handle(api) as other:  # a driver commits what its tasks staged, by id
        other.txn.commit_all([tx.id for tx in tasks], conflicts=[b"sink/a"], writes=[(ns, b"sink/a", b"7")])
    for tx in tasks:
        assert sw.txn.status(tx.id) is TxnStatus.COMMITTED
        assert sw.txn.snapshot().visibility(tx.id) is Visibility.VISIBLE
    assert sw.meta.get(ns, b"sink/a").value == b"7"
    assert sw.txn.status(bystander.id) is TxnStatus.IN_PROGRESS
    # The conflict key counts for the whole group: one that began before the commit loses.
    bystander.add_conflicts(b"sink/a")
    raises_exactly(TransactionConflictError, bystander.commit)


def test_commit_all_commits_none_when_one_cannot(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    done = sw.txn.begin()
    sw.txn.commit(done.id)
    group = [sw.txn.begin(), sw.txn.begin()]
    raises_exactly(TransactionNotInProgressError,
                   lambda: sw.txn.commit_all([*(tx.id for tx in group), done.id], writes=[(ns, b"m", b"1")]))
    # Committed by nobody, and aborted: they were to commit together and no longer can.
    assert [sw.txn.status(tx.id) for tx in group] == [TxnStatus.ABORTED] * 2
    assert sw.meta.get(ns, b"m") is None
    winner, losers = sw.txn.begin(), [sw.txn.begin(), sw.txn.begin()]
    winner.add_conflicts(b"row")
    winner.commit()
    raises_exactly(TransactionConflictError, lambda: sw.txn.commit_all([tx.id for tx in losers], conflicts=[b"row"]))
    assert [sw.txn.status(tx.id) for tx in losers] == [TxnStatus.ABORTED] * 2
    live = sw.txn.begin()
    for bad in ([], [live.id, live.id], [live.id, 0], live.id, [True]):
        raises_exactly(InvalidArgumentError, partial(sw.txn.commit_all, bad))
    raises_exactly(InvalidArgumentError, lambda: sw.txn.commit_all([live.id], conflicts=[b""]))
    raises_exactly(UnknownTransactionError, lambda: sw.txn.commit_all([12345]))
    assert sw.txn.status(live.id) is TxnStatus.IN_PROGRESS  # refused before it was looked at
    sw.txn.commit_all([live.id])
    assert sw.txn.status(live.id) is TxnStatus.COMMITTED


def test_a_commit_too_large_for_the_log_is_refused_and_the_transaction_goes_on(api: Api) -> None:
    sw = api.sw
    ns = api.name("ns")
    tx = sw.txn.begin()
    big = [(ns, b"k%d" % i, b"x" * 1000) for i in range(1000)]  # its log record: over the 1 MiB bound
    raises_exactly(PayloadTooLargeError, lambda: sw.txn.commit(tx.id, writes=big))
    assert sw.txn.status(tx.id) is TxnStatus.IN_PROGRESS and sw.meta.get(ns, b"k0") is None
    sw.txn.commit(tx.id, writes=[(ns, b"k0", b"small")])
    assert sw.meta.get(ns, b"k0").value == b"small"


# --- the remote client's commit, cut off ------------------------------------------------------------


class CutOff:
    """A connection whose calls are cut off as planned, for :class:`RemoteTxn` (which makes its calls
    through ``_call``): ``"before"`` the call reaches the server, ``"after"`` the server answered
    (whatever it answered, the caller hears of a broken connection), or ``"busy"``: carried out, and
    answered as the server answers a commit already being applied."""

    def __init__(self, client: Any, **plan: list[str]) -> None:
        self._client = client
        self._retry = client._retry
        self._plan = plan
        self.sent: list[str] = []

    def _joined(self, method: str, request: Any) -> Any:  # sent alone here: never joined with others
        return self._call(method, request, idempotent=method == "TxnBegin")

    def _call(self, method: str, request: Any, *, idempotent: bool = True) -> Any:
        self.sent.append(method)
        planned = self._plan.get(method)
        cut = planned.pop(0) if planned else None
        if cut == "before":
            raise UnavailableError("cut off before the server")
        try:
            reply = self._client._call(method, request, idempotent=idempotent)
        except SeawayError:
            if cut is None:
                raise
            reply = None
        if cut == "after":
            raise UnavailableError("cut off after the server answered")
        if cut == "busy":
            raise TransactionNotInProgressError("transaction is being committed")
        return reply


def over(connection: CutOff) -> RemoteTxn:
    """The remote manager over a connection whose calls are cut off as planned."""
    return RemoteTxn(connection)  # type: ignore[arg-type]  # it has what RemoteTxn uses of a client


def test_a_cut_off_commit_is_resolved_by_its_status(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        ns = f"cut-{time.time_ns()}"
        went_through = CutOff(sw, TxnCommit=["after"])
        txns = Transactions(over(went_through))
        with txns.begin() as tx:
            tx.stage_put(ns, b"once", b"1")
        assert went_through.sent == ["TxnBegin", "TxnCommit", "TxnStatus"]
        assert tx.status is TxnStatus.COMMITTED and sw.txn.status(tx.id) is TxnStatus.COMMITTED
        assert sw.meta.get(ns, b"once") == (b"1", ANY)

        never_arrived = CutOff(sw, TxnCommit=["before"])
        tx2 = sw.txn.begin()
        over(never_arrived).commit(tx2.id, writes=[(ns, b"twice", b"2")])
        assert never_arrived.sent == ["TxnCommit", "TxnStatus", "TxnCommit"]  # in progress: sent once more
        assert sw.txn.status(tx2.id) is TxnStatus.COMMITTED and sw.meta.get(ns, b"twice") is not None

        applying = CutOff(sw, TxnCommit=["before", "busy"])
        tx3 = sw.txn.begin()
        over(applying).commit(tx3.id)
        assert applying.sent == ["TxnCommit", "TxnStatus", "TxnCommit", "TxnStatus"]
        assert sw.txn.status(tx3.id) is TxnStatus.COMMITTED


def test_a_cut_off_commit_that_failed_raises_the_matching_error(server: ServerProcess) -> None:
    with seaway.connect(server.url) as sw:
        winner, loser = sw.txn.begin(), sw.txn.begin()
        sw.txn.commit(winner.id, conflicts=[b"cut-key"])
        conflicted = CutOff(sw, TxnCommit=["after"])  # the server refused it (a conflict), then the line broke
        raises_exactly(TransactionNotInProgressError,
                       lambda: over(conflicted).commit(loser.id, conflicts=[b"cut-key"]))
        assert sw.txn.status(loser.id) is TxnStatus.ABORTED

        idle = sw.txn.begin(timeout_s=0.3)
        wait_for_status(sw, idle.id, TxnStatus.TIMED_OUT)
        raises_exactly(TransactionTimedOutError,
                       lambda: over(CutOff(sw, TxnCommit=["before"])).commit(idle.id))
        raises_exactly(UnknownTransactionError,
                       lambda: over(CutOff(sw, TxnCommit=["before"])).commit(12345))

        unreachable = CutOff(sw, TxnCommit=["before"], TxnStatus=["before"])
        pending = sw.txn.begin()
        error = raises_exactly(UnavailableError,
                               lambda: over(unreachable).commit(pending.id))
        assert isinstance(error.__cause__, UnavailableError)  # the cut-off commit, under the failed status
        assert unreachable.sent == ["TxnCommit", "TxnStatus"]  # not sent again without an answer
        assert sw.txn.status(pending.id) is TxnStatus.IN_PROGRESS  # unknown to the caller, so left alone
        sw.txn.abort(pending.id)


def test_clients_cannot_change_the_managers_log(server: ServerProcess) -> None:
    """Sealing (or trimming, deleting, appending to) the manager's log would fail every transaction
    after it: the server refuses it, and creating logs under the store's reserved prefix."""
    with seaway.connect(server.url) as sw:
        sw.transaction().commit()
        wal = sw.logs.get("seaway.txn.wal")
        tail = wal.tail_lsn()
        raises_exactly(PermissionDeniedError, lambda: list(wal.read(1, tail)))  # private: see test_security.py
        for change in (wal.seal, lambda: wal.trim(tail), wal.delete, lambda: wal.append(b"forged"),
                       lambda: sw.logs.create("seaway.mine")):
            raises_exactly(InvalidArgumentError, change)
        assert wal.final_lsn() is None and wal.tail_lsn() == tail
        with sw.transaction() as tx:
            pass
        assert sw.txn.status(tx.id) is TxnStatus.COMMITTED


def test_the_list_comes_in_pages_of_at_most_limit_after_the_last_of_the_page_before(api: Api) -> None:
    sw = api.sw
    log = sw.logs.create(api.name())
    txns = [sw.transaction() for _ in range(7)]
    for tx in txns[1::2]:  # invalid: listed after every transaction in progress
        tx.register_logs([log.id])
        tx.abort()
    mine = {tx.id for tx in txns}
    whole = [info for info in sw.txn.list() if info.id in mine]
    assert [info.id for info in whole] == [tx.id for tx in txns[0::2]] + [tx.id for tx in txns[1::2]]
    paged: list[seaway.txn.TxnInfo] = []
    page = sw.txn.list(limit=2)
    while page:
        assert len(page) <= 2
        paged.extend(page)
        page = sw.txn.list(after=page[-1], limit=2)
    assert [info for info in paged if info.id in mine] == whole
    assert len({info.id for info in paged}) == len(paged)
    assert sw.txn.list(after=whole[-1]) == [info for info in sw.txn.list() if info.id > whole[-1].id
                                            and info.status is not TxnStatus.IN_PROGRESS]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError):
            sw.txn.list(limit=bad)  # type: ignore[arg-type]
    for tx in txns[0::2]:
        tx.abort()


def test_a_begin_whose_connection_failed_once_is_tried_again(server: ServerProcess) -> None:
    """A begin refused in transport (a Spark task's begin met this under load and failed its query)
    is tried again: a begin that did reach the server only leaves a transaction that wrote nothing,
    which times out."""
    with seaway.connect(server.url) as sw:
        stub, tried = sw._stub, []

        class OnceRefused:
            def __getattr__(self, method: str) -> Any:
                real = getattr(stub, method)
                if method != "TxnBegin":
                    return real

                def call(request: Any, **kwargs: Any) -> Any:
                    tried.append(method)
                    if len(tried) == 1:
                        raise Refused()
                    return real(request, **kwargs)
                return call

        sw._stub = OnceRefused()
        with sw.transaction() as tx:
            tx.stage_put("retried", b"k", b"v")
        assert tried == ["TxnBegin", "TxnBegin"] and sw.txn.status(tx.id) is TxnStatus.COMMITTED


def test_wait_ended_returns_once_any_of_the_transactions_ends_woken_by_the_end(api: Api) -> None:
    """``wait_ended`` returns the ids no longer in progress, in the order given: at once for those
    already ended (or unknown), on the commit or abort of one in progress (woken by it: the wait
    asked for is far longer than the test waits), and nothing once its timeout passed."""
    sw = api.sw
    first, second, aborted = sw.transaction(), sw.transaction(), sw.transaction()
    aborted.abort()
    assert sw.txn.wait_ended([first.id, aborted.id], 60.0) == [aborted.id]
    unknown = sw.txn.snapshot().read_pointer + 10**12
    assert sw.txn.wait_ended([unknown], 0.0) == [unknown]  # never begun: not in progress
    assert sw.txn.wait_ended([first.id, second.id], 0.0) == []
    assert sw.txn.wait_ended([first.id], 0.05) == []  # the timeout passed
    for tx, ending in ((first, "commit"), (second, "abort")):
        companion = sw.transaction()  # in progress throughout
        got: list[list[int]] = []

        def wait(tx: Any = tx, got: list[list[int]] = got, companion: Any = companion) -> None:
            got.append(sw.txn.wait_ended([companion.id, tx.id], 600.0))

        waiter = threading.Thread(target=wait)
        waiter.start()
        with other_handle(api) as other:
            getattr(other.txn, ending)(tx.id)
        waiter.join(WAIT_S)
        assert not waiter.is_alive(), f"the wait was not woken by the transaction's {ending}"
        assert got == [[tx.id]]
        companion.abort()


def test_wait_ended_refuses_bad_input_the_same_way(api: Api) -> None:
    sw = api.sw
    tx = sw.transaction()
    for ids, timeout_s in (([], 1.0), (list(range(1, 1002)), 1.0), ([0], 1.0), ([True], 1.0), ([2**64], 1.0),
                           ([tx.id], -1.0), ([tx.id], float("nan")), ([tx.id], float("inf")), ([tx.id], "1"),
                           (tx.id, 1.0)):
        raises_exactly(InvalidArgumentError, lambda ids=ids, timeout_s=timeout_s: sw.txn.wait_ended(ids, timeout_s))
    assert sw.txn.wait_ended([tx.id] * 1001, 0.0) == []  # repeats are waited for once
    tx.abort()


def test_a_servers_wait_is_held_at_most_its_cap_and_names_at_most_1000_ids(server: ServerProcess) -> None:
    """A long poll asked for longer than the server's cap (5 s) is answered at the cap, empty; a call
    naming more ids than a wait takes is refused, whatever the client."""
    with seaway.connect(server.url) as sw:
        tx = sw.transaction()
        started = time.monotonic()
        reply = sw._stub.TxnWaitEnded(pb.TxnWaitEndedRequest(ids=[tx.id], timeout_s=3600.0), timeout=30.0)
        assert list(reply.ended) == [] and time.monotonic() - started < 25.0
        with pytest.raises(grpc.RpcError) as refused:
            sw._stub.TxnWaitEnded(pb.TxnWaitEndedRequest(ids=range(1, 1002), timeout_s=0.0), timeout=30.0)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        tx.abort()
