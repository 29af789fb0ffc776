"""The server process: the embedded store behind gRPC, with metrics, JSON logs and a graceful stop."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # type: ignore[import-untyped]
from prometheus_client import Counter, start_http_server
from prometheus_client.registry import Collector

from seaway._alloc import keep_large_buffers_in_heap
from seaway._net import is_loopback
from seaway._seaway import Seaway, SeawayConfig
from seaway.errors import InvalidArgumentError, SeawayError, UnavailableError
from seaway.log import LogsApi
from seaway.notify import ForwardCollector
from seaway.server._decoding import TokenThenDecode
from seaway.server._lag_metrics import LagCollector
from seaway.server._metrics import Metrics
from seaway.server._service import SeawayService, ServiceLimits
from seaway.server._throttle import ThrottledWarning
from seaway.wire import seaway_pb2, seaway_pb2_grpc

if TYPE_CHECKING:
    from seaway.console import Console

_log = logging.getLogger("seaway.server")


@dataclass(frozen=True)
class ServerConfig:
    data_dir: Path
    listen: str = "127.0.0.1:7070"
    """host:port; a port of 0 picks a free one (the chosen address is logged and printed)."""
    token: str | None = None
    """Shared secret every request must carry; required when listening beyond loopback."""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    metrics_listen: str | None = None
    """host:port, or a port alone (on 127.0.0.1), for Prometheus's /metrics over HTTP; none by
    default. The endpoint has no token: a host beyond loopback also needs ``metrics_beyond_loopback``."""
    metrics_beyond_loopback: bool = False
    """Let /metrics listen beyond loopback (it tells anyone who reaches it the store's figures)."""
    limits: ServiceLimits = field(default_factory=ServiceLimits)
    store: SeawayConfig = field(default_factory=SeawayConfig)
    shutdown_grace_s: float = 10.0
    """How long in-flight calls may take to finish after SIGTERM."""
    retention_interval_s: float = 60.0
    """How often the server drops the time partitions that no log retains any more."""
    health_interval_s: float = 1.0
    """How often the standard health service looks at the store, to tell its watchers of a change
    (a ``Check`` looks at once)."""
    health_watchers_max: int = 64
    """Standard health ``Watch`` streams open at once, over all connections (they need no token)."""
    console_listen: str | None = None
    """host:port for the web console (docs/console.md), behind the same token and TLS; none by default."""
    collectors: tuple[Callable[[Seaway], Collector], ...] = ()
    """More Prometheus collectors over the store, served at /metrics beside the server's own: what
    the layers above the server add (the command adds the Spark sources' lag)."""
    user_logs: LogsApi | None = None
    """Where the users' logs live when not in ``data_dir`` (``seaway.open(..., user_logs=...)``: a
    control node's shape, docs/cluster.md); their owner closes them after the server stopped."""


def split_host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InvalidArgumentError(f"an address is host:port, got {address!r}")
    return host.strip("[]"), int(port)


def metrics_listen_address(address: str) -> tuple[str, int]:
    """``host:port``, or a port alone (``9100`` or ``:9100``) on 127.0.0.1."""
    bare = address.removeprefix(":")
    if bare.isdigit():
        return "127.0.0.1", int(bare)
    return split_host_port(address)



class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and any ``extra`` fields."""

    _STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname,
                               "logger": record.name, "msg": record.getMessage()}
        out.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _ThrottledGrpcErrors(logging.Filter):
    """grpc logs some mistakes of a client at ERROR, with a traceback, once per request and before any
    token is checked: a flood when a client is broken or hostile. Count them, and let one line a
    minute through (in place of grpc's, which may quote what the client sent)."""

    def __init__(self, matches: Callable[[logging.LogRecord], bool], counter: Counter, message: str,
                 clock: Callable[[], float] = time.monotonic, interval_s: float = 60.0) -> None:
        super().__init__()
        self._matches = matches
        self._warning = ThrottledWarning(counter, message, clock, interval_s)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._matches(record):
            return True
        self._warning.note()
        return False


def _is_undecodable_request(record: logging.LogRecord) -> bool:
    """``grpc._common``: "Exception deserializing request!", a body that is not the method's message."""
    return "deserializ" in record.getMessage()


def _is_undecodable_metadata(record: logging.LogRecord) -> bool:
    """``grpc._cython.cygrpc``: "Invalid encoding on %s", a metadata key or value (of a key without
    ``-bin``) that is not UTF-8; grpc decodes it as Latin-1 and goes on with the request."""
    return isinstance(record.msg, str) and record.msg.startswith("Invalid encoding on")


def _grpc_log_filters(metrics: Metrics,
                      clock: Callable[[], float] = time.monotonic) -> list[tuple[str, logging.Filter]]:
    """The filters to put on grpc's loggers (a filter sees only what is logged on its own logger)."""
    return [
        ("grpc._common", _ThrottledGrpcErrors(
            _is_undecodable_request, metrics.undecodable_requests,
            "refused undecodable requests (counted in seaway_undecodable_requests_total)", clock)),
        ("grpc._cython.cygrpc", _ThrottledGrpcErrors(
            _is_undecodable_metadata, metrics.undecodable_metadata,
            "requests with metadata that is not UTF-8 (counted in seaway_undecodable_metadata_total)", clock)),
    ]


_HEALTH_SERVICES = ("", seaway_pb2.DESCRIPTOR.services_by_name["Seaway"].full_name)
"""What the standard health service answers for: the whole server, and Seaway's service."""


class _StandardHealth(health.HealthServicer):  # type: ignore[misc]
    """``grpc.health.v1.Health``, for ordinary probes: SERVING while ``serving()`` holds, else
    NOT_SERVING (and for good once :meth:`enter_graceful_shutdown` is called). A ``Check`` asks
    ``serving()`` itself; :meth:`refresh`, called every ``health_interval_s``, tells ``Watch``
    streams of a change. At most ``watchers_max`` streams are open at once: a probe needs no token."""

    def __init__(self, serving: Callable[[], bool], watchers_max: int) -> None:
        super().__init__()
        self._serving = serving
        self._watchers_max = watchers_max
        self._watchers = 0
        self._watchers_lock = threading.Lock()
        self._refresh_lock = threading.Lock()  # so a late refresh cannot undo a newer one
        self._status: int | None = None
        self.refresh()

    def refresh(self) -> None:
        with self._refresh_lock:
            status = health_pb2.HealthCheckResponse.SERVING if self._serving() \
                else health_pb2.HealthCheckResponse.NOT_SERVING
            if status != self._status:  # set() tells every watcher: only on a change
                self._status = status
                for service in _HEALTH_SERVICES:
                    self.set(service, status)

    def Check(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.refresh()
        return super().Check(request, context)

    def Watch(self, request: Any, context: grpc.ServicerContext, send_response_callback: Any = None) -> Any:
        with self._watchers_lock:
            if self._watchers >= self._watchers_max:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"the server already has {self._watchers_max} health watchers")
            self._watchers += 1
        if not context.add_callback(self._watch_ended):  # the call has already ended
            self._watch_ended()
        self.refresh()
        return super().Watch(request, context, send_response_callback)

    def _watch_ended(self) -> None:
        with self._watchers_lock:
            self._watchers -= 1


ADDRESS_FILE = "server.address"
"""Written in the data directory while a server serves it: the URL clients on this machine connect to."""


class Server:
    """A running server. :meth:`stop` (or SIGTERM under :func:`serve`) stops it gracefully."""

    def __init__(self, config: ServerConfig) -> None:
        host, _ = split_host_port(config.listen)
        if (config.tls_cert is None) != (config.tls_key is None):
            raise InvalidArgumentError("TLS needs both a certificate and a key")
        if not is_loopback(host) and not config.token:
            raise InvalidArgumentError(f"listening on {host} (beyond loopback) needs a token (and TLS): "
                                       "see docs/security.md")
        if not is_loopback(host) and config.tls_cert is None:
            raise InvalidArgumentError(f"listening on {host} (beyond loopback) needs TLS (a certificate and a key): "
                                       "the token would otherwise cross the network in clear text; "
                                       "see docs/security.md")
        metrics_address = metrics_listen_address(config.metrics_listen) if config.metrics_listen else None
        if metrics_address is not None and not is_loopback(metrics_address[0]) and not config.metrics_beyond_loopback:
            raise InvalidArgumentError(f"/metrics on {metrics_address[0]} (beyond loopback) has no token: "
                                       "allow it explicitly (--metrics-beyond-loopback) or listen on 127.0.0.1")
        self.config = config
        self.metrics = Metrics()
        self._log_filters = _grpc_log_filters(self.metrics)
        self._stopping = threading.Event()
        self.store = Seaway(config.data_dir, config.store, user_logs=config.user_logs)
        if self.store.notify_metrics is not None:
            self.metrics.registry.register(ForwardCollector(self.store.notify_metrics))
        self.metrics.watch_ledger(self.store.ledger.bounds)
        self.metrics.watch_syncs(lambda: self.store.disk_syncs)
        self.metrics.registry.register(LagCollector(self.store))
        for make in config.collectors:
            self.metrics.registry.register(make(self.store))
        limits = config.limits
        workers = limits.read_streams_max + 32  # a read stream holds a thread
        undecodable = ThrottledWarning(self.metrics.undecodable_requests,
                                       "refused undecodable requests (counted in seaway_undecodable_requests_total)")
        bad_token = ThrottledWarning(
            self.metrics.unauthenticated_requests,
            "refused requests without the right token (counted in seaway_unauthenticated_requests_total)")
        gate = TokenThenDecode(config.token, lambda peer: bad_token.note(peer=peer), undecodable.note)
        self._grpc = grpc.server(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="seaway-rpc"),
                                 interceptors=[gate], maximum_concurrent_rpcs=limits.calls_max,
                                 options=[("grpc.max_receive_message_length", limits.request_bytes_max),
                                          ("grpc.max_send_message_length", limits.read_message_bytes_max + (1 << 20)),
                                          ("grpc.so_reuseport", 0),
                                          ("grpc.http2.lookahead_bytes", 8 << 20),
                                          # A connection that never authenticates holds nothing for long:
                                          # its handshake, then its idleness, are bounded.
                                          ("grpc.server_handshake_timeout_ms", int(limits.handshake_s * 1000)),
                                          ("grpc.max_connection_idle_ms", int(limits.connection_idle_s * 1000)),
                                          ("grpc.max_concurrent_streams", limits.calls_per_connection_max)])
        self._service = SeawayService(self.store, limits, self.metrics, self._stopping)
        seaway_pb2_grpc.add_SeawayServicer_to_server(self._service, self._grpc)  # type: ignore[no-untyped-call]
        self._health = _StandardHealth(self._serving, config.health_watchers_max)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._grpc)
        try:
            if config.tls_cert is not None and config.tls_key is not None:
                creds = grpc.ssl_server_credentials([(config.tls_key.read_bytes(), config.tls_cert.read_bytes())])
                self.port = self._grpc.add_secure_port(config.listen, creds)
            else:
                self.port = self._grpc.add_insecure_port(config.listen)
        except RuntimeError as exc:
            self.store.close()
            raise InvalidArgumentError(f"cannot listen on {config.listen}: {exc}") from exc
        self.address = f"{host}:{self.port}"
        self.console: Console | None = None
        """The web console (a :class:`seaway.console.Console`), if ``console_listen`` asks for one."""
        if config.console_listen is not None:
            try:
                self.console = self._make_console(config.console_listen)
            except BaseException:
                self.store.close()
                raise
        self.metrics_port: int | None = None
        self.metrics_host: str | None = None
        if metrics_address is not None:
            m_host, m_port = metrics_address
            http, _ = start_http_server(m_port, m_host, registry=self.metrics.registry)
            self.metrics_port = http.server_port
            self.metrics_host = str(http.server_address[0])

    def _make_console(self, listen: str) -> Console:
        from seaway.console import Console, ConsoleConfig  # noqa: PLC0415 - its web server loads only when asked

        config = self.config
        return Console(self.store, ConsoleConfig(listen=listen, token=config.token, tls_cert=config.tls_cert,
                                                 tls_key=config.tls_key),
                       where=f"server {self.address} over {config.data_dir}", serving=self._serving,
                       figures=self._console_figures)

    _CONSOLE_FIGURES = {"seaway_requests_total": "requests", "seaway_errors_total": "errors",
                        "seaway_unauthenticated_requests_total": "refused for the token",
                        "seaway_appended_records_total": "records appended",
                        "seaway_read_records_total": "records read", "seaway_open_readers": "open readers"}
    """The server's metrics the console's health page shows (totals over their labels)."""

    def _console_figures(self) -> dict[str, float]:
        totals = dict.fromkeys(self._CONSOLE_FIGURES.values(), 0.0)
        for metric in self.metrics.registry.collect():
            for sample in metric.samples:
                if sample.name in self._CONSOLE_FIGURES:
                    totals[self._CONSOLE_FIGURES[sample.name]] += sample.value
        return totals

    def start(self) -> None:
        for logger, log_filter in self._log_filters:  # from here to stop(): not left behind if __init__ fails
            logging.getLogger(logger).addFilter(log_filter)
        self._grpc.start()
        self._retention = threading.Thread(target=self._retain, name="seaway-retention", daemon=True)
        self._retention.start()
        self._health_thread = threading.Thread(target=self._watch_health, name="seaway-health", daemon=True)
        self._health_thread.start()
        if self.console is not None:
            self.console.start()
        self._write_address_file()
        _log.info("serving", extra={"address": self.address, "data_dir": str(self.config.data_dir),
                                    "tls": self.config.tls_cert is not None, "token": bool(self.config.token),
                                    "metrics_port": self.metrics_port,
                                    "console": None if self.console is None else self.console.url})

    def stop(self) -> None:
        """Refuse new calls, let in-flight ones finish (up to the grace period), then close the store:
        every append accepted before is written, and nothing acknowledged is lost."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._health.enter_graceful_shutdown()  # probes and watchers hear NOT_SERVING before calls end
        self._service.stop_reads()  # tailing reads would otherwise hold the stop for the whole grace period
        if self.console is not None:
            self.console.stop()  # it reads the store: it stops before the store closes
        _log.info("stopping", extra={"grace_s": self.config.shutdown_grace_s})
        self._grpc.stop(self.config.shutdown_grace_s).wait()
        self._retention.join()
        self._health_thread.join()
        self._remove_address_file()
        self.store.close()
        for logger, log_filter in self._log_filters:
            logging.getLogger(logger).removeFilter(log_filter)
        _log.info("stopped")

    @property
    def url(self) -> str:
        """The address clients connect to (a wildcard listen address is reached on loopback)."""
        host, _ = split_host_port(self.address)
        if host in ("0.0.0.0", "::", "[::]", ""):
            host = "127.0.0.1"
        scheme = "seaways" if self.config.tls_cert is not None else "seaway"
        return f"{scheme}://{host}:{self.port}"

    def _write_address_file(self) -> None:
        """Tell other processes on this machine where the data directory is served (see local_address)."""
        path = self.config.data_dir / ADDRESS_FILE
        temp = path.with_suffix(".tmp")
        temp.write_text(self.url + "\n")
        temp.replace(path)

    def _remove_address_file(self) -> None:
        path = self.config.data_dir / ADDRESS_FILE
        try:
            if path.read_text().strip() == self.url:
                path.unlink()
        except OSError:
            pass

    def _serving(self) -> bool:
        """Seaway's own ``Health`` rule (see SeawayService.Health): accepting calls, the store taking writes."""
        return not (self._stopping.is_set() or self.store.closed or self.store.write_failure)

    def _watch_health(self) -> None:
        """Look at the store every ``health_interval_s`` until the server stops: a store that stops
        taking writes says nothing, so the standard health service's watchers learn of it from here."""
        while not self._stopping.wait(self.config.health_interval_s):
            self._health.refresh()

    def _retain(self) -> None:
        """Run retention (backlogs, trims) every ``retention_interval_s`` until the server stops."""
        while not self._stopping.wait(self.config.retention_interval_s):
            try:
                dropped = self.store.logs.run_retention()
                if self.store.own_logs is not self.store.logs:  # the store's own partitions too
                    dropped = [*dropped, *self.store.own_logs.run_retention()]
            except SeawayError:
                _log.exception("retention failed; it runs again at the next interval")
                continue
            if dropped:
                _log.info("retention dropped time partitions", extra={"partitions": dropped})

    def wait(self) -> None:
        self._grpc.wait_for_termination()


def local_address(data_dir: str | Path) -> str:
    """The address of the server running over ``data_dir`` on this machine, from the file it writes there
    while it serves; :class:`UnavailableError` if none does."""
    path = Path(data_dir) / ADDRESS_FILE
    try:
        url = path.read_text().strip()
    except FileNotFoundError:
        raise UnavailableError(f"no server is serving {Path(data_dir).resolve()}: start one with `seaway serve "
                               f"--data-dir {data_dir}` or give the server's address") from None
    except OSError as exc:
        raise UnavailableError(f"cannot read {path}: {exc}") from exc
    if not url.startswith(("seaway://", "seaways://")):
        raise UnavailableError(f"{path} does not hold a server address: {url[:100]!r}")
    return url


def serve(config: ServerConfig) -> None:
    """Run a server until SIGTERM or SIGINT; print ``listening on HOST:PORT`` once it accepts calls."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    tuned = keep_large_buffers_in_heap()
    server = Server(config)
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        _log.info("signal", extra={"signal": signal.Signals(signum).name})
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    _log.info("allocator", extra={"large_buffers_in_heap": tuned})
    if server.metrics_port is not None:
        print(f"metrics on {metrics_listen_address(config.metrics_listen or '')[0]}:{server.metrics_port}", flush=True)
    if server.console is not None:
        print(f"console on {server.console.url}", flush=True)
    print(f"listening on {server.address}", flush=True)
    while not done.wait(0.5):
        time.sleep(0)
    server.stop()
