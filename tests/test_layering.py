"""DESIGN.md's one-way arrows: a package uses only the public API of the packages below it, the remote client
loads neither the storage engine nor its on-disk format, and the command loads its benchmarks only when asked.

The import rule, one for every package: it imports another package's public modules and names only (no
``_`` in the dotted path); errors come from the public ``seaway.errors``. The one exception is the shared
kernel, the root package's private modules listed in ``KERNEL`` (the clock, ``invariant``, background passes,
the values below the log store, ...), each with the packages that may use it; a module of the root not in
``KERNEL`` is reached through a public module, or not at all.

The import checks run in a fresh interpreter: the test process itself has long loaded everything.
"""

from __future__ import annotations

import ast
import builtins
import re
import resource
import subprocess
import sys
from pathlib import Path

import seaway
import seaway.errors
from seaway import _errors as private

SRC = Path(seaway.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _own_package(path: Path) -> str:
    """The package a module belongs to: itself for an ``__init__``, else the folder it is in."""
    return ".".join(path.relative_to(SRC.parent).parts[:-1])


def _imported(node: ast.Import | ast.ImportFrom, path: Path) -> list[str]:
    """The dotted names an import statement reaches into (``from m import n`` reaches ``m.n``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolved against the importing module's package
        package = _own_package(path).split(".")
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{alias.name}" for alias in node.names]


def _private_owner(name: str) -> str | None:
    """The package whose private module or name ``name`` reaches into, or None if it reaches only public ones."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


ANY = "any package"
KERNEL: dict[str, set[str] | str] = {
    # seaway's shared kernel (DESIGN.md, "Layers"): the root package's private modules that packages
    # share, each with the packages that may use it. Anything else of the root is reached through a
    # public module: errors through seaway.errors, never seaway._errors.
    "seaway._clock": ANY,
    "seaway._invariant": ANY,
    "seaway._passes": {"seaway.streams", "seaway.txn"},
    "seaway._values": {"seaway.logsdb", "seaway.log"},
    "seaway._dirs": {"seaway.logsdb", "seaway.log"},
    "seaway._lazy": {"seaway.logsdb", "seaway.log", "seaway.spark"},
    "seaway._alloc": {"seaway.server", "seaway.bench"},
    "seaway._progress": {"seaway.cli", "seaway.bench"},
    "seaway._seaway": {"seaway.server"},
    "seaway._net": {"seaway.server", "seaway.cluster"},  # the console keeps its own: it reads only the API
}


def _kernel_module(name: str) -> str:
    """``seaway._clock`` of ``seaway._clock.Clock``: the root's private module a name reaches."""
    return ".".join(name.split(".")[:2])


def _allowed(name: str, own: str) -> bool:
    """Whether package ``own`` may import ``name``."""
    owner = _private_owner(name)
    if owner is None or not owner.startswith("seaway"):
        return True  # public, or not seaway's
    if owner == "seaway":  # the root's private modules: its own, or the kernel's to their users
        module = _kernel_module(name)
        users = KERNEL.get(module, set())
        top = ".".join(own.split(".")[:2])
        return own == "seaway" or users == ANY or top in users
    return owner == own or own.startswith(owner + ".")  # its own package's


def _layering_violations() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        own = _own_package(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += [f"{_module_name(path)}:{node.lineno} imports {name}"
                          for name in _imported(node, path) if not _allowed(name, own)]
    return found


def test_no_package_imports_a_private_module_of_another_or_of_the_root_outside_the_kernel() -> None:
    assert _layering_violations() == []


TESTING_USERS = {"seaway.testing", "seaway.bench"}
"""The test kit (fakes, fault hooks, crash harnesses) is no dependency of the store: only the
benchmarks (a fake clock for the disk round) use it."""


def test_no_package_of_the_store_imports_the_test_kit() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        top = ".".join(_own_package(path).split(".")[:2])
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom) and top not in TESTING_USERS:
                found += [f"{_module_name(path)}:{node.lineno} imports {name}" for name in _imported(node, path)
                          if name == "seaway.testing" or name.startswith("seaway.testing.")]
    assert found == []


def test_the_kernel_lists_only_modules_that_exist() -> None:
    for module in KERNEL:
        assert (SRC / f"{module.split('.')[1]}.py").is_file(), module


def test_the_checker_sees_a_private_cross_package_import(tmp_path: Path) -> None:
    """A negative control: the walk above would report each of these."""
    fake = SRC / "queues" / "_q.py"
    cases = {"from seaway.streams._api import LogsApi": "seaway.streams._api.LogsApi",
             "import seaway.streams._retention": "seaway.streams._retention",
             "from seaway.spark import _write": "seaway.spark._write",
             "from ..streams._names import segment_id": "seaway.streams._names.segment_id"}
    for source, reached in cases.items():
        node = ast.parse(source).body[0]
        assert isinstance(node, ast.Import | ast.ImportFrom)
        (name,) = _imported(node, fake)
        assert name == reached
        assert _private_owner(name) not in (None, "seaway", _own_package(fake))
    assert _private_owner("seaway._errors.SeawayError") == "seaway"
    assert not _allowed("seaway._errors.SeawayError", "seaway.queues")  # errors: from seaway.errors
    assert _allowed("seaway.errors.SeawayError", "seaway.queues")
    assert _allowed("seaway._errors.SeawayError", "seaway")  # seaway/errors.py itself
    assert not _allowed("seaway._values.Entry", "seaway.spark") and _allowed("seaway._values.Entry", "seaway.log")
    assert _allowed("seaway._clock.Clock", "seaway.queues")
    assert _allowed("seaway.queues._records.Entry", "seaway.queues")
    assert not _allowed("seaway.queues._records.Entry", "seaway.spark")
    assert _private_owner("seaway.queues._records.Entry") == "seaway.queues"


def _loaded_after(statement: str, prefix: str) -> list[str]:
    code = (f"import sys\n{statement}\n"
            f"print('\\n'.join(sorted(m for m in sys.modules if m == {prefix!r} or m.startswith({prefix!r} + '.'))))")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_the_client_loads_neither_the_storage_engine_nor_its_format() -> None:
    for statement in ("import seaway.client", "import seaway; seaway.connect; seaway.Durability",
                      "import seaway.wire"):
        loaded = _loaded_after(statement, "seaway.logsdb")
        assert [m for m in loaded if m != "seaway.logsdb"] == [], statement


def test_the_client_loads_no_logsdb_module_at_all() -> None:
    assert _loaded_after("import seaway.client", "seaway.logsdb") == []


def test_the_command_loads_the_benchmarks_only_when_they_run() -> None:
    assert _loaded_after("import seaway.cli", "seaway.bench") == []
    assert _loaded_after("from seaway.cli import main\nimport contextlib, io\n"
                         "with contextlib.redirect_stdout(io.StringIO()):\n"
                         "    assert main(['bench', 'txn', '--ops', '0']) == 2",
                         "seaway.bench") != []


CONSOLE_READS = {"seaway.Store", "seaway.console", "seaway.errors", "seaway.ledger", "seaway.log", "seaway.streams"}
"""What the web console imports from seaway: it reads through the API of the store it is given
(an embedded store or a client alike), so it needs neither the store, the client nor the server."""


def test_the_console_reads_only_through_the_public_api_of_the_store_it_is_given() -> None:
    found = []
    for path in sorted((SRC / "console").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += [f"{_module_name(path)}:{node.lineno} imports {name}" for name in _imported(node, path)
                          if name.split(".")[0] == "seaway" and not any(
                              name == allowed or name.startswith(allowed + ".") for allowed in CONSOLE_READS)]
    assert found == []


def test_the_command_and_the_server_load_the_console_and_its_web_server_only_when_asked() -> None:
    for prefix in ("seaway.console", "starlette", "uvicorn", "plotly"):
        assert _loaded_after("import seaway.cli, seaway.server", prefix) == [], prefix
    assert _loaded_after("import seaway.console", "starlette") != []


def _best_cpu_s(argv: list[str], runs: int = 3) -> float:
    """The least CPU time (user and system) of ``runs`` runs, in seconds. CPU time rather than wall time:
    on a machine shared with other work, the wall time mostly measures the wait for a core."""
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, capture_output=True, timeout=120)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def test_help_answers_within_half_a_second_of_an_empty_interpreter() -> None:
    reference_s = _best_cpu_s([sys.executable, "-c", "pass"])
    help_s = _best_cpu_s([sys.executable, "-m", "seaway.cli", "--help"])
    assert help_s - reference_s < 0.5, f"seaway --help took {help_s:.2f} s, an empty interpreter {reference_s:.2f} s"


def test_every_error_class_is_public_in_seaway_errors() -> None:
    classes = {n for n, v in vars(private).items() if isinstance(v, type) and issubclass(v, seaway.SeawayError)}
    assert classes <= set(seaway.errors.__all__)
    for name in seaway.errors.__all__:
        assert getattr(seaway.errors, name) is getattr(private, name)


def test_every_error_class_a_doc_names_is_importable_from_a_public_module() -> None:
    root = SRC.parent.parent
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    named = {m for doc in docs for m in re.findall(r"\b[A-Z][A-Za-z]+Error\b", doc.read_text())}
    assert named, "the docs name no errors: the pattern is wrong"
    missing = sorted(n for n in named if not any(hasattr(m, n) for m in (seaway.errors, seaway, builtins)))
    assert missing == []
