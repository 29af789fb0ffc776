"""Sealed and deleted logs and conditional appends against a reference model (Hypothesis stateful),
across reopens: what each call answers, what readers read, and that no id is ever given twice."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import seaway
from seaway import (
    LSN_MAX,
    Gap,
    GapType,
    LogDeletedError,
    LogSealedError,
    Record,
    TailMismatchError,
    UnknownLogError,
)

NAMES = ("a", "b", "c")


@dataclass
class _Model:
    log_id: int
    records: list[tuple[int, bytes]] = field(default_factory=list)
    final: int | None = None

    @property
    def tail(self) -> int:
        return self.records[-1][0] if self.records else 0


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="seaway-lifecycle-"))
        self.sw = seaway.open(self.dir)
        self.live: dict[str, _Model] = {}
        self.deleted: dict[int, _Model] = {}
        self.ids_given: set[int] = set()

    def teardown(self) -> None:
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(name=st.sampled_from(NAMES))
    def create(self, name: str) -> None:
        if name in self.live:
            return
        log = self.sw.logs.get_or_create(name)
        assert log.id not in self.ids_given, f"id {log.id} given twice"
        self.ids_given.add(log.id)
        self.live[name] = _Model(log.id)

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.live)))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), payloads=st.lists(st.binary(max_size=16), min_size=1, max_size=5))
    def append(self, data: st.DataObject, payloads: list[bytes]) -> None:
        self._append(self._pick(data), payloads, None)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), payloads=st.lists(st.binary(max_size=16), min_size=1, max_size=5),
          right=st.booleans())
    def append_if_tail(self, data: st.DataObject, payloads: list[bytes], right: bool) -> None:
        name = self._pick(data)
        tail = self.live[name].tail
        wrong = data.draw(st.sampled_from([tail + 1, tail + 2**32, max(tail - 1, 2**40)]))
        self._append(name, payloads, tail if right else wrong)

    def _append(self, name: str, payloads: list[bytes], if_tail: int | None) -> None:
        model = self.live[name]
        log = self.sw.logs.get(model.log_id)
        if model.final is not None:
            try:
                log.append_batch(payloads, if_tail=if_tail)
                raise AssertionError("a sealed log took an append")
            except LogSealedError:
                return
        if if_tail is not None and if_tail != model.tail:
            try:
                log.append_batch(payloads, if_tail=if_tail)
                raise AssertionError("a conditional append with the wrong tail was stored")
            except TailMismatchError:
                return
        lsns = log.append_batch(payloads, if_tail=if_tail)
        assert lsns[0] > model.tail
        model.records += list(zip(lsns, payloads, strict=True))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def seal(self, data: st.DataObject) -> None:
        name = self._pick(data)
        model = self.live[name]
        final = self.sw.logs.get(name).seal()
        assert final == (model.final if model.final is not None else model.tail)
        model.final = final

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        name = self._pick(data)
        model = self.live.pop(name)
        self.sw.logs.delete(name)
        self.deleted[model.log_id] = model

    @rule()
    def reopen(self) -> None:
        self.sw.close()
        self.sw = seaway.open(self.dir)

    @invariant()
    def logs_read_as_modelled(self) -> None:
        for name, model in self.live.items():
            log = self.sw.logs.get(name)
            assert log.id == model.log_id and log.final_lsn() == model.final
            assert log.tail_lsn() == model.tail
            with self.sw.logs.reader() as reader:
                reader.start_reading(log, 1, LSN_MAX)
                items: list[object] = []
                while not reader.done:
                    got = reader.read(1000, timeout_s=0)
                    if not got:
                        break
                    items += got
            assert [(i.lsn, i.payload) for i in items if isinstance(i, Record)] == model.records
            sealed_gaps = [i for i in items if isinstance(i, Gap) and i.type is GapType.SEALED]
            if model.final is None:
                assert not sealed_gaps and not reader.done
            else:
                assert sealed_gaps == [Gap(model.log_id, GapType.SEALED, model.final + 1, LSN_MAX)]

    @invariant()
    def deleted_logs_stay_deleted(self) -> None:
        held = {log_id for p in self.sw.logs.partitions() for log_id in p.log_ids}
        for log_id in self.deleted:
            try:
                self.sw.logs.get(log_id)
                raise AssertionError(f"deleted log {log_id} is found")
            except LogDeletedError:
                pass
            assert log_id not in held, f"deleted log {log_id} still holds entries"
        live_names = {log.name for log in self.sw.logs.list()}
        assert live_names == set(self.live)
        for name in set(NAMES) - set(self.live):
            try:
                self.sw.logs.get(name)
                raise AssertionError(f"log {name!r} is found after its deletion")
            except UnknownLogError:
                pass


LifecycleMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestLifecycle = LifecycleMachine.TestCase
