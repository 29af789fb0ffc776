"""Names of a package loaded on first use (PEP 562), so that importing the package does not import
what they need (RocksDB, for the embedded store): what the remote client shares stays light."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(namespace: dict[str, Any], where: dict[str, str]) -> tuple[Callable[[str], object],
                                                                          Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for the names in ``where`` (name -> the module
    that defines it); ``namespace`` is the package's ``globals()``."""

    def getattr_(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
