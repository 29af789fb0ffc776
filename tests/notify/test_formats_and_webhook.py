"""Message formats (read back with the cloudevents package), and the webhook against a real local
HTTP server: signed requests, and a receiver that fails, answers garbage or hangs."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cloudevents.http import from_http

from seaway._errors import DeliveryError, DeliveryRefusedError
from seaway.ledger import LedgerEntry, StreamCreated, StreamScaled, TxnCommitted
from seaway.notify import (
    ID_HEADER,
    SIGNATURE_HEADER,
    SUBJECT_HEADER,
    TIME_HEADER,
    TYPE_HEADER,
    Notice,
    TargetPolicy,
    Webhook,
    build_message,
    make_sender,
)

LOCAL = TargetPolicy(private_addresses_ok=True)
"""The receivers here listen on loopback, which a webhook reaches only where the operator allows it."""


def _entry(index: int = 42) -> LedgerEntry:
    return LedgerEntry(index, 1_700_000_000_123, StreamScaled("web/access", 3, 1, 2))


def test_cloudevents_structured_and_binary_read_back_the_same_event() -> None:
    for fmt in ("cloudevents", "cloudevents-binary"):
        message = build_message(Notice.of_entry(_entry()), fmt, "cfg")
        event = from_http(message.headers, message.body)
        assert event["id"] == "42" and event["sequence"] == "00000000000000000042"
        assert event["type"] == "io.seaway.stream.scaled" and event["subject"] == "stream/web/access"
        assert event["time"] == "2023-11-14T22:13:20.123Z" and event["specversion"] == "1.0"
        assert event.data["change"] == {"stream": "web/access", "generation": 3, "sealed_count": 1,
                                        "created_count": 2}
    binary = build_message(Notice.of_entry(_entry()), "cloudevents-binary", "cfg")
    assert binary.headers["ce-id"] == "42" and json.loads(binary.body)["index"] == 42


def test_s3_records_name_bucket_key_sequencer_and_event() -> None:
    created = build_message(Notice.of_entry(LedgerEntry(255, 0, StreamCreated("web/access", 1, "{}"))), "s3", "cfg")
    record = json.loads(created.body)["Records"][0]
    assert record["eventName"] == "ObjectCreated:Put" and record["s3"]["configurationId"] == "cfg"
    assert record["s3"]["bucket"]["name"] == "web" and record["s3"]["object"]["key"] == "access"
    assert record["s3"]["object"]["sequencer"] == "00000000000000FF"
    scaled = json.loads(build_message(Notice.of_entry(_entry()), "s3", "cfg").body)["Records"][0]
    assert scaled["eventName"] == "Seaway:StreamScaled"
    txn = json.loads(build_message(Notice.of_entry(LedgerEntry(1, 0, TxnCommitted(7, 1, 2))), "s3", "c").body)
    assert txn["Records"][0]["s3"]["bucket"]["name"] == "txn" and txn["Records"][0]["s3"]["object"]["key"] == "7"


class _Receiver(BaseHTTPRequestHandler):
    mode = "ok"
    got: list[tuple[dict[str, str], bytes]] = []
    release = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.mode == "garbage":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
            return
        if self.mode == "hang":
            self.release.wait(10)
            return
        self.got.append((dict(self.headers), body))
        self.send_response({"fail": 500, "refuse": 404, "busy": 429}.get(self.mode, 204))
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Handler", (_Receiver,), {"got": [], "mode": "ok", "release": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False  # server_close() joins the handlers: no socket outlives the test
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", handler
    handler.release.set()
    server.shutdown()
    server.server_close()


def test_webhook_signs_what_it_posts_so_a_receiver_can_verify_it(receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    message = build_message(Notice.of_entry(_entry()), "cloudevents", "cfg")
    make_sender(Webhook(url, secret="s3cret"), policy=LOCAL).send(message)
    headers, body = handler.got[0]
    assert body == message.body and headers["X-Seaway-Id"] == "42"
    assert (headers[TYPE_HEADER], headers[SUBJECT_HEADER], headers[TIME_HEADER]) == \
        ("io.seaway.stream.scaled", "stream/web/access", "2023-11-14T22:13:20.123Z")

    def verified(headers: dict[str, str], body: bytes) -> bool:
        """What docs/notifications.md tells a receiver to do."""
        fields = dict(part.split("=", 1) for part in headers[SIGNATURE_HEADER].split(","))
        signed = "".join(f"{v}\n" for v in (fields["t"], headers[ID_HEADER], headers[TYPE_HEADER],
                                             headers[SUBJECT_HEADER], headers[TIME_HEADER])).encode() + body
        expected = hmac.new(b"s3cret", signed, hashlib.sha256).hexdigest()
        return hmac.compare_digest(fields["v2"], expected)

    assert verified(headers, body)
    assert not verified(headers, body + b" ")
    for header in (ID_HEADER, TYPE_HEADER, SUBJECT_HEADER, TIME_HEADER):  # a replay under another id, type...
        assert not verified({**headers, header: headers[header] + "1"}, body), header


@pytest.mark.parametrize(("mode", "says"), [("fail", "answered 500"), ("garbage", "BadStatusLine"),
                                            ("hang", "timed out")])
def test_a_webhook_that_fails_answers_garbage_or_hangs_is_a_delivery_error(
        receiver: tuple[str, type[_Receiver]], mode: str, says: str) -> None:
    url, handler = receiver
    handler.mode = mode
    sender = make_sender(Webhook(url, timeout_s=0.5), policy=LOCAL)
    with pytest.raises(DeliveryError, match=says) as raised:
        sender.send(build_message(Notice.of_entry(_entry()), "s3", "cfg"))
    assert raised.value.retriable


@pytest.mark.parametrize(("mode", "refused"), [("refuse", True), ("busy", False), ("fail", False)])
def test_a_4xx_other_than_408_and_429_refuses_the_message_for_good(
        receiver: tuple[str, type[_Receiver]], mode: str, refused: bool) -> None:
    url, handler = receiver
    handler.mode = mode
    with pytest.raises(DeliveryError) as raised:
        make_sender(Webhook(url), policy=LOCAL).send(build_message(Notice.of_entry(_entry()), "s3", "cfg"))
    assert isinstance(raised.value, DeliveryRefusedError) is refused
    assert raised.value.retriable is not refused


def test_errors_name_a_webhook_without_its_credentials_or_query(receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    handler.mode = "fail"
    secret_url = url.replace("http://", "http://user:pw@") + "?token=t0k"
    with pytest.raises(DeliveryError) as raised:
        make_sender(Webhook(secret_url), policy=LOCAL).send(build_message(Notice.of_entry(_entry()), "s3", "c"))
    assert "answered 500" in str(raised.value)
    assert "pw" not in str(raised.value) and "t0k" not in str(raised.value) and "user" not in str(raised.value)


def test_a_webhook_to_a_name_for_a_private_address_is_refused_when_connecting(
        receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    with pytest.raises(DeliveryError, match=r"refused to connect to \S+: a loopback address"):
        make_sender(Webhook(url.replace("127.0.0.1", "localhost"))).send(
            build_message(Notice.of_entry(_entry()), "s3", "c"))
    assert handler.got == []  # nothing reached it


def test_a_delivery_to_a_hung_receiver_ends_when_interrupted(receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    handler.mode = "hang"
    sender = make_sender(Webhook(url, timeout_s=60), policy=LOCAL)
    failed: list[BaseException] = []

    def send() -> None:
        try:
            sender.send(build_message(Notice.of_entry(_entry()), "s3", "c"))
        except DeliveryError as exc:
            failed.append(exc)

    thread = threading.Thread(target=send)
    started = time.monotonic()
    thread.start()
    while getattr(sender, "_connection", None) is None or sender._connection.sock is None:  # type: ignore[attr-defined]
        time.sleep(0.001)  # connected: the request is on its way (what the receiver does with it, it keeps)
    sender.interrupt()  # type: ignore[attr-defined]
    thread.join(10)
    assert not thread.is_alive() and failed and time.monotonic() - started < 10


def test_a_webhook_nobody_listens_on_is_a_delivery_error() -> None:
    with socket.socket() as s:  # bound, never listening: held so that no other process takes the port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(DeliveryError, match="refused"):
            make_sender(Webhook(f"http://127.0.0.1:{port}/"), policy=LOCAL).send(
                build_message(Notice.of_entry(_entry()), "s3", "c"))


class _KeptAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection open between requests
    timeout = 0.3  # and closes it after this long idle
    got: list[tuple[tuple[str, int], bytes]] = []

    def do_POST(self) -> None:
        self.got.append((self.client_address, self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


class _ClosingServer(ThreadingHTTPServer):
    """Tells when it has closed a connection (the handler's idle timeout ended it)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.closed = threading.Event()

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.closed.set()


def test_a_webhook_connection_is_kept_alive_and_renewed_when_the_receiver_closed_it() -> None:
    handler = type("Handler", (_KeptAlive,), {"got": []})
    server = _ClosingServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sender = make_sender(Webhook(f"http://127.0.0.1:{server.server_port}/hook"), policy=LOCAL)
        messages = [build_message(Notice.of_entry(LedgerEntry(i, 0, TxnCommitted(i, 1, 2))), "s3", "c")
                    for i in range(1, 5)]
        for message in messages[:3]:
            sender.send(message)
        assert server.closed.wait(10)  # the receiver closes it once idle: the next send finds it closed
        sender.send(messages[3])
        sender.close()
    finally:
        server.shutdown()
        server.server_close()
    assert [body for _, body in handler.got] == [m.body for m in messages]  # each once, in order
    clients = [client for client, _ in handler.got]
    assert clients[0] == clients[1] == clients[2] != clients[3]  # one connection for three, then a new one
