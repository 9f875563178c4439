"""AWS Bedrock Runtime Converse API (POST /model/{modelId}/converse)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from evaltally.mockserver.answers import Completion, Prompt
from evaltally.mockserver.dialects.base import (
    AuthSettings,
    ClientFault,
    Dialect,
    ReplyContext,
    optional_int,
    require_list,
)

_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "safety": "content_filtered",
    "blocked": "guardrail_intervened",
}
# Exception name per status, sent in x-amzn-ErrorType as the AWS JSON protocols do.
_ERRORS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
    500: "InternalServerException",
    502: "InternalServerException",
    503: "ServiceUnavailableException",
    504: "ModelTimeoutException",
    529: "ServiceUnavailableException",
}
_SIGV4 = "AWS4-HMAC-SHA256 "


class BedrockDialect(Dialect):
    name: ClassVar[str] = "bedrock"
    routes: ClassVar[tuple[str, ...]] = ("/model/{model}/converse",)

    def check_auth(
        self, headers: Mapping[str, str], query: Mapping[str, str], auth: AuthSettings
    ) -> None:
        if not auth.require:
            return
        value = headers.get("Authorization", "")
        if value.startswith("Bearer ") and value[7:].strip():
            # Bedrock API keys (bearer tokens) are accepted as well as SigV4.
            if auth.api_key is not None and value[7:].strip() != auth.api_key:
                raise ClientFault(403, "Invalid API Key format", "UnrecognizedClientException")
            return
        if not value.startswith(_SIGV4) or "Credential=" not in value:
            raise ClientFault(
                403, "Missing Authentication Token", "MissingAuthenticationTokenException"
            )
        # The signature itself is not verified; only the access key id can be pinned.
        cred = value.split("Credential=", 1)[1]
        if auth.api_key is not None and cred.split("/", 1)[0] != auth.api_key:
            raise ClientFault(
                403,
                "The security token included in the request is invalid.",
                "UnrecognizedClientException",
            )

    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        if not isinstance(body, dict):
            raise ClientFault(
                400, "Malformed input request, please reformat your input and try again."
            )
        msgs: list[tuple[str, str]] = []
        for i, m in enumerate(require_list(body, "messages")):
            role = m.get("role") if isinstance(m, dict) else None
            if role not in ("user", "assistant"):
                raise ClientFault(400, f"messages.{i}.role: must be user or assistant")
            msgs.append((role, _blocks_text(m.get("content"), f"messages.{i}.content")))
        system = body.get("system")
        sys_text = _blocks_text(system, "system") if system is not None else ""
        inf = body.get("inferenceConfig") or {}
        if not isinstance(inf, dict):
            raise ClientFault(400, "inferenceConfig: must be an object")
        return Prompt(
            model=path_model or "",
            system=sys_text,
            messages=tuple(msgs),
            max_tokens=optional_int(inf.get("maxTokens"), "inferenceConfig.maxTokens"),
        )

    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if completion.reasoning_tokens:
            content.append(
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "(mock reasoning)", "signature": "mock"}
                    }
                }
            )
        if completion.finish not in ("safety", "blocked"):
            content.append({"text": completion.text})
        usage: dict[str, Any] = {
            "inputTokens": completion.prompt_tokens - completion.cached_tokens,
            "outputTokens": completion.completion_tokens,
            "totalTokens": completion.prompt_tokens + completion.completion_tokens,
        }
        if completion.cached_tokens:
            usage["cacheReadInputTokens"] = completion.cached_tokens
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _STOP[completion.finish],
            "usage": usage,
            "metrics": {"latencyMs": ctx.latency_ms},
        }

    def error(
        self,
        status: int,
        message: str,
        code: str | None,
        retry_after: float | None,
        ctx: ReplyContext,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        name = (
            code if code and code[0].isupper() else _ERRORS.get(status, "InternalServerException")
        )
        return {"message": message}, {
            "x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        }

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        h = ctx.request_id
        return {"x-amzn-RequestId": f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"}


def _blocks_text(blocks: Any, where: str) -> str:
    if not isinstance(blocks, list):
        raise ClientFault(400, f"{where}: must be a list of content blocks")
    out: list[str] = []
    for b in blocks:
        if not isinstance(b, dict):
            raise ClientFault(400, f"{where}: each content block must be an object")
        if isinstance(b.get("text"), str):
            out.append(b["text"])
    return "".join(out)
