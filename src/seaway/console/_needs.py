"""The optional packages the console needs (``pip install 'seaway[console]'``): a missing one is
named, with the extra to install, before anything tries to import it."""

from __future__ import annotations

import importlib.util

for _needed in ("starlette", "uvicorn", "plotly"):
    if importlib.util.find_spec(_needed) is None:
        raise ImportError(f"the web console needs {_needed}: pip install 'seaway[console]'", name=_needed)
