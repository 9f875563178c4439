"""Google Gemini API (POST /v1beta/models/{model}:generateContent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from evaltally.mockserver.answers import Completion, Prompt
from evaltally.mockserver.dialects.base import (
    ClientFault,
    Dialect,
    ErrorReply,
    ReplyContext,
    joined_text,
    optional_int,
    require_list,
    settings_object,
)

_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "safety": "SAFETY", "blocked": "SAFETY"}
# google.rpc.Code names per HTTP status, as the Gemini API puts them in error.status.
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    529: "UNAVAILABLE",
}
_BLOCKED_RATING = [
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
]


class GeminiDialect(Dialect):
    name: ClassVar[str] = "gemini"
    routes: ClassVar[tuple[str, ...]] = (
        "/v1beta/models/{model}:generateContent",
        "/v1/models/{model}:generateContent",
    )

    def check_key(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str | None
    ) -> None:
        sent = headers.get("x-goog-api-key") or query.get("key", "")
        if not sent:
            raise ClientFault(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity.",
            )
        if key is not None and sent != key:
            # Gemini answers a wrong key with 400 INVALID_ARGUMENT, not 401: adapters must cope.
            raise ClientFault(
                400, "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"
            )

    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        if not isinstance(body, dict):
            raise ClientFault(400, "Invalid JSON payload received.")
        msgs: list[tuple[str, str]] = []
        for i, c in enumerate(require_list(body, "contents")):
            role = c.get("role", "user") if isinstance(c, dict) else None
            if role not in ("user", "model"):
                raise ClientFault(400, f"contents[{i}].role: Please use a valid role: user, model.")
            msgs.append(
                ("user" if role == "user" else "assistant", _parts_text(c, f"contents[{i}]"))
            )
        sys_obj = body.get("systemInstruction", body.get("system_instruction"))
        system = _parts_text(sys_obj, "systemInstruction") if isinstance(sys_obj, dict) else ""
        gen = settings_object(
            body.get("generationConfig", body.get("generation_config")), "generationConfig"
        )
        return Prompt(
            model=path_model or "",
            system=system,
            messages=tuple(msgs),
            max_tokens=optional_int(gen.get("maxOutputTokens"), "generationConfig.maxOutputTokens"),
        )

    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        usage: dict[str, Any] = {"promptTokenCount": completion.prompt_tokens}
        if completion.cached_tokens:
            usage["cachedContentTokenCount"] = completion.cached_tokens
        out: dict[str, Any] = {
            "usageMetadata": usage,
            "modelVersion": prompt.model,
            "responseId": ctx.request_id[:22],
        }
        if completion.finish == "blocked":
            # A blocked prompt: no candidates at all, only the feedback.
            usage["totalTokenCount"] = completion.prompt_tokens
            out["promptFeedback"] = {
                "blockReason": completion.block_reason,
                "safetyRatings": _BLOCKED_RATING,
            }
            return out
        visible = completion.completion_tokens - completion.reasoning_tokens
        candidate: dict[str, Any] = {"finishReason": _FINISH[completion.finish], "index": 0}
        if completion.finish == "safety":
            candidate["finishReason"] = completion.block_reason
            # A blocked candidate carries ratings and no content.
            candidate["safetyRatings"] = _BLOCKED_RATING
            visible = 0
        elif completion.text:
            candidate["content"] = {"parts": [{"text": completion.text}], "role": "model"}
        else:
            candidate["content"] = {"role": "model"}  # thinking ate the budget: no parts
        usage["candidatesTokenCount"] = visible
        if completion.reasoning_tokens:
            usage["thoughtsTokenCount"] = completion.reasoning_tokens
        usage["totalTokenCount"] = completion.prompt_tokens + visible + completion.reasoning_tokens
        out["candidates"] = [candidate]
        return out

    def model_missing(self, model: str) -> ClientFault:
        return ClientFault(
            404,
            f"models/{model} is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods.",
        )

    def error_body(self, err: ErrorReply, ctx: ReplyContext) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": err.status,
            "message": err.message,
            "status": _STATUS.get(err.status, "INTERNAL"),
        }
        if err.code == "API_KEY_INVALID":
            out["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ]
            return {"error": out}
        details: list[dict[str, Any]] = []
        if err.status == 429 and err.code in ("requests", "tokens"):
            # A limit's 429 names the quota that ran out; a capacity 429 names none.
            metric = f"generativelanguage.googleapis.com/generate_content_{err.code}"
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaMetric": metric, "quotaId": f"{err.code}PerMinute"}],
                }
            )
        if err.retry_after is not None:
            # Gemini states the wait in a RetryInfo detail ("retryDelay": "1s").
            delay = f"{err.retry_after:.3f}".rstrip("0").rstrip(".") or "0"
            details.append(
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay}s"}
            )
        if details:
            out["details"] = details
        return {"error": out}


def _parts_text(obj: dict[str, Any], where: str) -> str:
    parts = obj.get("parts")
    if not isinstance(parts, list):
        raise ClientFault(400, f"{where}.parts: must be a list")
    return joined_text(parts, f"{where}.parts", "part")
