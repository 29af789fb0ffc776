"""The Seaway server: the embedded store behind the gRPC protocol of :mod:`seaway.wire`."""

from seaway.server._process import ServerProcess
from seaway.server._server import Server, ServerConfig, serve
from seaway.server._service import ServiceLimits

__all__ = ["Server", "ServerConfig", "ServerProcess", "ServiceLimits", "serve"]
