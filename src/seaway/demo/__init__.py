"""The access-log analytics demo (``seaway demo``): CDAP's example pipeline on Seaway and Spark.

A generator writes synthetic web-server access log lines to a stream; a Spark query parses them
into a queue (malformed lines go to a dead-letter stream); two consumer groups of that queue, one
hashing on the user and one on the page, feed exactly-once Spark queries that count unique users
per window and views per page into result streams, which the report reads.

The generator needs only the standard library and is importable without Spark; :func:`run_demo`,
:class:`Pipeline` and :func:`read_report` need ``seaway[spark]`` (``seaway.demo.run``).
"""

from __future__ import annotations

from seaway.demo._generator import AccessEvent, Expected, Generated, GeneratorConfig, expected, generate, pace

__all__ = ["AccessEvent", "Expected", "Generated", "GeneratorConfig", "expected", "generate", "pace"]
