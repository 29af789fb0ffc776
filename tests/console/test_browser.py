"""The console in a real browser: Debian's chromium, driven by Playwright (never ``playwright install``:
the system browser is used), against ``seaway serve --console-listen`` with a token. One browser
and one server for the module (one xdist worker runs it all); each test writes what it looks for,
and the stream's scalings are spread over the module so that its timeline has something to show.
Each page loads, shows what the test writes through a client while it is open (waited for in the
page, never slept on), and is saved as a screenshot under the run's temporary directory (its path is
printed; ``SEAWAY_SCREENSHOTS`` names another folder), from which docs/images/ takes them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api as playwright_api

import seaway
from seaway.notify import JsonLinesFile, NotifyConfig
from seaway.server import ServerProcess
from tests.console.conftest import TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("console-browser")]  # one worker: one browser, one server

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
WAIT_MS = 20_000
"""How long a page may take to show what the test wrote (it asks every 2 s; lag is sampled every 5 s)."""


class World:
    """The server, a client of it, the browser page (logged in), and where screenshots go."""

    def __init__(self, server: ServerProcess, client: Any, page: Any, shots: Path) -> None:
        self.server = server
        self.sw = client
        self.page = page
        self.shots = shots
        self.url = (server.console_url or "").rstrip("/")
        self.errors: list[str] = []
        """What went wrong in the pages: uncaught script errors and errors logged (a refused
        Content-Security-Policy among them), but for the 401s the first test asks for."""
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" and "401" not in msg.text
                else None)

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def wait_text(self, selector: str, text: str) -> None:
        """Until the element holds ``text`` (the page refreshes itself)."""
        self.page.wait_for_function(
            "([sel, text]) => { const e = document.querySelector(sel); return !!e && e.textContent.includes(text); }",
            arg=[selector, text], timeout=WAIT_MS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).exists():
        pytest.fail("Debian's chromium is missing: apt-get install -y chromium (make test installs it)")
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def world(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("console-browser")
    shots = Path(os.environ.get("SEAWAY_SCREENSHOTS") or base / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    print(f"\nconsole screenshots: {shots}")
    extra = ("--console-listen", "127.0.0.1:0", "--notify-file-dir", str(base))
    with ServerProcess(base / "data", token=TOKEN, extra_args=extra) as server, \
            seaway.connect(server.url, token=TOKEN) as client:
        client.streams.create_scope("web")
        clicks = client.streams.create("web/clicks", segments=2)
        with clicks.writer() as writer:
            for i in range(40):
                writer.write(f"click {i}".encode(), f"user-{i % 7}")
        client.streams.create_scope("billing")
        client.streams.create("billing/invoices", segments=4)
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        # Logged in as a person would be, by the login form (its cookie then goes with every request).
        logged_in = context.request.post(f"{server.console_url}login", form={"token": TOKEN, "next": "/"},
                                         max_redirects=0)
        assert logged_in.status == 303, logged_in.text()
        try:
            made = World(server, client, context.new_page(), shots)
            yield made
            assert made.errors == [], "\n".join(made.errors)
        except BaseException:
            print(server.log_text()[-4000:])
            raise
        finally:
            context.close()


def test_without_the_token_a_page_answers_401_with_the_login_form_which_lets_the_token_in(
        world: World, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 860})  # a browser without the cookie
    page = context.new_page()
    try:
        _log_in(world, page)
    finally:
        context.close()


def _log_in(world: World, page: Any) -> None:
    refused = page.goto(world.url + "/groups")
    assert refused is not None and refused.status == 401
    page.fill("#token", "not the token")
    page.click("button[type=submit]")
    page.wait_for_selector("text=wrong token", timeout=WAIT_MS)
    page.screenshot(path=str(world.shots / "login.png"), full_page=True)
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_url(world.url + "/groups", timeout=WAIT_MS)
    page.wait_for_selector("text=Groups and lag", timeout=WAIT_MS)
    assert page.evaluate("() => document.body.dataset.page") == "groups"


def test_the_health_page_shows_the_server_serving_and_what_it_holds(world: World) -> None:
    clicks = world.sw.streams.get("web/clicks")
    clicks.split(clicks.current_segments()[0].id)  # the timeline's first scaling; more follow, later
    world.page.goto(world.url + "/")
    world.wait_text("#health-status", "SERVING")
    world.wait_text("#counts", "streams")
    streams = sum(len(world.sw.streams.list(scope)) for scope in world.sw.streams.scopes())
    world.sw.streams.create(f"web/orders-{streams}", segments=1)  # written while the page is open
    world.page.wait_for_function(
        "n => [...document.querySelectorAll('#counts dt')].some(dt => dt.textContent === 'streams'"
        " && dt.nextElementSibling.textContent === String(n))", arg=streams + 1, timeout=WAIT_MS)
    world.shot("health")


def test_the_streams_page_lists_a_stream_created_while_it_is_open(world: World) -> None:
    world.page.goto(world.url + "/streams")
    world.wait_text("#streams", "web/clicks")
    world.sw.streams.create("billing/payments", segments=2)
    world.wait_text("#streams", "billing/payments")
    world.shot("streams")
    clicks = world.sw.streams.get("web/clicks")
    clicks.split(clicks.current_segments()[-1].id, 3)  # a second scaling, a little later


def test_the_groups_page_shows_groups_created_while_it_is_open_and_charts_their_lag(world: World) -> None:
    sw = world.sw
    world.page.goto(world.url + "/groups")
    world.wait_text("h1", "Groups and lag")
    sw.streams.create_reader_group("dashboards", "web/clicks", sw.streams.get("web/clicks").head())
    sw.queues.create("jobs")
    sw.queues.create_group("jobs", "workers", 3, "ROUND_ROBIN")
    with sw.transaction() as tx:
        sw.queues.producer("jobs").enqueue_batch(tx, [f"job {i}".encode() for i in range(25)])
    world.wait_text("#reader-groups", "dashboards")
    world.wait_text("#consumer-groups", "workers")
    # The console samples every group's lag every few seconds: wait for a sample of both groups.
    world.page.wait_for_function(
        "() => { const d = document.getElementById('lag-chart').data || [];"
        " return ['reader group dashboards', 'consumer group jobs/workers'].every("
        "n => d.some(t => t.name === n && t.x.length >= 1)); }", timeout=WAIT_MS)
    with sw.queues.consumer("jobs", "workers", 0) as consumer, sw.transaction() as tx:
        assert consumer.dequeue(tx, 5, timeout_s=10)  # acknowledged on commit: the lag falls at the next sample
    world.page.wait_for_function(
        "() => (document.getElementById('lag-chart').data || []).some("
        "t => t.name === 'consumer group jobs/workers' && t.x.length >= 2)", timeout=WAIT_MS)
    world.shot("groups")


def test_the_ledger_page_is_a_live_feed_with_filters(world: World) -> None:
    page = world.page
    page.goto(world.url + "/ledger")
    world.wait_text("#ledger", "stream/web/clicks")
    page.select_option("#kind", "stream.created")
    page.fill("#name", "billing")
    world.wait_text("#ledger", "stream/billing/invoices")
    world.sw.streams.create("billing/refunds", segments=1)  # new entries show up while the page is open
    world.wait_text("#ledger", "stream/billing/refunds")
    rows = page.eval_on_selector_all("#ledger tbody tr", "rows => rows.map(r => r.cells[2].textContent)")
    assert rows and set(rows) == {"stream.created"}  # the filter holds for the live entries too
    world.shot("ledger")
    clicks = world.sw.streams.get("web/clicks")
    current = sorted(clicks.current_segments(), key=lambda s: s.key_lo)
    clicks.merge([current[0].id, current[1].id])  # a third scaling, later still: the timeline's last


def test_the_transactions_page_shows_a_transaction_while_it_is_in_progress(world: World) -> None:
    world.page.goto(world.url + "/transactions")
    world.wait_text("h1", "Transactions")
    tx = world.sw.transaction(timeout_s=120)
    try:
        world.wait_text("#transactions", str(tx.id))
        world.wait_text("#transactions", "IN_PROGRESS")
        world.shot("transactions")
    finally:
        tx.abort()


def test_the_notifications_page_shows_a_plugin_with_its_position(world: World) -> None:
    world.page.goto(world.url + "/notify")
    world.wait_text("h1", "Notifications")
    base = world.server.data_dir.parent  # where the server lets file targets write
    world.sw.notify.set(NotifyConfig("audit-log", JsonLinesFile(str(base / "audit.jsonl")), scope="billing"))
    world.sw.notify.set(NotifyConfig("archive", JsonLinesFile(str(base / "no-such-dir" / "a.jsonl")), scope="web"))
    world.wait_text("#plugins", "audit-log")
    world.wait_text("#plugins", JsonLinesFile.TYPE)
    world.sw.streams.create("web/sessions", segments=1)  # the archive selects it: its delivery fails
    world.wait_text("#plugins", "cannot append")
    world.shot("notify")


def test_a_streams_page_draws_its_scaling_timeline(world: World) -> None:
    clicks = world.sw.streams.get("web/clicks")
    if not clicks.history():  # run alone: the other tests made no scaling
        clicks.split(clicks.current_segments()[0].id)
    world.page.goto(world.url + "/streams")
    world.page.click("text=web/clicks")
    world.page.wait_for_url("**/stream?name=web%2Fclicks", timeout=WAIT_MS)
    history = clicks.history()
    spans = 2 + sum(len(d.created) for d in history)
    world.page.wait_for_function(
        "n => Number(document.getElementById('timeline').dataset.segments) === n", arg=spans, timeout=WAIT_MS)
    rects = world.page.evaluate("() => document.getElementById('timeline').layout.shapes.length")
    assert rects == spans
    world.wait_text("#history", "manual")
    world.shot("stream")
