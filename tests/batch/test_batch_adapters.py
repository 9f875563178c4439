"""Batch translation is pure: each request carries the synchronous body byte for byte, each
result line is classified by the synchronous adapter, limits cut a plan into batches, and
hostile ids never reach a URL."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from evaltally.adapters import http_adapter
from evaltally.adapters.base import Endpoint, HttpResponse
from evaltally.adapters.batch import BATCH_SUPPORT, batch_adapter, batch_support
from evaltally.adapters.batch.base import (
    BatchItem,
    BatchLimits,
    BatchPhase,
    LineResult,
    Marker,
    split,
)
from evaltally.adapters.batch.results import Unreadable, array_spans, read_span
from evaltally.errors import ProviderError
from evaltally.records import AttemptError, Completion, ErrorAction

BASES = {
    "openai": "https://api.example/v1",
    "anthropic": "https://api.example",
    "gemini": "https://g",
}


def _setup(kind: str) -> tuple[Any, Any, Endpoint]:
    sync = http_adapter(kind)
    endpoint = Endpoint(
        model="m-1", base_url=BASES[kind], api_key="sk-secret", params={"max_tokens": 9}
    )
    return sync, batch_adapter(kind, sync), endpoint


def _items(sync: Any, endpoint: Endpoint, n: int) -> list[BatchItem]:
    return [
        BatchItem(
            f"call{i}", sync.build_request(endpoint, [{"role": "user", "content": f"q{i}"}]).body
        )
        for i in range(n)
    ]


def _answer(kind: str, text: str) -> dict[str, Any]:
    if kind == "openai":
        return {"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "usage": {}}
    if kind == "anthropic":
        return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {}}
    return {"candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}]}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_each_request_in_the_submission_is_the_synchronous_body(kind: str) -> None:
    sync, adapter, endpoint = _setup(kind)
    items = _items(sync, endpoint, 3)
    payload = adapter.payload("key-1", items)
    if kind == "openai":
        lines = [orjson.loads(x) for x in payload.splitlines()]
        bodies = [orjson.dumps(x["body"], option=orjson.OPT_SORT_KEYS) for x in lines]
        assert [x["custom_id"] for x in lines] == ["call0", "call1", "call2"]
        assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}
    elif kind == "anthropic":
        requests = orjson.loads(payload)["requests"]
        bodies = [orjson.dumps(r["params"], option=orjson.OPT_SORT_KEYS) for r in requests]
        assert [r["custom_id"] for r in requests] == ["call0", "call1", "call2"]
    else:
        batch = orjson.loads(payload)["batch"]
        assert batch["display_name"] == "key-1"
        requests = batch["input_config"]["requests"]["requests"]
        bodies = [orjson.dumps(r["request"], option=orjson.OPT_SORT_KEYS) for r in requests]
        assert [r["metadata"]["key"] for r in requests] == ["call0", "call1", "call2"]
    assert bodies == [i.body for i in items]
    assert sum(adapter.item_bytes(i) for i in items) >= len(payload) - 200
    assert b"sk-secret" not in payload


def test_openai_upload_is_multipart_with_purpose_batch_and_the_key_only_in_headers() -> None:
    sync, adapter, endpoint = _setup("openai")
    payload = adapter.payload("key-1", _items(sync, endpoint, 2))
    request = adapter.upload_request(endpoint, "key-1", payload)
    assert request is not None and request.url == "https://api.example/v1/files"
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="purpose"\r\n\r\nbatch\r\n' in request.body and payload in request.body
    assert (
        request.headers["authorization"] == "Bearer sk-secret" and b"sk-secret" not in request.body
    )
    create = adapter.create_request(endpoint, "key-1", payload, "file-abc")
    assert orjson.loads(create.body) == {
        "input_file_id": "file-abc",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"evaltally_batch": "key-1"},
    }


def test_split_respects_request_and_byte_limits_and_sets_aside_oversize_items() -> None:
    items = [BatchItem(f"c{i}", b"x" * size) for i, size in enumerate([10, 10, 10, 50, 10, 200])]
    batches, oversize = split(
        items, BatchLimits(max_requests=2, max_bytes=60), lambda i: len(i.body)
    )
    assert [[i.call_id for i in b] for b in batches] == [["c0", "c1"], ["c2", "c3"], ["c4"]]
    assert [i.call_id for i in oversize] == ["c5"]


@pytest.mark.parametrize(
    ("kind", "body", "phase"),
    [
        ("openai", {"status": "validating"}, BatchPhase.VALIDATING),
        ("openai", {"status": "finalizing"}, BatchPhase.FINALIZING),
        ("openai", {"status": "COMPLETED", "output_file_id": "file-1"}, BatchPhase.COMPLETED),
        ("openai", {"status": "cancelling"}, BatchPhase.CANCELLING),
        (
            "anthropic",
            {"id": "msgbatch_1", "processing_status": "in_progress"},
            BatchPhase.IN_PROGRESS,
        ),
        (
            "anthropic",
            {"id": "msgbatch_1", "processing_status": "ended", "request_counts": {"expired": 2}},
            BatchPhase.EXPIRED,
        ),
        (
            "gemini",
            {"name": "batches/x", "metadata": {"state": "BATCH_STATE_PENDING"}},
            BatchPhase.VALIDATING,
        ),
        (
            "gemini",
            {"name": "batches/x", "metadata": {"state": "JOB_STATE_SUCCEEDED"}},
            BatchPhase.COMPLETED,
        ),
        (
            "gemini",
            {"name": "batches/x", "metadata": {"state": "BATCH_STATE_EXPIRED"}},
            BatchPhase.EXPIRED,
        ),
    ],
)
def test_states_read_into_one_vocabulary(
    kind: str, body: dict[str, Any], phase: BatchPhase
) -> None:
    _, adapter, _ = _setup(kind)
    status = adapter.read_status(HttpResponse(200, {}, orjson.dumps(body)))
    assert status.phase is phase
    assert status.phase.ended == (phase in (BatchPhase.COMPLETED, BatchPhase.EXPIRED))


def _classified(kind: str, line: Any) -> Completion | AttemptError:
    sync, _, _ = _setup(kind)
    outcome = line.outcome
    return sync.parse_response(outcome) if isinstance(outcome, HttpResponse) else outcome


def test_openai_lines_are_classified_like_synchronous_answers() -> None:
    _, adapter, _ = _setup("openai")
    error_body = {"error": {"message": "bad", "type": "invalid_request_error"}}
    lines = [
        {
            "custom_id": "a",
            "response": {"status_code": 200, "request_id": "r", "body": _answer("openai", "hi")},
        },
        {"custom_id": "b", "response": {"status_code": 400, "body": error_body}},
        {"custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "late"}},
        {
            "custom_id": "d",
            "response": {"status_code": 503, "body": {"error": {"message": "busy"}}},
        },
        {"custom_id": "stranger", "response": {"status_code": 200, "body": {}}},
    ]
    body = b"\n".join(orjson.dumps(x) for x in lines) + b"\nnot json\n"
    read = list(adapter.read_results(io.BytesIO(body), ["a", "b", "c", "d"]))
    assert read[-1] == Unreadable("result line 6 is not a JSON object")
    got = {line.call_id: _classified("openai", line) for line in read[:-1]}
    assert isinstance(got["a"], Completion) and got["a"].text == "hi" and got["a"].request_id == "r"
    assert isinstance(got["b"], AttemptError) and got["b"].action is ErrorAction.FAIL_CALL
    assert got["b"].error_class == "http_400"
    assert isinstance(got["c"], AttemptError) and got["c"].error_class == "batch_expired"
    assert got["c"].action is ErrorAction.RETRY
    assert isinstance(got["d"], AttemptError) and got["d"].action is ErrorAction.RETRY
    assert "stranger" not in got


def test_anthropic_result_types_map_to_completion_fail_and_retry() -> None:
    _, adapter, _ = _setup("anthropic")
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}
    lines = [
        {"custom_id": "a", "result": {"type": "succeeded", "message": _answer("anthropic", "yo")}},
        {"custom_id": "b", "result": {"type": "errored", "error": error}},
        {"custom_id": "c", "result": {"type": "canceled"}},
        {"custom_id": "d", "result": {"type": "expired"}},
        {
            "custom_id": "e",
            "result": {"type": "errored", "error": {"error": {"type": "overloaded_error"}}},
        },
    ]
    body = b"\n".join(orjson.dumps(x) for x in lines)
    got = {
        x.call_id: _classified("anthropic", x)
        for x in adapter.read_results(io.BytesIO(body), list("abcde"))
    }
    assert isinstance(got["a"], Completion) and got["a"].text == "yo"
    actions = {k: v.action for k, v in got.items() if isinstance(v, AttemptError)}
    assert actions == {
        "b": ErrorAction.FAIL_CALL,
        "c": ErrorAction.RETRY,
        "d": ErrorAction.RETRY,
        "e": ErrorAction.RETRY,
    }


def test_gemini_answers_without_metadata_map_by_position_only_when_complete() -> None:
    _, adapter, _ = _setup("gemini")
    answers = [
        {"response": _answer("gemini", "one")},
        {"error": {"code": 3, "message": "bad request"}},
        {"error": {"code": 1, "message": "cancelled"}},
        {"error": {"code": 4, "message": "expired"}},
    ]
    operation = {
        "name": "batches/x",
        "done": True,
        "response": {"inlinedResponses": {"inlinedResponses": answers}},
    }
    lines = list(adapter.read_results(io.BytesIO(orjson.dumps(operation)), list("abcd")))
    got = {x.call_id: _classified("gemini", x) for x in lines if isinstance(x, LineResult)}
    assert isinstance(got["a"], Completion) and got["a"].text == "one"
    assert isinstance(got["b"], AttemptError) and got["b"].action is ErrorAction.FAIL_CALL
    assert isinstance(got["c"], AttemptError) and got["c"].error_class == "batch_cancelled"
    assert isinstance(got["d"], AttemptError) and got["d"].action is ErrorAction.RETRY
    # One answer short: the order no longer proves which answer is whose, so none is attached.
    lines = list(adapter.read_results(io.BytesIO(orjson.dumps(operation)), list("abcde")))
    assert len(lines) == 1 and isinstance(lines[0], Unreadable)
    assert "4 of 4 inline results for 5 requests carry no usable request key" in lines[0].reason


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_a_batch_whose_id_was_never_recorded_is_found_by_what_identifies_it(kind: str) -> None:
    _, adapter, _ = _setup(kind)
    ours = Marker(
        "key-7",
        "file-7",
        3,
        1_700_000_000.0,
        frozenset({"batch_old", "msgbatch_old", "batches/old"}),
    )
    if kind == "openai":
        listing = {
            "data": [
                {"id": "batch_old", "metadata": {"evaltally_batch": "key-7"}},
                {"id": "batch_other", "metadata": {}, "input_file_id": "file-1"},
                {"id": "batch_new", "metadata": {}, "input_file_id": "file-7"},
            ],
            "has_more": False,
        }
        want = "batch_new"
    elif kind == "anthropic":
        counts = {"processing": 3, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        listing = {
            "data": [
                {
                    "id": "msgbatch_old",
                    "created_at": "2024-01-01T00:00:00Z",
                    "request_counts": counts,
                },
                {
                    "id": "msgbatch_small",
                    "created_at": "2030-01-01T00:00:00Z",
                    "request_counts": {"processing": 2},
                },
                {
                    "id": "msgbatch_new",
                    "created_at": "2030-01-01T00:00:00Z",
                    "request_counts": counts,
                },
            ],
            "has_more": False,
        }
        want = "msgbatch_new"
    else:
        listing = {
            "operations": [
                {"name": "batches/old", "metadata": {"displayName": "key-7"}},
                {"name": "batches/new", "metadata": {"displayName": "key-7"}},
            ]
        }
        want = "batches/new"
    assert adapter.find(HttpResponse(200, {}, orjson.dumps(listing)), ours) == (want, None)
    # An id that is a list (unhashable) is no candidate, not a traceback (issue 23, item 3).
    entries = listing.get("data") or listing["operations"]
    for entry in entries:
        entry["id" if "id" in entry else "name"] = [entry.get("id") or entry.get("name")]
    assert adapter.find(HttpResponse(200, {}, orjson.dumps(listing)), ours)[0] is None


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_a_hostile_batch_id_never_becomes_part_of_a_url(kind: str) -> None:
    _, adapter, endpoint = _setup(kind)
    answer = HttpResponse(200, {}, orjson.dumps({"id": "../../evil", "name": "batches/../../evil"}))
    with pytest.raises(ProviderError, match="unusable"):
        adapter.read_created(answer)
    with pytest.raises(ProviderError):
        adapter.status_request(endpoint, "x/../../y")


def test_presets_with_a_batch_api_carry_documented_limits_and_discounts() -> None:
    assert set(BATCH_SUPPORT) == {"openai", "anthropic", "gemini", "qwen", "together", "moonshot"}
    assert batch_support("dashscope") is BATCH_SUPPORT["qwen"]
    for name in ("deepseek", "openrouter", "bedrock", "vllm", "ollama", "llamacpp"):
        assert batch_support(name) is None
    openai = BATCH_SUPPORT["openai"]
    assert (openai.limits.max_requests, openai.limits.max_bytes, openai.discount) == (
        50_000,
        200_000_000,
        0.5,
    )
    anthropic = BATCH_SUPPORT["anthropic"].limits
    assert (anthropic.max_requests, anthropic.max_bytes) == (100_000, 256_000_000)
    assert BATCH_SUPPORT["gemini"].limits.max_bytes == 20_000_000


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 7, 4096])
def test_gemini_answers_are_found_in_a_stream_whatever_the_chunk_size(chunk_bytes: int) -> None:
    """The scan that finds the inline answers without holding the document: strings holding
    brackets, quotes and backslashes, nested arrays, a key named like the path as a value."""
    tricky = {"t": 'a\\"]}{,\\', "n": [1, {"y": "}"}]}
    answers = [{"response": tricky, "metadata": {"key": "k1"}}, {"error": {"code": 3}}, None]
    doc = {
        "name": "batches/x",
        "metadata": {"state": "S", "note": "inlinedResponses"},
        "response": {"inlinedResponses": {"inlinedResponses": answers}, "after": [{"z": 1}]},
    }
    source = io.BytesIO(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    path = (b"inlinedResponses", b"inlinedResponses")
    spans = array_spans(source, path, chunk_bytes)
    read = [read_span(source, n, span) for n, span in enumerate(spans, 1)]
    assert [r[1] for r in read if not isinstance(r, Unreadable)] == answers[:2]
