"""The console's HTML: one shell with the navigation, and per page the place its script fills in.

The pages hold no data: the script (``static/console.js``) asks the JSON endpoints for it, at
load and then every ``refresh_s``, and draws it with plain DOM nodes (text is never parsed as
HTML) and Plotly charts (``static/plotly.min.js``, shipped by the ``plotly`` package).
"""

from __future__ import annotations

from html import escape

NAV = (("/", "Health"), ("/streams", "Streams"), ("/groups", "Groups and lag"), ("/ledger", "Change ledger"),
       ("/transactions", "Transactions"), ("/notify", "Notifications"))

BODIES: dict[str, str] = {
    "health": """
<section><h2>Server health</h2><dl id="health" class="figures"></dl></section>
<section><h2>What the store holds</h2><dl id="counts" class="figures"></dl></section>
<section id="server-section" hidden><h2>The server since it started</h2><dl id="server" class="figures"></dl>
</section>""",
    "streams": """
<section><h2>Streams</h2><table id="streams"></table></section>""",
    "stream": """
<section><h2>Scaling timeline</h2>
<p class="hint">Each rectangle is a segment: the key range it covered (vertically, 0 to 1) from its creation
to the scaling that sealed it (horizontally). Open segments reach to now.</p>
<div id="timeline" class="chart"></div></section>
<section><h2>Current segments</h2><table id="segments"></table></section>
<section><h2>Scalings</h2><table id="history"></table></section>""",
    "groups": """
<section><h2>Total lag over time</h2>
<p class="hint">Events (reader groups), entries (consumer groups) or ledger entries (notification plugins) not
yet read, sampled by the console every <span id="sample-interval"></span> s since it started.</p>
<div id="lag-chart" class="chart"></div></section>
<section><h2>Reader groups</h2><table id="reader-groups"></table></section>
<section><h2>Queue consumer groups</h2><table id="consumer-groups"></table></section>""",
    "ledger": """
<section><h2>Entries</h2>
<p class="hint">Every committed change of the store, as notification plugins read them.</p>
<form id="ledger-filter" class="filters">
<label>Kind <select id="kind" name="kind"><option value="">every kind</option>{operations}</select></label>
<label>Name contains <input id="name" name="name" type="search" placeholder="scope/stream, queue, log..."></label>
<span class="hint">newest first; live</span></form>
<p id="missed" class="error"></p><table id="ledger"></table></section>""",
    "transactions": """
<section><h2>Transactions in progress</h2>
<p class="hint">Then the invalid ones: aborted or timed out, their data not yet gone.</p>
<table id="transactions"></table></section>""",
    "notify": """
<section><h2>Notification plugins</h2><table id="plugins"></table></section>""",
}


def page(name: str, title: str, refresh_s: float, *, where: str, operations: list[str] | None = None,
         extra: dict[str, str] | None = None) -> str:
    """The HTML of page ``name`` (a key of :data:`BODIES`)."""
    body = BODIES[name]
    if operations is not None:
        body = body.replace("{operations}", "".join(
            f'<option value="{escape(op)}">{escape(op)}</option>' for op in operations))
    data = "".join(f' data-{k}="{escape(v)}"' for k, v in (extra or {}).items())
    nav = "".join(f'<a href="{href}"{" class=here" if _here(href, name) else ""}>{escape(text)}</a>'
                  for href, text in NAV)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{escape(title)} - Seaway console</title>
<link rel="stylesheet" href="/static/console.css"><link rel="icon" href="/static/favicon.svg">
<script src="/static/plotly.min.js"></script><script src="/static/console.js" defer></script></head>
<body data-page="{name}" data-refresh-ms="{int(refresh_s * 1000)}"{data}>
<header><span class="brand">Seaway</span><nav>{nav}</nav><span class="where">{escape(where)}</span></header>
<main><h1>{escape(title)}</h1>
<p id="status" class="status">loading...</p>{body}
</main></body></html>"""


def _here(href: str, name: str) -> bool:
    return href == {"health": "/", "stream": "/streams"}.get(name, f"/{name}")


def login_page(next_path: str, message: str) -> str:
    """The login form: the token, posted to ``/login``, which sets the cookie and goes to ``next_path``."""
    note = f'<p class="error">{escape(message)}</p>' if message else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Log in - Seaway console</title>
<link rel="stylesheet" href="/static/console.css"><link rel="icon" href="/static/favicon.svg"></head>
<body><main class="login"><h1>Seaway console</h1>
<p>This console needs the server's token (the one its clients use).</p>{note}
<form method="post" action="/login"><input type="hidden" name="next" value="{escape(next_path)}">
<label>Token <input id="token" name="token" type="password" autocomplete="current-password" autofocus></label>
<button type="submit">Log in</button></form></main></body></html>"""
