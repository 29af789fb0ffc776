"""Saving the manager's state does not stop commits: the state is copied under the manager's lock
and encoded outside it. A save held in its encoding (a hook on the manager's seam) does not keep a
begin, a register, a commit or an abort from completing; once released, the save lands and a
restart finds every one of them, and the state as saved."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import seaway
from seaway import TxnConfig, TxnStatus
from seaway.log import Record
from seaway.txn import STATE_NAMESPACE, WAL_LOG, TransactionManager
from seaway.txn._state import SavedState, decode_edit

WAIT_S = 10.0
CONFIG = seaway.SeawayConfig(txn=TxnConfig(tick_s=3600.0, prune_interval_s=3600.0), retention=None)


def test_a_commit_completes_while_a_save_is_held_in_its_encoding(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with seaway.open(data, CONFIG) as sw:
        manager = sw.txn.api
        assert isinstance(manager, TransactionManager)
        log = sw.logs.create("l")
        for i in range(50):  # something to save
            with sw.transaction(logs=[log.id]) as tx:
                tx.stage_put("m", b"before%d" % i, b"v")
        open_before = sw.txn.begin(logs=[log.id])
        entered, release = threading.Event(), threading.Event()
        real = manager._encode_saved
        saved: list[SavedState] = []

        def held(state: SavedState) -> bytes:
            saved.append(state)
            entered.set()
            assert release.wait(WAIT_S), "never released"
            return real(state)

        manager._encode_saved = held  # type: ignore[method-assign]
        failures: list[BaseException] = []

        def save() -> None:
            try:
                manager.save()
            except BaseException as exc:
                failures.append(exc)

        saver = threading.Thread(target=save)
        saver.start()
        try:
            assert entered.wait(WAIT_S), "the save never reached its encoding"
            done = threading.Event()

            def work() -> None:
                try:
                    with sw.transaction(logs=[log.id]) as tx:
                        log.append(b"%d" % tx.id)
                        tx.stage_put("m", b"during", b"v")
                    sw.txn.commit(open_before.id, writes=[("m", b"open", b"v")])
                    aborted = sw.txn.begin()
                    aborted.register_logs([log.id])
                    aborted.abort()
                    done.set()
                except BaseException as exc:
                    failures.append(exc)

            worker = threading.Thread(target=work)
            worker.start()
            worker.join(WAIT_S)
            assert done.is_set() and not failures, f"the commits waited for the save: {failures}"
            assert saver.is_alive()  # still held: the commits did not wait for it
        finally:
            release.set()
            saver.join(WAIT_S)
        assert not saver.is_alive() and not failures, failures
        # The copy is the state at the save's mark: the open transaction in progress, the later
        # ones not there.
        (copy,) = saved
        assert [wp for wp, *_ in copy.in_progress] == [open_before.id]
        head = sw.meta.get(STATE_NAMESPACE, b"state")
        assert head is not None, "the state was not saved"
        assert sw.logs.get(WAL_LOG).trim_point() == json.loads(head.value)["lsn"]  # trimmed at its mark
        after = [type(decode_edit(item.payload)).__name__ for item in sw.logs.get(WAL_LOG).read()
                 if isinstance(item, Record)]
        assert "Commit" in after and "Abort" in after  # those made during the save: after its mark
    with seaway.open(data, CONFIG) as sw:
        assert sw.txn.status(open_before.id) is TxnStatus.COMMITTED
        for key in (b"during", b"open", b"before49"):
            got = sw.meta.get("m", key)
            assert got is not None and got.value == b"v", key
        statuses: dict[Any, int] = {}
        for info in sw.txn.list():
            statuses[info.status] = statuses.get(info.status, 0) + 1
        assert statuses == {TxnStatus.ABORTED: 1}, statuses
