"""Stores whose appends can be faulted: embedded, and a server running in this process (its store
serves every remote client's appends), for the suites of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import seaway
from seaway.notify import NotifyServiceConfig
from seaway.server import Server, ServerConfig
from seaway.streams import AutoScalingConfig

STORE_CONFIG = seaway.SeawayConfig(autoscaling=AutoScalingConfig(interval_s=None),
                                   notify=NotifyServiceConfig(config_poll_s=0.1, idle_s=0.05))


@dataclass
class Faultable:
    kind: str
    sw: Any
    """What the test uses: the embedded store, or a client of the server."""
    target: Any
    """What :meth:`AppendFaults.applied` takes: the embedded store, or the in-process server."""


@pytest.fixture(params=["embedded", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Faultable]:
    if request.param == "embedded":
        with seaway.Seaway(tmp_path / "data", STORE_CONFIG) as sw:
            yield Faultable("embedded", sw, sw)
        return
    server = Server(ServerConfig(data_dir=tmp_path / "server", listen="127.0.0.1:0", shutdown_grace_s=5,
                                 store=STORE_CONFIG))
    server.start()
    try:
        with seaway.connect(f"seaway://{server.address}", timeout_s=30) as sw:
            yield Faultable("server", sw, server)
    finally:
        server.stop()
