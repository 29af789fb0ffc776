"""``seaway.connect("seaway://h1:p1,h2:p2,h3:p3")``: the Seaway API over a cluster. Log reads and
appends go to the nodes directly (:class:`ClusterLogs`: each log's sequencer, failover, merged
reads); the rest (metadata, transactions, the ledger, notifications, and so streams' and queues'
control) to the cluster's control node, found through any node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seaway.cluster._logs import ClusterLogs
from seaway.errors import ControlNodeUnavailableError, UnavailableError
from seaway.wire import cluster_pb2 as pb

if TYPE_CHECKING:
    from seaway.client import AppendQueueConfig, RemoteSeaway
    from seaway.log import CoalesceConfig, RetryPolicy


def connect_cluster(url: str, *, token: str | None = None, tls_root_cert: bytes | None = None,
                    timeout_s: float = 30.0, retry: RetryPolicy | None = None,
                    appends: AppendQueueConfig | None = None,
                    coalesce: CoalesceConfig | None = None) -> RemoteSeaway:
    """The store a cluster serves, with the API of ``seaway.connect()`` to one server (the same
    token and TLS for its nodes and its control node). Raises :class:`UnavailableError` if no
    node answers, :class:`ControlNodeUnavailableError` if none is the control node now."""
    from seaway.client import RemoteSeaway  # noqa: PLC0415 - seaway.client imports this module lazily

    try:
        logs = ClusterLogs(url, token=token, tls_root_cert=tls_root_cert, timeout_s=timeout_s)
    except UnavailableError as exc:
        raise UnavailableError(f"no node of the cluster {url} answered (the last: {exc})") from exc
    try:
        reply: pb.ControlReply = logs.client.call_any("GetControl", pb.StatusRequest(), timeout_s=min(timeout_s, 5.0))
        if not reply.node:
            raise ControlNodeUnavailableError(
                "the cluster has no control node up (metadata, transactions, the ledger, notifications, streams and "
                "queues need it): start one node with --control-listen HOST:PORT (docs/cluster.md)")
        return RemoteSeaway(reply.address, token=token, tls=url.startswith("seaways://"),
                            tls_root_cert=tls_root_cert, timeout_s=timeout_s, retry=retry, appends=appends,
                            coalesce=coalesce, logs=logs,
                            control=f"the cluster's control node {reply.node} ({reply.address})")
    except BaseException:
        logs.close()
        raise
