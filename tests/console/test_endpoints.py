"""The console's JSON endpoints and its token, over an embedded store and over a client of a server
(the shared ``api`` fixture): the same code reads both."""

from __future__ import annotations

import itertools
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

import seaway
from seaway.console import Console, ConsoleConfig
from seaway.errors import InvalidArgumentError
from seaway.notify import JsonLinesFile, NotifyConfig
from tests.api.conftest import Api
from tests.console.conftest import BEARER, TOKEN, console_over, get, get_json

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LSN = re.compile(r"^e\d+n\d+$")
API_PATHS = ("/api/health", "/api/streams", "/api/groups", "/api/ledger", "/api/transactions", "/api/notify")
PAGES = ("/", "/streams", "/stream?name=a/b", "/groups", "/ledger", "/transactions", "/notify")
"""Whether the stores count reader groups' and consumer groups' lag yet (another change adds it): the
console reads it where it is, and the values are checked once they are there."""


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000)


def test_every_page_and_answer_needs_the_token_and_the_static_files_do_not(api: Api) -> None:
    with console_over(api.sw) as console:
        for path in API_PATHS + PAGES:
            assert get(console, path, headers={}).status_code == 401, path
            assert get(console, path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
            assert get(console, path, headers={"Authorization": TOKEN}).status_code == 401, path  # no scheme
            assert get(console, path).status_code == 200, path
        refused = get(console, "/api/health", headers={})
        assert refused.json()["code"] == "UNAUTHENTICATED" and "WWW-Authenticate" in refused.headers
        assert 'name="token"' in get(console, "/groups", headers={}).text  # a page refused: the login form
        for path in ("/static/console.js", "/static/console.css", "/static/plotly.min.js", "/static/favicon.svg",
                     "/login"):
            assert get(console, path, headers={}).status_code == 200, path
        assert get(console, "/static/other.js", headers={}).status_code == 404
        for reply in (get(console, "/groups"), get(console, "/api/health", headers={})):
            assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]
            assert reply.headers["x-content-type-options"] == "nosniff"


def test_the_login_form_sets_a_cookie_that_opens_the_console_only_with_the_right_token(api: Api) -> None:
    with console_over(api.sw) as console:
        base = console.url.rstrip("/")
        with httpx.Client(base_url=base, timeout=30) as browser:
            wrong = browser.post("/login", data={"token": "nope", "next": "/groups"})
            assert wrong.status_code == 401 and "wrong token" in wrong.text and not browser.cookies
            assert browser.get("/api/health").status_code == 401
            right = browser.post("/login", data={"token": TOKEN, "next": "/groups"})
            assert right.status_code == 303 and right.headers["location"] == "/groups"
            cookie = right.headers["set-cookie"]
            assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and TOKEN not in cookie
            assert browser.get("/api/health").status_code == 200
            assert browser.get("/groups").status_code == 200
            elsewhere = browser.post("/login", data={"token": TOKEN, "next": "//evil.example/x"})
            assert elsewhere.headers["location"] == "/"  # never sends the browser to another site
            browser.get("/logout")
            browser.cookies.clear()
            assert browser.get("/api/health").status_code == 401
        too_big = httpx.post(base + "/login", content=b"token=" + b"x" * 10_000,
                             headers={"content-type": "application/x-www-form-urlencoded"})
        assert too_big.status_code == 413


def test_two_consoles_on_one_host_keep_a_cookie_each(api: Api) -> None:
    """A browser sends a host's cookies to all its ports: each console's cookie is named for its port."""
    with console_over(api.sw) as first, console_over(api.sw, token="another-token") as second, \
            httpx.Client(timeout=30) as browser:
        assert browser.post(first.url + "login", data={"token": TOKEN}).status_code == 303
        assert browser.post(second.url + "login", data={"token": "another-token"}).status_code == 303
        assert browser.get(first.url + "api/health").status_code == 200
        assert browser.get(second.url + "api/health").status_code == 200
        assert {c.name for c in browser.cookies.jar} == {f"seaway_console_{first.port}",
                                                         f"seaway_console_{second.port}"}


def test_without_a_token_set_the_console_is_open_on_loopback_and_refused_beyond(api: Api) -> None:
    with console_over(api.sw, token=None) as console:
        assert get(console, "/api/health", headers={}).status_code == 200
    with pytest.raises(InvalidArgumentError, match="needs a token"):
        Console(api.sw, ConsoleConfig(listen="0.0.0.0:0"))
    with pytest.raises(InvalidArgumentError, match="needs TLS"):
        Console(api.sw, ConsoleConfig(listen="0.0.0.0:0", token=TOKEN))
    with pytest.raises(InvalidArgumentError, match="host:port"):
        Console(api.sw, ConsoleConfig(listen="nowhere"))


def test_the_console_changes_nothing(api: Api) -> None:
    """Only GET answers (but the login form's POST, which touches no store); the ledger, where every
    change of the store is recorded, does not move while every endpoint is read."""
    scope = api.name("ro")
    api.sw.streams.create_scope(scope)
    api.sw.streams.create(f"{scope}/s", segments=1)
    with console_over(api.sw) as console:
        head = api.sw.ledger.bounds()[1]
        for path in (*API_PATHS, f"/api/stream?name={scope}/s", *PAGES):
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                assert httpx.request(method, console.url.rstrip("/") + path, headers=BEARER).status_code == 405
            assert get(console, path).status_code == 200
        if api.kind == "embedded":  # a shared server's ledger moves with the other tests' changes
            assert api.sw.ledger.bounds()[1] == head


def test_streams_list_and_a_streams_scaling_timeline_covers_the_key_space_at_every_moment(api: Api) -> None:
    scope = api.name("web")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/clicks", segments=2)
    first = stream.current_segments()
    api.sw.logs.get(first[0].log_id).append(b"x")
    stream.split(first[0].id)
    with console_over(api.sw) as console:
        listed = {r["stream"]: r for r in get_json(console, "/api/streams")}
        assert listed[f"{scope}/clicks"]["segments"] == 3 and listed[f"{scope}/clicks"]["generation"] == 1
        shown = get_json(console, f"/api/stream?name={scope}/clicks")
    assert sorted(s["segment"] for s in shown["segments"]) == ["0.1", "1.2", "1.3"]
    assert all(LSN.match(s["tail_lsn"]) and ISO_UTC.match(s["created"]) for s in shown["segments"])
    assert [(h["generation"], h["sealed"], h["created"]) for h in shown["history"]] == [(1, ["0.0"], ["1.2", "1.3"])]
    spans = {s["segment"]: s for s in shown["timeline"]}
    assert set(spans) == {"0.0", "0.1", "1.2", "1.3"}
    assert not spans["0.0"]["open"] and spans["0.1"]["open"] and spans["1.2"]["open"]
    assert spans["0.0"]["to"] == spans["1.2"]["from"] == shown["history"][0]["time"]
    for moment in (_ms(spans["0.0"]["from"]), _ms(spans["1.2"]["from"])):  # before and after the split
        alive = sorted((s["key_lo"], s["key_hi"]) for s in spans.values()
                       if _ms(s["from"]) <= moment < _ms(s["to"]) or (s["open"] and _ms(s["from"]) <= moment))
        assert alive[0][0] == 0.0 and alive[-1][1] == 1.0
        assert all(a[1] == b[0] for a, b in itertools.pairwise(alive))  # no gap, no overlap


def test_bad_or_unknown_names_get_a_typed_json_error(api: Api) -> None:
    with console_over(api.sw) as console:
        missing = get(console, f"/api/stream?name={api.name('none')}/s")
        assert missing.status_code == 404 and missing.json()["code"] in ("UNKNOWN_SCOPE", "UNKNOWN_STREAM")
        assert get(console, "/api/stream").status_code == 400
        assert get(console, "/api/stream?name=no-slash").json()["code"] == "INVALID_ARGUMENT"
        assert get(console, "/api/ledger?after=-1").status_code == 400


def test_groups_show_reader_and_consumer_groups_and_the_sampler_records_their_lag(api: Api) -> None:
    scope = api.name("g")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", segments=2)
    group = api.name("rg")
    api.sw.streams.create_reader_group(group, stream)
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "workers", 2, "ROUND_ROBIN")
    with api.sw.transaction() as tx:
        api.sw.queues.producer(queue).enqueue_batch(tx, [b"a", b"b", b"c"])
    for segment in stream.current_segments():
        api.sw.logs.get(segment.log_id).append_batch([b"1", b"2"])
    with console_over(api.sw) as console:  # its first sample is taken as it starts
        shown = get_json(console, "/api/groups")
    readers = {r["group"]: r for r in shown["reader_groups"]}
    assert readers[group]["stream"] == f"{scope}/s" and readers[group]["unassigned"] == ["0.0", "0.1"]
    assert [p["segment"] for p in readers[group]["positions"]] == ["0.0", "0.1"]
    assert all(LSN.match(p["position"]) for p in readers[group]["positions"])
    consumers = {(c["queue"], c["group"]): c for c in shown["consumer_groups"]}
    workers = consumers[(queue, "workers")]
    assert workers["size"] == 2 and workers["strategy"] == "ROUND_ROBIN" and len(workers["partitions"]) == 2
    series = {s["name"]: s for s in shown["lag_series"]}
    assert len(series[f"reader group {group}"]["time"]) == 1
    assert len(series[f"consumer group {queue}/workers"]["time"]) == 1
    assert all(ISO_UTC.match(t) for t in series[f"reader group {group}"]["time"])
    assert readers[group]["lag"] == 4 and series[f"reader group {group}"]["lag"] == [4]
    assert [p["lag"] for p in readers[group]["positions"]] == [2, 2]
    assert workers["lag"] == 3 and series[f"consumer group {queue}/workers"]["lag"] == [3]


def test_a_consumer_groups_lag_falls_as_its_entries_are_acknowledged(api: Api) -> None:
    queue = api.name("q")
    api.sw.queues.create(queue)
    api.sw.queues.create_group(queue, "one", 1, "ROUND_ROBIN")
    with api.sw.transaction() as tx:
        api.sw.queues.producer(queue).enqueue_batch(tx, [b"a", b"b"])
    with console_over(api.sw) as console:
        with api.sw.queues.consumer(queue, "one", 0) as consumer, api.sw.transaction() as tx:
            assert len(consumer.dequeue(tx, 2, timeout_s=10)) == 2  # acknowledged by the commit
        console.sampler.sample()
        series = {s["name"]: s["lag"] for s in get_json(console, "/api/groups")["lag_series"]}
    assert series[f"consumer group {queue}/one"] == [2, 0]


def test_the_ledger_feed_filters_by_kind_and_name_and_pages_forward(api: Api) -> None:
    scope = api.name("led")
    api.sw.streams.create_scope(scope)
    for n in range(3):
        api.sw.streams.create(f"{scope}/s{n}", segments=1)
    with console_over(api.sw, ledger_entries_max=2) as console:
        latest = get_json(console, f"/api/ledger?kind=stream.created&name={scope}/")
        assert [e["resource"] for e in latest["entries"]] == [f"stream/{scope}/s1", f"stream/{scope}/s2"]
        assert all(ISO_UTC.match(e["time"]) and e["operation"] == "stream.created" for e in latest["entries"])
        assert latest["entries"][1]["change"]["stream"] == f"{scope}/s2"
        start = latest["entries"][0]["index"] - 1
        every = []
        after = max(0, start - 10)
        for _ in range(20):
            page = get_json(console, f"/api/ledger?kind=stream.created&name={scope}/&after={after}")
            every += [e["resource"] for e in page["entries"]]
            if page["next"] == after:
                break
            after = page["next"]
        assert every == [f"stream/{scope}/s{n}" for n in range(3)]
        api.sw.streams.create(f"{scope}/s3", segments=1)
        page = get_json(console, f"/api/ledger?kind=stream.created&name={scope}/&after={after}")
        assert [e["resource"] for e in page["entries"]] == [f"stream/{scope}/s3"]
        assert get_json(console, f"/api/ledger?kind=scope.deleted&name={scope}")["entries"] == []


def test_the_ledger_feed_says_which_entries_were_pruned_before_it_showed_them(tmp_path: Path) -> None:
    with seaway.open(tmp_path / "data") as sw, console_over(sw) as console:
        for n in range(4):
            sw.streams.create_scope(f"p{n}")
        first = get_json(console, "/api/ledger")
        assert first["missed"] is None and len(first["entries"]) == 4
        after = first["entries"][0]["index"]  # as if the feed had shown only the first entry
        sw.ledger.prune(after + 2)
        page = get_json(console, f"/api/ledger?after={after}")
        assert page["missed"] == {"first": after + 1, "last": after + 2}
        assert [e["index"] for e in page["entries"]] == [after + 3]


def test_transactions_in_progress_are_listed_until_they_end(api: Api) -> None:
    with console_over(api.sw) as console:
        tx = api.sw.transaction()
        try:
            rows = {r["id"]: r for r in get_json(console, "/api/transactions")}
            assert rows[tx.id]["status"] == "IN_PROGRESS"
            assert ISO_UTC.match(rows[tx.id]["began"]) and ISO_UTC.match(rows[tx.id]["times_out"])
        finally:
            tx.commit()
        assert tx.id not in {r["id"] for r in get_json(console, "/api/transactions")}


def test_notification_plugins_show_their_target_position_and_last_delivery_error(api: Api, tmp_path: Path) -> None:
    scope = api.name("ns")
    name = api.name("plugin")
    api.sw.notify.set(NotifyConfig(name, JsonLinesFile(str(tmp_path / "missing" / "out.jsonl")), scope=scope))
    try:
        with console_over(api.sw) as console:
            plugins = {p["name"]: p for p in get_json(console, "/api/notify")}
            assert plugins[name]["target"] == JsonLinesFile.TYPE and isinstance(plugins[name]["position"], int)
            assert plugins[name]["error"] is None and plugins[name]["last_error"] is None
            assert "delivered" in plugins[name]["counters"]
            api.sw.streams.create_scope(scope)  # selected: its delivery fails (no such directory)
            deadline = time.monotonic() + 30
            while plugins[name]["last_error"] is None and time.monotonic() < deadline:
                time.sleep(0.05)  # the plugin's thread delivers: poll, bounded
                plugins = {p["name"]: p for p in get_json(console, "/api/notify")}
            assert "cannot append" in plugins[name]["last_error"]
            assert ISO_UTC.match(plugins[name]["last_error_time"])
    finally:
        api.sw.notify.delete(name)


def test_health_says_serving_and_counts_what_the_store_holds(api: Api) -> None:
    scope = api.name("h")
    api.sw.streams.create_scope(scope)
    api.sw.streams.create(f"{scope}/s", segments=2)
    with console_over(api.sw) as console:
        health = get_json(console, "/api/health")
    assert health["status"] == "SERVING" and health["write_failure"] is None
    assert ISO_UTC.match(health["time"]) and health["ledger"]["head_index"] >= health["ledger"]["tail_index"]
    assert health["counts"]["streams"] >= 1 and health["counts"]["scopes"] >= 1
    assert health["server"] is None  # figures only beside a server


def test_health_counts_stop_at_the_lists_limits(api: Api) -> None:
    scope = api.name("cap")
    api.sw.streams.create_scope(scope)
    stream = api.sw.streams.create(f"{scope}/s", segments=1)
    for _ in range(3):
        api.sw.streams.create_reader_group(api.name("capg"), stream)
    with console_over(api.sw, groups_max=2) as console:
        health = get_json(console, "/api/health")
        assert health["counts"]["reader_groups"] == 2 and health["counts_max"]["reader_groups"] == 2
        assert len(get_json(console, "/api/groups")["reader_groups"]) == 2


def test_beside_a_server_health_follows_the_servers_own_rule(api: Api) -> None:
    serving = [True]
    config = ConsoleConfig(listen="127.0.0.1:0", token=TOKEN)
    with Console(api.sw, config, where="test", serving=lambda: serving[0]) as console:
        assert get_json(console, "/api/health")["status"] == "SERVING"
        serving[0] = False
        assert get_json(console, "/api/health")["status"] == "NOT_SERVING"
