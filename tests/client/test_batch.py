"""The joined-call batcher (seaway.client._batch): a thread is never kept sending for others after
its own answer came, and an interrupted sender leaves no one waiting for ever and hands no one its
interrupt."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from seaway.client._batch import CallBatcher
from seaway.errors import SeawayError, TransportError

WAIT_S = 10.0


def _wait_for(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(WAIT_S / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not met in time")


def test_a_sender_returns_once_its_own_item_is_answered() -> None:
    """Under steady load (a new caller queued during each call) the first caller came back only
    when the queue ran dry: its answer came with the first call, and it sent everyone else's."""
    batcher: CallBatcher[int, int] = CallBatcher(list)
    callers: list[threading.Thread] = []
    sent_by: list[str] = []
    first_done = threading.Event()
    rounds = 6

    def send(items: Sequence[int]) -> list[int | SeawayError]:
        sent_by.append(threading.current_thread().name)
        if len(callers) < rounds and not first_done.is_set():  # the next caller, queued before we answer
            n = len(callers) + 1
            t = threading.Thread(target=batcher.call, args=(n,), name=f"caller-{n}", daemon=True)
            callers.append(t)
            queued = len(batcher._queued)
            t.start()
            _wait_for(lambda: len(batcher._queued) > queued)
        return list(items)

    batcher._send = send

    def first() -> None:
        assert batcher.call(0) == 0
        first_done.set()

    t0 = threading.Thread(target=first, name="caller-0", daemon=True)
    t0.start()
    assert first_done.wait(WAIT_S)
    t0.join(WAIT_S)
    for t in callers:
        t.join(WAIT_S)
        assert not t.is_alive()
    assert sent_by.count("caller-0") <= 2, sent_by  # its own call, and at most the one queued meanwhile


def test_an_interrupted_sender_hands_others_a_transport_error_and_the_batcher_goes_on() -> None:
    """The thread sending a joined call is interrupted (KeyboardInterrupt in the call): that thread
    raises it, the other callers of that call get a TransportError (whether it was applied is
    unknown, which their retry paths handle) rather than the interrupt, and later calls are sent."""
    others_queued = threading.Event()
    interrupt = threading.Event()
    interrupted_by: list[str] = []

    def send(items: Sequence[int]) -> list[int | SeawayError]:
        if items == [0]:
            assert others_queued.wait(WAIT_S)
        elif interrupt.is_set():
            interrupt.clear()
            interrupted_by.append(threading.current_thread().name)
            raise KeyboardInterrupt
        return list(items)

    batcher: CallBatcher[int, int] = CallBatcher(send)
    outcomes: dict[str, object] = {}

    def call(n: int) -> None:
        try:
            outcomes[threading.current_thread().name] = batcher.call(n)
        except BaseException as exc:  # what each caller got is the point
            outcomes[threading.current_thread().name] = exc

    t0 = threading.Thread(target=call, args=(0,), name="t0", daemon=True)
    t0.start()
    _wait_for(lambda: batcher._in_flight == 1)
    interrupt.set()  # the next call (that of 1 and 2) is interrupted
    others = [threading.Thread(target=call, args=(n,), name=f"t{n}", daemon=True) for n in (1, 2)]
    for t in others:
        t.start()
    _wait_for(lambda: len(batcher._queued) == 2)
    others_queued.set()
    for t in [t0, *others]:
        t.join(WAIT_S)
        assert not t.is_alive(), "a caller still waits"
    assert outcomes["t0"] == 0
    assert interrupted_by and interrupted_by[0] in ("t1", "t2"), (interrupted_by, outcomes)  # not t0's job
    for name in ("t1", "t2"):
        expected = KeyboardInterrupt if name == interrupted_by[0] else TransportError
        assert isinstance(outcomes[name], expected), outcomes
    later = threading.Thread(target=call, args=(3,), name="t3", daemon=True)
    later.start()
    later.join(WAIT_S)
    assert outcomes.get("t3") == 3


class _Interrupting(list[int]):
    """Answers whose handing out is interrupted (as a KeyboardInterrupt arriving then would)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


def test_an_interrupt_while_answers_are_handed_out_does_not_wedge_the_batcher() -> None:
    """An interrupt in the sending thread after the call came back leaves no caller of that call
    waiting and no call slot taken for ever."""
    first_sent = threading.Event()
    others_queued = threading.Event()

    def send(items: Sequence[int]) -> Sequence[int | SeawayError]:
        if items == [0]:
            first_sent.set()
            assert others_queued.wait(WAIT_S)
            return list(items)
        return _Interrupting(items) if 3 not in items else list(items)

    batcher: CallBatcher[int, int] = CallBatcher(send)
    outcomes: dict[int, object] = {}

    def call(n: int) -> None:
        try:
            outcomes[n] = batcher.call(n)
        except BaseException as exc:  # what each caller got is the point
            outcomes[n] = exc

    t0 = threading.Thread(target=call, args=(0,), daemon=True)
    t0.start()
    assert first_sent.wait(WAIT_S)
    others = [threading.Thread(target=call, args=(n,), daemon=True) for n in (1, 2)]
    for t in others:
        t.start()
    _wait_for(lambda: len(batcher._queued) == 2)
    others_queued.set()
    for t in [t0, *others]:
        t.join(WAIT_S)
        assert not t.is_alive(), "a caller still waits"
    assert sorted(type(outcomes[n]).__name__ for n in (1, 2)) == ["KeyboardInterrupt", "TransportError"]
    later = threading.Thread(target=call, args=(3,), daemon=True)
    later.start()
    later.join(WAIT_S)
    assert not later.is_alive(), "the batcher is wedged"
    assert outcomes.get(3) == 3
