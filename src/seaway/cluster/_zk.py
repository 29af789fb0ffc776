"""The cluster's use of ZooKeeper (``kazoo``, the ``cluster`` extra): each log's epoch record, changed
only by compare-and-set on its znode's version, and the membership of live nodes (ephemeral znodes).

Znodes under the cluster's root: ``logs/<log id>`` (the epoch record as JSON: docs/cluster.md) and
``nodes/<node id>`` (``{"address": "host:port"}``, gone when the node's session ends). Nothing else
on the data path touches ZooKeeper.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from seaway.errors import (
    ClosedError,
    CorruptionError,
    InvalidArgumentError,
    LogExistsError,
    StorageError,
    UnavailableError,
    UnknownLogError,
)
from seaway.log.replication import EpochRecord

REGISTER_WAIT_S = 30.0
MEMBERS_REFRESH_S = 5


def _kazoo() -> tuple[Any, Any]:
    try:
        return importlib.import_module("kazoo.client"), importlib.import_module("kazoo.exceptions")
    except ImportError:
        raise InvalidArgumentError("a cluster needs kazoo: pip install 'seaway[cluster]'") from None


def parse_zk_url(url: str) -> tuple[str, str]:
    """``zk://host:port[,host:port...]/path`` as (hosts, root)."""
    if not isinstance(url, str) or not url.startswith("zk://"):
        raise InvalidArgumentError(f"a cluster is named zk://HOST:PORT/PATH, got {url!r:.200}")
    rest = url[len("zk://"):]
    hosts, slash, path = rest.partition("/")
    root = "/" + path
    if not hosts or not slash or not path or path.endswith("/") or "//" in root or "\x00" in root \
            or any(part in (".", "..") for part in root.split("/")) or root == "/zookeeper":
        raise InvalidArgumentError(f"a cluster is named zk://HOST:PORT/PATH (a path of its own), got {url!r:.200}")
    return hosts, root


class ZooKeeperCluster:
    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        hosts, self.root = parse_zk_url(url)
        client, self._errors = _kazoo()
        self._zk = client.KazooClient(hosts=hosts, timeout=timeout_s)
        self._closed = False
        self._lock = threading.Lock()
        try:
            self._zk.start(timeout=timeout_s)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._zk.close()
            self._closed = True
            raise UnavailableError(f"cannot reach ZooKeeper at {hosts}: {exc}") from exc
        with self._calling():
            self._zk.ensure_path(f"{self.root}/logs")
            self._zk.ensure_path(f"{self.root}/nodes")

    @contextmanager
    def _calling(self) -> Iterator[None]:
        if self._closed:
            raise ClosedError("the cluster's ZooKeeper client is closed")
        try:
            yield
        except (self._errors.ConnectionLoss, self._errors.SessionExpiredError,
                self._errors.OperationTimeoutError) as exc:
            raise UnavailableError(f"ZooKeeper did not answer ({type(exc).__name__}); the outcome is unknown") from exc
        except self._errors.ZookeeperError as exc:
            raise StorageError(f"ZooKeeper refused a call: {exc!r}") from exc
        except self._errors.KazooException as exc:
            raise UnavailableError(f"ZooKeeper call failed: {exc!r}") from exc

    def _log_path(self, log_id: int) -> str:
        if not isinstance(log_id, int) or isinstance(log_id, bool) or not 0 < log_id < 2**63:
            raise InvalidArgumentError(f"a log id is an integer in [1, 2**63), got {log_id!r}")
        return f"{self.root}/logs/{log_id}"

    def create_log(self, log_id: int, record: EpochRecord) -> int:
        """Create the log's epoch record; its version."""
        with self._calling():
            try:
                self._zk.create(self._log_path(log_id), record.encode())
            except self._errors.NodeExistsError:
                raise LogExistsError(f"log {log_id} exists") from None
        return 0

    def get_record(self, log_id: int) -> tuple[EpochRecord, int]:
        with self._calling():
            try:
                raw, stat = self._zk.get(self._log_path(log_id))
            except self._errors.NoNodeError:
                raise UnknownLogError(f"log {log_id} does not exist in this cluster") from None
        return EpochRecord.decode(raw), int(stat.version)

    def set_record(self, log_id: int, record: EpochRecord, version: int) -> int | None:
        """Replace the record if its znode is still at ``version``: the new version, or None."""
        with self._calling():
            try:
                stat = self._zk.set(self._log_path(log_id), record.encode(), version=version)
            except self._errors.BadVersionError:
                return None
            except self._errors.NoNodeError:
                raise UnknownLogError(f"log {log_id} does not exist in this cluster") from None
        return int(stat.version)

    def trim_point(self, log_id: int) -> int:
        """The log's trim point (0: never trimmed): every reader starts past it."""
        path = f"{self.root}/trims/{log_id}"
        with self._calling():
            try:
                raw, _ = self._zk.get(path)
            except self._errors.NoNodeError:
                return 0
        if not (raw.isascii() and raw.isdigit()):
            raise CorruptionError(f"the trim znode of log {log_id} holds {raw[:40]!r}")
        return int(raw)

    def raise_trim_point(self, log_id: int, lsn: int) -> int:
        """Move the log's trim point up to ``lsn`` (never down); the trim point now."""
        path = f"{self.root}/trims/{log_id}"
        self._log_path(log_id)  # checks the id
        with self._calling():
            self._zk.ensure_path(f"{self.root}/trims")
            for _ in range(32):
                try:
                    raw, stat = self._zk.get(path)
                except self._errors.NoNodeError:
                    try:
                        self._zk.create(path, str(lsn).encode())
                        return lsn
                    except self._errors.NodeExistsError:
                        continue
                current = int(raw) if raw.isdigit() else 0
                if lsn <= current:
                    return current
                try:
                    self._zk.set(path, str(lsn).encode(), version=stat.version)
                    return lsn
                except self._errors.BadVersionError:
                    continue
        raise UnavailableError(f"log {log_id}: its trim point is contended")

    def logs(self, limit: int = 10_000) -> list[int]:
        with self._calling():
            names = self._zk.get_children(f"{self.root}/logs")
        return sorted(int(n) for n in names if n.isdigit())[:limit]

    def default_replication(self) -> int:
        """The replication of logs created without one (set by ``seaway cluster up``; else 2)."""
        with self._calling():
            try:
                raw, _ = self._zk.get(f"{self.root}/config")
            except self._errors.NoNodeError:
                return 2
        try:
            return int(json.loads(raw)["replication"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptionError(f"the cluster's config znode holds {raw[:60]!r}") from exc

    def set_default_replication(self, replication: int) -> None:
        raw = json.dumps({"replication": replication}).encode()
        with self._calling():
            try:
                self._zk.create(f"{self.root}/config", raw)
            except self._errors.NodeExistsError:
                self._zk.set(f"{self.root}/config", raw)

    def stay_registered(self, node_id: int, address: str, instance: str) -> None:
        """Register, and again whenever the session was lost and a new one made (a node paused or cut
        off past the session timeout comes back into the membership). A ZooKeeper that does not
        answer is tried again for ``REGISTER_WAIT_S`` (a loaded machine can expire a new session)."""
        deadline = time.monotonic() + REGISTER_WAIT_S
        while True:
            try:
                self.register(node_id, address, instance)
                break
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        states = importlib.import_module("kazoo.protocol.states")
        lost = threading.Event()

        def listener(state: Any) -> None:
            if state == states.KazooState.LOST:
                lost.set()
            elif state == states.KazooState.CONNECTED and lost.is_set() and not self._closed:
                lost.clear()  # not from kazoo's own thread: a call here would wait on it
                threading.Thread(target=self._register_again, args=(node_id, address, instance), daemon=True).start()

        self._zk.add_listener(listener)

    def _register_again(self, node_id: int, address: str, instance: str) -> None:
        with contextlib.suppress(Exception):
            self.register(node_id, address, instance)

    def register(self, node_id: int, address: str, instance: str) -> None:
        """Join the membership as ``node_id`` (until this client's session ends). ``instance`` names
        the node's data directory: a member of the same id and instance is this node's previous
        process, whose session has not expired yet (it was killed), and is replaced; one of another
        instance is another node given the same id, and refused."""
        path = f"{self.root}/nodes/{node_id}"
        raw = json.dumps({"address": address, "instance": instance}).encode()
        with self._calling():
            for _ in range(3):
                try:
                    self._zk.create(path, raw, ephemeral=True)
                    return
                except self._errors.NodeExistsError:
                    pass
                try:
                    old, stat = self._zk.get(path)
                except self._errors.NoNodeError:
                    continue
                try:
                    theirs = json.loads(old).get("instance")
                except (ValueError, AttributeError):
                    theirs = None
                if theirs != instance:
                    raise InvalidArgumentError(f"node {node_id} is already a live member of the cluster, with "
                                               f"another data directory")
                with contextlib.suppress(self._errors.NoNodeError, self._errors.BadVersionError):
                    self._zk.delete(path, version=stat.version)
        raise UnavailableError(f"node {node_id}: could not take its place in the membership")

    def members(self) -> dict[int, str]:
        """Live nodes and their addresses."""
        out: dict[int, str] = {}
        with self._calling():
            for name in self._zk.get_children(f"{self.root}/nodes"):
                if not name.isdigit():
                    continue
                try:
                    raw, _ = self._zk.get(f"{self.root}/nodes/{name}")
                except self._errors.NoNodeError:
                    continue
                try:
                    out[int(name)] = str(json.loads(raw)["address"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise CorruptionError(f"member znode {name} holds {raw[:60]!r}") from exc
        return out

    def watch_members(self, callback: Callable[[dict[int, str]], None]) -> None:
        """Call ``callback`` with the members now and after every change, from a thread of its own
        (kazoo's watch callbacks must not call ZooKeeper themselves)."""
        changed = threading.Event()

        def refresh() -> None:
            idle = 0
            while not self._closed:
                if not changed.wait(1.0):
                    idle += 1
                    if idle < MEMBERS_REFRESH_S:  # and every few seconds anyway, should a watch be lost
                        continue
                idle = 0
                changed.clear()
                try:
                    callback(self.members())
                except Exception:  # ZooKeeper unreachable for now: read again at the next change or second
                    changed.set()

        threading.Thread(target=refresh, name="seaway-members", daemon=True).start()
        self._zk.ChildrenWatch(f"{self.root}/nodes", lambda _children: changed.set())

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            self._zk.stop()
        with contextlib.suppress(Exception):
            self._zk.close()
