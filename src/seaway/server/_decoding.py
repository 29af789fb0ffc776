"""Requests whose body is not the method's message are answered INVALID_ARGUMENT, as any bad request.

grpc, left to itself, answers them INTERNAL ("Exception deserializing request!") and logs a traceback
for each, before the handler could check the token. Here the body is decoded by a wrapper that
never raises: a body that does not decode reaches the method as a marker, which refuses it with
the Seaway error (``INVALID_ARGUMENT``, in the trailing metadata like every other error) and
counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc

from seaway._errors import InvalidArgumentError
from seaway.wire import error_metadata, status_of


class _Undecodable:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class RefuseUndecodable(grpc.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor; ``refused`` is called once for each request refused."""

    def __init__(self, refused: Callable[[], None]) -> None:
        self._refused = refused

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
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

    def _refuse(self, context: grpc.ServicerContext, request: _Undecodable) -> None:
        self._refused()
        error = InvalidArgumentError(f"the request body is not a valid message of this method ({request.reason})")
        context.set_trailing_metadata(error_metadata(error))
        context.abort(status_of(error), str(error))

    def _unary(self, behavior: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[..., Any]:
        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, _Undecodable):
                self._refuse(context, request)
            return behavior(request, context)
        return checked

    def _stream(self, behavior: Callable[[Iterator[Any], grpc.ServicerContext], Any]) -> Callable[..., Any]:
        def checked(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def decoded() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, _Undecodable):
                        self._refuse(context, request)
                    yield request
            return behavior(decoded(), context)
        return checked
