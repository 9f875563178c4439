"""The aiohttp application: one lean request pipeline shared by every dialect.

Pipeline per request: read body -> count it -> auth -> parse/validate -> model check ->
scheduled fault -> rate limits -> random fault -> latency -> answer. Nothing is logged per
request (the benchmarks drive thousands of calls through this and it must not be the bottleneck).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

import orjson
from aiohttp import web

from evaltally.errors import EvaltallyError
from evaltally.mockserver.batch.routes import BATCH_STORE, add_batch_routes
from evaltally.mockserver.dialects import DIALECTS, ClientFault, Dialect, ErrorReply, ReplyContext
from evaltally.mockserver.faults import Fault, uniform
from evaltally.mockserver.ratelimit import LimitSnapshot, retry_after_header, retry_after_ms_header
from evaltally.mockserver.state import MockState

STATE_KEY = web.AppKey("mock_state", MockState)

_HTML = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
_MESSAGES = {
    408: "Request timed out.",
    429: "Rate limit reached. Please try again later.",
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The service is temporarily unavailable. Please try again later.",
    504: "The request timed out while waiting for the model.",
    529: "Overloaded",
}


class _Dropped(Exception):
    """Internal signal: the connection was closed on purpose, no response follows."""


def build_app(state: MockState) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[STATE_KEY] = state
    for dialect in DIALECTS:
        handler = _make_handler(state, dialect)
        for route in dialect.routes:
            app.router.add_post(route, handler)
    add_batch_routes(app, state)
    app.router.add_get("/stats", _get_stats)
    app.router.add_post("/stats/reset", _reset_stats)
    app.router.add_get("/control", _get_control)
    app.router.add_post("/control", _post_control)
    app.router.add_get("/health", _health)
    return app


def _make_handler(state: MockState, dialect: Dialect) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body_hash = hashlib.sha256(raw).hexdigest()
        stats = state.stats
        stats.arrive(dialect.name, body_hash)
        status = "cancelled"  # if the handler is cancelled (client went away mid-hang)
        try:
            response = await _respond(state, dialect, request, raw, body_hash)
            status = str(response.status)
            return response
        except _Dropped:
            status = "drop"
            raise asyncio.CancelledError from None
        finally:
            stats.depart(status)

    return handler


async def _respond(
    state: MockState,
    dialect: Dialect,
    request: web.Request,
    raw: bytes,
    body_hash: str,
) -> web.Response:
    cfg = state.config
    ctx = ReplyContext(state.next_request_id(), int(time.time()), int(cfg.latency_ms))
    try:
        dialect.check_auth(request.headers, request.query, state.auth)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ClientFault(400, "The request body is not valid JSON.") from None
        prompt = dialect.parse(body, request.headers, request.match_info.get("model"))
        if state.models and prompt.model not in state.models:
            raise dialect.model_missing(prompt.model)
    except ClientFault as exc:
        return _error(dialect, ErrorReply(exc.status, exc.message, exc.code), ctx, None)
    state.stats.by_model[prompt.model] += 1
    attempt = state.stats.next_attempt(body_hash)

    limiter = state.limiter
    snap: LimitSnapshot | None = None
    fault = state.planner.scheduled(dialect.name, prompt.last_user, attempt)
    if fault is None and limiter.active:
        snap = limiter.admit(prompt.prompt_token_count + (prompt.max_tokens or 0))
        if snap.limited_by is not None:
            state.stats.rate_limited += 1
            code = snap.limited_by
            msg = f"Rate limit reached for {prompt.model} on {code} per min. Please try again."
            shown = snap if cfg.ratelimit_headers else None
            return _error(dialect, ErrorReply(429, msg, code, snap.retry_after_s), ctx, shown)
    if fault is None:
        fault = state.planner.random(body_hash, attempt)
    if snap is None and limiter.active and cfg.ratelimit_headers:
        snap = limiter.snapshot()
    if not cfg.ratelimit_headers:
        # No response shows them, an injected 429 included: with the limiter's headers (requests
        # left) it read as a capacity refusal, not as the bare 429 a client must judge itself.
        snap = None

    finish = "stop"
    if fault is not None:
        state.stats.by_fault[fault.kind] += 1
        if fault.kind in ("safety", "blocked"):
            finish = fault.kind
        elif fault.kind != "truncated":
            return await _inject(state, dialect, fault, ctx, snap, body_hash, attempt)

    completion = state.completion(prompt, body_hash, finish)
    state.stats.prompt_tokens += completion.prompt_tokens
    state.stats.completion_tokens += completion.completion_tokens

    delay_ms = _latency_ms(state, body_hash, attempt) + (
        cfg.ms_per_output_token * completion.completion_tokens
    )
    if delay_ms > 0:
        ctx = ReplyContext(ctx.request_id, ctx.created, int(delay_ms))
        await asyncio.sleep(delay_ms / 1000.0)
    payload = orjson.dumps(dialect.success(prompt, completion, ctx))
    if fault is not None and fault.kind == "truncated":
        # The real body cut mid-way, as a proxy that lost the upstream connection sends it.
        payload = payload[: len(payload) * 2 // 3]
    headers = dialect.id_headers(ctx)
    if snap is not None:
        headers.update(dialect.limit_headers(snap))
    return web.Response(body=payload, status=200, headers=headers, content_type="application/json")


async def _inject(
    state: MockState,
    dialect: Dialect,
    fault: Fault,
    ctx: ReplyContext,
    snap: LimitSnapshot | None,
    body_hash: str,
    attempt: int,
) -> web.Response:
    kind = fault.kind
    if kind == "drop":
        raise _Dropped
    if kind == "hang":
        await asyncio.sleep(state.config.hang_s)
        return _error(dialect, ErrorReply(504, _MESSAGES[504]), ctx, None)
    if kind != "429":
        # Errors from the model backend take about as long as answers; edge 429s do not.
        delay_ms = _latency_ms(state, body_hash, attempt)
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000.0)
    if kind in ("html", "html_502"):
        return web.Response(
            body=_HTML, status=200 if kind == "html" else 502, content_type="text/html"
        )
    status = int(kind)
    message = _MESSAGES.get(status, "Injected error.")
    return _error(dialect, ErrorReply(status, message, None, fault.retry_after), ctx, snap)


def _error(
    dialect: Dialect, err: ErrorReply, ctx: ReplyContext, snap: LimitSnapshot | None
) -> web.Response:
    body = dialect.error_body(err, ctx)
    headers = dialect.error_headers(err)
    headers.update(dialect.id_headers(ctx))
    if snap is not None:
        headers.update(dialect.limit_headers(snap))
    if err.retry_after is not None:
        headers["Retry-After"] = retry_after_header(err.retry_after)
        headers["retry-after-ms"] = retry_after_ms_header(err.retry_after)
    return web.Response(
        body=orjson.dumps(body), status=err.status, headers=headers, content_type="application/json"
    )


def _latency_ms(state: MockState, body_hash: str, attempt: int) -> float:
    cfg = state.config
    delay = cfg.latency_ms
    if cfg.latency_jitter_ms:
        delay += cfg.latency_jitter_ms * uniform(cfg.seed, body_hash, attempt, "jitter")
    return delay


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type="application/json")


async def _get_stats(request: web.Request) -> web.Response:
    stats = request.app[STATE_KEY].stats.snapshot()
    return _json({**stats, "batch": request.app[BATCH_STORE].snapshot()})


async def _reset_stats(request: web.Request) -> web.Response:
    request.app[STATE_KEY].reset_stats()
    request.app[BATCH_STORE].reset()
    return _json({"ok": True})


async def _get_control(request: web.Request) -> web.Response:
    return _json(request.app[STATE_KEY].config.to_dict())


async def _post_control(request: web.Request) -> web.Response:
    """Change knobs at runtime: POST a JSON object of knobs, get the full new config back."""
    try:
        knobs = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return _json({"error": "body must be a JSON object of knobs"}, 400)
    if not isinstance(knobs, dict):
        return _json({"error": "body must be a JSON object of knobs"}, 400)
    try:
        new = request.app[STATE_KEY].update(knobs)
    except EvaltallyError as exc:
        return _json({"error": str(exc)}, 400)
    return _json(new.to_dict())


async def _health(request: web.Request) -> web.Response:
    return _json({"ok": True})
