"""The sequencer state machine, driven by hand."""

from __future__ import annotations

import pytest

from seaway import InvalidArgumentError, PreemptedError, StorageError, TimedOutError
from seaway.log import (
    ESN_MAX,
    AppendAcked,
    AppendFailed,
    AppendRequest,
    EpochGranted,
    PlugMsg,
    ReleaseMsg,
    RequestEpoch,
    SealMsg,
    SealReply,
    Sequencer,
    SequencerConfig,
    SequencerState,
    StoreMsg,
    StoreReply,
    Tick,
    make_lsn,
)


def active(epoch: int = 1, last: int = 0, config: SequencerConfig | None = None) -> Sequencer:
    seq = Sequencer(5, config)
    assert seq.handle(AppendRequest(1, (b"a",)), 0) == [RequestEpoch(5)]
    assert seq.handle(EpochGranted(epoch), 0) == [SealMsg(5, epoch - 1)]
    effects = seq.handle(SealReply(5, epoch - 1, last, None), 0)
    assert seq.state is SequencerState.ACTIVE
    assert effects[-1] == StoreMsg(5, make_lsn(epoch, 1), 0, (b"a",), True)
    return seq


def test_activation_seals_and_releases_what_is_stored() -> None:
    seq = Sequencer(5)
    seq.handle(AppendRequest(1, (b"a",)), 0)
    seq.handle(EpochGranted(3), 0)
    effects = seq.handle(SealReply(5, 2, make_lsn(2, 7), None), 0)
    assert effects[0] == ReleaseMsg(5, make_lsn(2, 7))
    assert effects[1] == StoreMsg(5, make_lsn(3, 1), 0, (b"a",), True)


def test_ack_then_release_in_lsn_order() -> None:
    seq = active()
    seq.handle(AppendRequest(2, (b"b", b"c")), 1)
    first, second = make_lsn(1, 1), make_lsn(1, 2)
    # The second store completes first: acknowledged, but not released past the first.
    assert seq.handle(StoreReply(5, second, None), 2) == [AppendAcked(2, second, 2)]
    assert seq.handle(StoreReply(5, first, None), 3) == [AppendAcked(1, first, 1), ReleaseMsg(5, make_lsn(1, 3))]


def test_failed_store_fails_the_append_and_plugs_the_slot() -> None:
    seq = active()
    error = StorageError("disk")
    effects = seq.handle(StoreReply(5, make_lsn(1, 1), error), 1)
    assert effects == [AppendFailed(1, error), PlugMsg(5, make_lsn(1, 1), 1, 0)]
    assert seq.handle(StoreReply(5, make_lsn(1, 1), None), 2) == [ReleaseMsg(5, make_lsn(1, 1))]


def test_unanswered_store_is_resent_then_times_out_and_is_plugged() -> None:
    seq = active(config=SequencerConfig(store_timeout_ms=10, store_attempts_max=2))
    assert seq.handle(Tick(), 5) == []  # before the deadline: nothing to resend
    effects = seq.handle(Tick(), 10)
    assert StoreMsg(5, make_lsn(1, 1), 0, (b"a",), True) in effects
    effects = seq.handle(Tick(), 20)
    assert isinstance(effects[0], AppendFailed) and isinstance(effects[0].error, TimedOutError)
    assert effects[1] == PlugMsg(5, make_lsn(1, 1), 1, 0)


def test_preemption_fails_everything_undecided() -> None:
    seq = active()
    seq.handle(AppendRequest(2, (b"b",)), 1)
    effects = seq.handle(StoreReply(5, make_lsn(1, 1), PreemptedError("sealed")), 2)
    assert [e.request_id for e in effects if isinstance(e, AppendFailed)] == [1, 2]
    assert seq.state is SequencerState.INACTIVE


def test_running_out_of_esns_moves_to_a_new_epoch() -> None:
    seq = active()
    seq._next_esn = ESN_MAX  # white-box: reaching the end by appending 2**32 records is too slow
    effects = seq.handle(AppendRequest(2, (b"x", b"y")), 1)
    assert effects == [RequestEpoch(5)]
    assert seq.handle(EpochGranted(2), 1) == [SealMsg(5, 1)]
    effects = seq.handle(SealReply(5, 1, make_lsn(1, 1), None), 1)
    assert StoreMsg(5, make_lsn(2, 1), 1, (b"x", b"y"), True) in effects


def test_failed_seal_is_sent_again_after_a_delay_not_at_once() -> None:
    # At once, a disk that keeps failing would have the sequencer and storage answer each other
    # for ever, never returning to the driver.
    seq = Sequencer(5, SequencerConfig(store_timeout_ms=10_000, seal_retry_ms=50))
    seq.handle(AppendRequest(1, (b"a",)), 0)
    assert seq.handle(EpochGranted(1), 0) == [SealMsg(5, 0)]
    assert seq.handle(SealReply(5, 0, 0, StorageError("disk")), 3) == []
    assert seq.state is SequencerState.ACTIVATING and seq.next_deadline_ms == 53
    assert seq.handle(Tick(), 52) == []
    assert seq.handle(Tick(), 53) == [SealMsg(5, 0)]
    effects = seq.handle(SealReply(5, 0, 0, None), 54)
    assert seq.state is SequencerState.ACTIVE and StoreMsg(5, make_lsn(1, 1), 54, (b"a",), True) in effects


def test_a_failed_seal_waits_no_longer_than_an_unanswered_one() -> None:
    seq = Sequencer(5, SequencerConfig(store_timeout_ms=10, seal_retry_ms=100))
    seq.handle(AppendRequest(1, (b"a",)), 0)
    seq.handle(EpochGranted(1), 0)
    assert seq.handle(SealReply(5, 0, 0, StorageError("disk")), 4) == []
    assert seq.next_deadline_ms == 10  # the resend the timeout set already is not put off
    with pytest.raises(InvalidArgumentError, match="seal_retry_ms"):
        SequencerConfig(seal_retry_ms=0)  # a failed seal resent at once could loop for ever


def test_lost_seal_is_resent() -> None:
    seq = Sequencer(5, SequencerConfig(store_timeout_ms=10))
    seq.handle(AppendRequest(1, (b"a",)), 0)
    seq.handle(EpochGranted(1), 0)
    assert seq.next_deadline_ms == 10
    assert seq.handle(Tick(), 10) == [SealMsg(5, 0)]
