"""The remote client: ``seaway.connect("seaway://host:port")`` gives the embedded API over the wire."""

from seaway.client._client import RemoteLog, RemoteLogs, RemoteReader, RemoteSeaway, connect

__all__ = ["RemoteLog", "RemoteLogs", "RemoteReader", "RemoteSeaway", "connect"]
