"""A cluster's control node: an ordinary Seaway server in a node's process, whose store keeps its own
state (transaction log, metadata, ledger) on the node's disk and its users' logs in the cluster
(``seaway.open(..., user_logs=ClusterLogs(...))``). Registered in ZooKeeper, one per cluster: what
``seaway.connect("seaway://h1,h2,h3")`` sends everything but log reads and appends to."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from seaway.cluster._logs import ClusterLogs

if TYPE_CHECKING:
    from seaway.cluster._node import ClusterNode
    from seaway.server import Server

_log = logging.getLogger("seaway.cluster")

CONTROL_DIR = "control"
"""The control store's directory, inside the node's data directory."""


class ControlRole:
    """The control server of ``node``, started once the node serves (its logs are the cluster's,
    reached through the node itself first), stopped before it."""

    def __init__(self, node: ClusterNode, listen: str) -> None:
        from seaway.server import Server, ServerConfig  # noqa: PLC0415 - only a control node needs it

        cfg = node.config
        held = node.zk.control()
        if held is not None and held[0] != cfg.node_id:
            from seaway.errors import InvalidArgumentError  # noqa: PLC0415

            raise InvalidArgumentError(f"node {held[0]} ({held[1]}) is the cluster's control node: a cluster has one "
                                       f"(its metadata and transactions are on that node's disk)")
        root = cfg.tls_root_cert or cfg.tls_cert
        scheme = "seaways" if cfg.tls_cert is not None else "seaway"
        self.logs = ClusterLogs(f"{scheme}://{node.address}", token=cfg.token,
                                tls_root_cert=root.read_bytes() if root is not None else None)
        self.server: Server | None = None
        try:
            self.server = Server(ServerConfig(data_dir=Path(cfg.data_dir) / CONTROL_DIR, listen=listen,
                                              token=cfg.token, tls_cert=cfg.tls_cert, tls_key=cfg.tls_key,
                                              user_logs=self.logs))
            self.server.start()
            node.zk.register_control(cfg.node_id, self.server.address, node.instance)
        except BaseException:
            self.stop()
            raise
        self.address = self.server.address
        _log.info("node %d is the control node, serving the Seaway API on %s", cfg.node_id, self.address)

    def stop(self) -> None:
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
            self.server = None
        self.logs.close()
