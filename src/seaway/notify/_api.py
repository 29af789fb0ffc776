"""``sw.notify``: notification configurations and the plugins' positions, kept in the metadata
store (namespace ``notify``), so the same library works embedded and through a server.

Keys: ``config/<name>`` (the configuration's JSON), ``checkpoint/<name>`` (the plugin's position
and counters, written by the plugin after each acknowledgement), ``configs`` (touched by every
change of configuration, so that two concurrent changes cannot together create overlapping rules).
"""

from __future__ import annotations

import builtins
import contextlib
import json
from dataclasses import dataclass, field
from typing import TypeGuard

from seaway.errors import (
    ConditionFailedError,
    CorruptionError,
    InvalidArgumentError,
    NotifyConfigOverlapError,
    NotifyConfigsFullError,
    SeawayError,
    UnknownNotifyConfigError,
)
from seaway.ledger import NotifyConfigDeleted, NotifyConfigured
from seaway.log import LedgerApi, MetaApi
from seaway.notify._config import NotifyConfig
from seaway.notify._policy import TargetPolicy
from seaway.notify._source import LedgerSource

NAMESPACE = "notify"
CONFIGS_KEY = b"configs"
CONFIGS_MAX = 256
SET_ATTEMPTS_MAX = 16
"""Rounds of set()/delete() lost to concurrent configuration changes before giving up."""


def config_key(name: str) -> bytes:
    return b"config/" + name.encode()


def checkpoint_key(name: str) -> bytes:
    return b"checkpoint/" + name.encode()


def floor_name(name: str) -> str:
    """The ledger floor of a configuration's plugin: the soft bound prunes nothing it has not delivered."""
    return f"notify/{name}"


COUNTERS = ("triggered", "delivered", "failed", "dropped", "missed")


LAST_ERROR_CHARS_MAX = 1000
"""The most of a delivery error's message a checkpoint keeps."""


@dataclass(frozen=True)
class Checkpoint:
    """A plugin's persisted position: every entry up to ``index`` has been acknowledged by its
    target (or was not selected, or was given up, or was missed), and its counters then."""

    index: int
    counters: dict[str, int] = field(default_factory=dict)
    time_ms: int = 0
    last_error: str | None = None
    """Why the last delivery that failed failed (``entry N: ...``), or None if none has; kept after
    the target recovers, with :attr:`last_error_ms`, until a newer failure."""
    last_error_ms: int = 0

    def to_bytes(self) -> bytes:
        """The saved form; the last error cut to :data:`LAST_ERROR_CHARS_MAX` characters."""
        data: dict[str, object] = {"index": self.index, "counters": self.counters, "time_ms": self.time_ms}
        if self.last_error is not None:
            data.update(last_error=self.last_error[:LAST_ERROR_CHARS_MAX], last_error_ms=self.last_error_ms)
        return json.dumps(data).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Checkpoint:
        """Parse a saved checkpoint. The namespace is writable by any client, so what is read is
        checked: :class:`CorruptionError` says what is wrong with anything else."""
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            data = None
        if not isinstance(data, dict):
            raise CorruptionError(f"a notification checkpoint is a JSON object, got {raw[:40]!r}")
        index, counters, time_ms = data.get("index"), data.get("counters", {}), data.get("time_ms", 0)
        if not _is_count(index) or not _is_count(time_ms) or not isinstance(counters, dict) \
                or not all(isinstance(k, str) and _is_count(v) for k, v in counters.items()):
            raise CorruptionError("a notification checkpoint has an index, counters and a time_ms that are "
                                  f"whole numbers from 0, got {raw[:80]!r}")
        last_error, last_error_ms = data.get("last_error"), data.get("last_error_ms", 0)
        if not (last_error is None or (isinstance(last_error, str) and len(last_error) <= LAST_ERROR_CHARS_MAX)) \
                or not _is_count(last_error_ms):
            raise CorruptionError(f"a notification checkpoint's last_error is text of at most {LAST_ERROR_CHARS_MAX} "
                                  f"characters and its last_error_ms a whole number from 0, got {raw[:80]!r}")
        return cls(index, dict(counters), time_ms, last_error, last_error_ms)


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


@dataclass(frozen=True)
class PluginStatus:
    """What ``seaway notify status`` prints for one plugin. ``lag`` is entries written after its
    position (None when the ledger's head is unknown); ``pending`` entries it selected and has not
    delivered (nor given up) yet."""

    name: str
    target: str
    position: int | None
    lag: int | None
    counters: dict[str, int]
    updated_ms: int
    error: str | None = None
    """Why the plugin cannot run: its configuration or its checkpoint cannot be read (written by
    something other than this API). Delete the configuration, then set it again if wanted: its
    new plugin starts at the ledger's head."""
    last_error: str | None = None
    """Why its last failed delivery failed (``entry N: ...``), or None if none has (see
    :attr:`Checkpoint.last_error`); ``last_error_ms`` is when (0: never)."""
    last_error_ms: int = 0

    @property
    def pending(self) -> int:
        c = self.counters
        return max(0, c.get("triggered", 0) - c.get("delivered", 0) - c.get("dropped", 0))


class Notifications:
    """Notification configurations of one store. Each change is one metadata batch that also
    records the change in the ledger (``notify.configured``, ``notify.config_deleted``), with its
    secrets redacted (:meth:`NotifyConfig.redacted`).

    ``policy``: the targets the plugins of this process may write to, checked here too so that a
    refused one is refused at once (None: the plugins run elsewhere, and check there)."""

    def __init__(self, meta: MetaApi, ledger: LedgerSource | None = None, policy: TargetPolicy | None = None) -> None:
        self._meta = meta
        self._ledger = ledger
        self._policy = policy

    def set(self, config: NotifyConfig) -> None:
        """Create or replace ``config``. Raises :class:`NotifyConfigOverlapError` naming the
        configuration it overlaps, :class:`NotifyConfigError` for a target the policy refuses. A
        new plugin starts after the ledger's head as this call finds it (so it may deliver a few
        entries written just before; never fewer); a replaced one keeps its position. Secrets shown
        as :data:`REDACTED` (a configuration read back) keep their stored values."""
        stored = self._meta.get(NAMESPACE, config_key(config.name))
        config = config.unredacted(None if stored is None else NotifyConfig.from_json(stored.value))
        if self._policy is not None:
            config.check_policy(self._policy)
        for _ in range(SET_ATTEMPTS_MAX):
            configs_version, others = self._configs()
            for other in others:
                if other.name != config.name and config.overlaps(other):
                    raise NotifyConfigOverlapError(
                        f"notification configuration {config.name!r} overlaps {other.name!r}: they share event "
                        "types and their prefix and suffix filters overlap (give them disjoint events or filters)")
            records = self._records()  # the unreadable ones count too: they take room in every scan
            if len(records) >= CONFIGS_MAX and config.name not in records:
                raise NotifyConfigsFullError(f"a store has at most {CONFIGS_MAX} notification configurations")
            batch = self._meta.batch().expect_version(NAMESPACE, CONFIGS_KEY, configs_version)
            batch.put(NAMESPACE, CONFIGS_KEY, b"")
            batch.put(NAMESPACE, config_key(config.name), config.to_json().encode())
            if self._meta.get(NAMESPACE, checkpoint_key(config.name)) is None and self._ledger is not None:
                start = self._ledger.bounds()[1]
                batch.expect_absent(NAMESPACE, checkpoint_key(config.name))
                batch.put(NAMESPACE, checkpoint_key(config.name), Checkpoint(start).to_bytes())
                LedgerApi.put_floor(batch, floor_name(config.name), start)
            batch.record(NotifyConfigured(config.name, config.redacted().to_json()))  # secrets stay here
            try:
                batch.commit()
                return
            except ConditionFailedError:
                continue  # another change of configuration came first: check again
        raise ConditionFailedError(f"notification configurations kept changing: {config.name!r} not set")

    def get(self, name: str) -> NotifyConfig:
        """The configuration named ``name``: :class:`UnknownNotifyConfigError` if there is none,
        :class:`CorruptionError` if its record cannot be read."""
        found = self._meta.get(NAMESPACE, config_key(name))
        if found is None:
            raise UnknownNotifyConfigError(f"no notification configuration named {name!r}")
        config = _config_of(name, found.value)
        if isinstance(config, CorruptionError):
            raise config
        return config

    def list(self) -> builtins.list[NotifyConfig]:
        """The configurations that can be read (see :meth:`unreadable` for the others)."""
        return self._configs()[1]

    def versions(self) -> dict[str, tuple[int, NotifyConfig]]:
        """Each configuration that can be read with its version (which changes when it is replaced)."""
        return {name: (version, c) for name, (version, c) in self._records().items()
                if not isinstance(c, CorruptionError)}

    def unreadable(self) -> dict[str, tuple[int, str]]:
        """Each configuration record that cannot be read (written into the namespace by something
        other than this API), with its version and what is wrong with it. Its plugin does not
        run; :meth:`delete` removes it."""
        return {name: (version, str(c)) for name, (version, c) in self._records().items()
                if isinstance(c, CorruptionError)}

    def _records(self) -> dict[str, tuple[int, NotifyConfig | CorruptionError]]:
        out: dict[str, tuple[int, NotifyConfig | CorruptionError]] = {}
        for key, v in self._meta.scan(NAMESPACE, prefix=b"config/", limit=CONFIGS_MAX):
            name = key[len(b"config/"):].decode(errors="replace")
            out[name] = (v.version, _config_of(name, v.value) if key == config_key(name) else
                         CorruptionError(f"a notification configuration's key is UTF-8, got {key[:80]!r}"))
        return out

    def delete(self, name: str, *, expect_version: int | None = None) -> None:
        """Delete a configuration and its plugin's checkpoint (its plugin stops): the one this
        call finds, or only version ``expect_version`` (from :meth:`versions`) when given. The
        delete is conditional on that version, so two deletes record one ledger entry, and a
        delete that loses a race with :meth:`set` leaves the new configuration.

        Raises :class:`UnknownNotifyConfigError` when there is none (or it was deleted meanwhile),
        :class:`ConditionFailedError` when it is not ``expect_version`` or was replaced meanwhile
        (nothing deleted: look again, then decide)."""
        if expect_version is not None and not (_is_count(expect_version) and expect_version > 0):
            raise InvalidArgumentError(
                f"a configuration's version is a whole number from 1, got {expect_version!r:.80}")
        found = self._meta.get(NAMESPACE, config_key(name))
        if found is None:
            raise UnknownNotifyConfigError(f"no notification configuration named {name!r}")
        if expect_version is not None and found.version != expect_version:
            raise ConditionFailedError(
                f"notification configuration {name!r} is at version {found.version}, not {expect_version}: "
                "not deleted", NAMESPACE, config_key(name), found.version)
        batch = self._meta.batch().expect_version(NAMESPACE, config_key(name), found.version) \
            .put(NAMESPACE, CONFIGS_KEY, b"").delete(NAMESPACE, config_key(name)) \
            .delete(NAMESPACE, checkpoint_key(name)).record(NotifyConfigDeleted(name))
        try:
            LedgerApi.drop_floor(batch, floor_name(name)).commit()
        except ConditionFailedError as exc:
            if exc.version == 0:
                raise UnknownNotifyConfigError(f"no notification configuration named {name!r} "
                                               "(deleted meanwhile)") from None
            raise ConditionFailedError(
                f"notification configuration {name!r} was replaced meanwhile (version {exc.version}): "
                "not deleted", exc.namespace, exc.key, exc.version) from None

    def checkpoint(self, name: str) -> Checkpoint | None:
        """The plugin's saved checkpoint (None: not saved yet); :class:`CorruptionError` if it
        cannot be read."""
        found = self._meta.get(NAMESPACE, checkpoint_key(name))
        return None if found is None else Checkpoint.from_bytes(found.value)

    def save_checkpoint(self, name: str, checkpoint: Checkpoint, config_version: int | None) -> None:
        """Written by the plugin only, and only while the configuration it started with (version
        ``config_version``, from :meth:`versions`) is still the one stored: a plugin whose
        configuration was replaced or deleted meanwhile saves nothing. It may have left out entries
        its successor selects, and the successor starts from the last checkpoint its predecessor
        saved while still current (a deleted configuration is not brought back either)."""
        if config_version is None:
            raise InvalidArgumentError(
                f"the plugin of {name!r} saves its checkpoint with the version of the configuration it "
                "started with (Plugin(config_version=...), from Notifications.versions())")
        with contextlib.suppress(ConditionFailedError):  # replaced or deleted: its successor saves its own
            batch = self._meta.batch().expect_version(NAMESPACE, config_key(name), config_version) \
                .put(NAMESPACE, checkpoint_key(name), checkpoint.to_bytes())
            LedgerApi.put_floor(batch, floor_name(name), checkpoint.index).commit()

    def status(self) -> builtins.list[PluginStatus]:
        head = self._ledger.bounds()[1] if self._ledger is not None else None
        out = []
        for name, (_, cfg) in self._records().items():
            error: str | None = None
            cp: Checkpoint | None = None
            if isinstance(cfg, CorruptionError):
                error = f"its configuration is unreadable: {cfg}"
            else:
                try:
                    cp = self.checkpoint(name)
                except CorruptionError as exc:
                    error = f"its checkpoint is unreadable: {exc}"
            position = cp.index if cp is not None else None
            lag = head - position if head is not None and position is not None else None
            out.append(PluginStatus(name, "?" if isinstance(cfg, CorruptionError) else cfg.target.TYPE, position,
                                    lag, {k: (cp.counters.get(k, 0) if cp else 0) for k in COUNTERS},
                                    cp.time_ms if cp else 0, error, cp.last_error if cp else None,
                                    cp.last_error_ms if cp else 0))
        return out

    def _configs(self) -> tuple[int, builtins.list[NotifyConfig]]:
        found = self._meta.get(NAMESPACE, CONFIGS_KEY)
        return (0 if found is None else found.version), [c for _, c in self.versions().values()]


def _config_of(name: str, raw: bytes) -> NotifyConfig | CorruptionError:
    """The configuration stored under ``name``, or what is wrong with the record (returned, not
    raised: one bad record must not hide the others)."""
    try:
        config = NotifyConfig.from_json(raw)
    except (SeawayError, ValueError, TypeError) as exc:
        return CorruptionError(f"notification configuration {name!r} cannot be read: {exc}")
    if config.name != name:
        return CorruptionError(f"notification configuration {name!r} holds one named {config.name!r}")
    return config
