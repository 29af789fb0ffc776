"""Every Python example of the README and docs/ runs as printed. Those that open a store run twice
over the same data directory (as a user trying them again would); those that use Spark run in
tests/spark/test_docs_spark_examples.py, with the one Spark start-up a test run can afford."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def python_blocks(doc: str) -> list[str]:
    return _BLOCK.findall((ROOT / doc).read_text())


def uses_spark(block: str) -> bool:
    return "seaway.spark" in block or ".writeStream" in block or "spark.read" in block


def test_the_python_examples_are_found() -> None:
    found = {doc: len(python_blocks(doc)) for doc in DOCS}
    assert found["README.md"] >= 5 and found["docs/spark.md"] >= 4 and found["docs/notifications.md"] >= 2, found
    # A block the pattern would miss (another fence spelling) would go untested: there are none.
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        assert text.count("```python") == len(python_blocks(doc)), doc
        assert "```py\n" not in text and "```Python" not in text, doc


@pytest.mark.parametrize("doc", [doc for doc in DOCS if any(not uses_spark(b) for b in python_blocks(doc))])
def test_the_examples_run(doc: str, tmp_path: Path) -> None:
    for example in (block for block in python_blocks(doc) if not uses_spark(block)):
        for _ in range(2 if "seaway.open(" in example else 1):
            ran = subprocess.run([sys.executable, "-c", example], check=False, cwd=tmp_path, capture_output=True,
                                 text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
            assert ran.returncode == 0, f"{doc}: the example failed:\n{example}\n{ran.stderr[-3000:]}"
