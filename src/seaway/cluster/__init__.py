"""Replicated logs on several machines, as LogDevice runs them: nodes that store copies and host
sequencers (:class:`ClusterNode`), ZooKeeper for each log's epoch record and the membership, and a
client that appends through the sequencer and reads by merging the node set (:class:`ClusterClient`),
and the logs API over it (:class:`ClusterLogs`: names, groups, batches, seals, readers).
The protocol's roles are :mod:`seaway.log.replication`; ``docs/cluster.md`` explains the whole.
Needs the ``cluster`` extra (kazoo) and a ZooKeeper (``seaway cluster up`` starts one to try it).
"""

from seaway.cluster._client import ClusterClient, parse_seeds, placement
from seaway.cluster._connect import connect_cluster
from seaway.cluster._local import LocalCluster
from seaway.cluster._logs import ClusterLog, ClusterLogs, ClusterReader
from seaway.cluster._node import ClusterNode, NodeConfig
from seaway.cluster._zk import ZooKeeperCluster, parse_zk_url
from seaway.cluster._zookeeper import ZooKeeperProcess, zookeeper_unavailable

__all__ = [
    "ClusterClient",
    "ClusterLog",
    "ClusterLogs",
    "ClusterNode",
    "ClusterReader",
    "LocalCluster",
    "NodeConfig",
    "ZooKeeperCluster",
    "ZooKeeperProcess",
    "connect_cluster",
    "parse_seeds",
    "parse_zk_url",
    "placement",
    "zookeeper_unavailable",
]
