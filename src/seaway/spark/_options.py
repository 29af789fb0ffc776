"""The options of the ``seaway`` data source, parsed once and checked with clear errors.

Spark gives options as a case-insensitive map of strings. Every option the source knows is read
through :class:`Options`, so that a misspelt or misplaced one is refused by name rather than
ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import seaway
from seaway.errors import InvalidArgumentError

TARGETS = ("stream", "log", "queue")
SPARK_SUPPLIED = ("path", "queryname", "checkpointlocation")
"""Options Spark itself adds: a query's name and checkpoint, accepted and not read; and load()'s path,
read as ``data_dir`` when that option is not given (``load("./data")``)."""


@dataclass(frozen=True)
class Options:
    """The source's options: where the server is, what to read or write, and the rest by name.

    ``address`` is ``seaway://host:port``; ``data_dir`` names a local data directory instead, whose
    running server (``seaway serve --data-dir``) is found through the address file it writes there.
    Exactly one of ``stream`` (``scope/name``), ``log`` and ``queue`` names the target.
    """

    address: str
    target_kind: str
    target: str
    token: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str], known: Iterable[str] = ()) -> Options:
        """Check ``options`` (names compared in lower case); ``known`` lists the names the caller reads
        besides the connection and target options. An unknown name raises InvalidArgumentError."""
        values = {str(k).lower(): str(v) for k, v in options.items()}
        allowed = {"address", "data_dir", "token", *SPARK_SUPPLIED, *TARGETS, *(k.lower() for k in known)}
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise InvalidArgumentError(f"unknown option(s) {', '.join(unknown)} for the seaway source; "
                                       f"known here: {', '.join(sorted(allowed - set(SPARK_SUPPLIED)))}")
        targets = [kind for kind in TARGETS if values.get(kind)]
        if len(targets) != 1:
            raise InvalidArgumentError("give exactly one of the options stream, log and queue "
                                       f"(got {', '.join(targets) or 'none'})")
        kind = targets[0]
        address = values.get("address", "")
        data_dir = values.get("data_dir") or values.get("path")
        if address and data_dir:
            raise InvalidArgumentError("give the option address or data_dir, not both")
        if not address:
            if not data_dir:
                raise InvalidArgumentError("give the option address (seaway://host:port) or data_dir "
                                           "(a data directory served on this machine)")
            from seaway.server import local_address  # noqa: PLC0415 - the server package only when used

            address = local_address(data_dir)
        token = values.get("token") or os.environ.get("SEAWAY_TOKEN") or None
        return cls(address=address, target_kind=kind, target=values[kind], token=token, values=values)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name.lower(), default)

    def get_int(self, name: str, default: int | None, *, lo: int = 0, hi: int = 2**63 - 1) -> int | None:
        text = self.values.get(name.lower())
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise InvalidArgumentError(f"option {name} must be an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise InvalidArgumentError(f"option {name} must be in [{lo}, {hi}], got {value}")
        return value

    def get_float(self, name: str, default: float, *, lo: float = 0.0, hi: float = float("inf")) -> float:
        text = self.values.get(name.lower())
        if text is None:
            return default
        try:
            value = float(text)
        except ValueError:
            raise InvalidArgumentError(f"option {name} must be a number, got {text!r}") from None
        if not lo <= value <= hi:
            raise InvalidArgumentError(f"option {name} must be in [{lo}, {hi}], got {value}")
        return value

    def get_bool(self, name: str, default: bool) -> bool:
        text = self.values.get(name.lower())
        if text is None:
            return default
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise InvalidArgumentError(f"option {name} must be true or false, got {text!r}")

    def connect(self) -> Any:
        """A client of the server (close it, or use it in a with-block)."""
        return seaway.connect(self.address, token=self.token)
