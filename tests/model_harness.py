"""What the Hypothesis state machines (the models) share: their settings, and the store through a
server, restarted by SIGKILL."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize

import seaway
from seaway.server import Server, ServerConfig, ServerProcess
from seaway.testing import AppendFaults


def model_settings(examples: int, steps: int, *, shrink: bool = True) -> settings:
    """A model's settings; ``shrink=False`` where a replay is not the same run (faults decided by
    the store's own threads), or too slow to repeat (a server restarted per step)."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, phases=phases,
                    suppress_health_check=[HealthCheck.too_slow])


def manager_stopped(exc: BaseException) -> bool:
    """Whether ``exc`` is the transaction manager's stop (an edit it could not log, nor undo):
    every call fails so until the store is reopened, whose log then decides."""
    return isinstance(exc, seaway.StorageError) and "reopen the store" in str(exc)


class Embedded:
    """A model's store hooks (``_open``, ``_restart``, ``_close``) over an embedded store in the
    model's directory: a restart closes it and opens it again. Mixed in before the model's class."""

    dir: Path
    sw: Any

    def _open(self) -> Any:
        return seaway.open(self.dir / "data")

    def _restart(self) -> Any:
        self.sw.close()
        return self._open()

    def _close(self) -> None:
        self.sw.close()


class ThroughAServer:
    """A model's store hooks (``_open``, ``_restart``, ``_close``) through a server
    (``seaway.connect``): a restart kills the server with SIGKILL and starts it again on the same
    data directory. Mixed in before the model's class."""

    dir: Path
    sw: Any

    def _open(self) -> Any:
        if not hasattr(self, "server"):
            self.server = ServerProcess(self.dir / "data")
        return seaway.connect(self.server.url)

    def _restart(self) -> Any:
        self.sw.close()
        self.server.kill()
        self.server.restart()
        return seaway.connect(self.server.url)

    def _close(self) -> None:
        self.sw.close()
        self.server.stop()


class OverAppendFaults:
    """A model's store hooks (``_open``, ``_restart``, ``_close``) over an embedded store whose
    appends (the transaction manager's log and every other log alike) go through
    :class:`seaway.testing.AppendFaults`: refused at once or later, replies lost after the batch
    was stored. Seeded by Hypothesis, and again (seed + restarts) per restart; opening a store is
    not faulted (its recovery appends). Mixed in before the model's class; ``_calm()`` lifts them."""

    dir: Path
    sw: Any
    fault_chance = 0.04
    """Per batch, of each of the three faults."""

    def __init__(self) -> None:
        self.faults: AbstractContextManager[AppendFaults] | None = None
        self.faults_seed = 0
        self.fault_restarts = 0
        super().__init__()

    @initialize(seed=st.integers(0, 2**32 - 1))
    def faults_on(self, seed: int) -> None:
        self.faults_seed = seed
        self._apply_faults()

    def _apply_faults(self) -> None:
        chance = self.fault_chance
        faults = AppendFaults(self.faults_seed + self.fault_restarts, refuse=chance, refuse_later=chance,
                              lose_reply=chance)
        self.faults = faults.applied(self.sw)
        self.faults.__enter__()

    def _calm(self) -> None:
        """No faults from now on (until the next restart)."""
        if self.faults is not None:
            self.faults.__exit__(None, None, None)
            self.faults = None

    def _open(self) -> Any:
        return seaway.open(self.dir / "data")

    def _shut(self) -> None:
        """Close the store (and whatever runs it)."""
        self.sw.close()

    def _restart(self) -> Any:
        self._calm()
        self._shut()
        self.fault_restarts += 1
        self.sw = self._open()
        self._apply_faults()
        return self.sw

    def _close(self) -> None:
        self._calm()
        self._shut()


class ThroughAServerOverAppendFaults(OverAppendFaults):
    """As :class:`OverAppendFaults`, with the store in a server run in this process (its appends
    faulted) and the model a client of it (``seaway.connect``); a restart stops the server and
    starts another on the same data directory."""

    def _open(self) -> Any:
        self.server = Server(ServerConfig(data_dir=self.dir / "data", listen="127.0.0.1:0"))
        self.server.start()
        self.client = seaway.connect(self.server.url)
        return self.client

    def _apply_faults(self) -> None:
        chance = self.fault_chance
        faults = AppendFaults(self.faults_seed + self.fault_restarts, refuse=chance, refuse_later=chance,
                              lose_reply=chance)
        self.faults = faults.applied(self.server)
        self.faults.__enter__()

    def _shut(self) -> None:
        self.sw.close()
        self.server.stop()
