"""Gemini batch mode, with the requests inline.

Submit: POST {base_url}/v1beta/models/{model}:batchGenerateContent {"batch": {"display_name",
"input_config": {"requests": {"requests": [{"request", "metadata": {"key"}}]}}}}; each request is
the generateContent body. The answer is a long-running operation named "batches/{id}". Poll GET
{base_url}/v1beta/batches/{id}: metadata.state BATCH_STATE_PENDING -> RUNNING -> SUCCEEDED, or
FAILED, CANCELLED, EXPIRED (the SDKs spell them JOB_STATE_*: both are read). Once done the same
GET carries the answers: response.inlinedResponses.inlinedResponses[], in request order, each
{"response": GenerateContentResponse} or {"error": google.rpc.Status}, with the request's
metadata when the API echoes it (else the position is the key). The batch's display name is our
batch key: that is how a batch whose name was never recorded is found again. Inline requests are
capped at 20 MB per batch; larger plans are split.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO
from urllib.parse import quote

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
    not_run,
)
from evaltally.adapters.batch.results import Unreadable, array_spans, guarded, read_span
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.wire import as_count, as_dict, as_list, as_str, http_status, join_url
from evaltally.errors import ProviderError
from evaltally.records import AttemptError, canonical_json

API_VERSION = "v1beta"
_NAME = re.compile(r"^batches/[A-Za-z0-9_\-]{1,200}$")
_PHASES = {
    "PENDING": BatchPhase.VALIDATING,
    "RUNNING": BatchPhase.IN_PROGRESS,
    "SUCCEEDED": BatchPhase.COMPLETED,
    "FAILED": BatchPhase.FAILED,
    "CANCELLING": BatchPhase.CANCELLING,
    "CANCELLED": BatchPhase.CANCELLED,
    "EXPIRED": BatchPhase.EXPIRED,
}
GRPC_CANCELLED = 1
# google.rpc.Code -> the HTTP status the synchronous API answers it with.
GRPC_STATUS = {
    2: 500,
    3: 400,
    4: 504,
    5: 404,
    6: 409,
    7: 403,
    8: 429,
    9: 400,
    10: 409,
    11: 400,
    12: 501,
    13: 500,
    14: 503,
    15: 500,
    16: 401,
}
_COUNTS = {
    "requestCount": "total",
    "successfulRequestCount": "succeeded",
    "failedRequestCount": "failed",
    "pendingRequestCount": "pending",
}


class GeminiBatch(InlineBatch):
    kind = "gemini"

    def __init__(self, sync: HttpAdapter) -> None:
        self.sync = sync

    def _request(self, item: BatchItem) -> bytes:
        entry = {"request": orjson.Fragment(item.body), "metadata": {"key": item.call_id}}
        return canonical_json(entry)

    def item_bytes(self, item: BatchItem) -> int:
        return len(self._request(item)) + 1

    def payload(self, batch_key: str, items: Sequence[BatchItem]) -> bytes:
        head = canonical_json(batch_key)
        requests = b",".join(self._request(i) for i in items)
        return (
            b'{"batch":{"display_name":'
            + head
            + b',"input_config":{"requests":{"requests":['
            + requests
            + b"]}}}}"
        )

    def create_request(
        self, endpoint: Endpoint, batch_key: str, payload: bytes, file_id: str | None
    ) -> HttpRequest:
        model = quote(endpoint.model.removeprefix("models/"), safe="")
        path = f"{_version(endpoint)}/models/{model}:batchGenerateContent"
        headers = {
            **auth_headers(self.sync, endpoint),
            "content-type": "application/json",
            "accept": "application/json",
        }
        return HttpRequest("POST", join_url(endpoint.base_url, path), payload, headers)

    def read_created(self, response: HttpResponse) -> str | AttemptError:
        name = as_dict(decode_json(response.body)).get("name")
        if name is None:
            return bad_body(response.body, "no batch name in the create answer", response.status)
        return _name(name)

    def status_request(self, endpoint: Endpoint, provider_id: str) -> HttpRequest:
        url = join_url(endpoint.base_url, f"{_version(endpoint)}/{_name(provider_id)}")
        return get(url, auth_headers(self.sync, endpoint))

    def read_status(self, response: HttpResponse) -> BatchStatus | AttemptError:
        data = as_dict(decode_json(response.body))
        batch = as_dict(data.get("metadata")) or data
        state = as_str(batch.get("state"))
        if state is None:
            return bad_body(response.body, "no batch state", response.status)
        short = state.removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_")
        phase = _PHASES.get(short, BatchPhase.UNKNOWN)
        stats = as_dict(batch.get("batchStats"))
        counts = {ours: as_count(stats.get(theirs)) for theirs, ours in _COUNTS.items()}
        name = data.get("name") or batch.get("name")
        results = (_name(name),) if phase.ended else ()
        error = as_dict(data.get("error"))
        detail = as_str(error.get("message"))
        return BatchStatus(phase, state, counts, results, detail)

    def list_request(self, endpoint: Endpoint, page: str | None) -> HttpRequest:
        query = f"{_version(endpoint)}/batches?pageSize=100"
        if page:
            query += f"&pageToken={quote(page, safe='')}"
        return get(join_url(endpoint.base_url, query), auth_headers(self.sync, endpoint))

    def find(
        self, response: HttpResponse, marker: Marker
    ) -> tuple[str | None, str | None] | AttemptError:
        data = decode_json(response.body)
        if not isinstance(data, dict):
            return bad_body(response.body, "no batch list", response.status)
        for op in map(as_dict, as_list(data.get("operations") or data.get("batches"))):
            batch = as_dict(op.get("metadata")) or op
            name = as_str(op.get("name")) or as_str(batch.get("name"))
            ours = batch.get("displayName") == marker.batch_key
            if ours and name is not None and name not in marker.known:
                return _name(name), None
        return None, as_str(data.get("nextPageToken")) or None

    def download_request(self, endpoint: Endpoint, provider_id: str, ref: str) -> HttpRequest:
        return self.status_request(endpoint, ref)

    def read_results(
        self, source: BinaryIO, members: Sequence[str]
    ) -> Iterator[LineResult | Unreadable]:
        spans = _answers(source)
        # Two passes, one answer in memory at a time: the keys first (is the order needed?).
        keys: list[object] = [_key(read_span(source, n, span)) for n, span in enumerate(spans, 1)]
        if not any(key is not None for key in keys) and len(spans) == len(members):
            # No key echoed at all: the documented request order is the only identity, and it
            # is used only when every request has exactly one answer.
            keys = list(members)
        wanted = set(members)
        unmatched = 0
        for number, (key, span) in enumerate(zip(keys, spans, strict=True), 1):
            item = read_span(source, number, span)
            if isinstance(item, Unreadable):
                yield item
            elif isinstance(key, str) and key in wanted:
                raw, answer = item
                yield LineResult(key, raw, guarded(_outcome, answer, raw))
            elif not isinstance(key, str):
                unmatched += 1
        if unmatched:
            yield Unreadable(
                f"{unmatched} of {len(spans)} inline results for {len(members)} requests carry "
                "no usable request key; they are not matched by position (the count does not "
                "prove the order), so their calls are sent again"
            )


def _answers(source: BinaryIO) -> list[tuple[int, int]]:
    """The byte spans of the answers: under `response` (the operation's result) or, as some
    versions nest it, `metadata.output`; both are `inlinedResponses.inlinedResponses`."""
    return array_spans(source, (b"inlinedResponses", b"inlinedResponses"))


def _key(item: tuple[bytes, dict[str, Any]] | Unreadable) -> object:
    if isinstance(item, Unreadable):
        return None
    return as_dict(item[1].get("metadata")).get("key")


def _outcome(item: dict[str, Any]) -> HttpResponse | AttemptError:
    if "error" not in item:
        return HttpResponse(200, {}, orjson.dumps(item.get("response")))
    error = as_dict(item["error"])
    code = error.get("code")
    if code == GRPC_CANCELLED:
        return not_run("batch_cancelled", "the batch was cancelled before this request ran")
    status = http_status(code) or (GRPC_STATUS.get(code, 500) if isinstance(code, int) else 500)
    body = {"error": {**error, "code": status}}
    return HttpResponse(status, {}, orjson.dumps(body))


def _name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ProviderError(f"the provider returned an unusable batch name: {str(value)[:80]!r}")
    return value


def _version(endpoint: Endpoint) -> str:
    return endpoint.api_version or API_VERSION
