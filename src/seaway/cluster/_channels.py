"""Channels and the token between the nodes of a cluster and its clients: the same rules as the
server's (``docs/security.md``): ``authorization: Bearer <token>`` on every call, checked before the
body is decoded; TLS when the node has a certificate."""

from __future__ import annotations

import collections
import hmac
from collections.abc import Callable
from typing import Any

import grpc

from seaway.errors import AuthenticationError
from seaway.wire import TOKEN_KEY, error_metadata, status_of

MESSAGE_MAX = 64 << 20
RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
             ("grpc.max_reconnect_backoff_ms", 1000)]
"""A restarted node is reached again within a second (gRPC's default backoff grows to two minutes)."""
CHANNEL_OPTIONS = [*RECONNECT, ("grpc.max_send_message_length", MESSAGE_MAX),
                   ("grpc.max_receive_message_length", MESSAGE_MAX)]


class _Details(collections.namedtuple("_Details", ("method", "timeout", "metadata", "credentials",
                                                   "wait_for_ready", "compression")),
               grpc.ClientCallDetails):  # type: ignore[misc]
    pass


class _WithToken(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self._entry = (TOKEN_KEY, f"Bearer {token}")

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        metadata = [*(details.metadata or ()), self._entry]
        return continuation(_Details(details.method, details.timeout, metadata, details.credentials,
                                     details.wait_for_ready, details.compression), request)


def open_channel(address: str, *, token: str | None, root_cert: bytes | None, tls: bool) -> grpc.Channel:
    """A channel to a node: TLS if ``tls`` (trusting ``root_cert``, or the system's roots), with the
    token on every call if there is one."""
    if tls:
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=root_cert),
                                      options=CHANNEL_OPTIONS)
    else:
        channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    return grpc.intercept_channel(channel, _WithToken(token)) if token else channel


class TokenCheck(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuse every call without the token (UNAUTHENTICATED, with the Seaway code), before its body is
    decoded. ``token`` None: no token asked (a node on loopback)."""

    def __init__(self, token: str | None) -> None:
        self._expected = f"Bearer {token}".encode() if token else None
        error = AuthenticationError("this cluster's nodes need a token: authorization: Bearer <token>")

        def refuse(_request: Any, context: grpc.ServicerContext) -> None:
            context.set_trailing_metadata(error_metadata(error))
            context.abort(status_of(error), str(error))

        self._refusal = grpc.unary_unary_rpc_method_handler(refuse)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if self._expected is None:
            return continuation(details)
        supplied = dict(details.invocation_metadata or ()).get(TOKEN_KEY, "")
        if isinstance(supplied, str) and hmac.compare_digest(supplied.encode(), self._expected):
            return continuation(details)
        return self._refusal
