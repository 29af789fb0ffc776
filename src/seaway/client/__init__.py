"""The remote client: ``seaway.connect("seaway://host:port")`` gives the embedded API over the wire."""

from seaway.client._append import AppendQueueConfig
from seaway.client._client import (
    RemoteLog,
    RemoteLogs,
    RemoteMetadataStore,
    RemoteSeaway,
    RemoteTxn,
    connect,
)
from seaway.client._reader import RemoteReader

__all__ = ["AppendQueueConfig", "RemoteLog", "RemoteLogs", "RemoteMetadataStore", "RemoteReader", "RemoteSeaway",
           "RemoteTxn", "connect"]
