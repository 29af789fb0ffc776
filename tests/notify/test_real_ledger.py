"""A plugin over the real ledger of an embedded store (the other plugin tests use an in-memory
one): reads cut short by the ledger's byte cap, entries at the size limit, and hard prunes that
land while the plugin reads, at a chosen moment and from a concurrent writer. The checker: every
index after the plugin's start is delivered once or reported in exactly one missed range, in
ledger order, with nothing left over."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import seaway
from seaway._errors import PayloadTooLargeError
from seaway.ledger import CHANGE_BYTES_MAX, LedgerEntry, QueueCreated, StreamUpdated
from seaway.log import READ_BYTES_MAX
from seaway.notify import FORMATS, Message, NotifyConfig, Plugin, Webhook
from tests.notify.fakes import Clock, FlakyTarget
from tests.notify.real_ledger import HARD, assert_partition, at_limit, covered_by, open_store

HOOK = Webhook("https://hooks.example.org/seaway")
"""Never called: the plugin sends to the test's target (a webhook's messages carry every format)."""


def _plugin(sw: seaway.Seaway, target: FlakyTarget, source: object = None, **kw: object) -> Plugin:
    config = NotifyConfig("p", HOOK, **kw)  # type: ignore[arg-type]
    sw.notify.set(config)
    return Plugin(config, target, source or sw.ledger, sw.notify, Clock(),  # type: ignore[arg-type]
                  config_version=sw.notify.versions()["p"][0])


def test_a_read_cut_short_by_the_byte_cap_is_followed_at_once_not_after_an_idle_wait(tmp_path: Path) -> None:
    with open_store(tmp_path / "data") as sw:
        target = FlakyTarget()
        plugin = _plugin(sw, target)
        start = plugin.position
        count = 2 * READ_BYTES_MAX // CHANGE_BYTES_MAX + 3  # more than two full reads
        for i in range(count):
            sw.ledger.append(at_limit(f"web/s{i}"))
        head = sw.ledger.bounds()[1]
        waits = []
        while plugin.position < head:
            assert len(waits) < count, "the plugin does not get through the ledger"
            waits.append(plugin.step())
        assert len(waits) >= 3  # the cap cut the reads: each at most READ_BYTES_MAX
        assert waits[:-1] == [0.0] * (len(waits) - 1), f"waits between reads cut by the byte cap: {waits}"
        assert_partition(covered_by([m.id for m in target.received]), start, head)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_entry_at_the_size_limit_is_delivered_whole_and_one_past_it_stores_nothing(
        tmp_path: Path, fmt: str) -> None:
    with open_store(tmp_path / "data") as sw:
        target = FlakyTarget()
        plugin = _plugin(sw, target, format=fmt)
        start, before = plugin.position, sw.ledger.bounds()[1]  # the configuration's own entry between
        big = at_limit("web/big")
        sw.ledger.append(big)
        with pytest.raises(PayloadTooLargeError, match=str(CHANGE_BYTES_MAX)):
            sw.ledger.append(StreamUpdated(big.stream, big.config + "x"))
        with pytest.raises(PayloadTooLargeError):
            sw.meta.batch().put("app", b"k", b"v").record(StreamUpdated(big.stream, big.config + "x"))
        sw.ledger.append(QueueCreated("after"))
        head = sw.ledger.bounds()[1]
        assert head == before + 2  # the refused ones took no index
        while plugin.step() != plugin.idle_s:
            pass
        assert_partition(covered_by([m.id for m in target.received]), start, head)
        first = target.received[-2]
        carried = first.body + b"".join(v.encode() for v in first.headers.values())
        assert big.config.encode() in carried  # whole, not cut
        assert plugin.counters["missed"] == 0 and plugin.counters["delivered"] == head - start


class PrunedWhileReading:
    """``sw.ledger``, where ``writes`` new entries (passing the hard bound, which prunes in the
    same write) land between the plugin's ``bounds()`` and its first ``read()``."""

    def __init__(self, sw: seaway.Seaway, writes: int) -> None:
        self._ledger = sw.ledger
        self.writes = writes

    def bounds(self) -> tuple[int, int]:
        return self._ledger.bounds()

    def read(self, index_from: int, limit: int = 1000) -> list[LedgerEntry]:
        for i in range(self.writes):
            self._ledger.append(QueueCreated(f"meanwhile{i}"))
        self.writes = 0
        return self._ledger.read(index_from, limit)


def test_a_hard_prune_between_the_plugins_bounds_and_its_read_is_reported_exactly(tmp_path: Path) -> None:
    with open_store(tmp_path / "data", hard=HARD) as sw:
        target = FlakyTarget()
        source = PrunedWhileReading(sw, writes=0)
        plugin = _plugin(sw, target, source)
        start = plugin.position
        for i in range(5):
            sw.ledger.append(QueueCreated(f"q{i}"))
        source.writes = 2 * HARD
        while plugin.step() != plugin.idle_s:
            pass
        tail, head = sw.ledger.bounds()
        covered = covered_by([m.id for m in target.received])
        assert_partition(covered, start, head)
        assert covered[0] == (start + 1, tail - 1)  # all of it pruned under the plugin's read
        assert plugin.counters["missed"] == tail - 1 - start


class Behind(FlakyTarget):
    """A target that takes each message only once the writer has written ``lead`` more entries
    (or is done): the plugin falls behind a writer that hard-prunes under its reads."""

    def __init__(self, lead: int) -> None:
        super().__init__()
        self.lead = lead
        self.written = 0
        self.done = False
        self.progress = threading.Condition()

    def wrote(self, *, done: bool = False) -> None:
        with self.progress:
            self.written += 1
            self.done = self.done or done
            self.progress.notify_all()

    def send(self, message: Message) -> None:
        with self.progress:
            until = self.written + self.lead
            assert self.progress.wait_for(lambda: self.done or self.written >= until, timeout=60)
        super().send(message)


def test_a_plugin_racing_a_writer_that_hard_prunes_accounts_for_every_entry(tmp_path: Path) -> None:
    with open_store(tmp_path / "data", hard=HARD) as sw:
        target = Behind(lead=HARD // 4)
        plugin = _plugin(sw, target, batch_entries_max=3)  # small reads: more of them race the writer
        start = plugin.position

        def write() -> None:
            try:
                for i in range(20 * HARD):
                    sw.ledger.append(QueueCreated(f"q{i}"))
                    target.wrote()
            finally:
                target.wrote(done=True)

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 120
        while not target.done or plugin.position < sw.ledger.bounds()[1]:
            assert time.monotonic() < deadline, "the plugin does not get through the ledger"
            plugin.step()
        writer.join()
        head = sw.ledger.bounds()[1]
        assert_partition(covered_by([m.id for m in target.received]), start, head)
        assert plugin.counters["missed"] + plugin.counters["delivered"] == head - start
        assert len(plugin.missed_ranges) > 1  # pruned under the plugin, again and again
