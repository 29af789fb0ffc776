"""Senders: the I/O that delivers one message to a target and returns once the target has
acknowledged it, or raises :class:`DeliveryError` (retried by the plugin within its bounds)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import socket
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from seaway.errors import DeliveryError, DeliveryRefusedError, NotifyConfigError, SeawayError
from seaway.notify._config import JsonLinesFile, Nats, SeawayStream, Target, Webhook
from seaway.notify._formats import CE_TYPE_PREFIX, Message, iso_time
from seaway.notify._policy import TargetPolicy, connect_checked, file_target_path, redact_url

if TYPE_CHECKING:
    import http.client

SIGNATURE_HEADER = "X-Seaway-Signature"
ID_HEADER = "X-Seaway-Id"
TYPE_HEADER = "X-Seaway-Type"
SUBJECT_HEADER = "X-Seaway-Subject"
TIME_HEADER = "X-Seaway-Time"
RETRIED_STATUSES = (408, 429)
"""The 4xx answers a webhook is retried after (a timeout, too many requests); any other 4xx refuses
the message for good, and the plugin gives it up at once."""
ANSWER_BYTES_MAX = 64 << 10
"""The most of a webhook's answer read (and dropped): its status is what counts."""


class Sender(Protocol):
    def send(self, message: Message) -> None:
        """Deliver ``message``; return once the target acknowledged it. :class:`DeliveryError` if not."""

    def close(self) -> None: ...


def signed_bytes(timestamp_s: int, event_id: str, event_type: str, subject: str, time: str, body: bytes) -> bytes:
    """What the signature covers: ``t``, then the values of ``X-Seaway-Id``, ``X-Seaway-Type``,
    ``X-Seaway-Subject`` and ``X-Seaway-Time``, each followed by a newline (header values hold
    none), then the body."""
    return "".join(f"{v}\n" for v in (timestamp_s, event_id, event_type, subject, time)).encode() + body


def sign(secret: str, timestamp_s: int, event_id: str, event_type: str, subject: str, time: str,
         body: bytes) -> str:
    """The value of ``X-Seaway-Signature``: ``t=<unix seconds>,v2=<hex HMAC-SHA256>`` of
    :func:`signed_bytes` under ``secret``. A receiver recomputes it from the headers and the body,
    compares in constant time, refuses a ``t`` too far from its clock, and deduplicates on the id
    (see docs/notifications.md): a replay with another id, type, subject or time fails the check."""
    mac = hmac.new(secret.encode(), signed_bytes(timestamp_s, event_id, event_type, subject, time, body),
                   hashlib.sha256).hexdigest()
    return f"t={timestamp_s},v2={mac}"


class WebhookSender:
    """One kept-alive HTTP connection per plugin (a receiver that closes it after each answer gets
    a new one each time); a request on a kept-alive connection the receiver closed meanwhile is
    made once more on a new connection."""

    def __init__(self, target: Webhook, clock_s: Callable[[], float] = time.time,
                 policy: TargetPolicy | None = None) -> None:
        self._target = target
        self._clock_s = clock_s
        self._policy = policy or TargetPolicy()
        import http.client  # noqa: PLC0415 - HTTP (and TLS) load with the first webhook, not with every store

        self._shown_url = redact_url(target.url)  # what errors and logs say: no credentials, no query
        parts = urllib.parse.urlsplit(target.url)
        self._connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._host, self._port = parts.hostname or "", parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._authorization: str | None = None  # credentials in the URL: HTTP basic authentication
        if parts.username is not None:
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        self._connection: http.client.HTTPConnection | None = None
        self._interrupted = False

    def send(self, message: Message) -> None:
        import http.client  # noqa: PLC0415 - loaded by __init__: a lookup

        headers = dict(message.headers)
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        headers.update({ID_HEADER: message.id, TYPE_HEADER: CE_TYPE_PREFIX + message.operation,
                        SUBJECT_HEADER: message.resource, TIME_HEADER: iso_time(message.time_ms)})
        if self._target.secret is not None:
            headers[SIGNATURE_HEADER] = sign(self._target.secret, int(self._clock_s()), headers[ID_HEADER],
                                             headers[TYPE_HEADER], headers[SUBJECT_HEADER], headers[TIME_HEADER],
                                             message.body)
        while True:
            if self._interrupted:
                raise DeliveryError(f"webhook {self._shown_url}: the plugin is stopping")
            reused = self._connection is not None
            try:
                status, reason = self._post(message.body, headers)
                break
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._close_connection()
                if reused and isinstance(exc, (ConnectionResetError, BrokenPipeError)) and not self._interrupted:
                    continue  # closed by the receiver while kept alive: once more, on a new connection
                # Refused, unreachable, timed out (a receiver that hangs), not HTTP (garbage), or
                # stopped. The exception's text may quote the URL: only its type is told.
                raise DeliveryError(f"webhook {self._shown_url}: {type(exc).__name__}"
                                    f"{': ' + str(exc) if isinstance(exc, OSError) else ''}") from None
        if 400 <= status < 500 and status not in RETRIED_STATUSES:
            raise DeliveryRefusedError(f"webhook {self._shown_url} answered {status} {reason}".rstrip())
        if not 200 <= status < 300:
            raise DeliveryError(f"webhook {self._shown_url} answered {status} {reason}".rstrip())

    def interrupt(self) -> None:
        """End the request in progress, from another thread, and fail any later one: the plugin is
        stopping (a request still connecting ends when connected, or after ``timeout_s``)."""
        self._interrupted = True
        connection = self._connection
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _connect(self, address: tuple[str, int], timeout: float, _source: object = None) -> socket.socket:
        """Connect to an address of the host the policy allows (each one it resolves to is checked)."""
        sock = connect_checked(address[0], address[1], self._target.timeout_s, self._policy)
        if self._interrupted:  # interrupted while connecting: there was no socket to shut then
            sock.close()
            raise OSError("the plugin is stopping")
        return sock

    def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        if self._connection is None:
            connection = self._connection_type(self._host, self._port, timeout=self._target.timeout_s)
            connection._create_connection = self._connect  # type: ignore[attr-defined]
            self._connection = connection
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
    """Appends under the policy's directory only (checked at each message: a directory swapped for
    a symbolic link meanwhile is refused), never following a link at the file itself."""

    def __init__(self, target: JsonLinesFile, policy: TargetPolicy | None = None) -> None:
        self._path = target.path
        self._policy = policy or TargetPolicy()
        file_target_path(self._path, self._policy)  # refused at once: the plugin does not start

    def send(self, message: Message) -> None:
        try:
            body = json.loads(message.body)
        except ValueError as exc:
            raise DeliveryError(f"message {message.id} is not JSON: {exc}") from None
        line = json.dumps(body, separators=(",", ":")) + "\n"
        try:
            path = file_target_path(self._path, self._policy)
        except NotifyConfigError as exc:
            raise DeliveryError(str(exc)) from None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with open(fd, "a", encoding="utf-8") as f:
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
        import asyncio  # noqa: PLC0415 - asyncio loads with the first NATS target, not with every store

        self._target = target
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None

    def send(self, message: Message) -> None:
        import asyncio  # noqa: PLC0415 - loaded by __init__: a lookup

        try:
            self._loop.run_until_complete(asyncio.wait_for(self._publish(message), self._target.timeout_s))
        except Exception as exc:  # nats-py raises its own errors, OSError and timeouts: all are failures
            self._loop.run_until_complete(self._disconnect())
            raise DeliveryError(f"nats {redact_url(self._target.url)}: {type(exc).__name__}") from None

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


def make_sender(target: Target, streams: Any = None, policy: TargetPolicy | None = None) -> Sender:
    """The sender of ``target``; ``streams`` is the store's (for a stream target); ``policy``: where
    it may deliver (by default the strictest, :class:`TargetPolicy`'s defaults)."""
    if isinstance(target, Webhook):
        return WebhookSender(target, policy=policy)
    if isinstance(target, JsonLinesFile):
        return FileSender(target, policy)
    if isinstance(target, SeawayStream):
        return StreamSender(target, streams)
    return NatsSender(target)
