"""The metadata store against a dictionary model: batches, conditions, range deletes, reopening."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import seaway
from seaway import ConditionFailedError, InvalidArgumentError, PayloadTooLargeError
from seaway.log import MetaBatch, MetaDeleteRange, MetaPut
from seaway.log._meta import prefix_end

NAMESPACES = ["a", "b"]
keys = st.binary(max_size=3).map(lambda k: k.replace(b"\x00", b"\x01"))
namespaces = st.sampled_from(NAMESPACES)


def apply_model(model: dict[tuple[str, bytes], tuple[bytes, int]], batch: MetaBatch,
                revision: int) -> dict[tuple[str, bytes], tuple[bytes, int]] | None:
    """The batch applied to the model, or None if a condition fails."""
    for c in batch.conditions:
        found = model.get((c.namespace, c.key))
        version = found[1] if found else 0
        if c.version is not None and version != c.version:
            return None
        if c.value is not None and (found is None or found[0] != c.value):
            return None
    out = dict(model)
    for op in batch.ops:
        if isinstance(op, MetaPut):
            out[(op.namespace, op.key)] = (op.value, revision)
        elif isinstance(op, MetaDeleteRange):
            for ns, key in list(out):
                if ns == op.namespace and op.start <= key and (not op.end or key < op.end):
                    del out[(ns, key)]
        else:
            out.pop((op.namespace, op.key), None)
    return out


class MetaModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.sw = seaway.open(self.dir / "data")
        self.model: dict[tuple[str, bytes], tuple[bytes, int]] = {}
        self.revision = 0

    def teardown(self) -> None:
        self.sw.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _known(self, data: st.DataObject) -> tuple[str, bytes, tuple[bytes, int] | None]:
        if self.model and data.draw(st.booleans()):
            (ns, key), found = data.draw(st.sampled_from(sorted(self.model.items())))
            return ns, key, found
        ns, key = data.draw(namespaces), data.draw(keys)
        return ns, key, self.model.get((ns, key))

    @rule(data=st.data(), ops=st.integers(1, 4), conds=st.integers(0, 2))
    def commit(self, data: st.DataObject, ops: int, conds: int) -> None:
        batch = MetaBatch()
        for _ in range(conds):
            ns, key, found = self._known(data)
            kind = data.draw(st.sampled_from(["version", "absent", "value", "stale"]))
            if kind == "version":
                batch.expect_version(ns, key, found[1] if found else 0)
            elif kind == "absent":
                batch.expect_absent(ns, key)
            elif kind == "value":
                batch.expect_value(ns, key, found[0] if found else b"?")
            else:
                batch.expect_version(ns, key, data.draw(st.integers(0, self.revision + 1)))
        for _ in range(ops):
            ns, key, _ = self._known(data)
            kind = data.draw(st.sampled_from(["put", "put", "delete", "range", "prefix"]))
            if kind == "put":
                batch.put(ns, key, data.draw(st.binary(max_size=8)))
            elif kind == "delete":
                batch.delete(ns, key)
            elif kind == "range":
                end = data.draw(keys)
                if end and end > key:
                    batch.delete_range(ns, key, end)
                else:
                    batch.delete_range(ns, key)
            else:
                batch.delete_prefix(ns, key[:1])
        expected = apply_model(self.model, batch, self.revision + 1)
        if expected is None:
            with pytest.raises(ConditionFailedError):
                self.sw.meta.commit(batch)
            return
        revision = self.sw.meta.commit(batch)
        assert revision == self.revision + 1
        self.revision = revision
        self.model = expected

    @rule()
    def reopen(self) -> None:
        self.sw.close()
        self.sw = seaway.open(self.dir / "data")
        assert self.sw.meta.revision == self.revision

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        ns, key, found = self._known(data)
        got = self.sw.meta.get(ns, key)
        assert (None if got is None else (got.value, got.version)) == found

    @rule(ns=namespaces, prefix=st.binary(max_size=1), limit=st.integers(1, 5))
    def scan(self, ns: str, prefix: bytes, limit: int) -> None:
        expected = sorted((k, v) for (n, k), v in self.model.items() if n == ns and k.startswith(prefix))
        got = self.sw.meta.scan(ns, prefix=prefix, limit=limit)
        assert [(k, (v.value, v.version)) for k, v in got] == expected[:limit]
        paged = list(self.sw.meta.scan_all(ns, prefix=prefix, page=limit))
        assert [(k, (v.value, v.version)) for k, v in paged] == expected

    @invariant()
    def revision_matches(self) -> None:
        assert self.sw.meta.revision == self.revision


TestMetaModel = MetaModel.TestCase
TestMetaModel.settings = settings(max_examples=35, stateful_step_count=25, deadline=None)


def test_prefix_end() -> None:
    assert prefix_end(b"ab") == b"ac"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") == b""
    assert prefix_end(b"") == b""


def test_bad_batches_are_typed_errors_and_change_nothing(sw: seaway.Seaway) -> None:
    sw.meta.put("ns", b"k", b"v")
    with pytest.raises(InvalidArgumentError):
        sw.meta.batch().put("bad ns", b"k", b"v")
    with pytest.raises(InvalidArgumentError):
        sw.meta.batch().put("ns", "text", b"v")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        sw.meta.batch().delete_range("ns", b"b", b"a")
    with pytest.raises(PayloadTooLargeError):
        sw.meta.batch().put("ns", b"k", b"x" * ((1 << 20) + 1))
    with pytest.raises(InvalidArgumentError):
        sw.meta.scan("ns", limit=0)
    with pytest.raises(ConditionFailedError) as failed:
        sw.meta.batch().put("ns", b"other", b"1").expect_version("ns", b"k", 99).commit()
    assert failed.value.namespace == "ns" and failed.value.key == b"k" and failed.value.version == 1
    assert sw.meta.get("ns", b"other") is None and sw.meta.get("ns", b"k") == (b"v", 1)


def test_namespaces_do_not_see_each_other(sw: seaway.Seaway) -> None:
    sw.meta.batch().put("a", b"k", b"1").put("a.b", b"k", b"2").put("ab", b"k", b"3").commit()
    sw.meta.batch().delete_prefix("a", b"").commit()
    assert sw.meta.get("a", b"k") is None
    assert [k for k, _ in sw.meta.scan("a.b")] == [b"k"] and [k for k, _ in sw.meta.scan("ab")] == [b"k"]


def test_concurrent_compare_and_set_counter_loses_no_increment(sw: seaway.Seaway) -> None:
    """Threads increment one counter by compare-and-set: every increment lands exactly once."""
    sw.meta.put("c", b"n", b"0")

    def work() -> None:
        for _ in range(50):
            while True:
                got = sw.meta.get("c", b"n")
                assert got is not None
                try:
                    sw.meta.put("c", b"n", str(int(got.value) + 1).encode(), expect_version=got.version)
                    break
                except ConditionFailedError:
                    continue

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sw.meta.get("c", b"n")
    assert got is not None and got.value == b"200"
