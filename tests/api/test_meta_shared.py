"""The metadata store's contract, embedded and through a server."""

from __future__ import annotations

import threading

import pytest

import seaway
from seaway import ConditionFailedError, InvalidArgumentError, MetaBatch, PayloadTooLargeError
from tests.api.conftest import Api


def test_batches_apply_whole_or_not_at_all(api: Api) -> None:
    ns, other = api.name("ns"), api.name("ns")
    meta = api.sw.meta
    first = meta.batch().expect_absent(ns, b"stream").put(ns, b"stream", b"v1").put(other, b"ledger/1", b"e").commit()
    assert meta.get(ns, b"stream") == (b"v1", first) and meta.get(other, b"ledger/1") == (b"e", first)
    assert meta.revision >= first
    with pytest.raises(ConditionFailedError) as failed:
        meta.batch().put(ns, b"stream", b"v2").put(other, b"ledger/2", b"e").expect_absent(ns, b"stream").commit()
    assert (failed.value.namespace, failed.value.key, failed.value.version) == (ns, b"stream", first)
    assert meta.get(ns, b"stream") == (b"v1", first) and meta.get(other, b"ledger/2") is None
    second = meta.batch().expect_version(ns, b"stream", first).expect_value(ns, b"stream", b"v1") \
        .put(ns, b"stream", b"v2").commit()
    assert second > first and meta.get(ns, b"stream") == (b"v2", second)


def test_scans_ranges_and_range_deletes(api: Api) -> None:
    ns = api.name("ns")
    meta = api.sw.meta
    batch = meta.batch()
    for i in range(30):
        batch.put(ns, b"seg/%03d" % i, b"%d" % i)
    batch.put(ns, b"z", b"last").commit()
    assert [k for k, _ in meta.scan(ns, prefix=b"seg/", limit=3)] == [b"seg/000", b"seg/001", b"seg/002"]
    assert [k for k, _ in meta.scan(ns, start=b"seg/028")] == [b"seg/028", b"seg/029", b"z"]
    assert [k for k, _ in meta.scan(ns, start=b"seg/010", end=b"seg/012")] == [b"seg/010", b"seg/011"]
    assert len(list(meta.scan_all(ns, prefix=b"seg/", page=7))) == 30
    meta.batch().delete_range(ns, b"seg/005", b"seg/025").delete(ns, b"z").commit()
    assert len(meta.scan(ns)) == 10
    meta.batch().delete_prefix(ns, b"seg/").commit()
    assert meta.scan(ns) == []


def test_bad_batches_are_refused_with_typed_errors(api: Api) -> None:
    ns = api.name("ns")
    meta = api.sw.meta
    meta.put(ns, b"k", b"kept")
    with pytest.raises(InvalidArgumentError):
        meta.get("no spaces", b"k")
    with pytest.raises(InvalidArgumentError):
        meta.scan(ns, limit=10_001)
    with pytest.raises(PayloadTooLargeError):
        meta.batch().put(ns, b"k", b"x" * ((1 << 20) + 1))
    with pytest.raises(InvalidArgumentError):
        MetaBatch().commit()
    with pytest.raises(ConditionFailedError):
        meta.put(ns, b"k", b"lost", expect_version=12345678)
    assert meta.get(ns, b"k").value == b"kept"  # type: ignore[union-attr]


def test_compare_and_set_from_many_connections(api: Api) -> None:
    """Several clients (threads here; processes through a server alike) increment one counter by
    compare-and-set: none of the increments is lost or applied twice."""
    ns = api.name("ns")
    api.sw.meta.put(ns, b"n", b"0")
    stores = [api.sw] if api.kind == "embedded" else [seaway.connect(api.sw_url) for _ in range(3)]

    def work(meta: seaway.Seaway) -> None:
        for _ in range(20):
            while True:
                got = meta.meta.get(ns, b"n")
                try:
                    meta.meta.put(ns, b"n", b"%d" % (int(got.value) + 1), expect_version=got.version)
                    break
                except ConditionFailedError:
                    continue

    threads = [threading.Thread(target=work, args=(stores[i % len(stores)],)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if api.kind == "remote":
        for s in stores:
            s.close()
    assert api.sw.meta.get(ns, b"n").value == b"60"


def test_a_scan_at_its_limits_returns_everything_embedded_and_remote(api: Api) -> None:
    # 10,000 keys (a scan's most) of 1 KiB: 10 MiB, past what one server reply may carry; and
    # values of the largest size, each alone bigger than half a reply.
    ns, big = api.name("ns"), api.name("ns")
    meta = api.sw.meta
    batch = meta.batch()
    for i in range(10_000):
        batch.put(ns, b"delta/%05d" % i, b"%05d" % i + b"d" * 1019)
    batch.commit()
    rows = meta.scan(ns, prefix=b"delta/", limit=10_000)
    assert [k for k, _ in rows] == [b"delta/%05d" % i for i in range(10_000)]
    assert all(v.value[:5] == k[6:] and len(v.value) == 1024 for k, v in rows)
    assert len(list(meta.scan_all(ns, page=10_000))) == 10_000
    largest = 1 << 20
    meta.batch().put(big, b"a", b"a" * largest).put(big, b"b", b"b" * largest).put(big, b"c", b"c" * largest).commit()
    assert [(k, len(v.value), v.value[:1]) for k, v in meta.scan(big, limit=3)] == \
        [(b"a", largest, b"a"), (b"b", largest, b"b"), (b"c", largest, b"c")]
    assert [k for k, _ in meta.scan(big, start=b"b", limit=1)] == [b"b"]


def test_a_batch_creates_logs_with_the_metadata_that_names_them(api: Api) -> None:
    """Logs created in the same atomic write as a metadata batch: with it, or not at all."""
    ns, a, b, c = api.name("ns"), api.name(), api.name(), api.name()
    meta, logs = api.sw.meta, api.sw.logs
    group = api.name("group")
    first = 2**40 + api.number() * 1000
    logs.create_group(group, first, first + 99)
    mark = api.sw.ledger.bounds()[1]
    revision = meta.batch().expect_absent(ns, b"names").put(ns, b"names", f"{a},{b}".encode()).create_log(
        a, first + 7, group=group).create_log(b, group=group).commit()
    assert meta.get(ns, b"names") == (f"{a},{b}".encode(), revision)
    assert logs.get(a).id == first + 7 and logs.get(b).id == first + 8  # the next free id of the group
    assert logs.get(b).append(b"x") > 0
    created = [(e.change.name, e.change.log_id) for e in api.sw.ledger.read(mark + 1, 100)
               if e.operation == "log.created"]
    assert created == [(a, first + 7), (b, first + 8)], "each log is recorded in the ledger with the batch"
    # A failed condition: no log. A taken name or id: nothing applied, the batch's keys neither.
    with pytest.raises(ConditionFailedError):
        meta.batch().expect_absent(ns, b"names").put(ns, b"other", b"1").create_log(c, group=group).commit()
    with pytest.raises(seaway.LogExistsError):
        meta.batch().put(ns, b"other", b"1").create_log(c, first + 7, group=group).commit()
    with pytest.raises(seaway.LogExistsError):
        meta.batch().put(ns, b"other", b"1").create_log(c, group=group).create_log(a, group=group).commit()
    with pytest.raises(seaway.LogExistsError):
        meta.batch().put(ns, b"other", b"1").create_log(c, first + 20, group=group).create_log(
            api.name(), first + 20, group=group).commit()
    with pytest.raises(seaway.UnknownLogError):
        meta.batch().put(ns, b"other", b"1").create_log(c, group=api.name("nogroup")).commit()
    assert meta.get(ns, b"other") is None
    with pytest.raises(seaway.UnknownLogError):
        logs.get(c)
    with pytest.raises(InvalidArgumentError):
        meta.batch().create_log("bad name!")
    if api.kind == "remote":  # the store's own logs are created by the store only
        with pytest.raises(InvalidArgumentError, match="store's own"):
            meta.batch().create_log(f"seaway.{api.name()}").commit()
