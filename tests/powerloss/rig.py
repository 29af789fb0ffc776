"""The parent's side of the power-loss tests: a child process reporting its acknowledgements, and
the rig that cuts the power under it (at a moment, or at the Nth call that changes the disk)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import pytest

from seaway.testing import CutMode, CutReport, PowerLossFS
from seaway.testing._powerloss_child import LARGE_BYTES, META_LARGE_BYTES


class Child:
    """A child process (``python -m MODULE DATA_DIR MODE RUN SEED``), its acknowledgements read
    as they come; it writes ``ready`` once its store is open."""

    def __init__(self, module: str, data_dir: Path, mode: str, run: int, seed: int, stderr: IO[bytes]) -> None:
        self.ready = threading.Event()
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", module, str(data_dir), mode, str(run), str(seed)],
                                     stdout=subprocess.PIPE, stderr=stderr)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if line == "ready":
                self.ready.set()
            else:
                self.lines.append(line)
        self.ready.set()  # or it died

    def count(self, kind: str, size: int | None = None) -> int:
        """Acknowledgements of ``kind`` (``A``, ``K``, ...) so far, of items of ``size`` (field 5) if given."""
        return sum(1 for line in list(self.lines)
                   if line.startswith(kind + " ") and (size is None or line.split()[5] == str(size)))

    def kill(self) -> list[str]:
        """SIGKILL; every acknowledgement it reported."""
        self.proc.kill()
        self.proc.wait(30)
        self._reader.join(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.lines


class Rig:
    """A power-loss filesystem and the children using it; :meth:`close` kills them all."""

    def __init__(self, fs: PowerLossFS, seed: int, module: str = "seaway.testing._powerloss_child") -> None:
        self.fs = fs
        self.disk = fs.backing
        self.logs = fs.backing.parent
        self.seed = seed
        self.module = module
        self.children: list[Child] = []
        self.cuts = 0

    def start(self, mode: str, run: int) -> Child:
        stderr = open(self.logs / f"child-{run}.log", "wb")  # noqa: SIM115 (the child holds it)
        try:
            child = Child(self.module, self.fs.mountpoint / "data", mode, run, self.seed, stderr)
        finally:
            stderr.close()
        self.children.append(child)
        return child

    def child_log(self, run: int) -> str:
        return (self.logs / f"child-{run}.log").read_text(errors="replace")[-3000:]

    def cut(self, child: Child, mode: CutMode = CutMode.LOSE, seed: int = 0) -> tuple[list[str], CutReport]:
        """Cut the power under a running child, kill it, unmount: its acknowledgements."""
        self.cuts += 1
        report = self.fs.cut_power(mode, seed)
        lines = child.kill()
        self.fs.unmount()
        return lines, report

    def cut_at_call(self, mode: str, run: int, calls: int, cut_mode: CutMode, seed: int,
                    timeout_s: float = 20) -> tuple[list[str], CutReport, bool]:
        """Mount, start a child and cut the power just before the ``calls``-th call that changes the
        disk (or after ``timeout_s``, if the child has not made that many: then the last item is
        False); kill it, unmount: its acknowledgements."""
        self.fs.mount()
        self.fs.cut_at_call(calls, cut_mode, seed)
        child = self.start(mode, run)
        report = self.fs.wait_for_cut(timeout_s)
        at_call = report is not None
        if report is None:
            assert child.proc.poll() is None, (
                f"seed {self.seed}: run {run}: the child died before call {calls}:\n{self.child_log(run)}")
            report = self.fs.cut_power(cut_mode, seed)
        self.cuts += 1
        lines = child.kill()
        self.fs.unmount()
        return lines, report, at_call

    def wait_for(self, child: Child, run: int, *, appends: int = 0, large: int = 0, meta: int = 0,
                 meta_large: int = 0, timeout_s: float = 60, **kinds: int) -> None:
        """Until the child has acknowledged that many appends (``large`` of them large) and metadata
        batches (``meta_large`` of them large), and of each other kind of line (``T=3``)."""
        def enough() -> bool:
            return (child.count("A") >= appends and child.count("A", LARGE_BYTES) >= large
                    and child.count("K") >= meta and child.count("K", META_LARGE_BYTES) >= meta_large
                    and all(child.count(kind) >= n for kind, n in kinds.items()))

        deadline = time.monotonic() + timeout_s
        while not enough() and child.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert enough(), f"seed {self.seed}: run {run}: too few acknowledgements; child log:\n{self.child_log(run)}"

    def close(self) -> None:
        for child in self.children:
            if child.proc.poll() is None:
                child.proc.kill()
                child.proc.wait()

    def cut_once(self, run: int, rng: random.Random, calls_seen: int, at_call_share: float = 0.35,
                 mode: str = "sync") -> tuple[list[str], str, int]:
        """One run of the child with its power cut: at the Nth call that changes the disk (N up to
        ``calls_seen``, in ``at_call_share`` of the runs once that is known), else at a moment
        after it is ready; the cut keeps nothing, a torn write or reordered writes of what was not
        synced. Returns its acknowledgements, how the power was cut, and the new ``calls_seen``."""
        cut_mode = rng.choice(list(CutMode))
        cut_seed = rng.randrange(2**32)
        if calls_seen and rng.random() < at_call_share:
            calls = rng.randint(1, calls_seen)
            lines, report, at_call = self.cut_at_call(mode, run, calls, cut_mode, cut_seed)
            how = f"run {run}: {cut_mode.value} at call {calls}{'' if at_call else ' (not reached: at 20 s)'}"
        else:
            self.fs.mount()
            child = self.start(mode, run)
            assert child.ready.wait(60), f"seed {self.seed}: run {run}: child not ready"
            time.sleep(rng.uniform(0.05, 0.8))
            assert child.proc.poll() is None, f"seed {self.seed}: run {run}: child died:\n{self.child_log(run)}"
            calls_seen = max(calls_seen, self.fs.calls())
            lines, report = self.cut(child, cut_mode, cut_seed)
            how = f"run {run}: {cut_mode.value} at a moment"
        how += (f" ({report.kept_writes} writes kept, {report.torn_writes} torn, "
                f"{report.reordered_files} files reordered)")
        return lines, how, calls_seen


def rig_fixture(module: str = "seaway.testing._powerloss_child") -> Any:
    """The ``rig`` fixture of a test module whose child is ``module``."""
    @pytest.fixture(name="rig")
    def rig(fs: PowerLossFS, seed: int) -> Iterator[Rig]:
        r = Rig(fs, seed, module)
        try:
            yield r
        finally:
            r.close()  # before the fs fixture unmounts: a process using the mount would hold it
        print(f"{r.cuts} power cuts")

    return rig


class Acks(Protocol):
    """What a test keeps of the acknowledgements: it takes each line, and says what the store lost."""

    def add(self, run: int, line: str) -> None: ...

    def problems(self, data_dir: Path) -> list[str]: ...


def report(problems: Sequence[object], limit: int = 20) -> str:
    return f"{len(problems)} problems:\n" + "\n".join(map(str, problems[:limit]))


def cut_runs(rig: Rig, acks: Acks, cuts: int, *, child_log: bool = False) -> list[str]:
    """``cuts`` runs of the child (mode ``sync``), each with its power cut (:meth:`Rig.cut_once`);
    after each, every acknowledgement so far is checked. Returns how each cut was made."""
    rng = random.Random(rig.seed)
    calls_seen = 0
    made: list[str] = []
    for run in range(cuts):
        lines, how, calls_seen = rig.cut_once(run, rng, calls_seen)
        made.append(how)
        for line in lines:
            acks.add(run, line)
        problems = acks.problems(rig.disk / "data")
        assert not problems, (f"seed {rig.seed}: after the cut in run {run}, {report(problems)}\n"
                              "the cuts so far:\n" + "\n".join(made)
                              + (f"\nchild log:\n{rig.child_log(run)}" if child_log else ""))
    return made


def unsynced_run(rig: Rig, acks: Acks, run: int, **wait: int) -> list[str]:
    """One run of the child without RocksDB's write-ahead log sync (mode ``nowalsync``), cut once it
    acknowledged what ``wait`` asks (:meth:`Rig.wait_for`); what the checks find lost."""
    rig.fs.mount()
    child = rig.start("nowalsync", run)
    rig.wait_for(child, run, **wait)
    lines, _ = rig.cut(child)
    for line in lines:
        acks.add(run, line)
    problems = acks.problems(rig.disk / "data")
    print(f"run {run}: {report(problems, 5)}")
    return problems
