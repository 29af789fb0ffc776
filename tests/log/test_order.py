"""The ordering contract of appends: a producer's appends to a log are stored in the order they were
made, or the later ones fail; a retry never lands after something sent later. Tried by injecting the
fault that breaks it: a retriable refusal of one append while later ones succeed (findings 1, 2, 35)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import seaway
from seaway import OverloadedError, Record, SequenceGapError, SequenceOrderError
from seaway.server import Server, ServerConfig
from seaway.streams import WriterConfig
from seaway.testing import AppendFaults


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[Server]:
    """A server in this process, so that faults can be injected into its store."""
    server = Server(ServerConfig(data_dir=tmp_path / "server", listen="127.0.0.1:0", shutdown_grace_s=5))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _payloads(log: seaway.Log) -> list[bytes]:
    tail = log.tail_lsn()
    return [item.payload for item in log.read(1, tail) if isinstance(item, Record)] if tail else []


def test_a_batch_after_a_missing_one_waits_for_it(sw: seaway.Seaway) -> None:
    log = sw.logs.create("o")
    log.append_batch([b"0"], producer_id=b"p", sequence=0)
    with pytest.raises(SequenceGapError) as gap:
        log.append_batch([b"2"], producer_id=b"p", sequence=2)
    assert gap.value.retriable
    assert log.append_batch([b"1"], producer_id=b"p", sequence=1)
    assert log.append_batch([b"2"], producer_id=b"p", sequence=2)
    assert log.append_batch([b"2"], producer_id=b"p", sequence=2)  # a retry: answered, not stored again
    assert _payloads(log) == [b"0", b"1", b"2"]


def test_a_refused_first_batch_holds_back_the_next(sw: seaway.Seaway) -> None:
    """A producer's very first batch refused before the store saw it: the second must not get in."""
    log = sw.logs.create("o")
    with AppendFaults(seed=1, refuse=1.0, limit=1).applied(sw) as faults:
        first = log.append_batch_async([b"0"], producer_id=b"p", sequence=0)
        with pytest.raises(OverloadedError):
            first.result(5)
        with pytest.raises(SequenceGapError):
            log.append_batch([b"1"], producer_id=b"p", sequence=1)
        assert len(faults.injected) == 1
    log.append_batch([b"0"], producer_id=b"p", sequence=0)
    log.append_batch([b"1"], producer_id=b"p", sequence=1)
    assert _payloads(log) == [b"0", b"1"]


def test_a_batch_failed_after_a_later_one_was_stored_can_never_be_stored(sw: seaway.Seaway) -> None:
    log = sw.logs.create("o")
    log.append_batch([b"0"], producer_id=b"p", sequence=0)
    with AppendFaults(seed=1, refuse_later=1.0, limit=1).applied(sw):
        failed = log.append_batch_async([b"1"], producer_id=b"p", sequence=1)
        with pytest.raises(OverloadedError):
            failed.result(5)
    with pytest.raises(SequenceGapError):  # the store never saw 1: 2 must wait
        log.append_batch([b"2"], producer_id=b"p", sequence=2)
    log.append_batch([b"1"], producer_id=b"p", sequence=1)
    log.append_batch([b"2"], producer_id=b"p", sequence=2)
    assert _payloads(log) == [b"0", b"1", b"2"]


def _check_key_order(log_payloads: list[bytes], keys: int, per_key: int) -> None:
    seen: dict[str, list[int]] = {}
    for payload in log_payloads:
        key, n = payload.decode().split(":")
        seen.setdefault(key, []).append(int(n))
    assert sorted(seen) == [f"k{k}" for k in range(keys)]
    for key, numbers in seen.items():
        assert numbers == list(range(per_key)), f"key {key} stored out of order or not once: {numbers}"


def _write_one_segment(sw: seaway.Seaway, name: str, keys: int, per_key: int) -> seaway.Log:
    """Events of several keys through an EventWriter into a one-segment stream, many in flight."""
    sw.streams.create_scope("s")
    stream = sw.streams.create(f"s/{name}", scaling=seaway.FixedSegments(1))
    with stream.writer("w") as writer:
        futures = [writer.write(f"k{k}:{n}".encode(), f"k{k}") for n in range(per_key) for k in range(keys)]
        for future in futures:
            future.result(30)
    (segment,) = stream.current_segments()
    return sw.logs.get(segment.log_id)


@pytest.mark.parametrize("seed", range(6))
def test_event_writer_keeps_key_order_when_appends_are_refused(sw: seaway.Seaway, seed: int) -> None:
    faults = AppendFaults(seed, refuse=0.15, refuse_later=0.15, limit=30, marked_only=True)
    with faults.applied(sw):
        log = _write_one_segment(sw, "e", keys=4, per_key=60)
    assert faults.injected, faults
    _check_key_order(_payloads(log), 4, 60)


@pytest.mark.parametrize("seed", range(3))
def test_event_writer_through_a_server_keeps_key_order_when_appends_are_refused(
        in_process: Server, seed: int) -> None:
    faults = AppendFaults(seed, refuse=0.15, refuse_later=0.15, lose_reply=0.05, limit=30, marked_only=True)
    with faults.applied(in_process), seaway.connect(f"seaway://{in_process.address}", timeout_s=30) as sw:
        log = _write_one_segment(sw, "e", keys=4, per_key=60)
        assert faults.injected, faults
        _check_key_order(_payloads(log), 4, 60)


@pytest.mark.parametrize("seed", range(3))
def test_remote_appends_of_one_caller_keep_their_order_when_one_is_refused(in_process: Server, seed: int) -> None:
    """Many appends in flight from one client (finding 2): stored in the order made, or failed."""
    faults = AppendFaults(seed, refuse=0.3, refuse_later=0.3, lose_reply=0.1, limit=20)
    with faults.applied(in_process), seaway.connect(f"seaway://{in_process.address}", timeout_s=30) as sw:
        log = sw.logs.create("r")
        futures = []
        for n in range(1000):  # the client joins what waits: some calls carry many batches, some one
            futures.append(log.append_batch_async([f"{n}".encode()]))
            if n % 100 == 99:
                futures[-1].exception(30)
        outcomes = []
        for future in futures:
            try:
                future.result(30)
                outcomes.append(True)
            except seaway.SeawayError:
                outcomes.append(False)
        stored = [int(p) for p in _payloads(log)]
    assert faults.injected, faults
    assert stored == sorted(stored), f"stored out of order: {stored}"
    assert len(set(stored)) == len(stored)
    acknowledged = [n for n, ok in enumerate(outcomes) if ok]
    assert set(acknowledged) <= set(stored)


def test_plain_appends_keep_their_order_when_one_is_refused(sw: seaway.Seaway) -> None:
    """Appends made one after the other from one thread, many in flight: stored in that order, or
    the later ones fail."""
    log = sw.logs.create("plain")
    faults = AppendFaults(7, refuse=0.1, refuse_later=0.1, limit=20)
    with faults.applied(sw):
        futures = [log.append_async(f"{n}".encode()) for n in range(2000)]
        ok = []
        for n, future in enumerate(futures):
            try:
                future.result(30)
                ok.append(n)
            except seaway.SeawayError:
                pass
    stored = [int(p) for p in _payloads(log)]
    assert faults.injected
    assert stored == sorted(stored), "stored out of order"
    assert set(ok) <= set(stored)


def test_two_producers_racing_do_not_hold_each_other_back(sw: seaway.Seaway) -> None:
    log = sw.logs.create("two")
    errors: list[BaseException] = []

    def produce(pid: bytes) -> None:
        try:
            for n in range(100):
                log.append_batch([pid + b"%d" % n], producer_id=pid, sequence=n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=produce, args=(p,)) for p in (b"a", b"b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stored = _payloads(log)
    for pid in (b"a", b"b"):
        assert [p for p in stored if p.startswith(pid)] == [pid + b"%d" % n for n in range(100)]


def test_sequence_order_error_is_not_retriable() -> None:
    assert not SequenceOrderError.retriable


def _refuse_all(limit: int) -> AppendFaults:
    return AppendFaults(seed=0, refuse=1.0, limit=limit)


def test_a_remote_connection_appends_again_after_a_batch_failed_for_good(in_process: Server) -> None:
    with seaway.connect(f"seaway://{in_process.address}", timeout_s=30,
                        retry=seaway.RetryPolicy(attempts_max=2, backoff_s=0.01)) as sw:
        log = sw.logs.create("again")
        log.append(b"0")
        with _refuse_all(limit=2).applied(in_process), pytest.raises(OverloadedError):
            log.append(b"lost")  # refused twice: given up
        with pytest.raises(seaway.TailMismatchError):
            log.append_batch([b"nope"], if_tail=0)
        assert log.append(b"1")
        assert _payloads(log) == [b"0", b"1"]


@pytest.mark.parametrize("where", ["embedded", "remote"])
def test_writers_append_again_after_a_batch_failed_for_good(tmp_path: Path, where: str) -> None:
    server = None
    if where == "remote":
        server = Server(ServerConfig(data_dir=tmp_path / "server", listen="127.0.0.1:0", shutdown_grace_s=5))
        server.start()
    try:
        with (seaway.open(tmp_path / "data") if server is None
              else seaway.connect(f"seaway://{server.address}", timeout_s=30,
                                  retry=seaway.RetryPolicy(attempts_max=1))) as sw:
            target = sw if server is None else server
            log = sw.logs.create("w")
            retry = seaway.RetryPolicy(attempts_max=2, backoff_s=0.01)
            with log.writer(flush_records_max=1, retry=retry) as writer:
                assert writer.write(b"a").result(30)
                with _refuse_all(limit=2).applied(target), pytest.raises(OverloadedError):
                    writer.write(b"lost").result(30)
                assert writer.write(b"b").result(30)
            sw.streams.create_scope("s")
            stream = sw.streams.create("s/w", scaling=seaway.FixedSegments(1))
            config = WriterConfig(retries_max=1, retry_backoff_s=0.01)
            with stream.writer("ew", config=config) as events:
                assert events.write(b"a", "k").result(30)
                with _refuse_all(limit=2).applied(target), pytest.raises(OverloadedError):
                    events.write(b"lost", "k").result(30)
                assert events.write(b"b", "k").result(30)
            (segment,) = stream.current_segments()
            assert _payloads(log) == [b"a", b"b"]
            assert _payloads(sw.logs.get(segment.log_id)) == [b"a", b"b"]
    finally:
        if server is not None:
            server.stop()
