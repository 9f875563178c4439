"""The aiohttp application behind `tally view`: a JSON API over the runs and a static page.

  GET /                                   the page (static/index.html)
  GET /static/{app.js,style.css}          its script and style
  GET /api/runs                           the runs served, with state and progress
  GET /api/runs/{run}/overview            counts, attempts, spend, audit, progress
  GET /api/runs/{run}/facets              models, benchmarks, protocols (filter choices)
  GET /api/runs/{run}/calls?...           one page of the calls table (calls.py)
  GET /api/runs/{run}/calls/{call_id}     one call (call.py)
  GET /api/runs/{run}/report              report.md as blocks (report.py)
  GET /api/runs/{run}/plots/{name}.png    a plot of the report

Database reads run in worker threads, so a slow query never stalls the other requests. Every
response forbids inline script and foreign origins (Content-Security-Policy): the page inserts
untrusted text as text, and the policy is the second line of defence. Requests whose Host is
not the loopback address the server was started on are refused (DNS rebinding).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from evaltally.errors import EvaltallyError
from evaltally.ledger.browse import plan_cells
from evaltally.ledger.calls_page import CallFilter, FilterError, list_calls
from evaltally.view.call import call_detail
from evaltally.view.overview import overview, run_summary
from evaltally.view.report import plot_path, report_blocks
from evaltally.view.runs import ViewRun
from evaltally.view.scores import add_row_scores

STATIC = Path(__file__).resolve().parent / "static"
_STATIC_FILES = {"app.js": "text/javascript", "style.css": "text/css"}
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# The filter form's choices read the whole plan (half a second on a million calls).
FACETS_WAIT_S = 10.0
SQLITE_INT_LIMIT = 2**63
"""Page keys are row numbers: larger integers cannot even be compared in SQLite."""
RUNS_KEY: web.AppKey[dict[str, ViewRun]] = web.AppKey("runs")
HOSTS_KEY: web.AppKey[set[str] | None] = web.AppKey("hosts")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    return web.Response(body=body, status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    hosts = request.app[HOSTS_KEY]
    if hosts is not None and request.host not in hosts:
        response: web.StreamResponse = _error(403, f"host {request.host!r} is not served here")
    else:
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = _error(exc.status, exc.reason)
        except FilterError as exc:
            response = _error(400, str(exc))
        except EvaltallyError as exc:
            response = _error(500, str(exc))
    response.headers.update(_SECURITY_HEADERS)
    return response


def _run(request: web.Request) -> ViewRun:
    run = request.app[RUNS_KEY].get(request.match_info["run"])
    if run is None:
        raise web.HTTPNotFound(reason="no such run is served here")
    return run


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Content-Type": "text/html"})


async def _static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in _STATIC_FILES:
        raise web.HTTPNotFound(reason="no such file")
    return web.FileResponse(STATIC / name, headers={"Content-Type": _STATIC_FILES[name]})


async def _no_icon(request: web.Request) -> web.StreamResponse:
    return web.Response(status=204)


async def _runs(request: web.Request) -> web.StreamResponse:
    runs = request.app[RUNS_KEY].values()
    return _json(await asyncio.to_thread(lambda: [run_summary(r) for r in runs]))


async def _overview(request: web.Request) -> web.StreamResponse:
    return _json(await asyncio.to_thread(overview, _run(request)))


_FACETS = ("models", "benchmarks", "protocols")


def _distinct(run: ViewRun) -> dict[str, list[str]]:
    with run.read("list the plan's models, benchmarks and protocols") as conn:
        rows = plan_cells(conn)
    return {key: sorted({r[i] for r in rows}) for i, key in enumerate(_FACETS)}


def _facets(run: ViewRun) -> dict[str, list[str]]:
    facets, _, _ = run.latest("facets", lambda: _distinct(run), FACETS_WAIT_S)
    return facets or {key: [] for key in _FACETS}


async def _facets_handler(request: web.Request) -> web.StreamResponse:
    return _json(await asyncio.to_thread(_facets, _run(request)))


def _page_key(query: Mapping[str, str], key: str) -> int | None:
    value = query.get(key)
    if not value:
        return None
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number < SQLITE_INT_LIMIT:
        raise FilterError(f"{key} must be an integer page key, got {value[:40]!r}")
    return number


async def _calls(request: web.Request) -> web.StreamResponse:
    run = _run(request)
    query = dict(request.query)
    flt = CallFilter.from_query(query)
    after, before = _page_key(query, "after"), _page_key(query, "before")
    limit = _page_key(query, "limit") or 50

    def page() -> dict[str, Any]:
        with run.read("list the calls") as conn:
            found = list_calls(conn, flt, after=after, before=before, limit=limit)
        add_row_scores(run, found["calls"])
        return found

    return _json(await asyncio.to_thread(page))


async def _call(request: web.Request) -> web.StreamResponse:
    run = _run(request)
    detail = await asyncio.to_thread(call_detail, run, request.match_info["call_id"])
    if detail is None:
        raise web.HTTPNotFound(reason="no such call in this run")
    return _json(detail)


async def _report(request: web.Request) -> web.StreamResponse:
    return _json(await asyncio.to_thread(report_blocks, _run(request)))


async def _plot(request: web.Request) -> web.StreamResponse:
    path = plot_path(_run(request).run_dir, request.match_info["name"])
    if path is None:
        raise web.HTTPNotFound(reason="no such plot in this run")
    return web.FileResponse(path, headers={"Content-Type": "image/png"})


def make_app(runs: Mapping[str, ViewRun], allowed_hosts: set[str] | None) -> web.Application:
    """`allowed_hosts`: the Host header values accepted (filled in once the port is bound);
    None accepts any (an explicit --host, reached under names this process cannot know)."""
    app = web.Application(middlewares=[_guard])
    app[RUNS_KEY] = dict(runs)
    app[HOSTS_KEY] = allowed_hosts
    app.router.add_get("/", _index)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/favicon.ico", _no_icon)
    app.router.add_get("/api/runs", _runs)
    app.router.add_get("/api/runs/{run}/overview", _overview)
    app.router.add_get("/api/runs/{run}/facets", _facets_handler)
    app.router.add_get("/api/runs/{run}/calls", _calls)
    app.router.add_get("/api/runs/{run}/calls/{call_id}", _call)
    app.router.add_get("/api/runs/{run}/report", _report)
    app.router.add_get("/api/runs/{run}/plots/{name}", _plot)
    return app
