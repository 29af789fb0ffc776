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

import pytest
from cloudevents.http import from_http

from seaway._errors import DeliveryError
from seaway.ledger import LedgerEntry, StreamCreated, StreamScaled, TxnCommitted
from seaway.notify import SIGNATURE_HEADER, Notice, Webhook, build_message, make_sender


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
        self.send_response(500 if self.mode == "fail" else 204)
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
    make_sender(Webhook(url, secret="s3cret")).send(message)
    headers, body = handler.got[0]
    assert body == message.body and headers["X-Seaway-Id"] == "42"
    # What docs/notifications.md tells a receiver to do:
    fields = dict(part.split("=", 1) for part in headers[SIGNATURE_HEADER].split(","))
    expected = hmac.new(b"s3cret", fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(fields["v1"], expected)
    tampered = hmac.new(b"s3cret", fields["t"].encode() + b"." + body + b" ", hashlib.sha256).hexdigest()
    assert fields["v1"] != tampered


@pytest.mark.parametrize(("mode", "says"), [("fail", "answered 500"), ("garbage", "BadStatusLine"),
                                            ("hang", "timed out")])
def test_a_webhook_that_fails_answers_garbage_or_hangs_is_a_delivery_error(
        receiver: tuple[str, type[_Receiver]], mode: str, says: str) -> None:
    url, handler = receiver
    handler.mode = mode
    sender = make_sender(Webhook(url, timeout_s=0.5))
    with pytest.raises(DeliveryError, match=says) as raised:
        sender.send(build_message(Notice.of_entry(_entry()), "s3", "cfg"))
    assert raised.value.retriable


def test_a_webhook_nobody_listens_on_is_a_delivery_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DeliveryError, match="refused"):
        make_sender(Webhook(f"http://127.0.0.1:{port}/")).send(build_message(Notice.of_entry(_entry()), "s3", "c"))


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


def test_a_webhook_connection_is_kept_alive_and_renewed_when_the_receiver_closed_it() -> None:
    handler = type("Handler", (_KeptAlive,), {"got": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sender = make_sender(Webhook(f"http://127.0.0.1:{server.server_port}/hook"))
        messages = [build_message(Notice.of_entry(LedgerEntry(i, 0, TxnCommitted(i, 1, 2))), "s3", "c")
                    for i in range(1, 5)]
        for message in messages[:3]:
            sender.send(message)
        time.sleep(0.6)  # the receiver closes the idle connection: the next send finds it closed
        sender.send(messages[3])
        sender.close()
    finally:
        server.shutdown()
        server.server_close()
    assert [body for _, body in handler.got] == [m.body for m in messages]  # each once, in order
    clients = [client for client, _ in handler.got]
    assert clients[0] == clients[1] == clients[2] != clients[3]  # one connection for three, then a new one
