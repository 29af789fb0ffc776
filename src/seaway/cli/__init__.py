"""The ``seaway`` command."""

from seaway.cli._main import main

__all__ = ["main"]
