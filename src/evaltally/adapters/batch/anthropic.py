"""Anthropic Message Batches.

Submit: POST {base_url}/v1/messages/batches {"requests": [{"custom_id", "params"}]}, where
params is the Messages request body. Poll GET {base_url}/v1/messages/batches/{id}:
processing_status in_progress -> (canceling) -> ended, with request_counts {processing,
succeeded, errored, canceled, expired}. Results, once ended: GET
{base_url}/v1/messages/batches/{id}/results, JSONL {"custom_id", "result": {"type":
"succeeded", "message"} | {"type": "errored", "error": {"type": "error", "error": {"type",
"message"}}} | {"type": "canceled"} | {"type": "expired"}}. We build the results URL ourselves
rather than follow `results_url`, so our key only ever goes to the configured base URL.

The API has no metadata on a batch. A batch whose id was never recorded is found by what we do
know: created no earlier than just before our create request, holding the same number of
requests, and not already one of ours (docs/batch.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, BinaryIO

import orjson

from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.batch.base import (
    BatchItem,
    BatchPhase,
    BatchStatus,
    InlineBatch,
    LineResult,
    Marker,
    auth_headers,
    get,
    id_listing,
    jsonl_results,
    not_run,
    read_id,
    safe_id,
)
from evaltally.adapters.batch.results import Unreadable
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.wire import as_count, as_dict, as_str, join_url
from evaltally.records import AttemptError, canonical_json

BATCHES = "v1/messages/batches"
COUNTS = ("processing", "succeeded", "errored", "canceled", "expired")
# The HTTP status the synchronous API answers each documented error type with.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


_RUNNING = {"in_progress": BatchPhase.IN_PROGRESS, "canceling": BatchPhase.CANCELLING}


class AnthropicBatch(InlineBatch):
    kind = "anthropic"

    def __init__(self, sync: HttpAdapter) -> None:
        self.sync = sync

    def _request(self, item: BatchItem) -> bytes:
        return canonical_json({"custom_id": item.call_id, "params": orjson.Fragment(item.body)})

    def item_bytes(self, item: BatchItem) -> int:
        return len(self._request(item)) + 1

    def payload(self, batch_key: str, items: Sequence[BatchItem]) -> bytes:
        return b'{"requests":[' + b",".join(self._request(i) for i in items) + b"]}"

    def create_request(
        self, endpoint: Endpoint, batch_key: str, payload: bytes, file_id: str | None
    ) -> HttpRequest:
        headers = {
            **auth_headers(self.sync, endpoint),
            "content-type": "application/json",
            "accept": "application/json",
        }
        return HttpRequest("POST", join_url(endpoint.base_url, BATCHES), payload, headers)

    def read_created(self, response: HttpResponse) -> str | AttemptError:
        return read_id(response, "batch")

    def status_request(self, endpoint: Endpoint, provider_id: str) -> HttpRequest:
        url = join_url(endpoint.base_url, f"{BATCHES}/{safe_id(provider_id, 'batch')}")
        return get(url, auth_headers(self.sync, endpoint))

    def read_status(self, response: HttpResponse) -> BatchStatus | AttemptError:
        data = as_dict(decode_json(response.body))
        state = as_str(data.get("processing_status"))
        if state is None:
            return bad_body(response.body, "no processing_status", response.status)
        counts = {k: as_count(as_dict(data.get("request_counts")).get(k)) for k in COUNTS}
        if state != "ended":
            return BatchStatus(_RUNNING.get(state, BatchPhase.UNKNOWN), state, counts)
        if data.get("cancel_initiated_at"):
            phase = BatchPhase.CANCELLED
        elif counts["expired"]:
            phase = BatchPhase.EXPIRED
        else:
            phase = BatchPhase.COMPLETED
        return BatchStatus(phase, state, counts, results=(safe_id(data.get("id"), "batch"),))

    def list_request(self, endpoint: Endpoint, page: str | None) -> HttpRequest:
        query = f"{BATCHES}?limit=100" + (f"&after_id={safe_id(page, 'batch')}" if page else "")
        return get(join_url(endpoint.base_url, query), auth_headers(self.sync, endpoint))

    def find(
        self, response: HttpResponse, marker: Marker
    ) -> tuple[str | None, str | None] | AttemptError:
        listing = id_listing(response)
        if isinstance(listing, AttemptError):
            return listing
        batches, next_page = listing
        candidates: list[tuple[float, str]] = []
        for batch in batches:
            created = _timestamp(batch.get("created_at"))
            total = sum(as_count(as_dict(batch.get("request_counts")).get(k)) for k in COUNTS)
            ident = as_str(batch.get("id"))
            if (
                created is not None
                and created >= marker.not_before
                and total == marker.requests
                and ident is not None
                and ident not in marker.known
            ):
                candidates.append((created, safe_id(ident, "batch")))
        if candidates:
            return min(candidates)[1], None
        return None, next_page

    def download_request(self, endpoint: Endpoint, provider_id: str, ref: str) -> HttpRequest:
        url = join_url(endpoint.base_url, f"{BATCHES}/{safe_id(ref, 'batch')}/results")
        return get(url, auth_headers(self.sync, endpoint))

    def read_results(
        self, source: BinaryIO, members: Sequence[str]
    ) -> Iterator[LineResult | Unreadable]:
        return jsonl_results(source, members, _result_outcome)


def _result_outcome(line: dict[str, Any]) -> HttpResponse | AttemptError:
    return _outcome(as_dict(line.get("result")))


def _outcome(result: dict[str, Any]) -> HttpResponse | AttemptError:
    kind = result.get("type")
    if kind == "succeeded":
        return HttpResponse(200, {}, orjson.dumps(result.get("message")))
    if kind == "errored":
        error = as_dict(result.get("error"))
        status = ERROR_STATUS.get(str(as_dict(error.get("error")).get("type")), 500)
        return HttpResponse(status, {}, orjson.dumps(error))
    if kind == "canceled":
        return not_run("batch_canceled", "the batch was canceled before this request ran")
    if kind == "expired":
        return not_run("batch_expired", "the batch expired before this request ran")
    return not_run("batch_error", f"unknown result type {str(kind)[:40]!r}")


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
