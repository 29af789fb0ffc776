"""Idempotent appends: each log remembers the recent batches of its producers, and a bounded
number of producers."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rocksdict import WriteBatch

from seaway._values import ProducerMark, PutRecords
from seaway.logsdb import _format as fmt
from seaway.logsdb._keys import P_FORGOT, P_PRODUCER, u64
from seaway.logsdb._marks import LogMarks

Window = bytes
"""A producer's recent batches in a log as they are stored (see ``fmt.encode_produced``), and kept in
memory in that form, 20 bytes a batch: most producers are short-lived (a connection, a command, a
task) and append a single batch. The batches are in the order of their sequence numbers, each once."""

_BATCH_BYTES = fmt.PRODUCED_BATCH_BYTES


def _sorted(window: Window) -> Window:
    """``window`` in the order of its sequence numbers (one written before the order rule, or by a
    caller of :meth:`LogsDB.write` out of order, may not be)."""
    batches = fmt.decode_produced(window)
    if list(batches) == sorted(batches):
        return window
    return fmt.encode_produced(dict(sorted(batches.items())))


def _find(window: Window, sequence: int) -> tuple[int, int] | None:
    """``(first LSN, count)`` of the batch with this sequence number, if the window holds it: a
    binary search, with a first guess that finds it at once when the numbers have no gaps."""
    low, high = 0, len(window) // _BATCH_BYTES
    if high == 0:
        return None
    guess = sequence - fmt.produced_batch(window, 0)[0]
    if 0 <= guess < high:
        found, first, count = fmt.produced_batch(window, guess)
        if found == sequence:
            return first, count
    while low < high:
        middle = (low + high) // 2
        found, first, count = fmt.produced_batch(window, middle)
        if found == sequence:
            return first, count
        if found < sequence:
            low = middle + 1
        else:
            high = middle
    return None


def _with(window: Window, sequence: int, first_lsn: int, count: int, batches_max: int) -> Window:
    """``window`` with a batch added (or replaced), the oldest dropped past ``batches_max``."""
    if not window or fmt.produced_batch(window, len(window) // _BATCH_BYTES - 1)[0] < sequence:
        window += fmt.encode_produced_batch(sequence, first_lsn, count)  # the usual case: the next one
    else:
        batches = fmt.decode_produced(window)
        batches[sequence] = (first_lsn, count)
        window = fmt.encode_produced(dict(sorted(batches.items())))
    return window[-batches_max * _BATCH_BYTES:]


class ProducerWindows(LogMarks):
    """Each log's producers and their recent batches (their idempotence windows)."""

    _producers: dict[int, OrderedDict[bytes, tuple[int, Window]]]
    """Per log, its producers from least to most recently appending: the time of their last append
    (after a restart, the time it opened: none is idle yet) and their window."""
    _forgot: set[int]
    """The logs that forgot a producer (see :meth:`produced`)."""

    def _load_producers(self) -> None:
        self._producers = {}
        opened_ms = self._clock.now_ms()
        for key, value in self._meta_scan(P_PRODUCER):
            log_id, producer_id = fmt.decode_u64(key[1:9]), key[9:]
            self._producers.setdefault(log_id, OrderedDict())[producer_id] = (opened_ms, _sorted(value))
        self._forgot = {fmt.decode_u64(key[1:9]) for key, _ in self._meta_scan(P_FORGOT)}

    def _forget_log_producers(self, log_id: int) -> None:
        """After a write that deleted every producer of the log (under ``_lock``)."""
        self._producers.pop(log_id, None)

    def _known_window(self, log_id: int, producer_id: bytes) -> Window | None:
        known = self._producers.get(log_id)
        found = known.get(producer_id) if known is not None else None
        return found[1] if found is not None else None

    def _remember(self, produced: dict[tuple[int, bytes], Window], op: PutRecords, mark: ProducerMark) -> None:
        key = (op.log_id, mark.producer_id)
        window = produced.get(key)
        if window is None:
            window = self._known_window(*key) or b""
        produced[key] = _with(window, mark.sequence, op.first_lsn, len(op.payloads), self._config.producer_window)

    def _put_producers(self, batch: WriteBatch, produced: dict[tuple[int, bytes], Window],
                       now_ms: int) -> list[tuple[int, bytes]]:
        """Put the windows of a write's producers into its ``batch``, and delete those of the
        producers it makes the logs forget; return the latter (see :meth:`_producers_written`)."""
        for (log_id, producer_id), window in produced.items():
            batch.put(P_PRODUCER + u64(log_id) + producer_id, window, self._meta_handle)
        forgotten = self._producers_to_forget(produced, now_ms)
        for gone_log, gone_producer in forgotten:
            batch.delete(P_PRODUCER + u64(gone_log) + gone_producer, self._meta_handle)
        for gone_log in {log_id for log_id, _ in forgotten} - self._forgot:
            batch.put(P_FORGOT + u64(gone_log), b"", self._meta_handle)
        return forgotten

    def _producers_written(self, produced: dict[tuple[int, bytes], Window], forgotten: list[tuple[int, bytes]],
                           now_ms: int) -> None:
        """After the write of :meth:`_put_producers` is applied (under ``_lock``)."""
        for (log_id, producer_id), window in produced.items():
            known = self._producers.setdefault(log_id, OrderedDict())
            known[producer_id] = (now_ms, window)
            known.move_to_end(producer_id)
        for log_id, producer_id in forgotten:
            del self._producers[log_id][producer_id]
            self._forgot.add(log_id)

    def _producers_to_forget(self, produced: dict[tuple[int, bytes], Any], now_ms: int) -> list[tuple[int, bytes]]:
        """The least recently appending producers past each log's bound, once this write is in, of
        those idle long enough to be forgotten (the bound is exceeded rather than an active one
        forgotten; see :meth:`producer_admitted`)."""
        idle_ms = int(self._config.producer_idle_s_min * 1000)
        out: list[tuple[int, bytes]] = []
        for log_id in {log_id for log_id, _ in produced}:
            known = self._producers.get(log_id, OrderedDict())
            new = sum(1 for (log, pid) in produced if log == log_id and pid not in known)
            excess = len(known) + new - self._config.producers_per_log_max
            for producer_id, (last_ms, _) in known.items():
                if excess <= 0 or now_ms - last_ms < idle_ms:
                    break  # the rest appended later still
                if (log_id, producer_id) not in produced:
                    out.append((log_id, producer_id))
                    excess -= 1
        return out

    def producer_admitted(self, log_id: int, producer_id: bytes) -> bool:
        """Whether a batch of this producer may be appended to the log now: a producer the log
        knows always may; a new one only while the log remembers fewer than ``producers_per_log_max``
        producers or one of them has been idle long enough to be forgotten."""
        with self._lock:
            known = self._producers.get(log_id)
            if known is None or producer_id in known or len(known) < self._config.producers_per_log_max:
                return True
            oldest_ms = next(iter(known.values()))[0]
        return self._clock.now_ms() - oldest_ms >= int(self._config.producer_idle_s_min * 1000)

    def next_sequence(self, log_id: int, producer_id: bytes) -> int | None:
        """The sequence number after the newest batch of a producer that the log remembers (None:
        it remembers none)."""
        with self._lock:
            window = self._known_window(log_id, producer_id)
            return fmt.produced_batch(window, len(window) // _BATCH_BYTES - 1)[0] + 1 if window else None

    def produced(self, log_id: int, producer_id: bytes, sequence: int) -> range | bool | None:
        """What became of a producer's batch: its LSNs if it is stored; ``None`` if it is not;
        ``False`` if nobody can tell: the sequence is older than every remembered one, or the log
        does not know the producer, has forgotten some, and the sequence is not a first one (0)."""
        with self._lock:
            window = self._known_window(log_id, producer_id)
            if not window:
                return False if sequence > 0 and log_id in self._forgot else None
            found = _find(window, sequence)
            if found is not None:
                return range(found[0], found[0] + found[1])
            full = len(window) // _BATCH_BYTES >= self._config.producer_window
            return False if full and sequence < fmt.produced_batch(window, 0)[0] else None
