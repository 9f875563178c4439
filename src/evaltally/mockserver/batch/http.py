"""What every batch endpoint of the mock shares: the auth check before anything, the latency
knob after the endpoint acted, errors in the dialect's shape, JSON bodies, newest-first listing,
and streamed result documents (in `batch_chunk_bytes` writes, cut off halfway by a
`download_drop` fault)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from aiohttp import web

from evaltally.mockserver.batch.store import BatchStore, Job
from evaltally.mockserver.dialects import DIALECTS, ClientFault, ErrorReply, ReplyContext

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
StoreHandler = Callable[[BatchStore, web.Request], Awaitable[web.StreamResponse]]
_DIALECTS = {d.name: d for d in DIALECTS}


class Dropped(Exception):
    """Raised by a handler to close the connection without an answer (a lost response)."""


def json_reply(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type="application/json")


def endpoint(store: BatchStore, dialect: str, handle: StoreHandler) -> Handler:
    """`handle` behind the dialect's credential check and followed by the batch latency; a
    ClientFault it raises becomes the dialect's error answer."""
    shape = _DIALECTS[dialect]

    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            shape.check_auth(request.headers, request.query, store.state.auth)
            response = await handle(store, request)
            if not response.prepared:  # a streamed document waits midway instead
                await _latency(store)
            return response
        except Dropped:
            store.counters["dropped"] += 1
            raise asyncio.CancelledError from None  # aiohttp closes the connection
        except ClientFault as exc:
            ctx = ReplyContext(store.state.next_request_id(), int(time.time()), 0)
            body = shape.error_body(ErrorReply(exc.status, exc.message, exc.code), ctx)
            return json_reply(body, exc.status)

    return handler


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise ClientFault(400, "The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ClientFault(400, "The request body must be a JSON object.")
    return body


def job_of(store: BatchStore, job_id: str, dialect: str) -> Job:
    job = store.jobs.get(job_id)
    if job is None or job.dialect != dialect:
        raise ClientFault(404, f"No batch found with id '{job_id}'.")
    return job


def newest_first(
    store: BatchStore, dialect: str, after: str | None, limit: int
) -> tuple[list[Job], bool]:
    """One page of this shape's batches, newest first, starting after the id `after`."""
    jobs = [j for j in reversed(store.jobs.values()) if j.dialect == dialect]
    if after is not None:
        ids = [j.id for j in jobs]
        jobs = jobs[ids.index(after) + 1 :] if after in ids else []
    return jobs[:limit], len(jobs) > limit


Render = Callable[[BatchStore, Job], dict[str, Any]]


def by_id(dialect: str, render: Render) -> tuple[StoreHandler, StoreHandler, StoreHandler]:
    """GET one batch, POST its cancel, GET the newest-first `{data, has_more, first_id,
    last_id}` page (OpenAI and Anthropic list the same way; `after`/`after_id` is the cursor)."""

    async def get_one(store: BatchStore, request: web.Request) -> web.StreamResponse:
        return json_reply(render(store, job_of(store, request.match_info["batch_id"], dialect)))

    async def cancel(store: BatchStore, request: web.Request) -> web.StreamResponse:
        job = job_of(store, request.match_info["batch_id"], dialect)
        store.cancel(job)
        return json_reply(render(store, job))

    async def page(store: BatchStore, request: web.Request) -> web.StreamResponse:
        after = request.query.get("after", request.query.get("after_id"))
        jobs, more = newest_first(store, dialect, after, page_size(request, "limit"))
        data = [render(store, j) for j in jobs]
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        body = {"data": data, "has_more": more, "first_id": first, "last_id": last}
        return json_reply({"object": "list", **body} if dialect == "openai" else body)

    return get_one, cancel, page


def page_size(request: web.Request, name: str, default: int = 20) -> int:
    raw = request.query.get(name, str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise ClientFault(400, f"{name}: must be an integer between 1 and 1000")
    return int(raw)


def jsonl(records: Sequence[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


async def stream(
    request: web.Request, store: BatchStore, data: bytes, content_type: str
) -> web.StreamResponse:
    """A result document in chunks; a `download_drop` fault closes the connection halfway."""
    drop = store.take("download_drop")
    response = web.StreamResponse(headers={"content-type": content_type})
    response.content_length = len(data)
    await response.prepare(request)
    store.counters["downloads"] += 1
    end = len(data) // 2 if drop else len(data)
    step = store.state.config.batch_chunk_bytes
    for start in range(0, end, step):
        await response.write(data[start : min(start + step, end)])
        store.counters["download_chunks"] += 1
        if start == 0:
            await _latency(store)
    if drop:
        raise Dropped  # the body ends short of its content-length
    await response.write_eof()
    return response


async def _latency(store: BatchStore) -> None:
    """`batch_latency_s`: the provider has acted (stored, created, cancelled) but its answer is
    slow; a download stalls after its first chunk. Kill tests use the windows this opens."""
    latency = store.state.config.batch_latency_s
    if latency > 0:
        await asyncio.sleep(latency)


def rfc3339(unix: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))
