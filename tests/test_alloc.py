"""The allocator tuning that the server and the benchmark workers apply to their own process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = "from seaway._alloc import keep_large_buffers_in_heap as k; print(k())"


def _probe(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True,
                          timeout=60)
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is what is tuned")
def test_glibc_takes_the_thresholds() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    assert _probe(env) == "True"


def test_the_environment_wins() -> None:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}
    assert _probe(env) == "False"
