"""Change notifications: plugins that deliver the change ledger's entries to targets (a webhook, a
JSON-lines file, a Seaway stream, NATS) as CloudEvents or S3-compatible records, each from its own
persisted checkpoint, at least once, in ledger order. See docs/notifications.md."""

from __future__ import annotations

from seaway.notify._api import LAST_ERROR_CHARS_MAX, Checkpoint, Notifications, PluginStatus
from seaway.notify._config import (
    FORMATS,
    TARGETS,
    DeliveryRetry,
    JsonLinesFile,
    Nats,
    NotifyConfig,
    SeawayStream,
    Target,
    Webhook,
    target_from_dict,
)
from seaway.notify._formats import Message, Notice, build_message
from seaway.notify._plugin import MissedRange, Plugin, PluginObserver
from seaway.notify._policy import REDACTED, TargetPolicy, check_file_dir, redact_url
from seaway.notify._service import ForwardCollector, NotifyService, NotifyServiceConfig
from seaway.notify._source import LedgerSource
from seaway.notify._targets import (
    ID_HEADER,
    SIGNATURE_HEADER,
    SUBJECT_HEADER,
    TIME_HEADER,
    TYPE_HEADER,
    make_sender,
    sign,
    signed_bytes,
)

__all__ = [
    "FORMATS",
    "ID_HEADER",
    "LAST_ERROR_CHARS_MAX",
    "REDACTED",
    "SIGNATURE_HEADER",
    "SUBJECT_HEADER",
    "TARGETS",
    "TIME_HEADER",
    "TYPE_HEADER",
    "Checkpoint",
    "DeliveryRetry",
    "ForwardCollector",
    "JsonLinesFile",
    "LedgerSource",
    "Message",
    "MissedRange",
    "Nats",
    "Notice",
    "Notifications",
    "NotifyConfig",
    "NotifyService",
    "NotifyServiceConfig",
    "Plugin",
    "PluginObserver",
    "PluginStatus",
    "SeawayStream",
    "Target",
    "TargetPolicy",
    "Webhook",
    "build_message",
    "check_file_dir",
    "make_sender",
    "redact_url",
    "sign",
    "signed_bytes",
    "target_from_dict",
]
