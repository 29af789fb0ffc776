"""The log layer's protocols, under their old name here: they are public in :mod:`seaway.log` now.

Kept only for ``_writer`` (being rewritten), which imports them from here; it takes them from
``seaway.log`` once that lands, and this module goes.
"""

from seaway.log import LogsApi, SegmentLog

__all__ = ["LogsApi", "SegmentLog"]
