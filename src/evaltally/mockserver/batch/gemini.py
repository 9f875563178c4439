"""The Gemini batch mode shape, inline requests: POST
/v1beta/models/{model}:batchGenerateContent, GET /v1beta/batches[/{id}], POST
/v1beta/batches/{id}:cancel. Once done, the batch's operation carries the answers in request
order; like the real API as reported by its users, they do not echo the request metadata."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from evaltally.mockserver.batch.http import (
    Dropped,
    Handler,
    endpoint,
    job_of,
    json_body,
    json_reply,
    newest_first,
    page_size,
    rfc3339,
    stream,
)
from evaltally.mockserver.batch.store import ENDED, BatchStore, Job, line_from_body
from evaltally.mockserver.dialects import ClientFault

MAX_INLINE_BYTES = 20_000_000
_TYPES = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_STATE = {
    "validating": "BATCH_STATE_PENDING",
    "in_progress": "BATCH_STATE_RUNNING",
    "finalizing": "BATCH_STATE_RUNNING",
    "cancelling": "BATCH_STATE_RUNNING",
    "completed": "BATCH_STATE_SUCCEEDED",
    "failed": "BATCH_STATE_FAILED",
    "expired": "BATCH_STATE_EXPIRED",
    "cancelled": "BATCH_STATE_CANCELLED",
}
# HTTP status -> google.rpc.Code, for per-request errors.
_GRPC = {400: 3, 401: 16, 403: 7, 404: 5, 429: 8, 500: 13, 503: 14, 504: 4}
_NOT_RUN = {
    "expired": {"code": 4, "message": "The batch expired before this request ran."},
    "cancelled": {"code": 1, "message": "The batch was cancelled before this request ran."},
}
_ID = "{batch_id:[A-Za-z0-9_-]+}"


def routes(store: BatchStore) -> list[tuple[str, str, Handler]]:
    out = []
    for version in ("/v1beta", "/v1"):
        for method, path, handle in (
            ("POST", "/models/{model}:batchGenerateContent", _create),
            ("GET", "/batches", _list),
            ("GET", f"/batches/{_ID}", _get),
            ("POST", f"/batches/{_ID}:cancel", _cancel),
        ):
            out.append((method, version + path, endpoint(store, "gemini", handle)))
    return out


async def _create(store: BatchStore, request: web.Request) -> web.StreamResponse:
    raw = await request.read()
    if len(raw) > MAX_INLINE_BYTES:
        raise ClientFault(400, f"Inline batch requests are limited to {MAX_INLINE_BYTES} bytes.")
    batch = (await json_body(request)).get("batch")
    batch = batch if isinstance(batch, dict) else {}
    name = batch.get("display_name", batch.get("displayName"))
    config = batch.get("input_config", batch.get("inputConfig"))
    items = (
        ((config or {}).get("requests") or {}).get("requests") if isinstance(config, dict) else None
    )
    if not isinstance(name, str) or not name:
        raise ClientFault(400, "batch.display_name: required")
    if not isinstance(items, list) or not items:
        raise ClientFault(400, "batch.input_config.requests.requests: a non-empty list is required")
    model = request.match_info["model"]
    lines = []
    for i, item in enumerate(items):
        item = item if isinstance(item, dict) else {}
        key = str((item.get("metadata") or {}).get("key", i))
        body = item.get("request")
        lines.append(line_from_body("gemini", key, body, request.headers, model, store.state))
    job = store.create("batches/" + store.new_id(""), "gemini", lines, name=name, model=model)
    if store.take("create_lost"):
        raise Dropped
    return json_reply(_operation(store, job, with_answers=False))


async def _get(store: BatchStore, request: web.Request) -> web.StreamResponse:
    job = job_of(store, "batches/" + request.match_info["batch_id"], "gemini")
    operation = _operation(store, job, with_answers=True)
    if "response" not in operation:
        return json_reply(operation)
    return await stream(request, store, orjson.dumps(operation), "application/json")


async def _cancel(store: BatchStore, request: web.Request) -> web.StreamResponse:
    store.cancel(job_of(store, "batches/" + request.match_info["batch_id"], "gemini"))
    return json_reply({})


async def _list(store: BatchStore, request: web.Request) -> web.StreamResponse:
    jobs, more = newest_first(
        store, "gemini", request.query.get("pageToken"), page_size(request, "pageSize")
    )
    page: dict[str, Any] = {"operations": [_operation(store, j, with_answers=False) for j in jobs]}
    if more and jobs:
        page["nextPageToken"] = jobs[-1].id
    return json_reply(page)


def _operation(store: BatchStore, job: Job, *, with_answers: bool) -> dict[str, Any]:
    phase = store.phase(job)
    results = job.results or []
    ok = sum(1 for r in results if r.kind == "answered")
    done = store.processed(job)
    meta = {
        "@type": _TYPES + "GenerateContentBatch",
        "model": f"models/{job.meta['model']}",
        "displayName": job.meta["name"],
        "name": job.id,
        "createTime": rfc3339(job.created_unix),
        "state": _STATE[phase],
        "batchStats": {
            "requestCount": str(len(job.lines)),
            "successfulRequestCount": str(ok),
            "failedRequestCount": str(len(results) - ok),
            "pendingRequestCount": str(len(job.lines) - done),
        },
    }
    operation: dict[str, Any] = {"name": job.id, "metadata": meta, "done": phase in ENDED}
    if phase == "failed":
        operation["error"] = {"code": 3, "message": job.failure or "The batch failed validation."}
    elif phase in ENDED and with_answers:
        answers = []
        for result in results:
            if result.kind == "answered":
                answers.append({"response": result.body})
            elif result.kind == "error":
                error = dict((result.body or {}).get("error") or {})
                answers.append({"error": {**error, "code": _GRPC.get(result.status, 2)}})
            else:
                answers.append({"error": _NOT_RUN[result.kind]})
        operation["response"] = {
            "@type": _TYPES + "GenerateContentBatchOutput",
            "inlinedResponses": {"inlinedResponses": answers},
        }
    return operation
