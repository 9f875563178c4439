"""The Anthropic Message Batches shape: POST /v1/messages/batches, GET
/v1/messages/batches[/{id}], POST /v1/messages/batches/{id}/cancel, GET
/v1/messages/batches/{id}/results (JSONL, once ended)."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from evaltally.mockserver.batch.http import (
    Dropped,
    Handler,
    by_id,
    endpoint,
    job_of,
    json_body,
    json_reply,
    jsonl,
    rfc3339,
    stream,
)
from evaltally.mockserver.batch.store import ENDED, BatchStore, Job, line_from_body
from evaltally.mockserver.dialects import ClientFault

BASE = "/v1/messages/batches"
MAX_REQUESTS = 100_000
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_KIND = {"answered": "succeeded", "error": "errored", "expired": "expired", "cancelled": "canceled"}


def routes(store: BatchStore) -> list[tuple[str, str, Handler]]:
    get_batch, cancel, listing = by_id("anthropic", _batch)
    return [
        (method, path, endpoint(store, "anthropic", handle))
        for method, path, handle in (
            ("POST", BASE, _create),
            ("GET", BASE, listing),
            ("GET", BASE + "/{batch_id}", get_batch),
            ("POST", BASE + "/{batch_id}/cancel", cancel),
            ("GET", BASE + "/{batch_id}/results", _results),
        )
    ]


async def _create(store: BatchStore, request: web.Request) -> web.StreamResponse:
    requests = (await json_body(request)).get("requests")
    if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_REQUESTS:
        raise ClientFault(400, f"requests: a list of 1 to {MAX_REQUESTS} requests is required")
    lines = []
    seen: set[str] = set()
    for i, item in enumerate(requests):
        cid = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(cid, str) or not _CUSTOM_ID.match(cid) or cid in seen:
            raise ClientFault(400, f"requests.{i}.custom_id: missing, malformed or duplicated")
        if not isinstance(item.get("params"), dict):
            raise ClientFault(400, f"requests.{i}.params: Field required")
        seen.add(cid)
        lines.append(
            line_from_body("anthropic", cid, item["params"], request.headers, None, store.state)
        )
    job = store.create(store.new_id("msgbatch_"), "anthropic", lines)
    if store.take("create_lost"):
        raise Dropped
    return json_reply(_batch(store, job))


async def _results(store: BatchStore, request: web.Request) -> web.StreamResponse:
    job = job_of(store, request.match_info["batch_id"], "anthropic")
    if store.phase(job) not in ENDED or job.results is None:
        raise ClientFault(400, f"Message Batch {job.id} has not ended: no results yet")
    records = []
    for result in job.results:
        outcome: dict[str, Any] = {"type": _KIND[result.kind]}
        if result.kind == "answered":
            outcome["message"] = result.body
        elif result.kind == "error":
            outcome["error"] = result.body
        records.append({"custom_id": result.custom_id, "result": outcome})
    return await stream(request, store, jsonl(records), "application/binary")


def _batch(store: BatchStore, job: Job) -> dict[str, Any]:
    phase = store.phase(job)
    ended = phase in ENDED
    counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
    if job.results is not None:
        for result in job.results:
            counts[_KIND[result.kind]] += 1
    else:
        done = store.processed(job)
        counts["succeeded"], counts["processing"] = done, len(job.lines) - done
    status = "ended" if ended else ("canceling" if phase == "cancelling" else "in_progress")
    cancel = job.cancelled_at is not None
    return {
        "id": job.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": counts,
        "ended_at": rfc3339(job.created_unix + sum(job.timing)) if ended else None,
        "created_at": rfc3339(job.created_unix),
        "expires_at": rfc3339(job.created_unix + 24 * 3600),
        "archived_at": None,
        "cancel_initiated_at": rfc3339(job.created_unix) if cancel else None,
        "results_url": f"https://127.0.0.1{BASE}/{job.id}/results" if ended else None,
    }
