"""One run of the demo: a server (or the one given), the generator, the pipeline, the report.

A run generates for a bounded time (or a bounded number of lines), while the pipeline's queries
process what arrives; then it drains the pipeline and reads the results. A second run over the
same data directory resumes: the generator goes on with fresh lines, the queries from their
checkpoints, and the results keep counting from where they were.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import seaway
from seaway.demo._generator import GeneratorConfig, generate, pace
from seaway.demo._pipeline import ACCESS, Pipeline, PipelineConfig, QueryStats, prepare
from seaway.demo._report import Report, read_report
from seaway.errors import InvalidArgumentError
from seaway.server import ServerProcess

STATE_FILE = "demo-state.json"


@dataclass(frozen=True)
class DemoConfig:
    """A run of the demo.

    ``data_dir`` holds the server's store (``store/``, unless ``address`` names a running server),
    the queries' checkpoints (``checkpoints/``) and what earlier runs generated (``demo-state.json``).
    The checkpoints belong with the server's data: point a data directory at one server only.
    Generation stops after ``duration_s`` or ``events_max`` lines, whichever comes first.
    ``start_ms`` stamps the first line (default: now); ``live`` runs the queries while generating
    (otherwise they run once, after).
    """

    data_dir: Path
    duration_s: float = 30.0
    rate_per_s: float = 200.0
    seed: int = 1
    events_max: int | None = None
    address: str | None = None
    window_s: int = 10
    trigger_s: float = 3.0
    """Every micro-batch of a Python sink commits in a fresh interpreter: on 2 shared cores, four
    queries at 1 s fell behind; at 3 s they keep up with the default rate."""
    live: bool = True
    start_ms: int | None = None
    malformed_fraction: float = 0.02
    users: int = 5000

    def __post_init__(self) -> None:
        if not 0 < self.duration_s <= 86_400:
            raise InvalidArgumentError(f"duration_s must be in (0, 86400], got {self.duration_s}")
        if self.events_max is not None and not 0 <= self.events_max <= 10**9:
            raise InvalidArgumentError(f"events_max must be in [0, 1e9], got {self.events_max}")

    def generator(self, first_ms: int) -> GeneratorConfig:
        return GeneratorConfig(seed=self.seed, rate_per_s=self.rate_per_s, start_ms=first_ms,
                               malformed_fraction=self.malformed_fraction, users=self.users)


@dataclass(frozen=True)
class DemoStatus:
    """What the run is doing, for a progress display."""

    phase: str
    """``generating`` (Spark starts meanwhile), ``draining`` or ``reporting``."""
    elapsed_s: float
    generated: int
    queries: dict[str, QueryStats]


@dataclass(frozen=True)
class DemoResult:
    """The report, the lines generated (by this run, by all runs), the runs so far, and what each
    query did in this run."""

    report: Report
    generated_now: int
    generated_total: int
    runs: int
    queries: dict[str, QueryStats]


@dataclass
class _State:
    """What the data directory remembers between runs."""

    pipeline_id: str = field(default_factory=lambda: secrets.token_hex(4))
    """Names this directory's sink markers: fresh checkpoints must not meet old markers."""
    events_generated: int = 0
    runs: int = 0

    @classmethod
    def load(cls, path: Path) -> _State:
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        return cls(str(data["pipeline_id"]), int(data["events_generated"]), int(data["runs"]))

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pipeline_id": self.pipeline_id, "events_generated": self.events_generated,
                                   "runs": self.runs}))
        os.replace(tmp, path)


class _Generator(threading.Thread):
    """Writes the generator's lines to the access stream at the configured pace, in a thread."""

    PENDING_MAX = 100_000

    def __init__(self, stream: Any, config: GeneratorConfig, first: int, duration_s: float,
                 events_max: int | None) -> None:
        super().__init__(name="demo-generator", daemon=True)
        self._stream = stream
        self._config = config
        self._first = first
        self._duration_s = duration_s
        self._events_max = events_max
        self.written = 0
        self.error: BaseException | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            self._generate()
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc

    def _generate(self) -> None:
        lines = generate(self._config, self._first)
        pending: deque[Future[Any]] = deque()
        deadline = time.monotonic() + self._duration_s
        with self._stream.writer() as writer:
            for due in pace(self._config.rate_per_s, time.monotonic, time.sleep):
                if self.stopping.is_set() or time.monotonic() >= deadline:
                    break
                room = due if self._events_max is None else min(due, self._events_max - self.written)
                for item in islice(lines, room):
                    # Keyed by user, as a web tier would shard its logs; a malformed line has no user.
                    key = item.event.user if item.event is not None else None
                    pending.append(writer.write(item.line.encode(), routing_key=key))
                    self.written += 1
                while pending and (pending[0].done() or len(pending) > self.PENDING_MAX):
                    pending.popleft().result()
                if self._events_max is not None and self.written >= self._events_max:
                    break
            while pending:
                pending.popleft().result()


class _Ticker(threading.Thread):
    """Calls ``on_progress`` every ``every_s`` and at each change of phase, from one call at a time
    (a display need not be thread-safe), while the caller's thread waits on Spark."""

    def __init__(self, every_s: float, make_status: Callable[[str], DemoStatus],
                 on_progress: Callable[[DemoStatus], None]) -> None:
        super().__init__(name="demo-progress", daemon=True)
        self._every_s = every_s
        self._make_status = make_status
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._phase = "generating"

    def set_phase(self, phase: str) -> None:
        self._phase = phase
        self.emit()

    def emit(self) -> None:
        with self._lock:
            self._on_progress(self._make_status(self._phase))

    def run(self) -> None:
        while not self._closed.wait(self._every_s):
            self.emit()

    def close(self) -> None:
        self._closed.set()
        if self.is_alive():
            self.join()


def run_demo(config: DemoConfig, spark: Callable[[], Any],
             on_progress: Callable[[DemoStatus], None] = lambda _status: None,
             progress_every_s: float = 0.25) -> DemoResult:
    """Run the demo once (see the module's docstring). ``spark`` gives the Spark session; it is
    called after the generator started, so that Spark starts while the first lines are written.
    ``on_progress`` is called from a thread of its own, one call at a time, every
    ``progress_every_s`` and at each phase (``generating``, ``draining``, ``reporting``).

    Raises what the store, the generator or a query raised; the queries and the server (if this
    run started it) are stopped in any case, and what was generated is remembered."""
    config.data_dir.mkdir(parents=True, exist_ok=True)
    state_path = config.data_dir / STATE_FILE
    state = _State.load(state_path)
    started_s = time.monotonic()
    pipelines: list[Pipeline] = []

    with ExitStack() as stack:
        address = config.address
        if address is None:
            address = stack.enter_context(ServerProcess(config.data_dir / "store")).url
        sw = stack.enter_context(seaway.connect(address))
        prepare(sw)
        first_ms = config.start_ms if config.start_ms is not None else time.time_ns() // 10**9 * 1000
        generator = _Generator(sw.streams.get(ACCESS), config.generator(first_ms), state.events_generated,
                               config.duration_s, config.events_max)

        def status(phase: str) -> DemoStatus:
            queries = dict(pipelines[0].stats) if pipelines else {}
            return DemoStatus(phase, time.monotonic() - started_s, generator.written, queries)

        ticker = _Ticker(progress_every_s, status, on_progress)
        generator.start()
        stack.callback(generator.stopping.set)
        ticker.set_phase("generating")
        ticker.start()
        stack.callback(ticker.close)
        pipeline = Pipeline(spark(), PipelineConfig(address, config.data_dir / "checkpoints",
                                                    sink_prefix=f"demo-{state.pipeline_id}",
                                                    window_s=config.window_s, trigger_s=config.trigger_s))
        pipelines.append(pipeline)
        stack.callback(pipeline.stop)
        try:
            if config.live and generator.is_alive():
                pipeline.start()
            while generator.is_alive():
                generator.join(progress_every_s)
                pipeline.poll()
        finally:
            generator.stopping.set()
            generator.join()
            state.events_generated += generator.written
            state.runs += 1
            state.save(state_path)
        if generator.error is not None:
            raise generator.error
        ticker.set_phase("draining")
        pipeline.drain()
        ticker.set_phase("reporting")
        report = read_report(pipeline.spark, address, config.window_s)
        ticker.close()
    return DemoResult(report, generator.written, state.events_generated, state.runs, pipeline.stats)
