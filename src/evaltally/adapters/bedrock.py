"""AWS Bedrock Runtime Converse, signed with SigV4 (sigv4.py).

POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse. The model id is
percent-encoded in the path (ids contain ":" and ARNs "/"). Body: messages[{role, content:
[{text}]}], system[{text}], inferenceConfig{maxTokens, temperature, topP, stopSequences}; any
other param goes to additionalModelRequestFields (model-specific, e.g. top_k), where reasoning
"on" also puts Claude's `thinking` block.

Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN. Region:
endpoint.region (the config's explicit choice) else AWS_REGION else AWS_DEFAULT_REGION.
A missing one raises CredentialError naming the variable.

Re-signing: a SigV4 signature is only accepted for about 5 minutes after its x-amz-date, and a
lane may pause longer than that before a retry. `prepare_attempt(request)` re-signs a built
request with the current clock and freshly read credentials (rotated session tokens included);
the runner calls it before EVERY attempt (see evaltally.adapters.prepare_attempt). It changes
headers only: the body bytes, hence the request hash, stay identical.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from evaltally.adapters.base import Endpoint, HttpRequest, HttpResponse
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.reasoning import approx_tokens, deep_merge
from evaltally.adapters.sigv4 import credentials_from_env, sign, signed_scope
from evaltally.adapters.wire import (
    WireAdapter,
    as_dict,
    as_int,
    as_list,
    as_str,
    cached_input_usage,
    json_post,
    normalize_finish,
    split_system,
)
from evaltally.errors import CredentialError
from evaltally.records import AttemptError, Completion, Message, RateLimitSnapshot

SERVICE = "bedrock"
DEFAULT_URL = "https://bedrock-runtime.{region}.amazonaws.com"
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
KEY_ENV_HINT = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN if temporary)"

INFERENCE_PARAMS = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop": "stopSequences",
}
KNOWN_PARAMS = frozenset(INFERENCE_PARAMS) | {"top_k"}
"""Checked at config time (adapters/params.py); top_k, like any other model-specific field, goes
to additionalModelRequestFields."""
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "guardrail_intervened": "safety:guardrail_intervened",
    "content_filtered": "safety:content_filtered",
}
# Bedrock error types whose status alone would classify them wrongly.
RETRYABLE_TYPES = frozenset({"ModelErrorException", "ModelNotReadyException"})

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class BedrockAdapter(WireAdapter):
    """Converse. `clock` and `env` are injectable so signing is testable without waiting."""

    def __init__(
        self,
        *,
        key_env: str | None = None,
        reasoning_style: str = "bedrock",
        clock: Clock = utc_now,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.key_env = key_env or KEY_ENV_HINT
        self.reasoning_style = reasoning_style
        self.clock = clock
        self._env = env

    @property
    def env(self) -> Mapping[str, str]:
        # Read at call time, not construction, so credentials rotated mid-run are picked up.
        return self._env if self._env is not None else os.environ

    def build_request(self, endpoint: Endpoint, messages: Sequence[Message]) -> HttpRequest:
        region = self._region(endpoint)
        base = (endpoint.base_url or DEFAULT_URL).format(region=region).rstrip("/")
        url = f"{base}/model/{quote(endpoint.model, safe='')}/converse"
        return self._sign(json_post(url, self._payload(endpoint, messages), {}), region, SERVICE)

    def prepare_attempt(self, request: HttpRequest) -> HttpRequest:
        """The same request re-signed with the current time (body unchanged)."""
        scope = signed_scope(request)
        if scope is None:
            return request
        return self._sign(request, *scope)

    def _sign(self, request: HttpRequest, region: str, service: str) -> HttpRequest:
        """`request` signed now, with the credentials the environment holds now."""
        creds = credentials_from_env(self.env)
        return sign(request, creds, region=region, service=service, now=self.clock())

    def parse_response(self, response: HttpResponse) -> Completion | AttemptError:
        data = decode_json(response.body)
        if not 200 <= response.status <= 299:
            return self._error(response, as_dict(data))
        message = as_dict(as_dict(as_dict(data).get("output")).get("message"))
        if not isinstance(message.get("content"), list):
            return bad_body(response.body, "no output.message.content", response.status)
        text, reasoning = _read_blocks(message["content"])
        usage = as_dict(as_dict(data).get("usage"))
        return Completion(
            text=text,
            finish_reason=normalize_finish(as_dict(data).get("stopReason"), FINISH_REASONS),
            usage=cached_input_usage(
                uncached=as_int(usage.get("inputTokens")),
                cache_read=as_int(usage.get("cacheReadInputTokens")),
                cache_write=as_int(usage.get("cacheWriteInputTokens")),
                output=as_int(usage.get("outputTokens")),
                reasoning=reasoning,
            ),
            request_id=response.headers.get("x-amzn-requestid"),
        )

    def rate_limits(self, response: HttpResponse) -> RateLimitSnapshot | None:
        # Bedrock publishes quotas, not per-response rate-limit headers.
        return None

    def _region(self, endpoint: Endpoint) -> str:
        if endpoint.region:
            return endpoint.region
        for name in REGION_ENVS:
            if self.env.get(name):
                return self.env[name]
        raise CredentialError(
            "AWS region missing: set AWS_REGION (or AWS_DEFAULT_REGION), or region for the model"
        )

    def _payload(self, endpoint: Endpoint, messages: Sequence[Message]) -> dict[str, Any]:
        system, rest = split_system(messages)
        inference: dict[str, Any] = {}
        additional: dict[str, Any] = {}
        for key, value in endpoint.params.items():
            if key == "stop":
                inference["stopSequences"] = [value] if isinstance(value, str) else value
            elif key in INFERENCE_PARAMS:
                inference[INFERENCE_PARAMS[key]] = value
            else:
                additional[key] = value
        payload: dict[str, Any] = {
            "messages": [{"role": m["role"], "content": [{"text": m["content"]}]} for m in rest]
        }
        if system is not None:
            payload["system"] = [{"text": system}]
        if inference:
            payload["inferenceConfig"] = inference
        if additional:
            payload["additionalModelRequestFields"] = additional
        return deep_merge(self.switch(endpoint), payload)

    def _error(self, response: HttpResponse, data: dict[str, Any]) -> AttemptError:
        raw_type = response.headers.get("x-amzn-errortype") or as_str(data.get("__type")) or ""
        # "ThrottlingException:http://internal.amazon.com/..." or "com.amazon...#Throttling..."
        error_type = raw_type.split(":", 1)[0].rsplit("#", 1)[-1] or None
        status = response.status
        if error_type in RETRYABLE_TYPES and 400 <= status <= 499:
            status = 503  # classify as the transient server-side failure it is
        error = self.http_error(
            status,
            response.headers,
            error_type=error_type,
            message=as_str(data.get("message")) or as_str(data.get("Message")),
        )
        if status != response.status:
            error = AttemptError(
                error.action,
                f"http_{response.status}",
                error.detail,
                response.status,
                error.retry_after_s,
            )
        return error


def _read_blocks(blocks: list[Any]) -> tuple[str, int]:
    """(text, estimated reasoning tokens); reasoningContent blocks are skipped but counted."""
    texts: list[str] = []
    reasoning = 0
    for block in map(as_dict, as_list(blocks)):
        if "text" in block:
            texts.append(as_str(block.get("text")) or "")
        elif "reasoningContent" in block:
            content = as_dict(block["reasoningContent"])
            thought = as_str(as_dict(content.get("reasoningText")).get("text")) or ""
            reasoning += max(1, approx_tokens(thought))
    return "".join(texts), reasoning
