"""Notification configurations: what a plugin delivers (event types, a selection, name filters),
where (a target) and how (a format), as small frozen dataclasses with a strict JSON form.

A configuration selects entries by their resource (``log/clicks``, ``stream/web/access``...):

- store-wide (no ``scope``, no ``stream``): every resource; a filter's *name* is the resource;
- ``scope="web"``: the scope's own entries and its streams'; a filter's name is the stream's name
  in the scope (S3's object key in its bucket), ``""`` for the scope itself;
- ``stream="web/access"``: that stream's entries only (no name filters).

Two configurations *overlap* when an entry could match both: their event types share one, and in
the space of full resource names their prefixes overlap (one starts with the other) and their
suffixes overlap (one ends with the other). S3 refuses such configurations, and so does Seaway:
with overlapping rules, which target got what is hard to reason about.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from seaway.errors import NotifyConfigError
from seaway.ledger import CHANGES, LedgerEntry
from seaway.notify._policy import REDACTED, TargetPolicy, check_host, file_target_path, redact_url

NAME_CHARS_MAX = 64
FILTER_CHARS_MAX = 256
EVENTS_MAX = 64
TIMEOUT_S_MAX = 60.0
"""The longest a webhook or NATS target's ``timeout_s`` may be: a receiver that hangs holds its
plugin (and a configuration change that stops it) no longer."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

FORMATS = ("cloudevents", "cloudevents-binary", "s3")
"""``cloudevents``: CloudEvents 1.0 structured mode (the event is the JSON body);
``cloudevents-binary``: binary mode (attributes in headers, the data as body: HTTP and NATS only);
``s3``: an S3-compatible ``{"Records": [...]}`` body."""

_KINDS = sorted({op.partition(".")[0] for op in CHANGES})


# --- targets ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Webhook:
    """HTTP POST of each message to ``url``; a 2xx answer acknowledges it. With ``secret``, each
    request carries ``X-Seaway-Signature`` (see docs/notifications.md)."""

    url: str
    secret: str | None = None
    timeout_s: float = 10.0
    """The longest a request may take, connection included: a receiver that hangs is a failure."""

    TYPE = "webhook"

    def __repr__(self) -> str:  # shown in logs and tracebacks: never the secret or the URL's credentials
        secret = None if self.secret is None else REDACTED
        return f"Webhook(url={redact_url(self.url)!r}, secret={secret!r}, timeout_s={self.timeout_s!r})"


@dataclass(frozen=True)
class JsonLinesFile:
    """Append each message as one JSON line to ``path`` (on the machine that runs the plugin),
    flushed and synced before it counts as delivered."""

    path: str

    TYPE = "file"


@dataclass(frozen=True)
class SeawayStream:
    """Write each message as an event of the Seaway stream ``stream`` (``scope/name``, created if
    absent), routed by its resource: Spark can read the change feed as any stream."""

    stream: str

    TYPE = "stream"


@dataclass(frozen=True)
class Nats:
    """Publish each message on ``subject.<operation>`` (``seaway.changes.stream.created``) of the
    NATS server at ``url``. Core NATS acknowledges once the server has processed the publish (a
    flush); with ``jetstream``, the stream that captures the subject acknowledges it, and
    deduplicates on the message id (``Nats-Msg-Id``)."""

    url: str
    subject: str = "seaway.changes"
    jetstream: bool = False
    timeout_s: float = 10.0

    TYPE = "nats"

    def __repr__(self) -> str:  # as Webhook's: the URL's credentials redacted
        return (f"Nats(url={redact_url(self.url)!r}, subject={self.subject!r}, jetstream={self.jetstream!r}, "
                f"timeout_s={self.timeout_s!r})")


Target = Webhook | JsonLinesFile | SeawayStream | Nats
TARGETS: dict[str, type[Webhook] | type[JsonLinesFile] | type[SeawayStream] | type[Nats]] = {
    t.TYPE: t for t in (Webhook, JsonLinesFile, SeawayStream, Nats)}


@dataclass(frozen=True)
class DeliveryRetry:
    """How long a plugin keeps trying one entry. The wait after the n-th failed attempt is
    ``backoff_initial_s * 2**(n-1)``, at most ``backoff_max_s``. After ``attempts_max`` attempts, or
    ``ttl_s`` after its first failure, the entry is given up: counted as dropped, logged with its
    index, and the plugin goes on (so one bad entry or a dead target never stalls it for good)."""

    attempts_max: int = 1000
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 60.0
    ttl_s: float = 24 * 3600.0

    def delay_s(self, attempt: int) -> float:
        return float(min(self.backoff_max_s, self.backoff_initial_s * 2 ** min(attempt - 1, 62)))


# --- the configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotifyConfig:
    """One notification configuration (and the plugin that serves it). Checked when built."""

    name: str
    target: Target
    format: str = "cloudevents"
    events: tuple[str, ...] = ()
    """Operations (``stream.created``), kinds (``stream.*``) or ``*``; empty: every operation."""
    scope: str | None = None
    stream: str | None = None
    prefix: str = ""
    suffix: str = ""
    retry: DeliveryRetry = field(default_factory=DeliveryRetry)
    batch_entries_max: int = 100
    """Entries a plugin reads from the ledger at a time."""

    def __post_init__(self) -> None:
        _check(self)

    # --- matching ------------------------------------------------------------------------------

    def key(self, resource: str) -> str | None:
        """The name the filters see for ``resource``, or None if the selection leaves it out."""
        if self.stream is not None:
            return self.stream.partition("/")[2] if resource == f"stream/{self.stream}" else None
        if self.scope is not None:
            if resource == f"scope/{self.scope}":
                return ""
            inside = f"stream/{self.scope}/"
            return resource[len(inside):] if resource.startswith(inside) else None
        return resource

    def matches(self, entry: LedgerEntry) -> bool:
        if not _event_matches(self.events, entry.operation):
            return False
        key = self.key(entry.resource)
        return key is not None and key.startswith(self.prefix) and key.endswith(self.suffix)

    def overlaps(self, other: NotifyConfig) -> bool:
        """Whether an entry could match both (see the module's docstring)."""
        if not _events_intersect(self.events, other.events):
            return False
        (p1, s1), (p2, s2) = self._full_filters(), other._full_filters()
        return (p1.startswith(p2) or p2.startswith(p1)) and (s1.endswith(s2) or s2.endswith(s1))

    def _full_filters(self) -> tuple[str, str]:
        """The prefix and suffix in the space of full resource names."""
        if self.stream is not None:
            whole = f"stream/{self.stream}"
            return whole, whole
        if self.scope is not None:
            return f"stream/{self.scope}/{self.prefix}", self.suffix
        return self.prefix, self.suffix

    # --- JSON ------------------------------------------------------------------------------------

    def redacted(self) -> NotifyConfig:
        """This configuration as it may be shown or recorded: a webhook's secret, and the
        credentials and query of a webhook's or NATS server's URL, replaced by :data:`REDACTED`."""
        target = self.target
        if isinstance(target, Webhook):
            target = dataclasses.replace(target, url=redact_url(target.url),
                                         secret=None if target.secret is None else REDACTED)
        elif isinstance(target, Nats):
            target = dataclasses.replace(target, url=redact_url(target.url))
        return dataclasses.replace(self, target=target)

    def unredacted(self, stored: NotifyConfig | None) -> NotifyConfig:
        """This configuration with the secrets it shows redacted taken from ``stored`` (the one it
        replaces): a configuration read back, changed and set again keeps its secrets.
        :class:`NotifyConfigError` if a redacted secret has nothing to come from."""
        target, old = self.target, stored.target if stored is not None else None
        if isinstance(target, Webhook | Nats) and type(old) is type(target):
            assert isinstance(old, Webhook | Nats)
            if target.url != old.url and target.url == redact_url(old.url):
                target = dataclasses.replace(target, url=old.url)
            if isinstance(target, Webhook) and isinstance(old, Webhook) and target.secret == REDACTED:
                target = dataclasses.replace(target, secret=old.secret)
        shown = json.dumps(vars(target))
        if REDACTED in shown:
            raise NotifyConfigError(f"notification configuration {self.name!r}: its target shows {REDACTED} "
                                    "where a secret was: give the secret (and the whole URL) again")
        return dataclasses.replace(self, target=target) if target is not self.target else self

    def check_policy(self, policy: TargetPolicy) -> None:
        """Refuse a target the operator's policy does not allow (:class:`NotifyConfigError`)."""
        if isinstance(self.target, JsonLinesFile):
            file_target_path(self.target.path, policy)
        if isinstance(self.target, Webhook):
            check_host(urllib.parse.urlsplit(self.target.url).hostname or "", policy)

    def to_json(self) -> str:
        target = {"type": self.target.TYPE, **vars(self.target)}
        return json.dumps({"name": self.name, "target": target, "format": self.format, "events": list(self.events),
                           "scope": self.scope, "stream": self.stream, "prefix": self.prefix, "suffix": self.suffix,
                           "retry": vars(self.retry), "batch_entries_max": self.batch_entries_max},
                          sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> NotifyConfig:
        """Parse and check; :class:`NotifyConfigError` says what is wrong."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise NotifyConfigError(f"a notification configuration is a JSON object: {exc}") from None
        except RecursionError:  # a hostile client's nesting, deeper than the parser goes
            raise NotifyConfigError("a notification configuration is a JSON object, not nested this deep") from None
        if not isinstance(data, dict):
            raise NotifyConfigError(f"a notification configuration is a JSON object, got {type(data).__name__}")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NotifyConfig:
        known = {"name", "target", "format", "events", "scope", "stream", "prefix", "suffix", "retry",
                 "batch_entries_max"}
        _no_unknown(data, known, "configuration")
        if "name" not in data or "target" not in data:
            raise NotifyConfigError("a notification configuration needs a name and a target")
        values = dict(data)
        values["target"] = target_from_dict(data["target"])
        if isinstance(values.get("events"), list):
            values["events"] = tuple(values["events"])
        if "retry" in values:
            retry = values["retry"]
            if not isinstance(retry, dict):
                raise NotifyConfigError(f"retry is an object, got {retry!r:.80}")
            _no_unknown(retry, set(DeliveryRetry.__dataclass_fields__), "retry")
            values["retry"] = DeliveryRetry(**retry)
        return cls(**values)


def target_from_dict(data: object) -> Target:
    if not isinstance(data, dict):
        raise NotifyConfigError(f"a target is an object with a type, got {data!r:.80}")
    kind = data.get("type")
    if kind not in TARGETS:
        raise NotifyConfigError(f"unknown target type {kind!r}: the types are {', '.join(sorted(TARGETS))} "
                                "(Kafka is not one: see docs/notifications.md)")
    cls = TARGETS[kind]
    fields = {k: v for k, v in data.items() if k != "type"}
    _no_unknown(fields, set(cls.__dataclass_fields__), f"{kind} target")
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in fields and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise NotifyConfigError(f"a {kind} target needs {', '.join(missing)} (its fields: "
                                f"{', '.join(f.name for f in dataclasses.fields(cls))})")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise NotifyConfigError(f"{kind} target: {exc}") from None


def _no_unknown(data: dict[str, Any], known: set[str], what: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise NotifyConfigError(f"unknown field(s) of a notification {what}: {', '.join(unknown)} "
                                f"(known: {', '.join(sorted(known))})")


# --- checks ---------------------------------------------------------------------------------------------


def _event_matches(events: tuple[str, ...], operation: str) -> bool:
    if not events:
        return True
    return any(e in ("*", operation) or (e.endswith(".*") and operation.startswith(e[:-1])) for e in events)


def _events_intersect(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    expand_a = {op for op in CHANGES if _event_matches(a, op)}
    return any(_event_matches(b, op) for op in expand_a)


def _check(c: NotifyConfig) -> None:
    def fail(why: str) -> None:
        raise NotifyConfigError(f"notification configuration {c.name!r}: {why}")

    if not isinstance(c.name, str) or not _NAME.match(c.name) or len(c.name) > NAME_CHARS_MAX:
        raise NotifyConfigError(f"a notification configuration's name is 1-{NAME_CHARS_MAX} letters, digits and "
                                f"._- starting with a letter or digit, got {c.name!r:.80}")
    if not isinstance(c.target, (Webhook, JsonLinesFile, SeawayStream, Nats)):
        fail(f"the target must be one of {', '.join(sorted(TARGETS))}, got {c.target!r:.80}")
    _check_target(c.target, fail)
    if c.format not in FORMATS:
        fail(f"unknown format {c.format!r}: the formats are {', '.join(FORMATS)}")
    if c.format == "cloudevents-binary" and not isinstance(c.target, (Webhook, Nats)):
        fail("binary mode puts the attributes in headers: only webhook and nats targets have them")
    if not isinstance(c.events, tuple) or len(c.events) > EVENTS_MAX:
        fail(f"events is a list of at most {EVENTS_MAX} operations")
    for e in c.events:
        known = e == "*" or e in CHANGES or (isinstance(e, str) and e.endswith(".*") and e[:-2] in _KINDS)
        if not known:
            fail(f"unknown event type {e!r}: an operation (e.g. stream.created), a kind with .* "
                 f"({', '.join(k + '.*' for k in _KINDS)}) or *")
    for what, value in (("prefix", c.prefix), ("suffix", c.suffix)):
        if not isinstance(value, str) or len(value) > FILTER_CHARS_MAX:
            fail(f"a {what} filter is a string of at most {FILTER_CHARS_MAX} characters")
    if c.scope is not None and c.stream is not None:
        fail("give a scope or a stream, not both")
    if c.scope is not None and (not isinstance(c.scope, str) or not c.scope or "/" in c.scope):
        fail(f"a scope is a name without '/', got {c.scope!r:.80}")
    if c.stream is not None:
        if not isinstance(c.stream, str) or c.stream.count("/") != 1 or "" in c.stream.split("/"):
            fail(f"a stream is named scope/name, got {c.stream!r:.80}")
        if c.prefix or c.suffix:
            fail("a configuration of one stream takes no prefix or suffix filter")
    r = c.retry
    if not isinstance(r, DeliveryRetry):
        fail("retry must be a DeliveryRetry")
    if not (_int(r.attempts_max) and r.attempts_max >= 1 and _pos(r.backoff_initial_s) and _pos(r.backoff_max_s)
            and _pos(r.ttl_s)):
        fail(f"retry needs attempts_max >= 1 and positive backoffs and ttl, got {r}")
    if not _int(c.batch_entries_max) or not 1 <= c.batch_entries_max <= 10_000:
        fail(f"batch_entries_max is in [1, 10000], got {c.batch_entries_max!r}")


def _check_target(t: Target, fail: Any) -> None:
    if isinstance(t, (Webhook, Nats)):
        scheme = ("http://", "https://") if isinstance(t, Webhook) else ("nats://", "tls://")
        if not isinstance(t.url, str) or not t.url.startswith(scheme):
            fail(f"a {t.TYPE} target's url starts with {' or '.join(scheme)}, got {t.url!r:.80}")
        if not _pos(t.timeout_s) or t.timeout_s > TIMEOUT_S_MAX:
            fail(f"timeout_s is a number of seconds in (0, {TIMEOUT_S_MAX:g}], got {t.timeout_s!r}")
        try:
            urllib.parse.urlsplit(t.url).port  # noqa: B018 - a bad port raises here, not in a plugin
        except ValueError as exc:
            fail(f"a {t.TYPE} target's url: {exc}")
    if isinstance(t, Webhook) and t.secret is not None and (not isinstance(t.secret, str) or not t.secret):
        fail("a webhook's secret is a non-empty string")
    if isinstance(t, Nats) and (not isinstance(t.subject, str) or not re.match(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$",
                                                                                t.subject)):
        fail(f"a NATS subject is dot-separated tokens without wildcards, got {t.subject!r:.80}")
    if isinstance(t, JsonLinesFile) and (not isinstance(t.path, str) or not t.path):
        fail("a file target needs a path")
    if isinstance(t, SeawayStream) and (not isinstance(t.stream, str) or t.stream.count("/") != 1):
        fail(f"a stream target names a stream scope/name, got {t.stream!r:.80}")


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pos(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
