"""``seaway serve --cluster``, and ``seaway cluster up | status | create-log | append | read``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from seaway.cli._store import bytes_json, text_of

CLUSTER_HELP = "the cluster, seaway://HOST:PORT[,HOST:PORT...] (default $SEAWAY_CLUSTER)"


def add_serve_cluster_options(srv: argparse.ArgumentParser) -> None:
    srv.add_argument("--cluster", metavar="zk://HOST:PORT/PATH",
                     help="join this cluster as a node of replicated logs (needs --node-id)")
    srv.add_argument("--node-id", type=int, help="this node's id in the cluster (1-256)")
    srv.add_argument("--zk-session-s", type=float, default=6.0,
                     help="ZooKeeper session timeout: how long a dead node stays listed (default 6)")
    srv.add_argument("--tls-root-cert", type=Path,
                     help="with --cluster: what the nodes trust in each other's certificates (default: --tls-cert)")
    srv.add_argument("--control-listen", metavar="HOST:PORT",
                     help="with --cluster: this node is also the cluster's control node (one per cluster), serving "
                          "the whole Seaway API there: metadata, transactions, ledger and notifications on this "
                          "node's disk, the users' logs in the cluster")


def add_cluster_parser(commands: Any) -> None:
    cluster = commands.add_parser("cluster", help="a cluster of replicated logs: up, status, create-log, append, read")
    ops: Any = cluster.add_subparsers(dest="op", required=True, metavar="OPERATION")
    up = ops.add_parser("up", help="start ZooKeeper and N nodes on this machine until Ctrl-C or SIGTERM")
    up.add_argument("--nodes", type=int, default=3)
    up.add_argument("--replication", type=int, default=2, help="copies of each record of logs created later")
    up.add_argument("--data-dir", type=Path, required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--connect", default=os.environ.get("SEAWAY_CLUSTER"), help=CLUSTER_HELP)
    common.add_argument("--token-file", type=Path, help="file holding the cluster's token (or set SEAWAY_TOKEN)")
    common.add_argument("--tls-root-cert", type=Path, help="the certificate to trust for seaways:// (PEM)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    ops.add_parser("status", parents=[common], help="nodes, their health, sequencers, epochs and node sets")
    create = ops.add_parser("create-log", parents=[common], help="create a replicated log")
    create.add_argument("log_id", type=int)
    create.add_argument("--replication", type=int, default=0, help="copies of each record (default: the cluster's)")
    create.add_argument("--nodes", default="", help="its node set, as 1,2,3 (default: every live node)")
    append = ops.add_parser("append", parents=[common], help="append payloads (arguments, or lines of stdin)")
    append.add_argument("log_id", type=int)
    append.add_argument("payloads", nargs="*")
    read = ops.add_parser("read", parents=[common], help="print records and gaps")
    read.add_argument("log_id", type=int)
    read.add_argument("--from", dest="lsn_from", type=int, default=1)
    read.add_argument("--until", type=int, help="the last LSN (default: follow until idle for --idle-s)")
    read.add_argument("--idle-s", type=float, default=1.0)


def _token(args: argparse.Namespace) -> str | None:
    if args.token_file is not None:
        return args.token_file.read_text().strip() or None
    return os.environ.get("SEAWAY_TOKEN") or None


def serve_cluster(args: argparse.Namespace) -> None:
    from seaway.cluster import ClusterNode, NodeConfig  # noqa: PLC0415 - gRPC and kazoo load only to serve
    from seaway.errors import InvalidArgumentError  # noqa: PLC0415

    if args.node_id is None:
        raise InvalidArgumentError("a cluster node needs --node-id")
    node = ClusterNode(NodeConfig(args.node_id, args.data_dir, args.cluster, listen=args.listen,
                                  zk_timeout_s=args.zk_session_s, token=_token(args), tls_cert=args.tls_cert,
                                  tls_key=args.tls_key, tls_root_cert=args.tls_root_cert,
                                  control_listen=args.control_listen)).start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(json.dumps({"event": "listening", "address": node.address, "node": args.node_id,
                      "control": node.control_address}), flush=True)
    try:
        stop.wait()
    finally:
        node.stop()


def run_cluster(args: argparse.Namespace) -> None:
    if args.op == "up":
        _up(args)
        return
    from seaway.cluster import ClusterClient  # noqa: PLC0415
    from seaway.errors import InvalidArgumentError  # noqa: PLC0415

    if not args.connect:
        raise InvalidArgumentError("say which cluster: --connect seaway://HOST:PORT,... or $SEAWAY_CLUSTER")
    root = args.tls_root_cert.read_bytes() if args.tls_root_cert else None
    with ClusterClient(args.connect, token=_token(args), tls_root_cert=root) as client:
        if args.op == "status":
            _status(client, args.json)
        elif args.op == "create-log":
            nodes = tuple(int(n) for n in args.nodes.split(",") if n.strip()) if args.nodes else ()
            record = client.create_log(args.log_id, args.replication, nodes)
            print(record.encode().decode() if args.json else
                  f"log {args.log_id}: nodes {list(record.history[-1].nodes)}, "
                  f"{record.history[-1].replication} copies")
        elif args.op == "append":
            payloads = args.payloads or [line.rstrip("\n") for line in sys.stdin]
            for payload in payloads:
                lsn = client.append(args.log_id, payload.encode())
                print(json.dumps({"lsn": lsn}) if args.json else f"e{lsn >> 32}n{lsn & 0xFFFFFFFF}")
        elif args.op == "read":
            _read(client, args)


def _read(client: Any, args: argparse.Namespace) -> None:
    from seaway.log import LSN_MAX, Record, lsn_str  # noqa: PLC0415

    until = args.until if args.until is not None else LSN_MAX
    for item in client.read(args.log_id, args.lsn_from, until, idle_s=None if args.until else args.idle_s):
        if isinstance(item, Record):
            print(json.dumps({"lsn": item.lsn, "payload": bytes_json(item.payload)}) if args.json else
                  f"{lsn_str(item.lsn)}\t{text_of(item.payload)}")
        else:
            print(json.dumps({"gap": item.type.value, "lsn_lo": item.lsn_lo, "lsn_hi": item.lsn_hi}) if args.json
                  else f"{item.type.value} gap {lsn_str(item.lsn_lo)}..{lsn_str(item.lsn_hi)}")


def _status(client: Any, as_json: bool) -> None:
    from seaway.log import lsn_str  # noqa: PLC0415

    members = client.refresh_members()
    replies = {r.node: r for r in client.status()}
    nodes = [{"node": n, "address": a, "healthy": n in replies,
              "sequencers": [{"log_id": s.log_id, "state": s.state, "epoch": s.epoch,
                              "last_known_good": s.last_known_good} for s in replies[n].sequencers]
              if n in replies else []} for n, a in sorted(members.items())]
    logs = sorted({log_id for r in replies.values() for log_id in r.logs})
    records = []
    for log_id in logs[:1000]:
        record = client.epoch_record(log_id)
        records.append({"log_id": log_id, "epoch": record.epoch, "last_clean_epoch": record.lce,
                        "node_sets": [{"since_epoch": e.since_epoch, "nodes": list(e.nodes),
                                       "replication": e.replication} for e in record.history]})
    if as_json:
        print(json.dumps({"nodes": nodes, "logs": records}))
        return
    for node in nodes:
        state = "up" if node["healthy"] else "not answering"
        print(f"node {node['node']}\t{node['address']}\t{state}")
        for s in node["sequencers"]:
            print(f"  sequencer of log {s['log_id']}\t{s['state']}\tepoch {s['epoch']}\t"
                  f"last known good {lsn_str(s['last_known_good'])}")
    for rec in records:
        sets = "; ".join(f"from epoch {e['since_epoch']}: nodes {e['nodes']}, R={e['replication']}"
                         for e in rec["node_sets"])
        print(f"log {rec['log_id']}\tepoch {rec['epoch']}\tclean to {rec['last_clean_epoch']}\t{sets}")


def _up(args: argparse.Namespace) -> None:
    from seaway.cluster import LocalCluster  # noqa: PLC0415

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with LocalCluster(args.data_dir, args.nodes, args.replication) as cluster:
        print(json.dumps({"event": "up", "cluster": cluster.url, "zookeeper": cluster.zk_url,
                          "nodes": cluster.addresses, "control": cluster.control_address}), flush=True)
        print(f"export SEAWAY_CLUSTER={cluster.url}", file=sys.stderr, flush=True)
        stop.wait()
    print(json.dumps({"event": "stopped"}), flush=True)
