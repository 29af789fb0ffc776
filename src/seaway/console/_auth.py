"""The console's token: the server's shared secret, as a bearer token (``Authorization: Bearer
<token>``, as gRPC calls carry it) or, for a browser, a cookie the login form sets.

The cookie does not hold the token itself but a value derived from it (an HMAC): a copy of the
cookie opens the console as long as the token stays the same, and does not reveal the token.
Everything but the login form and the static files (the page's code, no data) needs one or the
other; a request with neither gets 401.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, JSONResponse, Response

COOKIE_PREFIX = "seaway_console_"
"""The cookie's name, before the console's port: a browser sends a host's cookies to every port of
it, so two consoles on one host (each with its own token) keep a cookie each."""
OPEN_PATHS = ("/login", "/static/")
"""What needs no token: the login form, and the page's code and style (no data)."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class TokenGate:
    """Whether a request carries the token. ``token`` None: every request does (no token set).
    ``port``: the console's, in the cookie's name."""

    def __init__(self, token: str | None, port: int) -> None:
        self.cookie = f"{COOKIE_PREFIX}{port}"
        self._bearer = f"Bearer {token}".encode() if token else None
        self._token = token.encode() if token else None
        self.session = hmac.new(token.encode(), b"seaway console session", hashlib.sha256).hexdigest() \
            if token else ""
        """The cookie's value."""

    @property
    def required(self) -> bool:
        return self._token is not None

    def allows(self, conn: HTTPConnection) -> bool:
        if self._bearer is None:
            return True
        header = conn.headers.get("authorization", "").encode()
        cookie = conn.cookies.get(self.cookie, "").encode()
        return hmac.compare_digest(header, self._bearer) or hmac.compare_digest(cookie, self.session.encode())

    def right_token(self, supplied: str) -> bool:
        return self._token is None or hmac.compare_digest(supplied.encode(), self._token)


class RequireToken:
    """ASGI middleware: a request that is not for :data:`OPEN_PATHS` and does not carry the token
    gets 401, a JSON error for ``/api/`` and the login form for a page."""

    def __init__(self, app: App, gate: TokenGate, login_page: Callable[[str, str], str]) -> None:
        self._app = app
        self._gate = gate
        self._login_page = login_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope["path"]).startswith(OPEN_PATHS):
            conn = HTTPConnection(scope)
            if not self._gate.allows(conn):
                await self._refusal(conn)(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def _refusal(self, conn: HTTPConnection) -> Response:
        headers = {"WWW-Authenticate": 'Bearer realm="seaway console"'}
        if conn.url.path.startswith("/api/"):
            return JSONResponse({"error": "this console needs the server's token: send 'Authorization: Bearer "
                                          "<token>', or log in at /login", "code": "UNAUTHENTICATED"},
                                status_code=401, headers=headers)
        next_path = conn.url.path + (f"?{conn.url.query}" if conn.url.query else "")
        return HTMLResponse(self._login_page(next_path, ""), status_code=401, headers=headers)


SECURITY_HEADERS = [
    # The pages load only the console's own script, style and plotly.js; Plotly sets inline styles
    # and draws images from data: URLs. No page may be framed by another site.
    (b"content-security-policy", b"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                                 b"frame-ancestors 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every answer."""

    def __init__(self, app: App) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self._app(scope, receive, with_headers if scope["type"] == "http" else send)
