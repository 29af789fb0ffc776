"""A Hypothesis state machine over the public transaction API, embedded and through a server.

tests/txn/test_model.py drives the manager itself (restarts between a commit's log append and its
visibility, and so on); this one drives what a user holds: ``sw.transaction()`` handles that stage
metadata writes, declare conflict keys and write records to a log, interleaved, committed or
aborted, aborted by id from another client, and the store restarted meanwhile (through a server:
SIGKILL, then a start on the same data directory; the client's copy of the invalid list then
belongs to another incarnation of the manager and must be replaced).

The reference is a list of what each transaction did and how it ended. Checked after every step:
no lost update (a commit that shares a conflict key with one that committed after it began
fails); every metadata key holds the last committed write; the statuses are the model's; a fresh
snapshot sees every committed transaction's records and none of the others', whatever the client
read of the invalid list before.

Through the server, a client whose copy of the invalid list missed the ids a reply added makes
this test fail within its examples (tried: aborted records then look committed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import seaway
from seaway.errors import TransactionConflictError, TransactionNotInProgressError
from seaway.log import Record
from seaway.txn import Visibility
from tests.model_harness import Embedded, ThroughAServer, model_settings

NS = "model"
KEYS = [b"a", b"b", b"c"]


@dataclass
class Txn:
    handle: Any
    began: int
    """The model's clock when it began (a commit after this is one it did not see)."""
    keys: set[bytes] = field(default_factory=set)
    writes: dict[bytes, bytes] = field(default_factory=dict)
    records: int = 0
    aborted_by_id: bool = False


class TxnApiModel(Embedded, RuleBasedStateMachine):
    """The rules, over a store opened and restarted by the hooks (embedded here)."""

    txns = Bundle("txns")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="seaway-txn-api-model-"))
        self.sw: Any = self._open()
        self.log_id = self.sw.logs.create("data").id
        self.clock = 0
        self.commits: list[tuple[int, frozenset[bytes]]] = []
        """(the clock at commit, its conflict keys) of every commit."""
        self.values: dict[bytes, bytes] = {}
        self.status: dict[int, seaway.TxnStatus] = {}
        self.with_records: set[int] = set()

    def teardown(self) -> None:
        try:
            self._close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    @rule(target=txns)
    def begin(self) -> Txn:
        handle = self.sw.transaction(timeout_s=600)
        self.status[handle.id] = seaway.TxnStatus.IN_PROGRESS
        return Txn(handle, self._tick())

    @rule(txn=txns, key=st.sampled_from(KEYS), value=st.binary(min_size=1, max_size=4))
    def stage(self, txn: Txn, key: bytes, value: bytes) -> None:
        if self.status[txn.handle.id] is not seaway.TxnStatus.IN_PROGRESS or txn.aborted_by_id:
            return
        txn.handle.stage_put(NS, key, value)
        txn.handle.add_conflicts(NS.encode() + b"/" + key)
        txn.keys.add(key)
        txn.writes[key] = value

    @rule(txn=txns)
    def write_a_record(self, txn: Txn) -> None:
        if self.status[txn.handle.id] is not seaway.TxnStatus.IN_PROGRESS or txn.aborted_by_id:
            return
        txn.handle.register_logs([self.log_id])
        self.sw.logs.get(self.log_id).append_batch_async([b"%d" % txn.handle.id]).result()
        txn.records += 1
        self.with_records.add(txn.handle.id)

    @rule(txn=consumes(txns))
    def commit(self, txn: Txn) -> None:
        txn_id = txn.handle.id
        if self.status[txn_id] is not seaway.TxnStatus.IN_PROGRESS:
            return
        conflicts = any(at > txn.began and keys & txn.keys for at, keys in self.commits)
        if txn.aborted_by_id:
            with pytest.raises(TransactionNotInProgressError):
                txn.handle.commit()
            return
        if conflicts:
            with pytest.raises(TransactionConflictError):
                txn.handle.commit()
            self.status[txn_id] = seaway.TxnStatus.ABORTED
            return
        txn.handle.commit()
        self.status[txn_id] = seaway.TxnStatus.COMMITTED
        self.commits.append((self._tick(), frozenset(txn.keys)))
        self.values.update(txn.writes)

    @rule(txn=consumes(txns))
    def abort(self, txn: Txn) -> None:
        if self.status[txn.handle.id] is seaway.TxnStatus.IN_PROGRESS and not txn.aborted_by_id:
            txn.handle.abort()
            self.status[txn.handle.id] = seaway.TxnStatus.ABORTED

    @rule(txn=txns)
    def abort_by_id_from_another_client(self, txn: Txn) -> None:
        """The handle is not told: its commit must fail."""
        if self.status[txn.handle.id] is not seaway.TxnStatus.IN_PROGRESS:
            return
        with self._other() as other:
            other.txn.abort(txn.handle.id)
        txn.aborted_by_id = True
        self.status[txn.handle.id] = seaway.TxnStatus.ABORTED

    def _other(self) -> Any:
        return seaway.connect(self.server.url) if hasattr(self, "server") else _Same(self.sw)

    @rule()
    def restart(self) -> None:
        """Every handle belongs to the old store or client: the transactions still open are
        aborted by id, as any process may (they would time out otherwise)."""
        self.sw = self._restart()
        for txn_id, status in self.status.items():
            if status is seaway.TxnStatus.IN_PROGRESS:
                self.sw.txn.abort(txn_id)
                self.status[txn_id] = seaway.TxnStatus.ABORTED

    @invariant()
    def metadata_holds_the_last_committed_writes(self) -> None:
        for key in KEYS:
            found = self.sw.meta.get(NS, key)
            assert (found.value if found is not None else None) == self.values.get(key), key

    @invariant()
    def statuses_and_visibility_are_the_models(self) -> None:
        snapshot = self.sw.txn.snapshot()
        for txn_id, status in self.status.items():
            assert self.sw.txn.status(txn_id) is status, (txn_id, status)
            if status is seaway.TxnStatus.COMMITTED or txn_id in self.with_records:
                # (An aborted transaction that wrote nothing is forgotten: its id says nothing.)
                assert snapshot.visible(txn_id) == (status is seaway.TxnStatus.COMMITTED), (txn_id, status)
        records = [int(item.payload) for item in self.sw.logs.get(self.log_id).read(1) if isinstance(item, Record)]
        seen = sorted(txn_id for txn_id in records if snapshot.visible(txn_id))
        expected = sorted(txn_id for txn_id in records if self.status[txn_id] is seaway.TxnStatus.COMMITTED)
        assert seen == expected
        for txn_id in self.with_records:
            if self.status[txn_id] is seaway.TxnStatus.ABORTED:
                assert snapshot.visibility(txn_id) is Visibility.SKIP, txn_id


class _Same:
    """The embedded store as "another client" (one process: the same manager)."""

    def __init__(self, sw: Any) -> None:
        self.txn = sw.txn

    def __enter__(self) -> _Same:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class RemoteTxnApiModel(ThroughAServer, TxnApiModel):
    """The same rules through a server; a restart is a SIGKILL of the server and a new start."""


TxnApiModel.TestCase.settings = model_settings(30, 30)
test_txn_api_model = TxnApiModel.TestCase
# Not shrunk: each step through a server costs a restart's seconds, so shrinking a failure would take
# many minutes; the failing steps are printed as found.
RemoteTxnApiModel.TestCase.settings = model_settings(
    int(os.environ.get("SEAWAY_TXN_MODEL_REMOTE_EXAMPLES", "4")), 30, shrink=False)
test_txn_api_model_through_the_server = pytest.mark.slow(RemoteTxnApiModel.TestCase)
