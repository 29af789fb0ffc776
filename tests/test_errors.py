"""Errors reach callers inside the one hierarchy: a broken invariant and a misused server process too."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

import seaway
from seaway._invariant import InvariantViolation, invariant
from seaway.errors import ClientError, InternalError, SeawayError, ServerError, ServerRunningError, error_class
from seaway.server import ServerProcess
from seaway.wire import error_from_msg, error_from_status, error_metadata, error_to_msg, status_of


def test_a_broken_invariant_is_an_internal_error_of_the_store_and_not_retriable() -> None:
    with pytest.raises(SeawayError) as caught:
        invariant(False, "a batch of 2 records was answered with 3 LSNs")
    error = caught.value
    assert isinstance(error, InternalError) and isinstance(error, ServerError)
    assert not isinstance(error, AssertionError)  # callers catching SeawayError see it; -O cannot strip it
    assert error.code == "INTERNAL_ERROR" and not error.retriable
    assert error_class(error.code) is InternalError


def test_a_broken_invariant_in_an_append_future_reaches_the_caller_typed_embedded_and_remote() -> None:
    # What an append future carries when the store answered a batch wrongly (log/_coalesce.py).
    future: Future[range] = Future()
    future.set_exception(InvariantViolation("a batch of 2 records was answered with 3 LSNs"))
    with pytest.raises(SeawayError) as caught:
        future.result(0)
    sent = caught.value
    assert isinstance(sent, InternalError)
    # Through the server: the same class comes back, by its code, in a reply and in a failed call's status.
    assert type(error_from_msg(error_to_msg(sent))) is InternalError
    assert type(error_from_status(status_of(sent), str(sent), error_metadata(sent))) is InternalError


def test_restarting_a_running_server_process_is_a_client_error(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        with pytest.raises(ServerRunningError) as caught:
            server.restart()
        assert isinstance(caught.value, ClientError) and caught.value.code == "SERVER_RUNNING"
        assert "still running" in str(caught.value)


def test_a_timed_out_error_is_a_timeout_error_and_keeps_its_message_and_code() -> None:
    error = seaway.TimedOutError("the append was not answered within 1 s")
    assert isinstance(error, TimeoutError) and isinstance(error, seaway.SeawayError) and error.retriable
    assert str(error) == "the append was not answered within 1 s" and error.code == "TIMED_OUT"
    with pytest.raises(TimeoutError):
        raise error
    assert seaway.error_class("TIMED_OUT") is seaway.TimedOutError
