"""A batching writer's close against a write made while it flushes: the record is stored or
refused, never left with a future that is not settled."""

from __future__ import annotations

from concurrent.futures import Future

import seaway
from seaway import ClosedError, Record


def _payloads(log: seaway.Log) -> list[bytes]:
    tail = log.tail_lsn()
    return [item.payload for item in log.read(1, tail) if isinstance(item, Record)] if tail else []


def test_a_write_while_close_flushes_is_settled(sw: seaway.Seaway) -> None:
    log = sw.logs.create("w")
    writer = log.writer(flush_records_max=100, flush_interval_s=60.0)
    late: list[Future[int]] = []
    refused: list[ClosedError] = []
    flush = writer._appends.flush

    def flush_then_write(timeout_s: float | None = None) -> None:
        flush(timeout_s)
        if not late and not refused:  # another thread writes as close's flush returns
            try:
                late.append(writer.write(b"late"))
            except ClosedError as exc:
                refused.append(exc)

    writer._appends.flush = flush_then_write  # type: ignore[method-assign]
    first = writer.write(b"first")
    writer.close()
    stored = first.result(5.0)
    if late:  # accepted: it must be stored (the writer flushed it) or fail, not hang
        assert late[0].result(5.0) > stored
        assert _payloads(log) == [b"first", b"late"]
    else:
        assert _payloads(log) == [b"first"]
    assert late or refused
