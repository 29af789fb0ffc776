"""The epoch store in ZooKeeper, as LogDevice keeps it: one znode per log holding its epoch, changed
only by compare-and-set on the znode's version; several at once in one ZooKeeper transaction
(``multi``), all or none. Needs the ``cluster`` extra (``kazoo``).

Znodes: ``<root>/epochs/<log id>``, the epoch in decimal. A log whose znode is absent has epoch 0.
A call whose connection fails (lost, timed out, its session expired) raises
:class:`UnavailableError`: retriable, and its outcome unknown (a compare-and-set may have landed), so
the caller reads again before it tries again, as :func:`bump_epoch` does; an epoch taken so and
never used is harmless, since epochs only have to grow.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from seaway.errors import ClosedError, CorruptionError, InvalidArgumentError, StorageError, UnavailableError


def _kazoo() -> tuple[Any, Any]:
    """kazoo's client and exceptions modules, loaded when a store is made (an optional extra)."""
    try:
        return importlib.import_module("kazoo.client"), importlib.import_module("kazoo.exceptions")
    except ImportError:
        raise InvalidArgumentError("the ZooKeeper epoch store needs kazoo: pip install 'seaway[cluster]'") from None


class ZooKeeperEpochStore:
    """Epochs in ZooKeeper at ``hosts`` (``host:port,...``), under ``root`` (a path of its own per
    cluster)."""

    def __init__(self, hosts: str, root: str = "/seaway", *, timeout_s: float = 10.0) -> None:
        if (not isinstance(root, str) or not root.startswith("/") or root.endswith("/") or "//" in root
                or any(part in (".", "..") for part in root.split("/")) or "\x00" in root):
            raise InvalidArgumentError(f"a ZooKeeper root is an absolute path without a trailing /, '.', '..' or"
                                       f" NUL, got {root!r:.200}")
        client, self._errors = _kazoo()
        self._base = f"{root}/epochs"
        self._zk = client.KazooClient(hosts=hosts, timeout=timeout_s)
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._zk.start(timeout=timeout_s)
        except Exception as exc:
            self._discard()
            raise UnavailableError(f"cannot reach ZooKeeper at {hosts}: {exc}") from exc
        try:
            with self._calling():  # refused (the path's ACL): StorageError; cut off: UnavailableError
                self._zk.ensure_path(self._base)
        except BaseException:
            self._discard()  # stopped before closed: kazoo closes only a stopped client
            raise

    def _discard(self) -> None:
        """Stop and close the client of a store that failed to open (its threads end)."""
        self._closed = True
        with contextlib.suppress(Exception):
            self._zk.stop()
        with contextlib.suppress(Exception):
            self._zk.close()

    def _path(self, log_id: int) -> str:
        if not isinstance(log_id, int) or isinstance(log_id, bool) or log_id < 0:
            raise InvalidArgumentError(f"a log id is a non-negative integer, got {log_id!r}")
        return f"{self._base}/{log_id}"

    @contextmanager
    def _calling(self) -> Iterator[None]:
        if self._closed:
            raise ClosedError("the epoch store is closed")
        try:
            yield
        except (self._errors.ConnectionLoss, self._errors.SessionExpiredError,
                self._errors.OperationTimeoutError) as exc:
            raise UnavailableError(f"ZooKeeper did not answer ({type(exc).__name__}); the outcome is unknown") from exc
        except self._errors.ZookeeperError as exc:  # the server refused the call
            raise StorageError(f"ZooKeeper refused the epoch store's call: {exc!r}") from exc
        except self._errors.KazooException as exc:
            raise UnavailableError(f"ZooKeeper call failed: {exc!r}") from exc

    def _read(self, log_id: int) -> tuple[int, int | None]:
        """The epoch and the znode's version (None: no znode)."""
        try:
            raw, stat = self._zk.get(self._path(log_id))
        except self._errors.NoNodeError:
            return 0, None
        if not (isinstance(raw, bytes) and raw.isascii() and raw.isdigit()):  # written by someone else
            raise CorruptionError(f"the epoch znode {self._path(log_id)} holds {raw[:40]!r}, not an epoch")
        return int(raw), int(stat.version)

    def get(self, log_id: int) -> int:
        with self._calling():
            return self._read(log_id)[0]

    def compare_and_set(self, log_id: int, expected: int, new: int) -> bool:
        return self.compare_and_set_many({log_id: (expected, new)})

    def compare_and_set_many(self, changes: Mapping[int, tuple[int, int]]) -> bool:
        if not changes:
            return True
        with self._calling():
            transaction = self._zk.transaction()
            for log_id, (expected, new) in changes.items():
                if not isinstance(new, int) or isinstance(new, bool) or new < 0:
                    raise InvalidArgumentError(f"an epoch is a non-negative integer, got {new!r}")
                epoch, version = self._read(log_id)
                if epoch != expected:
                    return False
                path, value = self._path(log_id), str(new).encode()
                if version is None:  # never had one: created, failing if another client created it first
                    transaction.create(path, value)
                else:  # set only if no one changed it since it was read
                    transaction.set_data(path, value, version=version)
            results = transaction.commit()
            failed = [r for r in results if isinstance(r, Exception)]
            if not failed:
                return True
            if all(isinstance(r, (self._errors.BadVersionError, self._errors.NodeExistsError,
                                  self._errors.RolledBackError)) for r in failed):
                return False  # another client changed one of them meanwhile
            raise failed[0]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._zk.stop()
        self._zk.close()
