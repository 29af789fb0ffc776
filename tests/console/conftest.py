"""The console's tests: a console over a store (the ``api`` fixture's embedded store or client), and
HTTP helpers that carry its token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from seaway.console import Console, ConsoleConfig
from tests.api.conftest import api, pytest_generate_tests, server  # noqa: F401 - the shared suite's fixtures and their parameters

TOKEN = "console-test-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def console_over(store: Any, **config: Any) -> Iterator[Console]:
    """A running console over ``store``, on a free loopback port, with :data:`TOKEN`."""
    settings: dict[str, Any] = {"listen": "127.0.0.1:0", "token": TOKEN, "lag_sample_interval_s": 60.0}
    settings.update(config)
    with Console(store, ConsoleConfig(**settings), where="test") as console:
        yield console


def get(console: Console, path: str, **kwargs: Any) -> httpx.Response:
    """GET ``path`` with the token (unless ``headers`` say otherwise)."""
    kwargs.setdefault("headers", BEARER)
    return httpx.get(console.url.rstrip("/") + path, timeout=30, **kwargs)


def get_json(console: Console, path: str) -> Any:
    reply = get(console, path)
    assert reply.status_code == 200, reply.text
    return reply.json()
