"""What every call meets before its handler: the token, then the body's decoding.

The token is checked first, from the call's metadata, before a byte of the body is decoded: a
client without the right token costs the server no decoding of up to ``request_bytes_max`` bytes
and reaches no handler. Its call is answered ``UNAUTHENTICATED`` (the Seaway error in the trailing
metadata, as every other error) and counted.

Then requests whose body is not the method's message are answered INVALID_ARGUMENT, as any bad
request. grpc, left to itself, answers them INTERNAL ("Exception deserializing request!") and logs
a traceback for each. Here the body is decoded by a wrapper that never raises: a body that does not
decode reaches the method as a marker, which refuses it with the Seaway error and counts it.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from seaway.errors import AuthenticationError, InvalidArgumentError, SeawayError
from seaway.wire import TOKEN_KEY, error_metadata, status_of

OPEN_METHODS = ("/grpc.health.v1.Health/", "/seaway.v1.Seaway/Health")
"""Calls that need no token: health probes (they say whether the server serves, nothing more)."""


class _Undecodable:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_NOT_DECODED = object()


def _abort(context: grpc.ServicerContext, error: SeawayError) -> None:
    context.set_trailing_metadata(error_metadata(error))
    context.abort(status_of(error), str(error))


class TokenThenDecode(grpc.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor. ``token``: the shared secret every call but :data:`OPEN_METHODS` must
    carry (``authorization: Bearer <token>``), or None for none. ``refused_token(peer)`` is called
    once for each call refused for its token, ``refused_body()`` once for each undecodable body."""

    def __init__(self, token: str | None, refused_token: Callable[[str], None],
                 refused_body: Callable[[], None]) -> None:
        self._expected = f"Bearer {token}".encode() if token else None
        self._refused_token = refused_token
        self._refused_body = refused_body

    def _authenticated(self, details: Any) -> bool:
        if self._expected is None or str(details.method).startswith(OPEN_METHODS):
            return True
        supplied = dict(details.invocation_metadata or ()).get(TOKEN_KEY, "")
        return isinstance(supplied, str) and hmac.compare_digest(supplied.encode(), self._expected)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        if not self._authenticated(details):
            return self._refusing(handler)
        decode = handler.request_deserializer

        def safe_decode(raw: bytes) -> Any:
            try:
                return decode(raw)
            except Exception as exc:  # any failure to decode is the client's: see the module docstring
                return _Undecodable(f"{type(exc).__name__}: {exc}"[:200])

        if handler.unary_unary is not None:
            return handler._replace(request_deserializer=safe_decode, unary_unary=self._unary(handler.unary_unary))
        if handler.unary_stream is not None:
            return handler._replace(request_deserializer=safe_decode, unary_stream=self._unary(handler.unary_stream))
        if handler.stream_unary is not None:
            return handler._replace(request_deserializer=safe_decode, stream_unary=self._stream(handler.stream_unary))
        return handler._replace(request_deserializer=safe_decode, stream_stream=self._stream(handler.stream_stream))

    def _refusing(self, handler: Any) -> Any:
        """The handler of a call without the right token: its body is never decoded (nor read
        on, for a stream), and it ends UNAUTHENTICATED."""
        def refuse(_request: Any, context: grpc.ServicerContext) -> Any:
            self._refused_token(context.peer())
            _abort(context, AuthenticationError("missing or wrong token"))

        def skip(_raw: bytes) -> object:
            return _NOT_DECODED  # not None: grpc takes None for a failure to decode

        kind = next(k for k in ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
                    if getattr(handler, k) is not None)
        return handler._replace(request_deserializer=skip, **{kind: refuse})

    def _refuse_body(self, context: grpc.ServicerContext, request: _Undecodable) -> None:
        self._refused_body()
        _abort(context, InvalidArgumentError(
            f"the request body is not a valid message of this method ({request.reason})"))

    def _unary(self, behavior: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[..., Any]:
        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, _Undecodable):
                self._refuse_body(context, request)
            return behavior(request, context)
        return checked

    def _stream(self, behavior: Callable[[Iterator[Any], grpc.ServicerContext], Any]) -> Callable[..., Any]:
        def checked(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def decoded() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, _Undecodable):
                        self._refuse_body(context, request)
                    yield request
            return behavior(decoded(), context)
        return checked
