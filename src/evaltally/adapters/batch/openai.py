"""OpenAI Batch API, and the OpenAI-compatible providers that expose `/files` + `/batches`.

Submit: a JSONL file, one line per call {"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}, uploaded to {base_url}/files with purpose "batch"; then POST
{base_url}/batches {"input_file_id", "endpoint", "completion_window": "24h", "metadata"}. The
metadata carries our batch key, which is how a batch whose id was never recorded is found again.
Poll GET {base_url}/batches/{id}: validating -> in_progress -> finalizing -> completed, or failed,
expired, cancelling -> cancelled. Results: GET {base_url}/files/{id}/content of the output and
error files, one line per request {"custom_id", "response": {"status_code", "request_id",
"body"} | null, "error": {"code", "message"} | null}; requests a batch expired before running
are error lines with code "batch_expired".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import orjson

from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.batch.base import (
    BatchItem,
    BatchPhase,
    BatchStatus,
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
from evaltally.adapters.wire import (
    as_count,
    as_dict,
    as_list,
    as_str,
    http_status,
    join_url,
    json_post,
)
from evaltally.records import AttemptError, canonical_json

CHAT_URL = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
METADATA_KEY = "evaltally_batch"
_PHASES = {
    "validating": BatchPhase.VALIDATING,
    "in_progress": BatchPhase.IN_PROGRESS,
    "progress": BatchPhase.IN_PROGRESS,
    "finalizing": BatchPhase.FINALIZING,
    "completed": BatchPhase.COMPLETED,
    "failed": BatchPhase.FAILED,
    "expired": BatchPhase.EXPIRED,
    "cancelling": BatchPhase.CANCELLING,
    "canceling": BatchPhase.CANCELLING,
    "cancelled": BatchPhase.CANCELLED,
    "canceled": BatchPhase.CANCELLED,
}


class OpenAIBatch:
    kind = "openai"

    def __init__(self, sync: HttpAdapter) -> None:
        self.sync = sync

    def _line(self, item: BatchItem) -> bytes:
        line = {
            "custom_id": item.call_id,
            "method": "POST",
            "url": CHAT_URL,
            "body": orjson.Fragment(item.body),
        }
        return canonical_json(line) + b"\n"

    def item_bytes(self, item: BatchItem) -> int:
        return len(self._line(item))

    def payload(self, batch_key: str, items: Sequence[BatchItem]) -> bytes:
        return b"".join(self._line(item) for item in items)

    def upload_request(self, endpoint: Endpoint, batch_key: str, payload: bytes) -> HttpRequest:
        boundary = "evaltally-" + hashlib.sha256(payload).hexdigest()[:32]
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{batch_key}.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n'
        ).encode()
        body = head + payload + f"\r\n--{boundary}--\r\n".encode()
        headers = {
            **auth_headers(self.sync, endpoint),
            "content-type": f"multipart/form-data; boundary={boundary}",
            "accept": "application/json",
        }
        return HttpRequest("POST", join_url(endpoint.base_url, "files"), body, headers)

    def read_upload(self, response: HttpResponse) -> str | AttemptError:
        return read_id(response, "file")

    def create_request(
        self, endpoint: Endpoint, batch_key: str, payload: bytes, file_id: str | None
    ) -> HttpRequest:
        body = {
            "input_file_id": file_id,
            "endpoint": CHAT_URL,
            "completion_window": COMPLETION_WINDOW,
            "metadata": {METADATA_KEY: batch_key},
        }
        url = join_url(endpoint.base_url, "batches")
        return json_post(url, body, auth_headers(self.sync, endpoint))

    def read_created(self, response: HttpResponse) -> str | AttemptError:
        return read_id(response, "batch")

    def status_request(self, endpoint: Endpoint, provider_id: str) -> HttpRequest:
        url = join_url(endpoint.base_url, f"batches/{safe_id(provider_id, 'batch')}")
        return get(url, auth_headers(self.sync, endpoint))

    def read_status(self, response: HttpResponse) -> BatchStatus | AttemptError:
        data = decode_json(response.body)
        state = as_str(as_dict(data).get("status"))
        if state is None:
            return bad_body(response.body, "no batch status", response.status)
        assert isinstance(data, dict)
        counts = as_dict(data.get("request_counts"))
        refs = tuple(
            safe_id(data[key], "file")
            for key in ("output_file_id", "error_file_id")
            if data.get(key) is not None
        )
        errors = [as_dict(e) for e in as_list(as_dict(data.get("errors")).get("data"))]
        detail = "; ".join(
            f"{e.get('code')}: {e.get('message')}"
            + (f" (line {e['line']})" if e.get("line") is not None else "")
            for e in errors
        )
        return BatchStatus(
            phase=_PHASES.get(state.lower(), BatchPhase.UNKNOWN),
            provider_state=state,
            counts={k: as_count(counts.get(k)) for k in ("total", "completed", "failed")},
            results=refs,
            detail=detail or None,
        )

    def list_request(self, endpoint: Endpoint, page: str | None) -> HttpRequest:
        query = "batches?limit=100" + (f"&after={safe_id(page, 'batch')}" if page else "")
        return get(join_url(endpoint.base_url, query), auth_headers(self.sync, endpoint))

    def find(
        self, response: HttpResponse, marker: Marker
    ) -> tuple[str | None, str | None] | AttemptError:
        listing = id_listing(response)
        if isinstance(listing, AttemptError):
            return listing
        batches, next_page = listing
        for batch in batches:
            ours = as_dict(batch.get("metadata")).get(METADATA_KEY) == marker.batch_key
            same_file = marker.file_id is not None and batch.get("input_file_id") == marker.file_id
            ident = as_str(batch.get("id"))
            if (ours or same_file) and ident is not None and ident not in marker.known:
                return safe_id(ident, "batch"), None
        return None, next_page

    def download_request(self, endpoint: Endpoint, provider_id: str, ref: str) -> HttpRequest:
        url = join_url(endpoint.base_url, f"files/{safe_id(ref, 'file')}/content")
        return get(url, auth_headers(self.sync, endpoint))

    def read_results(
        self, source: BinaryIO, members: Sequence[str]
    ) -> Iterator[LineResult | Unreadable]:
        return jsonl_results(source, members, _outcome)


def _outcome(line: dict[str, Any]) -> HttpResponse | AttemptError:
    response = line.get("response")
    if isinstance(response, dict) and http_status(response.get("status_code")) is not None:
        headers = {}
        if isinstance(response.get("request_id"), str):
            headers["x-request-id"] = response["request_id"]
        body = orjson.dumps(response.get("body"))
        return HttpResponse(int(response["status_code"]), headers, body)
    error = as_dict(line.get("error"))
    code = as_str(error.get("code")) or "error"
    message = as_str(error.get("message")) or "the batch returned no response for this request"
    return not_run(f"batch_{code.removeprefix('batch_')}", message)
