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

from seaway._errors import (
    ConditionFailedError,
    NotifyConfigOverlapError,
    NotifyConfigsFullError,
    UnknownNotifyConfigError,
)
from seaway.ledger import NotifyConfigDeleted, NotifyConfigured
from seaway.log import LedgerApi, MetaApi
from seaway.notify._config import NotifyConfig
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


@dataclass(frozen=True)
class Checkpoint:
    """A plugin's persisted position: every entry up to ``index`` has been acknowledged by its
    target (or was not selected, or was given up, or was missed), and its counters then."""

    index: int
    counters: dict[str, int] = field(default_factory=dict)
    time_ms: int = 0

    def to_bytes(self) -> bytes:
        return json.dumps({"index": self.index, "counters": self.counters, "time_ms": self.time_ms}).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Checkpoint:
        data = json.loads(raw)
        return cls(int(data["index"]), {k: int(v) for k, v in data.get("counters", {}).items()},
                   int(data.get("time_ms", 0)))


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

    @property
    def pending(self) -> int:
        c = self.counters
        return max(0, c.get("triggered", 0) - c.get("delivered", 0) - c.get("dropped", 0))


class Notifications:
    """Notification configurations of one store. Each change is one metadata batch that also
    records the change in the ledger (``notify.configured``, ``notify.config_deleted``)."""

    def __init__(self, meta: MetaApi, ledger: LedgerSource | None = None) -> None:
        self._meta = meta
        self._ledger = ledger

    def set(self, config: NotifyConfig) -> None:
        """Create or replace ``config``. Raises :class:`NotifyConfigOverlapError` naming the
        configuration it overlaps. A new plugin starts after the ledger's head as this call finds
        it (so it may deliver a few entries written just before; never fewer); a replaced one keeps
        its position."""
        for _ in range(SET_ATTEMPTS_MAX):
            configs_version, others = self._configs()
            for other in others:
                if other.name != config.name and config.overlaps(other):
                    raise NotifyConfigOverlapError(
                        f"notification configuration {config.name!r} overlaps {other.name!r}: they share event "
                        "types and their prefix and suffix filters overlap (give them disjoint events or filters)")
            if len(others) >= CONFIGS_MAX and all(o.name != config.name for o in others):
                raise NotifyConfigsFullError(f"a store has at most {CONFIGS_MAX} notification configurations")
            batch = self._meta.batch().expect_version(NAMESPACE, CONFIGS_KEY, configs_version)
            batch.put(NAMESPACE, CONFIGS_KEY, b"")
            batch.put(NAMESPACE, config_key(config.name), config.to_json().encode())
            if self._meta.get(NAMESPACE, checkpoint_key(config.name)) is None and self._ledger is not None:
                start = self._ledger.bounds()[1]
                batch.expect_absent(NAMESPACE, checkpoint_key(config.name))
                batch.put(NAMESPACE, checkpoint_key(config.name), Checkpoint(start).to_bytes())
                LedgerApi.put_floor(batch, floor_name(config.name), start)
            batch.record(NotifyConfigured(config.name, config.to_json()))
            try:
                batch.commit()
                return
            except ConditionFailedError:
                continue  # another change of configuration came first: check again
        raise ConditionFailedError(f"notification configurations kept changing: {config.name!r} not set")

    def get(self, name: str) -> NotifyConfig:
        found = self._meta.get(NAMESPACE, config_key(name))
        if found is None:
            raise UnknownNotifyConfigError(f"no notification configuration named {name!r}")
        return NotifyConfig.from_json(found.value)

    def list(self) -> builtins.list[NotifyConfig]:
        return self._configs()[1]

    def versions(self) -> dict[str, tuple[int, NotifyConfig]]:
        """Each configuration with its version (which changes when it is replaced)."""
        return {key.decode()[len("config/"):]: (v.version, NotifyConfig.from_json(v.value))
                for key, v in self._meta.scan(NAMESPACE, prefix=b"config/", limit=CONFIGS_MAX)}

    def delete(self, name: str) -> None:
        """Delete a configuration and its plugin's checkpoint (its plugin stops)."""
        found = self._meta.get(NAMESPACE, config_key(name))
        if found is None:
            raise UnknownNotifyConfigError(f"no notification configuration named {name!r}")
        batch = self._meta.batch().put(NAMESPACE, CONFIGS_KEY, b"").delete(NAMESPACE, config_key(name)) \
            .delete(NAMESPACE, checkpoint_key(name)).record(NotifyConfigDeleted(name))
        LedgerApi.drop_floor(batch, floor_name(name)).commit()

    def checkpoint(self, name: str) -> Checkpoint | None:
        found = self._meta.get(NAMESPACE, checkpoint_key(name))
        return None if found is None else Checkpoint.from_bytes(found.value)

    def save_checkpoint(self, name: str, checkpoint: Checkpoint) -> None:
        """Written by the plugin only, and only while its configuration exists (a deleted one is not
        brought back by a plugin that is still stopping)."""
        found = self._meta.get(NAMESPACE, config_key(name))
        if found is None:
            return
        # Deleted or replaced meanwhile: nothing to save (a replaced plugin saves its own).
        with contextlib.suppress(ConditionFailedError):
            batch = self._meta.batch().expect_version(NAMESPACE, config_key(name), found.version) \
                .put(NAMESPACE, checkpoint_key(name), checkpoint.to_bytes())
            LedgerApi.put_floor(batch, floor_name(name), checkpoint.index).commit()

    def status(self) -> builtins.list[PluginStatus]:
        head = self._ledger.bounds()[1] if self._ledger is not None else None
        out = []
        for cfg in self.list():
            cp = self.checkpoint(cfg.name)
            position = cp.index if cp is not None else None
            lag = head - position if head is not None and position is not None else None
            out.append(PluginStatus(cfg.name, cfg.target.TYPE, position, lag,
                                    {k: (cp.counters.get(k, 0) if cp else 0) for k in COUNTERS},
                                    cp.time_ms if cp else 0))
        return out

    def _configs(self) -> tuple[int, builtins.list[NotifyConfig]]:
        found = self._meta.get(NAMESPACE, CONFIGS_KEY)
        return (0 if found is None else found.version), [c for _, c in self.versions().values()]
