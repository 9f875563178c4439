"""AWS Bedrock Runtime Converse API (POST /model/{modelId}/converse)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from evaltally.mockserver.answers import Completion, Prompt
from evaltally.mockserver.dialects.base import (
    ClientFault,
    Dialect,
    ErrorReply,
    ReplyContext,
    bearer_token,
    joined_text,
    optional_int,
    settings_object,
    user_assistant_turns,
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

    def check_key(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str | None
    ) -> None:
        token = bearer_token(headers)
        if token:
            # Bedrock API keys (bearer tokens) are accepted as well as SigV4.
            if key is not None and token != key:
                raise ClientFault(403, "Invalid API Key format", "UnrecognizedClientException")
            return
        value = headers.get("Authorization", "")
        if not value.startswith(_SIGV4) or "Credential=" not in value:
            raise ClientFault(
                403, "Missing Authentication Token", "MissingAuthenticationTokenException"
            )
        # The signature itself is not verified; only the access key id can be pinned.
        cred = value.split("Credential=", 1)[1]
        if key is not None and cred.split("/", 1)[0] != key:
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
        turns = user_assistant_turns(body, _blocks_text, "must be user or assistant")
        system = body.get("system")
        sys_text = _blocks_text(system, "system") if system is not None else ""
        inf = settings_object(body.get("inferenceConfig"), "inferenceConfig")
        return Prompt(
            model=path_model or "",
            system=sys_text,
            messages=turns,
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

    def model_missing(self, model: str) -> ClientFault:
        # Converse answers an unknown model id with a validation error, not a 404.
        return ClientFault(400, "The provided model identifier is invalid.")

    def error_body(self, err: ErrorReply, ctx: ReplyContext) -> dict[str, Any]:
        return {"message": err.message}

    def error_headers(self, err: ErrorReply) -> dict[str, str]:
        code = err.code
        name = (
            code
            if code and code[0].isupper()
            else _ERRORS.get(err.status, "InternalServerException")
        )
        return {"x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"}

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        h = ctx.request_id
        return {"x-amzn-RequestId": f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"}


def _blocks_text(blocks: Any, where: str) -> str:
    if not isinstance(blocks, list):
        raise ClientFault(400, f"{where}: must be a list of content blocks")
    return joined_text(blocks, where)
