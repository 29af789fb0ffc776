"""The web console: a read-only view of a store in a browser, beside the server (``seaway serve
--console-listen``) or over a data directory (``seaway console``). See docs/console.md.

It reads through the public API an embedded store and a client share, behind the server's token.
Importing it loads its web server (Starlette, uvicorn): the command imports it only when asked.
"""

from __future__ import annotations

from seaway.console import _needs  # noqa: F401 - first: names a missing package
from seaway.console._config import ConsoleConfig
from seaway.console._server import Console

__all__ = ["Console", "ConsoleConfig"]
