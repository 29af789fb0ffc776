"""Senders: the I/O that delivers one message to a target and returns once the target has
acknowledged it, or raises :class:`DeliveryError` (retried by the plugin within its bounds)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import http.client
import json
import os
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from seaway._errors import DeliveryError, NotifyConfigError, SeawayError
from seaway.notify._config import JsonLinesFile, Nats, SeawayStream, Target, Webhook
from seaway.notify._formats import Message

SIGNATURE_HEADER = "X-Seaway-Signature"
ID_HEADER = "X-Seaway-Id"
ANSWER_BYTES_MAX = 64 << 10
"""The most of a webhook's answer read (and dropped): its status is what counts."""


class Sender(Protocol):
    def send(self, message: Message) -> None:
        """Deliver ``message``; return once the target acknowledged it. :class:`DeliveryError` if not."""

    def close(self) -> None: ...


def sign(secret: str, timestamp_s: int, body: bytes) -> str:
    """The value of ``X-Seaway-Signature``: ``t=<unix seconds>,v1=<hex HMAC-SHA256>`` of
    ``"<t>." + body`` under ``secret``. A receiver recomputes it and compares in constant time,
    and refuses a ``t`` too far from its clock (a replayed request)."""
    mac = hmac.new(secret.encode(), f"{timestamp_s}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp_s},v1={mac}"


class WebhookSender:
    """One kept-alive HTTP connection per plugin (a receiver that closes it after each answer gets
    a new one each time); a request on a kept-alive connection the receiver closed meanwhile is
    made once more on a new connection."""

    def __init__(self, target: Webhook, clock_s: Callable[[], float] = time.time) -> None:
        self._target = target
        self._clock_s = clock_s
        parts = urllib.parse.urlsplit(target.url)
        self._connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._netloc = parts.netloc
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._connection: http.client.HTTPConnection | None = None

    def send(self, message: Message) -> None:
        headers = dict(message.headers)
        headers[ID_HEADER] = message.id
        if self._target.secret is not None:
            headers[SIGNATURE_HEADER] = sign(self._target.secret, int(self._clock_s()), message.body)
        while True:
            reused = self._connection is not None
            try:
                status, reason = self._post(message.body, headers)
                break
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._close_connection()
                if reused and isinstance(exc, (ConnectionResetError, BrokenPipeError)):
                    continue  # closed by the receiver while kept alive: once more, on a new connection
                # Refused, unreachable, timed out (a receiver that hangs) or not HTTP (garbage).
                raise DeliveryError(f"webhook {self._target.url}: {type(exc).__name__}: {exc}") from None
        if not 200 <= status < 300:
            raise DeliveryError(f"webhook {self._target.url} answered {status} {reason}".rstrip())

    def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        if self._connection is None:
            self._connection = self._connection_type(self._netloc, timeout=self._target.timeout_s)
        self._connection.request("POST", self._path, body, headers)
        answer = self._connection.getresponse()
        answer.read(ANSWER_BYTES_MAX)
        if answer.will_close or not answer.isclosed():  # closed by the receiver, or an answer too long to read
            self._close_connection()
        return answer.status, answer.reason

    def _close_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def close(self) -> None:
        self._close_connection()


class FileSender:
    def __init__(self, target: JsonLinesFile) -> None:
        self._path = target.path

    def send(self, message: Message) -> None:
        try:
            body = json.loads(message.body)
        except ValueError as exc:
            raise DeliveryError(f"message {message.id} is not JSON: {exc}") from None
        line = json.dumps(body, separators=(",", ":")) + "\n"
        try:
            with open(self._path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise DeliveryError(f"cannot append to {self._path}: {exc}") from None

    def close(self) -> None:
        pass


class StreamSender:
    """Writes to a Seaway stream of the store the plugin runs in; routed by the resource, so that a
    resource's changes stay in order in one segment."""

    def __init__(self, target: SeawayStream, streams: Any) -> None:
        if streams is None:
            raise NotifyConfigError("a stream target needs the store's streams (it runs in a store)")
        self._name = target.stream
        self._streams = streams
        self._writer: Any = None

    def send(self, message: Message) -> None:
        try:
            if self._writer is None:
                scope = self._name.partition("/")[0]
                self._streams.create_scope(scope, exist_ok=True)
                self._writer = self._streams.get_or_create(self._name).writer()
            self._writer.write(message.body, routing_key=message.resource).result(timeout=30)
        except (SeawayError, TimeoutError) as exc:
            self._drop_writer()
            raise DeliveryError(f"stream {self._name}: {exc}") from None

    def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(SeawayError):
                writer.close(timeout_s=1.0)

    def close(self) -> None:
        self._drop_writer()


class NatsSender:
    """nats-py is asynchronous: each sender has an event loop of its own, run by the plugin's thread."""

    def __init__(self, target: Nats) -> None:
        self._target = target
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None

    def send(self, message: Message) -> None:
        try:
            self._loop.run_until_complete(asyncio.wait_for(self._publish(message), self._target.timeout_s))
        except Exception as exc:  # nats-py raises its own errors, OSError and timeouts: all are failures
            self._loop.run_until_complete(self._disconnect())
            raise DeliveryError(f"nats {self._target.url}: {type(exc).__name__}: {exc}") from None

    async def _publish(self, message: Message) -> None:
        import nats  # noqa: PLC0415 - loaded only by plugins with a NATS target

        if self._nc is None:
            async def quiet(*_args: object) -> None:
                pass  # a failure is reported by the call that meets it, not logged twice

            self._nc = await nats.connect(self._target.url, allow_reconnect=False,
                                          connect_timeout=self._target.timeout_s, error_cb=quiet)
        subject = f"{self._target.subject}.{message.operation}"
        headers = {**message.headers, "Nats-Msg-Id": message.id}
        if self._target.jetstream:
            await self._nc.jetstream().publish(subject, message.body, timeout=self._target.timeout_s, headers=headers)
        else:
            await self._nc.publish(subject, message.body, headers=headers)
            await self._nc.flush(timeout=max(1, int(self._target.timeout_s)))

    async def _disconnect(self) -> None:
        nc, self._nc = self._nc, None
        if nc is not None:
            with contextlib.suppress(Exception):  # closing a broken connection: nothing to report
                await nc.close()

    def close(self) -> None:
        self._loop.run_until_complete(self._disconnect())
        self._loop.close()


def make_sender(target: Target, streams: Any = None) -> Sender:
    """The sender of ``target``; ``streams`` is the store's (for a stream target)."""
    if isinstance(target, Webhook):
        return WebhookSender(target)
    if isinstance(target, JsonLinesFile):
        return FileSender(target)
    if isinstance(target, SeawayStream):
        return StreamSender(target, streams)
    return NatsSender(target)
