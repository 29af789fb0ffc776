"""Configurations: parsing and its errors, matching, and S3's overlap rule."""

from __future__ import annotations

import pytest

from seaway._errors import NotifyConfigError
from seaway.ledger import LedgerEntry, LogCreated, QueueCreated, ScopeCreated, StreamCreated, StreamScaled
from seaway.notify import REDACTED, DeliveryRetry, JsonLinesFile, Nats, NotifyConfig, Webhook

FILE = JsonLinesFile("/tmp/x.jsonl")


def _entry(change: object) -> LedgerEntry:
    return LedgerEntry(1, 0, change)  # type: ignore[arg-type]


def test_json_round_trip_keeps_every_field() -> None:
    config = NotifyConfig("hooks", Webhook("http://127.0.0.1:9/x", secret="s", timeout_s=2.0),
                          format="cloudevents-binary", events=("stream.*", "log.created"), scope="web",
                          prefix="acc", suffix="-v1", retry=DeliveryRetry(attempts_max=3, ttl_s=60.0),
                          batch_entries_max=7)
    assert NotifyConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize(("text", "says"), [
    ("not json", "a JSON object"),
    ("[1]", "a JSON object"),
    ('{"name": "a"}', "needs a name and a target"),
    ('{"name": "a", "target": {"type": "kafka", "brokers": "x"}}', "unknown target type 'kafka'"),
    ('{"name": "a", "target": {"type": "webhook"}}', "webhook target"),
    ('{"name": "a", "target": {"type": "webhook", "url": "ftp://x"}}', "url starts with http://"),
    ('{"name": "a", "target": {"type": "file", "path": "/x", "color": 1}}', "unknown field(s)"),
    ('{"name": "a", "target": {"type": "file", "path": "/x"}, "format": "xml"}', "unknown format 'xml'"),
    ('{"name": "a", "target": {"type": "file", "path": "/x"}, "format": "cloudevents-binary"}', "binary mode"),
    ('{"name": "a", "target": {"type": "file", "path": "/x"}, "events": ["stream.exploded"]}', "unknown event type"),
    ('{"name": "a b", "target": {"type": "file", "path": "/x"}}', "name is 1-64"),
    ('{"name": "a", "target": {"type": "file", "path": "/x"}, "stream": "web/a", "prefix": "p"}', "no prefix"),
    ('{"name": "a", "target": {"type": "file", "path": "/x"}, "retry": {"attempts_max": 0}}', "attempts_max"),
    ('{"name": "a", "target": {"type": "nats", "url": "nats://x", "subject": "a.*"}}', "without wildcards"),
    ("[" * 100_000 + "]" * 100_000, "a JSON object"),  # nested past Python's recursion limit (a fuzzer's find)
    ('{"name": "a", "target": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001, "a JSON object"),
])
def test_malformed_configurations_are_clear_errors(text: str, says: str) -> None:
    with pytest.raises(NotifyConfigError, match=None) as raised:
        NotifyConfig.from_json(text)
    assert says in str(raised.value)
    assert raised.value.code.startswith("NOTIFY_CONFIG") and not raised.value.retriable


def test_selection_and_filters() -> None:
    scoped = NotifyConfig("s", FILE, events=("stream.*",), scope="web", prefix="acc", suffix="s")
    assert scoped.matches(_entry(StreamCreated("web/access", 1, "{}")))
    assert scoped.matches(_entry(StreamScaled("web/accounts", 2, 1, 2)))
    assert not scoped.matches(_entry(StreamCreated("web/clicks", 1, "{}")))
    assert not scoped.matches(_entry(StreamCreated("shop/access", 1, "{}")))
    assert not scoped.matches(_entry(ScopeCreated("web")))  # scope.* is not among its events
    everything = NotifyConfig("all", FILE, prefix="log/")
    assert everything.matches(_entry(LogCreated(1, "clicks", None)))
    assert not everything.matches(_entry(QueueCreated("orders")))
    one = NotifyConfig("one", FILE, stream="web/access")
    assert one.matches(_entry(StreamCreated("web/access", 1, "{}")))
    assert not one.matches(_entry(StreamCreated("web/accessible", 1, "{}")))


@pytest.mark.parametrize(("a", "b", "overlap"), [
    (dict(scope="web"), dict(scope="web"), True),
    (dict(scope="web"), dict(scope="shop"), False),
    (dict(scope="web", prefix="a"), dict(scope="web", prefix="ab"), True),
    (dict(scope="web", prefix="a"), dict(scope="web", prefix="b"), False),
    (dict(scope="web", suffix=".x"), dict(scope="web", suffix=".y"), False),
    (dict(scope="web", prefix="a", suffix=".x"), dict(scope="web", prefix="a", suffix="b.x"), True),
    (dict(scope="web", events=("stream.created",)), dict(scope="web", events=("stream.deleted",)), False),
    (dict(scope="web", events=("stream.*",)), dict(scope="web", events=("stream.deleted",)), True),
    (dict(scope="web", events=("*",)), dict(scope="web", events=("queue.created",)), True),
    (dict(), dict(scope="web"), True),
    (dict(prefix="log/"), dict(scope="web"), False),
    (dict(stream="web/access"), dict(scope="web", prefix="acc"), True),
    (dict(stream="web/access"), dict(scope="web", prefix="b"), False),
])
def test_overlap_rule(a: dict[str, object], b: dict[str, object], overlap: bool) -> None:
    first = NotifyConfig("a", FILE, **a)  # type: ignore[arg-type]
    second = NotifyConfig("b", Nats("nats://127.0.0.1:4222"), **b)  # type: ignore[arg-type]
    assert first.overlaps(second) is overlap and second.overlaps(first) is overlap


def test_a_checkpoint_nested_too_deep_is_corruption_not_a_crash() -> None:
    # The namespace is writable by any client: a hostile value nested past the parser's depth.
    from seaway._errors import CorruptionError  # noqa: PLC0415
    from seaway.notify._api import Checkpoint  # noqa: PLC0415

    with pytest.raises(CorruptionError, match="a JSON object"):
        Checkpoint.from_bytes(b"[" * 100_000 + b"]" * 100_000)


def test_the_repr_of_a_configuration_never_shows_a_secret_or_a_urls_credentials() -> None:
    config = NotifyConfig("hooks", Webhook("https://user:pw@hooks.example.org/in?token=t0k3n", secret="s3cret"))
    nats = Nats("nats://alice:pa55@nats.example.org:4222", subject="changes")
    for shown in (repr(config), str(config), repr(nats), f"{[config]}"):
        assert not any(word in shown for word in ("s3cret", "pw", "t0k3n", "alice", "pa55")), shown
    assert "hooks.example.org/in" in repr(config) and REDACTED in repr(config)
    assert repr(Webhook("https://hooks.example.org/in")).startswith("Webhook(url='https://hooks.example.org/in', "
                                                                   "secret=None")
    assert config.target == Webhook("https://user:pw@hooks.example.org/in?token=t0k3n", secret="s3cret")  # values kept
