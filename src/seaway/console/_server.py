"""The console's web server: uvicorn, in a thread of the process that holds the store (a server's,
or ``seaway console``'s), stopped by :meth:`Console.stop`."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import uvicorn

from seaway.console import _views as views
from seaway.console._app import ConsoleApp
from seaway.console._config import ConsoleConfig
from seaway.console._lag import LagSampler
from seaway.errors import InvalidArgumentError, UnavailableError

if TYPE_CHECKING:
    from seaway import Store  # a Protocol: both stores (embedded and a client) satisfy it

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def split_listen(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise InvalidArgumentError(f"the console listens on host:port, got {address!r:.80}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Console:
    """The web console over ``store`` (an embedded store or a client: the same public API), read-only.

    ``where`` names the store on every page; ``serving``, beside a server, is the server's health
    rule (else the store's own state, or a client's health call, decides), and ``figures`` its own
    figures (named totals) for the health page. Listening beyond loopback needs a token and TLS, as
    the server does (the rule is the server's; the console keeps a copy of its two small checks so
    that it depends on no server). :meth:`start` returns once it listens; :attr:`url` is where.
    """

    def __init__(self, store: Store, config: ConsoleConfig | None = None, *, where: str = "",
                 serving: Callable[[], bool] | None = None,
                 figures: Callable[[], dict[str, float]] | None = None) -> None:
        self.config = config = config or ConsoleConfig()
        host, port = split_listen(config.listen)
        if not is_loopback(host) and not config.token:
            raise InvalidArgumentError(f"the console on {host} (beyond loopback) needs a token: see docs/console.md")
        if not is_loopback(host) and config.tls_cert is None:
            raise InvalidArgumentError(f"the console on {host} (beyond loopback) needs TLS (a certificate and a key):"
                                       " the token would otherwise cross the network in clear text")
        self.sampler = LagSampler(lambda: views.lag_totals(store, config.groups_max), config.lag_sample_interval_s,
                                  config.lag_samples_max)
        try:
            self._socket = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host
                                                else socket.AF_INET)
        except OSError as exc:
            raise InvalidArgumentError(f"the console cannot listen on {config.listen}: {exc}") from exc
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        app = ConsoleApp(store, config, self.sampler, port=self.port, where=where, started_ms=views.now_ms(),
                         serving=serving, figures=figures)
        self._server = uvicorn.Server(uvicorn.Config(
            # No logging configuration of uvicorn's own: its warnings go to the process's handlers
            # (a server's JSON lines).
            app.asgi(), log_config=None, log_level="warning", lifespan="off", timeout_graceful_shutdown=1,
            access_log=False,
            ssl_certfile=config.tls_cert, ssl_keyfile=config.tls_key))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="seaway-console", daemon=True)
        self._started = False

    @property
    def url(self) -> str:
        scheme = "https" if self.config.tls_cert is not None else "http"
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/"

    def start(self) -> None:
        """Serve, and sample lag; return once the console accepts connections."""
        self._started = True
        self.sampler.start()
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:  # uvicorn tells that it started by a flag only
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise UnavailableError(f"the console did not start on {self.config.listen}")
            self._thread.join(0.01)

    def stop(self) -> None:
        """Stop serving (connections open get up to a second) and sampling; idempotent."""
        if self._started:
            self._started = False
            self._server.should_exit = True
            self._thread.join(STOP_TIMEOUT_S)
            self.sampler.stop()
        self._socket.close()

    def __enter__(self) -> Console:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
