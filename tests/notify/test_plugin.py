"""The plugin loop against an in-memory ledger, a fake clock and a target that goes down."""

from __future__ import annotations

import json

import pytest

from seaway.errors import CorruptionError
from seaway.ledger import QueueCreated, StreamCreated, StreamScaled
from seaway.notify import LAST_ERROR_CHARS_MAX, Checkpoint, DeliveryRetry, JsonLinesFile, NotifyConfig, Plugin
from tests.notify.fakes import Checkpoints, Clock, FakeLedger, FlakyTarget

FILE = JsonLinesFile("/unused")


def _plugin(ledger: FakeLedger, target: FlakyTarget, checkpoints: Checkpoints, clock: Clock,
            **kw: object) -> Plugin:
    config = NotifyConfig("p", FILE, **kw)  # type: ignore[arg-type]
    return Plugin(config, target, ledger, checkpoints, clock)


def _drain(plugin: Plugin, clock: Clock, steps_max: int = 10_000) -> None:
    """Step until idle, moving the fake clock over every wait."""
    for _ in range(steps_max):
        wait_s = plugin.step()
        if wait_s == plugin.idle_s:  # nothing left to read
            return
        clock.now_s += wait_s
    raise AssertionError("the plugin never went idle")


def test_target_down_for_a_while_then_back_receives_everything_in_order_with_stable_ids() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    plugin = _plugin(ledger, target, checkpoints, clock, retry=DeliveryRetry(attempts_max=50, backoff_max_s=8.0))
    for n in range(3):
        ledger.append(StreamCreated(f"web/s{n}", 1, "{}"))
    _drain(plugin, clock)
    target.up = False
    for n in range(3, 10):
        ledger.append(StreamScaled(f"web/s{n % 2}", n, 1, 2))
    # Down: the plugin retries the first undelivered entry with a growing wait, and stays on it.
    waits = [plugin.step() for _ in range(1)]
    for _ in range(6):
        clock.now_s += waits[-1]
        waits.append(plugin.step())
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert plugin.position == 3 and checkpoints.saved["p"].index == 3
    target.up = True
    clock.now_s += waits[-1]
    _drain(plugin, clock)
    ids = [m.id for m in target.received]
    assert ids == [str(i) for i in range(1, 11)]  # each once, in ledger order
    assert [json.loads(m.body)["sequence"] for m in target.received] == [f"{i:020d}" for i in range(1, 11)]
    assert plugin.counters == {"triggered": 10, "delivered": 10, "failed": 7, "dropped": 0, "missed": 0}
    assert checkpoints.saved["p"].index == 10 and checkpoints.saved["p"].counters["failed"] == 7


def test_a_restarted_plugin_resumes_from_its_checkpoint_and_resends_only_what_was_not_acknowledged() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    for n in range(5):
        ledger.append(QueueCreated(f"q{n}"))
    checkpoints.saved["p"] = Checkpoint(0)  # as set when configured, before these entries
    first = _plugin(ledger, target, checkpoints, clock)
    _drain(first, clock)
    for n in range(5, 8):
        ledger.append(QueueCreated(f"q{n}"))
    second = _plugin(ledger, FlakyTarget(), checkpoints, clock)  # a new process: the checkpoint is all it has
    assert second.position == 5
    _drain(second, clock)
    assert [m.id for m in second._sender.received] == ["6", "7", "8"]  # type: ignore[attr-defined]
    assert second.counters["delivered"] == 8


def test_a_pruned_range_is_reported_exactly_and_the_plugin_goes_on() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    ledger.append(QueueCreated("q0"))
    plugin = _plugin(ledger, target, checkpoints, clock)  # starts at the head: 1
    for n in range(1, 9):
        ledger.append(QueueCreated(f"q{n}"))  # 2..9
    ledger.prune(6)
    _drain(plugin, clock)
    assert [(r.first, r.last) for r in plugin.missed_ranges] == [(2, 6)]
    assert plugin.counters["missed"] == 5
    notice = json.loads(target.received[0].body)
    assert notice["type"] == "io.seaway.notify.missed" and notice["data"]["change"] == \
        {"plugin": "p", "first": 2, "last": 6, "count": 5}
    assert [m.id for m in target.received[1:]] == ["7", "8", "9"]


def test_an_entry_is_given_up_after_the_retry_limit_and_counted() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    plugin = _plugin(ledger, target, checkpoints, clock, retry=DeliveryRetry(attempts_max=3))
    ledger.append(QueueCreated("a"))
    target.up = False
    clock.now_s += plugin.step()
    clock.now_s += plugin.step()
    assert plugin.position == 0
    target.up = True
    ledger.append(QueueCreated("b"))
    target.up = False
    plugin.step()  # third attempt: given up, on to the next entry, which fails its first attempt
    assert plugin.position == 1 and plugin.counters["dropped"] == 1 and plugin.counters["failed"] == 4


def test_an_entry_is_given_up_after_its_time_to_live() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    plugin = _plugin(ledger, target, checkpoints, clock, retry=DeliveryRetry(ttl_s=10.0, backoff_max_s=4.0))
    ledger.append(QueueCreated("a"))
    target.up = False
    elapsed = 0.0
    while plugin.counters["dropped"] == 0:
        wait_s = plugin.step()
        clock.now_s += wait_s
        elapsed += wait_s
        assert elapsed < 60
    assert 10.0 <= elapsed <= 14.0 and plugin.position == 1


def test_entries_the_configuration_leaves_out_advance_the_checkpoint_without_a_message() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    plugin = _plugin(ledger, target, checkpoints, clock, scope="web", events=("stream.created",))
    ledger.append(StreamCreated("web/a", 1, "{}"))
    ledger.append(StreamCreated("shop/a", 1, "{}"))
    ledger.append(QueueCreated("q"))
    _drain(plugin, clock)
    assert [m.resource for m in target.received] == ["stream/web/a"]
    assert plugin.position == 3 and plugin.counters["triggered"] == 1


def test_checkpoints_are_saved_at_most_every_save_interval_and_at_close() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    checkpoints.saved["p"] = Checkpoint(0)
    plugin = Plugin(NotifyConfig("p", FILE), target, ledger, checkpoints, clock, save_interval_s=3600.0)
    ledger.append(QueueCreated("q0"))
    assert plugin.step() == plugin.idle_s  # the first save is at once
    assert checkpoints.saved["p"].index == 1 and checkpoints.saves == 1
    for n in range(1, 4):  # each delivered at once; the checkpoint waits for its interval
        ledger.append(QueueCreated(f"q{n}"))
        assert 0 < plugin.step() <= plugin.idle_s
    assert [m.id for m in target.received] == ["1", "2", "3", "4"]
    assert checkpoints.saved["p"].index == 1 and checkpoints.saves == 1 and plugin.position == 4
    plugin.close()  # a stop saves what was delivered
    assert checkpoints.saved["p"].index == 4 and checkpoints.saved["p"].counters["delivered"] == 4
    assert checkpoints.saves == 2


def test_the_last_delivery_error_is_saved_with_its_time_and_kept_after_the_target_recovers() -> None:
    ledger, target, checkpoints, clock = FakeLedger(), FlakyTarget(), Checkpoints(), Clock()
    plugin = _plugin(ledger, target, checkpoints, clock, retry=DeliveryRetry(attempts_max=50))
    ledger.append(StreamCreated("web/a", 1, "{}"))
    _drain(plugin, clock)
    assert checkpoints.saved["p"].last_error is None
    target.up = False
    ledger.append(StreamCreated("web/b", 1, "{}"))
    plugin.step()
    saved = checkpoints.saved["p"]
    assert saved.last_error == "entry 2: target down"
    assert saved.last_error_ms == int(clock.now_s * 1000)
    target.up = True
    clock.now_s += 60
    _drain(plugin, clock)
    assert checkpoints.saved["p"].index == 2
    assert checkpoints.saved["p"].last_error == "entry 2: target down"  # the last one, with when it was
    again = _plugin(ledger, target, checkpoints, clock)
    assert again._saved.last_error == "entry 2: target down"  # a restarted plugin keeps it


def test_a_checkpoint_carries_its_last_error_bounded_and_reads_those_saved_without_one() -> None:
    checkpoint = Checkpoint(7, {"failed": 1}, 5, last_error="entry 7: refused", last_error_ms=4)
    assert Checkpoint.from_bytes(checkpoint.to_bytes()) == checkpoint
    assert Checkpoint.from_bytes(b'{"index": 3, "counters": {}, "time_ms": 1}') == Checkpoint(3, {}, 1)
    long = Checkpoint(1, last_error="x" * 10_000, last_error_ms=1)
    assert len(Checkpoint.from_bytes(long.to_bytes()).last_error or "") == LAST_ERROR_CHARS_MAX
    for bad in (b'{"index": 3, "last_error": 5}', b'{"index": 3, "last_error": "e", "last_error_ms": -1}',
                b'{"index": 3, "last_error": "' + b"x" * 2000 + b'"}'):
        with pytest.raises(CorruptionError):
            Checkpoint.from_bytes(bad)
