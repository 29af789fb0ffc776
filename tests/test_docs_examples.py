"""The Python examples of the README and docs/ run, twice over the same data directory (as a user
trying them again would)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _examples(path: Path) -> list[str]:
    return [block for block in _BLOCK.findall(path.read_text()) if "seaway.open(" in block]


@pytest.mark.parametrize("doc", ["README.md", "docs/streams.md", "docs/transactions.md", "docs/queues.md",
                                 "docs/notifications.md"])
def test_the_examples_run_twice(doc: str, tmp_path: Path) -> None:
    examples = _examples(ROOT / doc)
    assert examples, f"{doc} has no runnable example"
    for example in examples:
        for _ in range(2):
            ran = subprocess.run([sys.executable, "-c", example], check=False, cwd=tmp_path, capture_output=True,
                                 text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
            assert ran.returncode == 0, f"{doc}: the example failed:\n{ran.stderr[-3000:]}"
