"""The console's web application: pages, JSON endpoints and static files, all read-only.

Every route answers GET (and HEAD) only, but for the login form's POST, which sets a cookie and
changes nothing in the store; any other method gets 405. The JSON endpoints call the store's
blocking API: they are plain functions, which Starlette runs in its thread pool.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from seaway.console import _views as views
from seaway.console._auth import RequireToken, SecurityHeaders, TokenGate
from seaway.console._config import ConsoleConfig
from seaway.console._lag import LagSampler
from seaway.console._pages import login_page, page
from seaway.errors import ClientError, InvalidArgumentError, SeawayError

if TYPE_CHECKING:
    from seaway import Store  # a Protocol: both stores (embedded and a client) satisfy it

STATIC_TYPES = {"console.js": "text/javascript", "console.css": "text/css", "favicon.svg": "image/svg+xml"}
LOGIN_BODY_BYTES_MAX = 8 << 10
"""The login form's body: a token and a path; anything longer is refused."""


def plotly_js() -> bytes:
    """plotly.js, as the ``plotly`` package ships it (nothing is fetched from the internet)."""
    return importlib.resources.files("plotly").joinpath("package_data/plotly.min.js").read_bytes()


def _static(name: str) -> bytes:
    return importlib.resources.files("seaway.console").joinpath(f"static/{name}").read_bytes()


def _error(exc: SeawayError) -> JSONResponse:
    status = 404 if isinstance(exc, KeyError) else 400 if isinstance(exc, ClientError) else 503
    return JSONResponse({"error": str(exc), "code": exc.code, "retriable": exc.retriable}, status_code=status)


class ConsoleApp:
    """The routes over one store. ``where`` names the store on every page; ``serving`` and
    ``figures``, beside a server, are the server's own health rule and figures."""

    def __init__(self, store: Store, config: ConsoleConfig, sampler: LagSampler, *, port: int, where: str,
                 started_ms: int, serving: Callable[[], bool] | None = None,
                 figures: Callable[[], dict[str, float]] | None = None) -> None:
        self._store = store
        self._config = config
        self._sampler = sampler
        self._where = where
        self._started_ms = started_ms
        self._serving = serving
        self._figures = figures
        self._gate = TokenGate(config.token, port)
        self._plotly: bytes | None = None
        self._secure_cookie = config.tls_cert is not None

    def asgi(self) -> SecurityHeaders:
        routes = [Route("/", self._page("health", "Health")),
                  Route("/streams", self._page("streams", "Streams")),
                  Route("/stream", self._stream_page),
                  Route("/groups", self._page("groups", "Groups and lag")),
                  Route("/ledger", self._page("ledger", "Change ledger")),
                  Route("/transactions", self._page("transactions", "Transactions")),
                  Route("/notify", self._page("notify", "Notifications")),
                  Route("/login", self._login, methods=["GET", "POST"]),
                  Route("/logout", self._logout),
                  Route("/static/{name}", self._static),
                  Route("/api/health", self._json(lambda r: views.health(
                      self._store, self._where, self._started_ms, self._config.groups_max, self._serving,
                      self._figures))),
                  Route("/api/streams", self._json(lambda r: views.streams(self._store))),
                  Route("/api/stream", self._json(lambda r: views.stream(self._store, _param(r, "name")))),
                  Route("/api/groups", self._json(self._groups)),
                  Route("/api/ledger", self._json(self._ledger)),
                  Route("/api/transactions", self._json(lambda r: views.transactions(self._store))),
                  Route("/api/notify", self._json(lambda r: views.plugins(self._store)))]
        return SecurityHeaders(RequireToken(Starlette(routes=routes), self._gate, login_page))

    # --- pages -------------------------------------------------------------------------------

    def _page(self, name: str, title: str) -> Callable[[Request], Response]:
        extra = {"sample-interval-s": str(self._config.lag_sample_interval_s)} if name == "groups" else None
        html = page(name, title, self._config.refresh_s, where=self._where,
                    operations=views.operations() if name == "ledger" else None, extra=extra)

        def endpoint(request: Request) -> Response:
            return HTMLResponse(html)

        return endpoint

    def _stream_page(self, request: Request) -> Response:
        name = request.query_params.get("name", "")
        return HTMLResponse(page("stream", f"Stream {name}", self._config.refresh_s, where=self._where,
                                 extra={"stream": name}))

    async def _login(self, request: Request) -> Response:
        """GET: the form. POST (``token``, ``next``): the cookie and a redirect to ``next`` (a path
        of this console) if the token is right, else the form again with 401."""
        if request.method == "GET":
            return HTMLResponse(login_page(request.query_params.get("next", "/"), ""))
        # Parsed here rather than by Starlette's form parser, which needs an extra package for
        # what is two urlencoded fields.
        raw = request.headers.get("content-length", "")
        if not raw.isdigit() or int(raw) > LOGIN_BODY_BYTES_MAX:  # a browser's form always says its length
            return HTMLResponse(login_page("/", "the form is too large"), status_code=413)
        body = await request.body()
        fields = parse_qs(body.decode(errors="replace"), max_num_fields=4)
        token = fields.get("token", [""])[0]
        next_path = fields.get("next", ["/"])[0]
        if not next_path.startswith("/") or next_path.startswith("//"):
            next_path = "/"  # only a path of this console: the form never sends the browser elsewhere
        if not self._gate.right_token(token):
            return HTMLResponse(login_page(next_path, "wrong token"), status_code=401)
        response = RedirectResponse(next_path, status_code=303)
        if self._gate.required:
            response.set_cookie(self._gate.cookie, self._gate.session, httponly=True, samesite="strict",
                                secure=self._secure_cookie)
        return response

    def _logout(self, request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(self._gate.cookie)
        return response

    def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        headers = {"Cache-Control": "max-age=3600"}
        if name == "plotly.min.js":
            if self._plotly is None:
                self._plotly = plotly_js()
            return Response(self._plotly, media_type="text/javascript", headers=headers)
        if name not in STATIC_TYPES:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(_static(name), media_type=STATIC_TYPES[name], headers=headers)

    # --- JSON --------------------------------------------------------------------------------

    def _json(self, view: Callable[[Request], Any]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(view(request), headers={"Cache-Control": "no-store"})
            except SeawayError as exc:
                return _error(exc)

        return endpoint

    def _groups(self, request: Request) -> dict[str, Any]:
        limit = self._config.groups_max
        return {"reader_groups": views.reader_groups(self._store, limit),
                "consumer_groups": views.consumer_groups(self._store, limit),
                "lag_series": self._sampler.series(), "sample_interval_s": self._config.lag_sample_interval_s,
                "sample_error": self._sampler.last_error}

    def _ledger(self, request: Request) -> dict[str, Any]:
        after = request.query_params.get("after")
        if after is not None and not after.isdigit():
            raise InvalidArgumentError(f"after is a ledger index (an integer), got {after[:40]!r}")
        return views.ledger(self._store, after=None if after is None else int(after),
                            kind=request.query_params.get("kind", ""), name=request.query_params.get("name", ""),
                            entries_max=self._config.ledger_entries_max,
                            scan_entries_max=self._config.ledger_scan_entries_max)


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise InvalidArgumentError(f"give the {name} (?{name}=...)")
    return value
