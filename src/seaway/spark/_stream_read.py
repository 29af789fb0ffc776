"""Not built yet: this direction of the seaway data source comes in the next commits."""

from __future__ import annotations

from typing import Any

from seaway._errors import InvalidArgumentError


def _not_built(*_args: Any) -> Any:
    raise InvalidArgumentError("this direction of the seaway data source is not built yet")


stream_schema = batch_reader = stream_reader = _not_built
