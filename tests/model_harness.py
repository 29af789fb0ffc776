"""What the Hypothesis state machines (the models) share: their settings, and the store through a
server, restarted by SIGKILL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

import seaway
from seaway.server import ServerProcess


def model_settings(examples: int, steps: int, *, shrink: bool = True) -> settings:
    """A model's settings; ``shrink=False`` where a replay is not the same run (faults decided by
    the store's own threads), or too slow to repeat (a server restarted per step)."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, phases=phases,
                    suppress_health_check=[HealthCheck.too_slow])


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
