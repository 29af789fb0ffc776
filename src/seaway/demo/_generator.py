"""Synthetic web-server access log lines (the combined log format), deterministic given a seed.

A line looks like what Apache or nginx write::

    10.1.0.7 - u0042 [10/Oct/2024:13:55:36 +0000] "GET /products/3 HTTP/1.1" 200 5123 "-" "Mozilla/5.0 ..."

Page popularity is skewed (Zipf: the page of rank ``r`` is drawn with weight ``1 / r**s``), users
are drawn uniformly from a fixed population, each user always comes from the same address with
the same browser. A configured fraction of lines is deliberately malformed, each in one of a few
ways a parser must refuse (cut short, a word instead of the status, a month that does not exist,
noise). Every line comes with the event it was made from (``None`` for a malformed one), so that
tests can count what a parser should find without parsing.
"""

from __future__ import annotations

import hashlib
import random
import time as _time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from itertools import count as count_from

from seaway.errors import InvalidArgumentError

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SECTIONS = ("products", "blog", "docs", "search", "cart", "account", "help", "news")
_AGENTS = (
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "curl/8.5.0",
)
_STATUSES = ((200, 86), (304, 6), (404, 5), (301, 2), (500, 1))
_MALFORMED_KINDS = ("cut", "status", "month", "noise")


@dataclass(frozen=True)
class GeneratorConfig:
    """What the generator makes. ``start_ms`` is the time of the first line (whole seconds: the
    format has no finer unit); line ``i`` of a run is stamped ``start_ms + i * 1000 // rate_per_s``,
    so the lines' own times follow the pace at which they are written."""

    seed: int = 1
    rate_per_s: float = 200.0
    start_ms: int = 1_700_000_000_000
    users: int = 5000
    pages: int = 60
    zipf_s: float = 1.1
    malformed_fraction: float = 0.02

    def __post_init__(self) -> None:
        if not 0 < self.rate_per_s <= 1_000_000:
            raise InvalidArgumentError(f"rate_per_s must be in (0, 1e6], got {self.rate_per_s}")
        if not 1 <= self.users <= 10_000_000 or not 1 <= self.pages <= 1_000_000:
            raise InvalidArgumentError("users and pages must be at least 1 (and at most 1e7 and 1e6)")
        if not 0.0 <= self.malformed_fraction <= 1.0:
            raise InvalidArgumentError(f"malformed_fraction must be in [0, 1], got {self.malformed_fraction}")
        if self.start_ms < 0 or self.start_ms % 1000:
            raise InvalidArgumentError(f"start_ms must be a non-negative whole second, got {self.start_ms}")


@dataclass(frozen=True)
class AccessEvent:
    """One page view, as a web server logs it. ``time_ms`` is a whole second."""

    ip: str
    user: str
    time_ms: int
    method: str
    page: str
    status: int
    bytes: int
    agent: str

    def line(self) -> str:
        """The combined log format line (no referrer: ``"-"``)."""
        return (f'{self.ip} - {self.user} [{clf_time(self.time_ms)}] "{self.method} {self.page} HTTP/1.1" '
                f'{self.status} {self.bytes} "-" "{self.agent}"')


@dataclass(frozen=True)
class Generated:
    """A line and the event it was made from; ``event`` is None for a deliberately malformed line."""

    line: str
    event: AccessEvent | None


def clf_time(time_ms: int) -> str:
    """``10/Oct/2024:13:55:36 +0000``: the log format's time, in UTC."""
    t = _time.gmtime(time_ms // 1000)
    return f"{t.tm_mday:02d}/{_MONTHS[t.tm_mon - 1]}/{t.tm_year}:{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} +0000"


def page_name(rank: int) -> str:
    """The page of popularity rank ``rank`` (0 is the most viewed): ``/`` then ``/<section>/<n>``."""
    if rank == 0:
        return "/"
    return f"/{_SECTIONS[rank % len(_SECTIONS)]}/{rank}"


def _stable_int(text: str) -> int:
    """A hash that is the same in every process (``hash()`` of a str is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def user_name(n: int) -> str:
    return f"u{n:05d}"


def _user_ip(n: int) -> str:
    h = _stable_int(f"ip:{n}")
    return f"10.{h % 256}.{(h >> 8) % 256}.{1 + (h >> 16) % 254}"


def _user_agent(n: int) -> str:
    return _AGENTS[_stable_int(f"agent:{n}") % len(_AGENTS)]


def generate(config: GeneratorConfig, first: int = 0) -> Iterator[Generated]:
    """The endless lines of a run that starts at ``config.start_ms`` (take as many as wanted with
    ``itertools.islice``); the ``k``-th is stamped ``start_ms + floor(k / rate_per_s)`` seconds.

    The same config and ``first`` give the same lines. ``first`` is how many lines earlier runs
    wrote: the random generator is seeded from it and the seed, so a resumed demo goes on with
    other draws rather than writing the same lines again.
    """
    if first < 0:
        raise InvalidArgumentError(f"first must not be negative, got {first}")
    rng = random.Random(f"seaway-demo:{config.seed}:{first}")
    page_weights = list(accumulate(1.0 / (rank + 1) ** config.zipf_s for rank in range(config.pages)))
    statuses = [status for status, _ in _STATUSES]
    status_weights = list(accumulate(weight for _, weight in _STATUSES))
    ranks = range(config.pages)
    for k in count_from(0):
        user = rng.randrange(config.users)
        rank = rng.choices(ranks, cum_weights=page_weights)[0]
        status = rng.choices(statuses, cum_weights=status_weights)[0]
        method = "POST" if rank % len(_SECTIONS) == 4 and rng.random() < 0.5 else "GET"  # posts to the cart
        size = 0 if status == 304 else int(rng.lognormvariate(8.5, 1.0))
        event = AccessEvent(ip=_user_ip(user), user=user_name(user),
                            time_ms=config.start_ms + int(k / config.rate_per_s) * 1000,
                            method=method, page=page_name(rank), status=status, bytes=size,
                            agent=_user_agent(user))
        if rng.random() < config.malformed_fraction:
            yield Generated(_malform(event.line(), rng), None)
        else:
            yield Generated(event.line(), event)


def _malform(line: str, rng: random.Random) -> str:
    """``line`` broken in one of the ways a strict parser must refuse."""
    kind = rng.choice(_MALFORMED_KINDS)
    if kind == "cut":  # a writer that died mid-line: always loses at least the closing quote
        return line[:rng.randrange(1, len(line) - 1)]
    if kind == "status":
        head, _, tail = line.partition('HTTP/1.1" ')
        return head + 'HTTP/1.1" OK ' + tail.partition(" ")[2]
    if kind == "month":  # well-formed to a regular expression, but not a time
        for month in _MONTHS:
            line = line.replace(f"/{month}/", "/Foo/")
        return line
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 []\"-/") for _ in range(rng.randrange(5, 80)))


@dataclass(frozen=True)
class Expected:
    """What a correct pipeline computes from some generated lines (the reference for tests)."""

    lines: int
    malformed: int
    page_views: dict[str, int]
    unique_users: dict[int, int]
    """Window start (ms since the epoch) -> distinct users in the window."""


def expected(generated: Iterable[Generated], window_s: int) -> Expected:
    """Count what the pipeline should: lines, malformed lines, views per page, unique users per
    window of ``window_s`` seconds of the lines' own time (windows aligned on the epoch)."""
    lines = malformed = 0
    views: Counter[str] = Counter()
    users: dict[int, set[str]] = {}
    for item in generated:
        lines += 1
        if item.event is None:
            malformed += 1
            continue
        views[item.event.page] += 1
        window = item.event.time_ms - item.event.time_ms % (window_s * 1000)
        users.setdefault(window, set()).add(item.event.user)
    return Expected(lines, malformed, dict(views), {w: len(u) for w, u in users.items()})


def pace(rate_per_s: float, monotonic_s: Callable[[], float], sleep: Callable[[float], None],
         tick_s: float = 0.05) -> Iterator[int]:
    """Endless batch sizes that hold ``rate_per_s`` on average: each step sleeps to the next tick
    and yields how many lines are due since the last step (a slow consumer gets bigger batches)."""
    started = monotonic_s()
    due_before = 0
    while True:
        due = int((monotonic_s() - started) * rate_per_s + 1e-6)  # 0.05 * 100 is 4.999... in floats
        if due > due_before:
            yield due - due_before
            due_before = due
        sleep(tick_s)
