"""The Seaway server: the embedded store behind the gRPC protocol of :mod:`seaway.wire`."""

from seaway.server._process import ServerProcess
from seaway.server._server import ADDRESS_FILE, Server, ServerConfig, local_address, serve
from seaway.server._service import ServiceLimits

__all__ = ["ADDRESS_FILE", "Server", "ServerConfig", "ServerProcess", "ServiceLimits", "local_address", "serve"]
