"""Idempotent appends: each log remembers the recent batches of its producers, and a bounded
number of producers."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from seaway._values import ProducerMark, PutRecords
from seaway.logsdb import _format as fmt
from seaway.logsdb._keys import P_FORGOT, P_PRODUCER
from seaway.logsdb._marks import LogMarks


class ProducerWindows(LogMarks):
    """Each log's producers and their recent batches (their idempotence windows)."""

    _produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]]
    _producers: dict[int, OrderedDict[bytes, int]]
    _forgot: set[int]

    def _load_producers(self) -> None:
        self._produced = {}
        # Per log, its producers from least to most recently appending, with the time of their last
        # append (for the bound on them; after a restart, the time it opened: none is idle yet).
        self._producers = {}
        opened_ms = self._clock.now_ms()
        for key, value in self._meta_scan(P_PRODUCER):
            log_id, producer_id = fmt.decode_u64(key[1:9]), key[9:]
            self._produced[(log_id, producer_id)] = fmt.decode_produced(value)
            self._producers.setdefault(log_id, OrderedDict())[producer_id] = opened_ms
        self._forgot = {fmt.decode_u64(key[1:9]) for key, _ in self._meta_scan(P_FORGOT)}

    def _forget_log_producers(self, log_id: int) -> None:
        """After a write that deleted every producer of the log (under ``_lock``)."""
        for key in [k for k in self._producers.get(log_id, ())]:
            self._produced.pop((log_id, key), None)
        self._producers.pop(log_id, None)

    def _remember(self, produced: dict[tuple[int, bytes], dict[int, tuple[int, int]]], op: PutRecords,
                  mark: ProducerMark) -> None:
        key = (op.log_id, mark.producer_id)
        window = produced.get(key)
        if window is None:
            window = dict(self._produced.get(key, {}))
            produced[key] = window
        window[mark.sequence] = (op.first_lsn, len(op.payloads))
        while len(window) > self._config.producer_window:
            del window[next(iter(window))]

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
            for producer_id, last_ms in known.items():
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
            oldest_ms = next(iter(known.values()))
        return self._clock.now_ms() - oldest_ms >= int(self._config.producer_idle_s_min * 1000)

    def next_sequence(self, log_id: int, producer_id: bytes) -> int | None:
        """The sequence number after the newest batch of a producer that the log remembers (None:
        it remembers none)."""
        with self._lock:
            window = self._produced.get((log_id, producer_id))
            return max(window) + 1 if window else None

    def produced(self, log_id: int, producer_id: bytes, sequence: int) -> range | bool | None:
        """What became of a producer's batch: its LSNs if it is stored; ``None`` if it is not;
        ``False`` if nobody can tell: the sequence is older than every remembered one, or the log
        does not know the producer, has forgotten some, and the sequence is not a first one (0)."""
        with self._lock:
            window = self._produced.get((log_id, producer_id))
            if not window:
                return False if sequence > 0 and log_id in self._forgot else None
            found = window.get(sequence)
            if found is not None:
                return range(found[0], found[0] + found[1])
            if len(window) >= self._config.producer_window and sequence < min(window):
                return False
            return None
