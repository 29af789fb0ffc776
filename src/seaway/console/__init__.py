"""The web console: a read-only view of a store in a browser, beside the server (``seaway serve
--console-listen``) or over a data directory (``seaway console``). See docs/console.md.

It reads through the public API an embedded store and a client share, behind the server's token.
Importing it loads its web server (Starlette, uvicorn): the command imports it only when asked.
"""

from __future__ import annotations

try:
    import plotly  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # an optional part of the install
    raise ImportError(f"the web console needs {exc.name}: pip install 'seaway[console]'") from exc

from seaway.console._config import ConsoleConfig
from seaway.console._server import Console

__all__ = ["Console", "ConsoleConfig"]
