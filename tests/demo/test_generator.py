"""The demo's access log generator: deterministic, skewed, with the malformed lines it promises."""

from __future__ import annotations

import re
from collections import Counter
from itertools import islice

import pytest

from seaway import InvalidArgumentError
from seaway.demo import Expected, GeneratorConfig, expected, generate, pace
from seaway.demo._generator import AccessEvent, Generated, clf_time, page_name

# An independent reading of the format (Python's re, not the pipeline's Spark SQL), to check that the
# generator writes what it says it writes.
_LINE = re.compile(r'^(\S+) - (\S+) \[(\d\d)/(\w{3})/(\d{4}):(\d\d):(\d\d):(\d\d) \+0000\] "(GET|POST) (\S+) HTTP/1.1" '
                   r'(\d{3}) (\d+) "-" "([^"]*)"$')


def test_the_same_seed_and_start_give_the_same_lines_and_others_do_not() -> None:
    config = GeneratorConfig(seed=7)
    first = [g.line for g in islice(generate(config), 300)]
    assert first == [g.line for g in islice(generate(config), 300)]
    assert first != [g.line for g in islice(generate(GeneratorConfig(seed=8)), 300)]
    assert first != [g.line for g in islice(generate(config, first=300), 300)]  # a resumed run draws anew


def test_valid_lines_are_the_combined_log_format_of_their_event() -> None:
    config = GeneratorConfig(seed=3, rate_per_s=50, start_ms=1_700_000_000_000)
    items = list(islice(generate(config), 500))
    valid = [g for g in items if g.event is not None]
    assert len(valid) > 450
    for k, item in enumerate(items):
        if item.event is None:
            continue
        match = _LINE.match(item.line)
        assert match is not None, item.line
        ip, user, *_, method, page, status, size, agent = match.groups()
        event = item.event
        assert (ip, user, method, page, int(status), int(size), agent) == (
            event.ip, event.user, event.method, event.page, event.status, event.bytes, event.agent)
        assert event.time_ms == config.start_ms + (k // 50) * 1000  # 50 lines a second of their own time
        assert f"[{clf_time(event.time_ms)}]" in item.line
    assert clf_time(1_700_000_000_000) == "14/Nov/2023:22:13:20 +0000"


def test_malformed_lines_come_at_the_configured_fraction_and_never_match_the_format() -> None:
    items = list(islice(generate(GeneratorConfig(seed=5, malformed_fraction=0.25)), 2000))
    malformed = [g.line for g in items if g.event is None]
    assert 400 < len(malformed) < 600
    for line in malformed:
        match = _LINE.match(line)
        # The "month" kind matches the shape but names no month: a parser must check the time too.
        assert match is None or match.group(4) == "Foo", line
    assert any(_LINE.match(line) for line in malformed)
    assert all(g.event is not None for g in islice(generate(GeneratorConfig(malformed_fraction=0.0)), 500))


def test_page_popularity_is_skewed_and_users_spread() -> None:
    items = list(islice(generate(GeneratorConfig(seed=11, malformed_fraction=0.0)), 5000))
    views = Counter(g.event.page for g in items if g.event is not None)
    ranked = [page for page, _ in views.most_common()]
    assert ranked[:3] == [page_name(0), page_name(1), page_name(2)]
    assert views[page_name(0)] > 5 * views[page_name(20)]
    users = {g.event.user for g in items if g.event is not None}
    assert len(users) > 2000  # 5,000 draws from 5,000 users, uniformly


def test_expected_counts_pages_malformed_lines_and_users_per_window() -> None:
    # Finding 48: a hand-made input whose answer is written out, not computed again the way
    # expected() computes it.
    t0 = 1_700_000_000_000  # a multiple of 10 s: the first window starts there

    def view(user: str, page: str, second: int) -> Generated:
        event = AccessEvent("10.0.0.1", user, t0 + second * 1000, "GET", page, 200, 10, "test")
        return Generated(event.line(), event)

    bad = Generated("not a log line", None)
    items = [view("ann", "/a", 0), view("bob", "/a", 3), view("ann", "/b", 9), bad,  # window t0
             view("ann", "/a", 10), view("cy", "/c", 19), view("cy", "/c", 19),       # window t0 + 10 s
             bad, view("bob", "/b", 35)]                                               # window t0 + 30 s
    result = expected(items, window_s=10)
    assert (result.lines, result.malformed) == (9, 2)
    assert result.page_views == {"/a": 3, "/b": 2, "/c": 2}
    assert result.unique_users == {t0: 2, t0 + 10_000: 2, t0 + 30_000: 1}
    assert expected([], window_s=10) == Expected(0, 0, {}, {})


def test_bad_configs_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="rate_per_s"):
        GeneratorConfig(rate_per_s=0)
    with pytest.raises(InvalidArgumentError, match="malformed_fraction"):
        GeneratorConfig(malformed_fraction=1.5)
    with pytest.raises(InvalidArgumentError, match="whole second"):
        GeneratorConfig(start_ms=1_700_000_000_001)


def test_pace_yields_what_is_due_at_each_tick_of_a_fake_clock() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    steps = list(islice(pace(100.0, lambda: now[0], sleep, tick_s=0.05), 20))
    assert all(step == 5 for step in steps)  # 100 lines a second, a tick every 50 ms
    late = iter([0.0, 0.0, 1.0, 1.0, 1.05])  # a consumer that fell a second behind gets a big batch
    assert list(islice(pace(100.0, lambda: next(late), lambda _s: None), 2)) == [100, 5]
