"""The cluster's use of ZooKeeper (``kazoo``, the ``cluster`` extra): each log's epoch record, changed
only by compare-and-set on its znode's version, and the membership of live nodes (ephemeral znodes).

Znodes under the cluster's root: ``logs/<log id>`` (the epoch record as JSON: docs/cluster.md) and
``nodes/<node id>`` (``{"address": "host:port"}``, gone when the node's session ends). Nothing else
on the data path touches ZooKeeper.

The logs API's configuration (:class:`seaway.cluster.ClusterLogs`) sits beside them:
``names/<quoted name>`` (``{"log_id": N}``), ``meta/<log id>`` (``{"name", "group", "attributes",
"deleted"}``), ``groups/<quoted name>`` (``{"first_id", "last_id", "attributes"}``; the data version
of ``groups`` itself changes with every group created, and log creations check it, so a log and a
group that would overlap never both land) and ``ids/<group>`` (the highest id given in the group,
``-`` for logs outside groups). Each change is one ZooKeeper transaction (multi-op): a name, its
metadata and its epoch record are created together or not at all.
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
from urllib.parse import quote

from seaway.errors import (
    ClosedError,
    CorruptionError,
    InvalidArgumentError,
    LogDeletedError,
    LogExistsError,
    StorageError,
    UnavailableError,
    UnknownLogError,
)
from seaway.log import LOG_ID_MAX
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


def _quote(name: str) -> str:
    """A name as one znode's name (names may hold ``/``)."""
    return quote(name, safe="")


def _json(raw: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise CorruptionError(f"a {what} znode holds {raw[:60]!r}") from exc
    if not isinstance(doc, dict):
        raise CorruptionError(f"a {what} znode holds {raw[:60]!r}")
    return doc


class ZooKeeperCluster:
    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        hosts, self.root = parse_zk_url(url)
        client, self._errors = _kazoo()
        self._zk = client.KazooClient(hosts=hosts, timeout=timeout_s)
        self._closed = False
        self._lock = threading.Lock()
        self._control_claim: tuple[int, str, str] | None = None
        try:
            self._zk.start(timeout=timeout_s)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._zk.close()
            self._closed = True
            raise UnavailableError(f"cannot reach ZooKeeper at {hosts}: {exc}") from exc
        with self._calling():
            for part in ("logs", "nodes", "names", "meta", "groups", "ids"):
                self._zk.ensure_path(f"{self.root}/{part}")

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

    # --- names, groups and attributes (the logs API) ----------------------------------------------

    def _groups(self) -> tuple[int, dict[str, dict[str, Any]]]:
        """The groups and the version of the group set (log creations check it)."""
        _, stat = self._zk.get(f"{self.root}/groups")
        out: dict[str, dict[str, Any]] = {}
        for child in self._zk.get_children(f"{self.root}/groups"):
            try:
                raw, _ = self._zk.get(f"{self.root}/groups/{child}")
            except self._errors.NoNodeError:
                continue
            doc = _json(raw, "group")
            out[str(doc["name"])] = doc
        return int(stat.version), out

    def groups(self) -> list[dict[str, Any]]:
        with self._calling():
            _, groups = self._groups()
        return sorted(groups.values(), key=lambda g: int(g["first_id"]))

    def create_group(self, name: str, first_id: int, last_id: int, attributes: dict[str, Any]) -> None:
        """Create a group (:class:`LogExistsError` if the name is taken or the range overlaps a group
        or a log)."""
        with self._calling():
            for _ in range(32):
                version, groups = self._groups()
                if name in groups:
                    raise LogExistsError(f"log group {name!r} exists")
                for g in groups.values():
                    if first_id <= int(g["last_id"]) and int(g["first_id"]) <= last_id:
                        raise LogExistsError(f"ids [{first_id}, {last_id}] overlap group {g['name']!r}")
                for child in self._zk.get_children(f"{self.root}/meta"):
                    if child.isdigit() and first_id <= int(child) <= last_id:
                        meta = self._meta(int(child))
                        if meta is not None and not meta.get("deleted"):
                            raise LogExistsError(f"log {meta['name']!r} (id {child}) is already in that range")
                doc = {"name": name, "first_id": first_id, "last_id": last_id, "attributes": attributes}
                tx = self._zk.transaction()
                tx.set_data(f"{self.root}/groups", b"", version=version)
                tx.create(f"{self.root}/groups/{_quote(name)}", json.dumps(doc).encode())
                results = tx.commit()
                if not any(isinstance(r, Exception) for r in results):
                    return
                if isinstance(results[1], self._errors.NodeExistsError):
                    raise LogExistsError(f"log group {name!r} exists")
        raise UnavailableError("the cluster's groups are contended")

    def _meta(self, log_id: int) -> dict[str, Any] | None:
        try:
            raw, _ = self._zk.get(f"{self.root}/meta/{log_id}")
        except self._errors.NoNodeError:
            return None
        doc = _json(raw, "log")
        doc["log_id"] = log_id
        return doc

    def create_named_log(self, name: str, log_id: int | None, group: str | None, attributes: dict[str, Any],
                         record: EpochRecord) -> int:
        """Create a log with a name: its name, metadata and epoch record in one transaction. Its id
        (``log_id``, or the next free one of its group, or outside every group). :class:`LogExistsError`
        if the name or the id is taken (ids of deleted logs are never given again)."""
        key = group if group is not None else "-"
        floor = 0
        with self._calling():
            for _ in range(64):
                version, groups = self._groups()
                if group is not None and group not in groups:
                    raise UnknownLogError(f"no log group {group!r}")
                lo, hi = (int(groups[group]["first_id"]), int(groups[group]["last_id"])) if group else (1, LOG_ID_MAX)
                counter_path = f"{self.root}/ids/{_quote(key)}"
                try:
                    raw, stat = self._zk.get(counter_path)
                    counter, counter_version = int(raw), int(stat.version)
                except self._errors.NoNodeError:
                    counter, counter_version = 0, -1
                if log_id is not None:
                    if not lo <= log_id <= hi:
                        raise InvalidArgumentError(f"log id must be in [{lo}, {hi}], got {log_id!r}")
                    inside = [g for g in groups.values() if int(g["first_id"]) <= log_id <= int(g["last_id"])]
                    if group is None and inside:
                        raise InvalidArgumentError(f"log id {log_id} is inside group {inside[0]['name']!r}")
                    chosen = log_id
                else:
                    chosen = max(counter, floor, lo - 1) + 1
                    while group is None:
                        inside = [g for g in groups.values() if int(g["first_id"]) <= chosen <= int(g["last_id"])]
                        if not inside:
                            break
                        chosen = int(inside[0]["last_id"]) + 1
                    if chosen > hi:
                        raise InvalidArgumentError(f"no free log id left in [{lo}, {hi}]")
                meta = {"name": name, "group": group, "attributes": attributes}
                tx = self._zk.transaction()
                tx.check(f"{self.root}/groups", version)
                tx.create(f"{self.root}/names/{_quote(name)}", json.dumps({"log_id": chosen}).encode())
                tx.create(f"{self.root}/meta/{chosen}", json.dumps(meta).encode())
                tx.create(self._log_path(chosen), record.encode())
                if chosen > counter:
                    if counter_version < 0:
                        tx.create(counter_path, str(chosen).encode())
                    else:
                        tx.set_data(counter_path, str(chosen).encode(), version=counter_version)
                results = tx.commit()
                if not any(isinstance(r, Exception) for r in results):
                    return chosen
                if isinstance(results[1], self._errors.NodeExistsError):
                    raise LogExistsError(f"log {name!r} exists")
                if isinstance(results[2], self._errors.NodeExistsError) \
                        or isinstance(results[3], self._errors.NodeExistsError):
                    if log_id is not None:
                        old = self._meta(chosen)
                        if old is not None and old.get("deleted"):
                            raise LogExistsError(f"log id {chosen} belonged to a deleted log: ids are never used "
                                                 f"again")
                        raise LogExistsError(f"log id {chosen} is taken")
                    floor = chosen  # a log made by id alone (ClusterClient.create_log): the next one
        raise UnavailableError(f"log {name!r}: the cluster's log ids are contended")

    def get_log(self, name_or_id: str | int) -> dict[str, Any]:
        """A log's metadata (``name``, ``log_id``, ``group``, ``attributes``): :class:`UnknownLogError`,
        :class:`LogDeletedError` for a deleted log's id."""
        with self._calling():
            if isinstance(name_or_id, str):
                try:
                    raw, _ = self._zk.get(f"{self.root}/names/{_quote(name_or_id)}")
                except self._errors.NoNodeError:
                    raise UnknownLogError(f"no log {name_or_id!r}") from None
                log_id = int(_json(raw, "name")["log_id"])
            else:
                log_id = name_or_id
            meta = self._meta(log_id)
        if meta is None:
            raise UnknownLogError(f"no log {name_or_id!r}")
        if meta.get("deleted"):
            raise LogDeletedError(f"log {log_id} ({meta['name']!r}) was deleted")
        return meta

    def list_logs(self, after_id: int, limit: int) -> list[dict[str, Any]]:
        """Named logs (not deleted) with ids above ``after_id``, in id order, at most ``limit``."""
        out: list[dict[str, Any]] = []
        with self._calling():
            ids = sorted(int(c) for c in self._zk.get_children(f"{self.root}/meta") if c.isdigit())
            for log_id in ids:
                if log_id <= after_id:
                    continue
                meta = self._meta(log_id)
                if meta is not None and not meta.get("deleted"):
                    out.append(meta)
                    if len(out) >= limit:
                        break
        return out

    def mark_deleted(self, log_id: int) -> None:
        """The log's metadata says deleted; its name is free again (idempotent)."""
        with self._calling():
            for _ in range(32):
                try:
                    raw, stat = self._zk.get(f"{self.root}/meta/{log_id}")
                except self._errors.NoNodeError:
                    return
                meta = _json(raw, "log")
                name_path = f"{self.root}/names/{_quote(str(meta['name']))}"
                tx = self._zk.transaction()
                if not meta.get("deleted"):
                    meta["deleted"] = True
                    tx.set_data(f"{self.root}/meta/{log_id}", json.dumps(meta).encode(), version=stat.version)
                try:
                    name_raw, name_stat = self._zk.get(name_path)
                    if int(_json(name_raw, "name")["log_id"]) == log_id:
                        tx.delete(name_path, version=name_stat.version)
                except self._errors.NoNodeError:
                    pass
                if not tx.operations:
                    return
                if not any(isinstance(r, Exception) for r in tx.commit()):
                    return
        raise UnavailableError(f"log {log_id}: its deletion is contended")

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
        if self._control_claim is not None:
            with contextlib.suppress(Exception):
                self.register_control(*self._control_claim)

    def register_control(self, node_id: int, address: str, instance: str) -> None:
        """Become the cluster's control node, serving clients at ``address`` (until this client's
        session ends; again after a new session, as the membership). There is one: a control node
        of another node, or of another data directory, refuses this one (its state is on its own
        disk: no other node can take over from it)."""
        path = f"{self.root}/control"
        raw = json.dumps({"node": node_id, "address": address, "instance": instance}).encode()
        with self._calling():
            for _ in range(3):
                try:
                    self._zk.create(path, raw, ephemeral=True)
                    self._control_claim = (node_id, address, instance)
                    return
                except self._errors.NodeExistsError:
                    pass
                try:
                    old, stat = self._zk.get(path)
                except self._errors.NoNodeError:
                    continue
                theirs = _json(old, "control")
                if theirs.get("instance") != instance or theirs.get("node") != node_id:
                    raise InvalidArgumentError(
                        f"node {theirs.get('node')} ({theirs.get('address')}) is the cluster's control node: a "
                        f"cluster has one (its metadata and transactions are on that node's disk)")
                with contextlib.suppress(self._errors.NoNodeError, self._errors.BadVersionError):
                    self._zk.delete(path, version=stat.version)  # this node's previous process
        raise UnavailableError(f"node {node_id}: could not register as the control node")

    def control(self) -> tuple[int, str] | None:
        """The control node's id and the address it serves clients at, or None when none is up."""
        with self._calling():
            try:
                raw, _ = self._zk.get(f"{self.root}/control")
            except self._errors.NoNodeError:
                return None
        found = _json(raw, "control")
        try:
            return int(found["node"]), str(found["address"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptionError(f"the control znode holds {raw[:60]!r}") from exc

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
