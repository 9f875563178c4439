"""The OpenAI Batch API shape: POST /v1/files (multipart, purpose "batch"), POST /v1/batches,
GET /v1/batches[/{id}], POST /v1/batches/{id}/cancel, GET /v1/files/{id}/content. Also without
the /v1 prefix, as OpenAI-compatible base URLs differ on including it."""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from evaltally.mockserver.batch.http import (
    Dropped,
    Handler,
    by_id,
    endpoint,
    json_body,
    json_reply,
    jsonl,
    stream,
)
from evaltally.mockserver.batch.store import ENDED, BatchStore, Job, Line, line_from_body
from evaltally.mockserver.dialects import ClientFault

CHAT = "/v1/chat/completions"
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
WINDOW_S = 24 * 3600


def routes(store: BatchStore) -> list[tuple[str, str, Handler]]:
    get_batch, cancel, listing = by_id("openai", _batch)
    out: list[tuple[str, str, Handler]] = []
    for prefix in ("/v1", ""):
        for method, path, handle in (
            ("POST", "/files", _upload),
            ("GET", "/files/{file_id}/content", _content),
            ("POST", "/batches", _create),
            ("GET", "/batches", listing),
            ("GET", "/batches/{batch_id}", get_batch),
            ("POST", "/batches/{batch_id}/cancel", cancel),
        ):
            out.append((method, prefix + path, endpoint(store, "openai", handle)))
    return out


async def _upload(store: BatchStore, request: web.Request) -> web.StreamResponse:
    if store.take("upload_error"):
        raise ClientFault(503, "The server is overloaded. Please try again later.")
    form = await request.post()
    upload = form.get("file")
    if form.get("purpose") != "batch":
        raise ClientFault(400, "purpose: this mock stores only files with purpose 'batch'")
    if not isinstance(upload, web.FileField):
        raise ClientFault(400, "file: a file part is required")
    data = upload.file.read()
    file_id = store.new_id("file-")
    store.files[file_id] = data
    store.counters["uploads"] += 1
    return json_reply(
        {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": upload.filename,
            "purpose": "batch",
        }
    )


async def _content(store: BatchStore, request: web.Request) -> web.StreamResponse:
    data = store.files.get(request.match_info["file_id"])
    if data is None:
        raise ClientFault(404, f"No such File object: {request.match_info['file_id']}")
    return await stream(request, store, data, "application/jsonl")


async def _create(store: BatchStore, request: web.Request) -> web.StreamResponse:
    body = await json_body(request)
    file_id = body.get("input_file_id")
    if not isinstance(file_id, str) or file_id not in store.files:
        raise ClientFault(400, f"input_file_id: no file {str(file_id)[:40]!r}")
    if body.get("endpoint") != CHAT:
        raise ClientFault(400, f"endpoint: this mock batches only {CHAT}")
    if body.get("completion_window") != "24h":
        raise ClientFault(400, "completion_window: only '24h' is supported")
    lines, failure = _lines(store, store.files[file_id])
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    job = store.create(store.new_id("batch_"), "openai", lines, file=file_id, metadata=metadata)
    job.failure = failure
    if store.take("create_lost"):
        raise Dropped
    return json_reply(_batch(store, job))


def _lines(store: BatchStore, data: bytes) -> tuple[list[Line], str | None]:
    """The file's requests, and why validation fails the whole batch (None: it passes)."""
    if len(data) > MAX_BYTES:
        return [], f"the input file is larger than {MAX_BYTES} bytes"
    lines: list[Line] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            request = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return [], f"line {number}: not valid JSON"
        cid = request.get("custom_id") if isinstance(request, dict) else None
        if not isinstance(cid, str) or cid in seen:
            return [], f"line {number}: custom_id missing or duplicated"
        if request.get("method") != "POST" or request.get("url") != CHAT:
            return [], f"line {number}: method must be POST and url {CHAT}"
        seen.add(cid)
        lines.append(line_from_body("openai", cid, request.get("body"), {}, None, store.state))
    if not lines or len(lines) > MAX_REQUESTS:
        return [], f"a batch holds 1 to {MAX_REQUESTS} requests, this file has {len(lines)}"
    return lines, None


def _batch(store: BatchStore, job: Job) -> dict[str, Any]:
    phase = store.phase(job)
    failed = 0
    if phase in ENDED and job.results is not None and "output_file_id" not in job.meta:
        _write_results(store, job)
    if job.results is not None:
        failed = sum(1 for r in job.results if r.kind != "answered")
    errors = None
    if phase == "failed":
        reason = job.failure or "the input file failed validation"
        errors = {"object": "list", "data": [{"code": "invalid_request", "message": reason}]}
    return {
        "id": job.id,
        "object": "batch",
        "endpoint": CHAT,
        "errors": errors,
        "input_file_id": job.meta["file"],
        "completion_window": "24h",
        "status": phase,
        "output_file_id": job.meta.get("output_file_id"),
        "error_file_id": job.meta.get("error_file_id"),
        "created_at": int(job.created_unix),
        "expires_at": int(job.created_unix) + WINDOW_S,
        "request_counts": {
            "total": len(job.lines),
            "completed": store.processed(job) - failed,
            "failed": failed,
        },
        "metadata": job.meta["metadata"],
    }


_NOT_RUN = {
    "expired": ("batch_expired", "This request could not be executed before the window expired."),
    "cancelled": ("batch_cancelled", "This request was not executed: the batch was cancelled."),
}


def _write_results(store: BatchStore, job: Job) -> None:
    output: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for n, result in enumerate(job.results or []):
        line: dict[str, Any] = {
            "id": f"batch_req_{job.id[-12:]}_{n}",
            "custom_id": result.custom_id,
        }
        if result.kind in _NOT_RUN:
            code, message = _NOT_RUN[result.kind]
            errors.append({**line, "response": None, "error": {"code": code, "message": message}})
            continue
        response = {"status_code": result.status, "request_id": f"req_{n}", "body": result.body}
        (output if result.kind == "answered" else errors).append(
            {**line, "response": response, "error": None}
        )
    for key, records in (("output_file_id", output), ("error_file_id", errors)):
        if records:
            file_id = store.new_id("file-")
            store.files[file_id] = jsonl(records)
            job.meta[key] = file_id
        else:
            job.meta[key] = None
