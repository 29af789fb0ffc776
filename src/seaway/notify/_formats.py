"""Messages a plugin delivers, built from ledger entries: CloudEvents 1.0 (structured or binary
mode, with the ``cloudevents`` package) or S3-compatible ``Records``. Pure functions, no I/O.

Every message carries the entry's index as its stable id: a receiver that sees an id twice (after a
retry, a restart) has seen the same change twice, and may drop the second.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cloudevents.conversion import to_binary, to_structured
from cloudevents.http import CloudEvent

from seaway.ledger import LedgerEntry

CE_SOURCE = "/seaway/ledger"
CE_TYPE_PREFIX = "io.seaway."
MISSED_OPERATION = "notify.missed"
"""The operation of the notice a plugin sends when the entries it had not delivered were pruned."""

S3_EVENT_NAMES = {
    "stream.created": "ObjectCreated:Put",
    "stream.deleted": "ObjectRemoved:Delete",
}
"""The changes S3 has a name for; every other gets ``Seaway:<Kind><Verb>`` (``Seaway:StreamScaled``)."""


@dataclass(frozen=True, slots=True)
class Notice:
    """What a message says, whatever its format: a ledger entry, or a plugin's missed-range notice."""

    id: str
    index: int
    """The ledger index (for a missed notice: the last index missed)."""
    time_ms: int
    operation: str
    resource: str
    fields: dict[str, Any]

    @classmethod
    def of_entry(cls, entry: LedgerEntry) -> Notice:
        fields = {f.name: getattr(entry.change, f.name) for f in dataclasses.fields(entry.change)}
        return cls(str(entry.index), entry.index, entry.time_ms, entry.operation, entry.resource, fields)

    @classmethod
    def missed(cls, plugin: str, first: int, last: int, time_ms: int) -> Notice:
        return cls(f"missed-{first}-{last}", last, time_ms, MISSED_OPERATION, f"notify/{plugin}",
                   {"plugin": plugin, "first": first, "last": last, "count": last - first + 1})


@dataclass(frozen=True, slots=True)
class Message:
    """One message to deliver: its id, headers (for HTTP and NATS) and body."""

    id: str
    index: int
    operation: str
    resource: str
    headers: dict[str, str]
    body: bytes
    time_ms: int = 0


def iso_time(time_ms: int) -> str:
    return datetime.fromtimestamp(time_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _data(notice: Notice) -> dict[str, Any]:
    return {"index": notice.index, "time_ms": notice.time_ms, "operation": notice.operation,
            "resource": notice.resource, "change": notice.fields}


def cloud_event(notice: Notice) -> CloudEvent:
    """The CloudEvent of ``notice``: ``id`` is the index, and the ``sequence`` extension the index
    zero-padded to 20 digits (the extension compares values as strings)."""
    attributes = {"specversion": "1.0", "id": notice.id, "source": CE_SOURCE,
                  "type": CE_TYPE_PREFIX + notice.operation, "subject": notice.resource,
                  "time": iso_time(notice.time_ms), "datacontenttype": "application/json",
                  "sequence": f"{notice.index:020d}"}
    return CloudEvent(attributes, _data(notice))


def s3_names(resource: str) -> tuple[str, str]:
    """``(bucket, key)``: the scope and the stream's name for scopes and streams; for other
    resources, their kind and the rest (``queue/orders`` -> ``("queue", "orders")``)."""
    kind, _, rest = resource.partition("/")
    if kind == "stream":
        scope, _, name = rest.partition("/")
        return scope, name
    if kind == "scope":
        return rest, ""
    return kind, rest


def s3_event_name(operation: str) -> str:
    if operation in S3_EVENT_NAMES:
        return S3_EVENT_NAMES[operation]
    kind, _, verb = operation.partition(".")
    camel = "".join(part.capitalize() for part in f"{kind}_{verb}".replace("-", "_").split("_"))
    return f"Seaway:{camel}"


def s3_record(notice: Notice, config_name: str) -> dict[str, Any]:
    """One S3-compatible record. ``sequencer`` is the index as S3 writes it: upper-case hex, here
    zero-padded to 16 digits so that records compare as strings too."""
    bucket, key = s3_names(notice.resource)
    return {
        "eventVersion": "2.2", "eventSource": "seaway:s3", "awsRegion": "", "eventTime": iso_time(notice.time_ms),
        "eventName": s3_event_name(notice.operation), "userIdentity": {"principalId": "seaway"},
        "requestParameters": {"sourceIPAddress": ""},
        "responseElements": {"x-amz-request-id": notice.id, "x-amz-id-2": ""},
        "s3": {"s3SchemaVersion": "1.0", "configurationId": config_name,
               "bucket": {"name": bucket, "ownerIdentity": {"principalId": "seaway"}, "arn": f"arn:aws:s3:::{bucket}"},
               "object": {"key": key, "sequencer": f"{notice.index:016X}"}},
        "seaway": _data(notice),
    }


def build_message(notice: Notice, fmt: str, config_name: str) -> Message:
    """``notice`` in format ``fmt`` (one of :data:`seaway.notify.FORMATS`, already checked)."""
    if fmt == "s3":
        headers = {"content-type": "application/json"}
        body = json.dumps({"Records": [s3_record(notice, config_name)]}, separators=(",", ":")).encode()
    else:
        convert = to_binary if fmt == "cloudevents-binary" else to_structured
        raw_headers, raw_body = convert(cloud_event(notice))
        headers = {str(k): str(v) for k, v in raw_headers.items()}
        body = raw_body if isinstance(raw_body, bytes) else str(raw_body).encode()
    return Message(notice.id, notice.index, notice.operation, notice.resource, headers, body, notice.time_ms)
