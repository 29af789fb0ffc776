"""Log names and log groups: named ranges of log ids whose logs inherit the group's attributes.

The configuration is kept as JSON values under the log store's metadata keys ``cfg/group/<name>``
and ``cfg/log/<name>``; each change is one durable metadata write, with its change ledger entry. A deleted log leaves
``cfg/deleted/<id>`` for good, written before anything else of the deletion: its id is never given
again, and a deletion a crash interrupted is finished when the store opens.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seaway._invariant import InvariantViolation, invariant
from seaway.errors import InvalidArgumentError, LogDeletedError, LogExistsError, UnknownLogError
from seaway.ledger import LogCreated, LogGroupCreated, LogRemoved, encode_change
from seaway.log._types import LogAttributes, overrides_from_json, overrides_to_json

if TYPE_CHECKING:  # the remote client uses this module and must not load RocksDB
    from seaway.logsdb import LogsDB

LOG_ID_MAX = 2**62
"""Log ids are in ``[1, LOG_ID_MAX]``."""
NAME_CHARS_MAX = 255
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_GROUP_PREFIX = b"cfg/group/"
_LOG_PREFIX = b"cfg/log/"
_DELETED_PREFIX = b"cfg/deleted/"


def _deleted_key(log_id: int) -> bytes:
    return _DELETED_PREFIX + b"%016x" % log_id


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > NAME_CHARS_MAX:
        raise InvalidArgumentError(
            f"{what} name must be 1-{NAME_CHARS_MAX} characters of letters, digits and ._/- "
            f"starting with a letter or digit, got {name!r}")
    return name


@dataclass(frozen=True)
class LogGroup:
    """A named range ``[first_id, last_id]`` of log ids and the attributes its logs inherit."""

    name: str
    first_id: int
    last_id: int
    overrides: dict[str, Any]


@dataclass(frozen=True)
class LogInfo:
    """A log's name, id, group and resolved attributes."""

    name: str
    log_id: int
    group: str | None
    attributes: LogAttributes
    overrides: dict[str, Any]


class LogsConfig:
    """Names, ids and groups of the logs of one store. Thread-safe.

    Lookups (:meth:`get`, :meth:`logs`, :meth:`groups`, :meth:`backlog_ms`) take no lock: each
    reads the dicts below, which only writers change, one atomic dict store or delete at a time,
    in an order that never shows a reader a half-made change (a log is added only once its entry
    is durable; a deleted log's mark is durable before it leaves the dicts). Writers (creations,
    deletions) take ``_lock`` among themselves, across their durable write: so every server
    append's lookup goes on while a creation waits for its sync.

    A deleted log costs no memory here: whether an id belonged to a deleted log is read from its
    durable mark, only when a lookup or a creation meets an id it does not know.
    """

    def __init__(self, db: LogsDB, defaults: LogAttributes) -> None:
        self._db = db
        self._defaults = defaults
        self._lock = threading.Lock()  # writers only
        self._groups: dict[str, LogGroup] = {}
        self._logs: dict[str, LogInfo] = {}
        self._by_id: dict[int, LogInfo] = {}
        self._max_id: dict[str | None, int] = {}  # group (None: no group) -> its highest log id, deleted ones too
        for _, raw in db.scan_meta(_GROUP_PREFIX):
            g = json.loads(raw)
            self._groups[g["name"]] = LogGroup(g["name"], g["first_id"], g["last_id"],
                                               overrides_from_json(g["overrides"]))
        deleted: set[int] = set()  # only while opening
        for _, raw in db.scan_meta(_DELETED_PREFIX):
            entry = json.loads(raw)
            deleted.add(entry["log_id"])
            self._max_id[entry["group"]] = max(self._max_id.get(entry["group"], 0), entry["log_id"])
        for _, raw in db.scan_meta(_LOG_PREFIX):
            entry = json.loads(raw)
            if entry["log_id"] not in deleted:  # else a deletion a crash interrupted
                self._add(entry["name"], entry["log_id"], entry["group"], overrides_from_json(entry["overrides"]))

    def _deleted_name(self, log_id: object) -> str | None:
        """The name a deleted log had; None if ``log_id`` is not the id of a deleted log."""
        if not isinstance(log_id, int) or isinstance(log_id, bool) or not 1 <= log_id <= LOG_ID_MAX:
            return None
        raw = self._db.get_meta(_deleted_key(log_id))
        return None if raw is None else str(json.loads(raw)["name"])

    def _resolve(self, group: str | None, overrides: dict[str, Any]) -> LogAttributes:
        attrs = self._defaults
        if group is not None:
            attrs = attrs.with_overrides(self._groups[group].overrides)
        return attrs.with_overrides(overrides)

    def _add(self, name: str, log_id: int, group: str | None, overrides: dict[str, Any]) -> LogInfo:
        info = LogInfo(name, log_id, group, self._resolve(group, overrides), overrides)
        self._max_id[group] = max(self._max_id.get(group, 0), log_id)
        self._by_id[log_id] = info
        self._logs[name] = info
        return info

    def create_group(self, name: str, first_id: int, last_id: int, overrides: dict[str, Any]) -> LogGroup:
        check_name(name, "log group")
        if not (isinstance(first_id, int) and isinstance(last_id, int) and 1 <= first_id <= last_id <= LOG_ID_MAX):
            raise InvalidArgumentError(f"a group's ids must satisfy 1 <= first <= last <= 2**62, got "
                                       f"[{first_id}, {last_id}]")
        self._defaults.with_overrides(overrides)  # validates
        with self._lock:
            if name in self._groups:
                raise LogExistsError(f"log group {name!r} exists")
            for g in self._groups.values():
                if first_id <= g.last_id and g.first_id <= last_id:
                    raise LogExistsError(f"ids [{first_id}, {last_id}] overlap group {g.name!r}")
            for info in self._logs.values():
                if first_id <= info.log_id <= last_id:
                    raise LogExistsError(f"log {info.name!r} (id {info.log_id}) is already in that range")
            group = LogGroup(name, first_id, last_id, overrides)
            self._db.put_meta(_GROUP_PREFIX + name.encode(), json.dumps(
                {"name": name, "first_id": first_id, "last_id": last_id,
                 "overrides": overrides_to_json(overrides)}).encode(),
                ledger=encode_change(LogGroupCreated(name, first_id, last_id)))
            self._groups[name] = group
            return group

    def create_log(self, name: str, log_id: int | None, group: str | None,
                   overrides: dict[str, Any]) -> LogInfo:
        check_name(name, "log")
        with self._lock:
            if name in self._logs:
                raise LogExistsError(f"log {name!r} exists")
            if group is not None and group not in self._groups:
                raise UnknownLogError(f"no log group {group!r}")
            attrs = self._resolve(group, overrides)  # validates the overrides
            log_id = self._choose_id(log_id, group)
            self._db.put_meta(_LOG_PREFIX + name.encode(), json.dumps(
                {"name": name, "log_id": log_id, "group": group,
                 "overrides": overrides_to_json(overrides)}).encode(),
                ledger=encode_change(LogCreated(log_id, name, group)))
            info = self._add(name, log_id, group, overrides)
            invariant(info.attributes == attrs, "a log's attributes resolve the same way twice")
            return info

    def create_logs(self, new: Sequence[tuple[str, int | None, str | None]],
                    commit: Callable[[list[tuple[bytes, bytes]], list[bytes]], int]) -> int:
        """Create logs ``(name, log_id or None, group)`` (attributes from their groups) in the same
        write as a metadata batch: ``commit(keys, ledger_entries)`` makes that write, with the
        logs' configuration keys and their ``log.created`` entries, and returns its revision (or
        raises, and then no log is created). :class:`LogExistsError` if a name or an id is taken
        (or given twice), before anything is written."""
        with self._lock:
            keys: list[tuple[bytes, bytes]] = []
            entries: list[bytes] = []
            planned: list[tuple[str, int, str | None]] = []
            saved_max = dict(self._max_id)
            names: set[str] = set()
            ids: set[int] = set()
            try:
                for name, log_id, group in new:
                    check_name(name, "log")
                    if name in self._logs or name in names:
                        raise LogExistsError(f"log {name!r} exists")
                    if group is not None and group not in self._groups:
                        raise UnknownLogError(f"no log group {group!r}")
                    chosen = self._choose_id(log_id, group)
                    if chosen in ids:
                        raise LogExistsError(f"log id {chosen} is given twice")
                    names.add(name)
                    ids.add(chosen)
                    self._max_id[group] = max(self._max_id.get(group, 0), chosen)  # the next one chosen is above
                    planned.append((name, chosen, group))
                    keys.append((_LOG_PREFIX + name.encode(), json.dumps(
                        {"name": name, "log_id": chosen, "group": group, "overrides": {}}).encode()))
                    entries.append(encode_change(LogCreated(chosen, name, group)))
                revision = commit(keys, entries)
            finally:
                self._max_id = saved_max  # _add() below raises it again for what was created
            for name, chosen, group in planned:
                self._add(name, chosen, group, {})
            return revision

    def _choose_id(self, log_id: int | None, group: str | None) -> int:
        lo, hi = 1, LOG_ID_MAX
        if group is not None:
            lo, hi = self._groups[group].first_id, self._groups[group].last_id
        if log_id is not None:
            if not isinstance(log_id, int) or isinstance(log_id, bool) or not (lo <= log_id <= hi):
                raise InvalidArgumentError(f"log id must be in [{lo}, {hi}], got {log_id!r}")
            if log_id in self._by_id:
                raise LogExistsError(f"log id {log_id} is taken by {self._by_id[log_id].name!r}")
            if self._deleted_name(log_id) is not None:
                raise LogExistsError(f"log id {log_id} belonged to a deleted log: ids are never used again")
            if group is None and self._group_of_id(log_id) is not None:
                raise InvalidArgumentError(f"log id {log_id} is inside group {self._group_of_id(log_id)!r}")
            return log_id
        candidate = max(self._max_id.get(group, 0), lo - 1) + 1
        while candidate <= hi:
            g = self._group_of_id(candidate) if group is None else None
            if g is None:
                return candidate
            candidate = self._groups[g].last_id + 1
        raise InvalidArgumentError(f"no free log id left in [{lo}, {hi}]")

    def _group_of_id(self, log_id: int) -> str | None:
        for g in self._groups.values():
            if g.first_id <= log_id <= g.last_id:
                return g.name
        return None

    def get(self, name_or_id: str | int) -> LogInfo:
        """The log's name, id and attributes (no lock: see the class docstring)."""
        info = self._by_id.get(name_or_id) if isinstance(name_or_id, int) else self._logs.get(name_or_id)
        if info is not None:
            return info
        name = self._deleted_name(name_or_id)
        if name is not None:
            raise LogDeletedError(f"log {name_or_id} ({name!r}) was deleted")
        raise UnknownLogError(f"no log {name_or_id!r}")

    def mark_deleted(self, log_id: int) -> None:
        """Durably record that the log is deleted; from now on it is unknown by name and id."""
        with self._lock:
            info = self._by_id.get(log_id)
            if info is None:
                invariant(self._deleted_name(log_id) is not None, "only a known log is marked deleted")
                return
            self._db.put_meta(_deleted_key(log_id), json.dumps(
                {"name": info.name, "log_id": log_id, "group": info.group}).encode(),
                ledger=encode_change(LogRemoved(log_id, info.name)))
            # Durable first: a lookup that no longer finds the log finds its mark.
            del self._by_id[log_id]
            if self._logs.get(info.name) is info:
                del self._logs[info.name]

    def forget_name(self, log_id: int) -> None:
        """Remove a deleted log's name entry, unless a new log has the name already (idempotent)."""
        with self._lock:
            name = self._deleted_name(log_id)
            if name is None:
                raise InvariantViolation(f"log {log_id}: only a deleted log's name is forgotten")
            raw = self._db.get_meta(_LOG_PREFIX + name.encode())
            if raw is not None and json.loads(raw)["log_id"] == log_id:
                self._db.delete_meta(_LOG_PREFIX + name.encode())

    def deleted_ids(self) -> list[int]:
        """Every deleted log's id, read from their durable marks."""
        return sorted(json.loads(raw)["log_id"] for _, raw in self._db.scan_meta(_DELETED_PREFIX))

    def logs(self) -> list[LogInfo]:
        # dict.copy() is one step under the GIL: a creation or deletion meanwhile is in it or not.
        return sorted(self._logs.copy().values(), key=lambda i: i.log_id)

    def groups(self) -> list[LogGroup]:
        return sorted(self._groups.copy().values(), key=lambda g: g.first_id)

    def backlog_ms(self, log_id: int) -> int | None:
        info = self._by_id.get(log_id)
        if info is None or info.attributes.backlog_s is None:
            return None
        return int(info.attributes.backlog_s * 1000)
