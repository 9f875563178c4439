"""Shared error classification: HTTP status (+ provider error type) -> AttemptError.

The decision table (DESIGN.md, "Attempts"):

    429, 408, 409, 5xx, 529 (Anthropic overloaded)   RETRY      (retry_after_s from headers)
    400, 404, 413, 422, any other 4xx               FAIL_CALL  (the same bytes fail again)
    401, 403                                        STOP_LANE  (every call of the lane would fail)
    429 of type/code insufficient_quota (OpenAI)    STOP_LANE  (a used-up quota, not a rate limit)
    400/404 naming a model that does not exist      STOP_LANE  (every call names that model)
    404 that is not the provider's JSON error       STOP_LANE  (the base URL's path is wrong)
    429 the provider says is not ours (capacity)    RETRY      capacity=True (see below)
    2xx whose body is not the expected shape        RETRY      error_class "bad_body"
    3xx (redirects are never followed)              FAIL_CALL  (detail names the Location)
    anything else (1xx)                             FAIL_CALL

A 429 is a capacity refusal, retried on its own without slowing the lane, when the provider
says so: its rate-limit headers show requests (and tokens) left, its error type is one
documented for shared capacity (`capacity_type`, e.g. Gemini's RESOURCE_EXHAUSTED without a
QuotaFailure detail, passed by that adapter), or its message names an overloaded or upstream
provider (routers such as OpenRouter, Azure's "high demand"). Any other 429 is a limit's until
the lane sees otherwise (runner/refusals.py).

error_class is "http_<status>" (or "bad_body"); the provider's own error type, when it has one,
leads `detail`. Details never carry credentials: the transport already removed every known key
value, and provider messages also pass through `redact_message`, because some providers echo
part of a rejected key.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from evaltally.adapters.ratelimit_headers import any_snapshot, parse_duration
from evaltally.records import AttemptError, ErrorAction
from evaltally.redact import redact_message

MODEL_MISSING_TYPES = frozenset(
    {
        "model_not_found",
        "not_found_error",
        "NOT_FOUND",
        "NotFoundError",
        "ResourceNotFoundException",
        "invalid_model",
    }
)
"""Error types/codes of a 400/404 about the model itself (OpenAI and most compatible hosts,
Anthropic, Gemini, vLLM, Bedrock, Mistral): the same for every call of the lane."""

MODEL_MISSING_MESSAGE = re.compile(
    r"model\b.{0,200}\b(?:does not exist|not found|is not found|not supported for|"
    r"unable to access)|(?:invalid|unknown|not a valid|no such) model|"
    r"model identifier is invalid|unable to access (?:non-serverless )?model",
    re.I | re.S,
)
"""Messages of a 400/404 about the model id, for hosts without a distinct error type:
Bedrock's "The provided model identifier is invalid.", OpenRouter's "x is not a valid model
ID", Together's "Unable to access model x", Ollama's "model 'x' not found"."""

QUOTA_TYPES = frozenset({"insufficient_quota"})
"""Error types/codes of a 429 that is an exhausted account quota, not a rate limit (OpenAI):
waiting does not help, so the lane stops with the reason."""

CAPACITY_MESSAGE = re.compile(r"overload|over capacity|at capacity|high demand|upstream", re.I)
"""Words of a 429's message that name the provider's own capacity, not the caller's rate:
OpenRouter's "temporarily rate-limited upstream", Azure's "experiencing high demand",
"model is overloaded" / "over capacity" from OpenAI-compatible servers."""

DETAIL_MAX_CHARS = 300
"""Longest provider message kept in `detail` (the runner stores the raw body anyway)."""

BODY_PREFIX_CHARS = 120
"""How much of an unexpected body `bad_body` quotes."""

RETRY_STATUSES = frozenset({408, 409, 429, 529})
FAIL_STATUSES = frozenset({400, 404, 413, 422})
STOP_STATUSES = frozenset({401, 403})


def action_for_status(status: int) -> ErrorAction:
    """The table above, for a non-2xx status."""
    if status in RETRY_STATUSES or 500 <= status <= 599:
        return ErrorAction.RETRY
    if status in STOP_STATUSES:
        return ErrorAction.STOP_LANE
    return ErrorAction.FAIL_CALL


def classify_status(
    status: int,
    headers: Mapping[str, str],
    *,
    error_type: str | None = None,
    message: str | None = None,
    key_env: str | None = None,
    retry_hint_s: float | None = None,
    auth_failure: bool = False,
    capacity_type: bool = False,
    now: datetime | None = None,
) -> AttemptError:
    """Classify a non-2xx response. `error_type`/`message` come from the provider's error body.

    `key_env` names the variable holding the key (for 401/403 details); `retry_hint_s` is a wait
    the provider put in its body (Gemini RetryInfo), used when no header says how long;
    `auth_failure` marks a rejected credential reported under another status (Gemini answers a
    bad key with 400 INVALID_ARGUMENT / API_KEY_INVALID), which stops the lane like a 401;
    `capacity_type` marks an error type the provider documents for shared capacity.
    """
    action = ErrorAction.STOP_LANE if auth_failure else action_for_status(status)
    quota = status == 429 and bool(error_type and QUOTA_TYPES & set(error_type.split("/")))
    missing = not auth_failure and model_missing(status, error_type, message)
    parts = [f"[{error_type}]"] if error_type else []
    parts.append(_clip(redact_message(message)) if message else f"HTTP {status}")
    if 300 <= status <= 399:
        location = headers.get("location")
        target = repr(_clip(redact_message(location))) if location else "an unnamed place"
        parts.append(
            f"(redirected to {target}; redirects are never followed, so no credential leaves "
            "the configured origin: set base_url to the final address)"
        )
    stop_kind = None
    if quota:
        action, stop_kind = ErrorAction.STOP_LANE, "quota"
        parts.append("(the account's quota is used up: add credit or raise the quota)")
    elif missing:
        action, stop_kind = ErrorAction.STOP_LANE, "model"
        parts.append(
            "(the endpoint does not serve this model: check `model` and `base_url` in the config)"
        )
    elif action is ErrorAction.STOP_LANE:
        stop_kind = "credentials"
        where = key_env or "the variable named by api_key_env"
        parts.append(f"(credentials rejected: check {where} and the account's access)")
    retry_after = None
    if action is ErrorAction.RETRY:
        retry_after = retry_after_seconds(headers, now=now)
        if retry_after is None and retry_hint_s is not None:
            retry_after = _wait(retry_hint_s)
    return AttemptError(
        action=action,
        error_class=f"http_{status}",
        detail=" ".join(parts),
        status=status,
        retry_after_s=retry_after,
        capacity=action is ErrorAction.RETRY
        and status == 429
        and (capacity_type or is_capacity_429(headers, message, now)),
        stop_kind=stop_kind,
    )


def model_missing(status: int, error_type: str | None, message: str | None) -> bool:
    """Whether a 400/404 says the model (or, for a 404 without the provider's error, the
    endpoint's path) does not exist: true of every call of the lane, not of this request."""
    if status not in (400, 404):
        return False
    if error_type and MODEL_MISSING_TYPES & set(error_type.split("/")):
        # A 400 NOT_FOUND-typed error is still about a resource, never a request's content.
        return True
    if message and MODEL_MISSING_MESSAGE.search(message):
        return True
    return status == 404 and not error_type and not message


def is_capacity_429(
    headers: Mapping[str, str], message: str | None, now: datetime | None = None
) -> bool:
    """Whether a 429's headers or message say the refusal is not the caller's rate: requests
    left in its window (and no token limit run out), or a message naming capacity."""
    if message and CAPACITY_MESSAGE.search(message):
        return True
    snapshot = any_snapshot(headers, now)
    if snapshot is None or snapshot.remaining_requests is None:
        return False
    return snapshot.remaining_requests > 0 and snapshot.remaining_tokens != 0


def bad_body(body: bytes, reason: str, status: int | None = 200) -> AttemptError:
    """A 2xx whose body is not what the API documents: retried a few times, then the call fails."""
    prefix = body[:BODY_PREFIX_CHARS].decode("utf-8", errors="replace")
    return AttemptError(
        action=ErrorAction.RETRY,
        error_class="bad_body",
        detail=f"{reason}; body starts: {redact_message(prefix)!r}",
        status=status,
    )


def decode_json(body: bytes) -> Any | None:
    """The parsed JSON body, or None when it is not JSON (HTML error page, truncated, empty)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """How long the server asked us to wait, as asked: the lane caps it (and stops when the
    wait is longer than its cap: a quota, not a rate limit).

    Order: `retry-after-ms` (OpenAI), `retry-after` as seconds or HTTP-date, then the reset of an
    exhausted rate-limit bucket (`x-ratelimit-reset-*`, `anthropic-ratelimit-*-reset`).
    """
    now = now or datetime.now(UTC)
    millis = _float(headers.get("retry-after-ms"))
    if millis is not None:
        return _wait(millis / 1000.0)
    raw = headers.get("retry-after")
    if raw is not None:
        seconds = _float(raw)
        if seconds is None:
            seconds = _http_date_delay(raw, now)
        if seconds is not None:
            return _wait(seconds)
    return _bucket_reset(headers, now)


def _bucket_reset(headers: Mapping[str, str], now: datetime) -> float | None:
    snapshot = any_snapshot(headers, now)
    if snapshot is None:
        return None
    exhausted = [
        reset
        for remaining, reset in (
            (snapshot.remaining_requests, snapshot.reset_requests_s),
            (snapshot.remaining_tokens, snapshot.reset_tokens_s),
        )
        if reset is not None and remaining == 0
    ]
    # Without a known-empty bucket, the later reset is the safe one to wait for.
    candidates = exhausted or [
        r for r in (snapshot.reset_requests_s, snapshot.reset_tokens_s) if r is not None
    ]
    return _wait(max(candidates)) if candidates else None


def _http_date_delay(value: str, now: datetime) -> float | None:
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def _float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number == number else None  # NaN is not a wait


def _wait(seconds: float) -> float:
    # Finite, so it can be stored and compared; "inf" means longer than any cap.
    return min(max(0.0, seconds), sys.float_info.max)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_MAX_CHARS else text[: DETAIL_MAX_CHARS - 1] + "…"


def google_error_reasons(details: object) -> set[str]:
    """The `google.rpc.ErrorInfo.reason` values in a Google error's `details`."""
    if not isinstance(details, list):
        return set()
    return {
        str(item["reason"])
        for item in details
        if isinstance(item, dict)
        and str(item.get("@type", "")).endswith("ErrorInfo")
        and "reason" in item
    }


def google_capacity(status: str | None, details: object) -> bool:
    """A Google RESOURCE_EXHAUSTED that names no quota: the shared capacity a model draws on
    (Vertex's dynamic shared quota, busy hours), not a limit of the caller's (those carry a
    `google.rpc.QuotaFailure` detail naming the quota metric that ran out)."""
    if status != "RESOURCE_EXHAUSTED":
        return False
    items = details if isinstance(details, list) else []
    return not any(
        isinstance(item, dict) and str(item.get("@type", "")).endswith("QuotaFailure")
        for item in items
    )


def google_retry_delay(details: object) -> float | None:
    """A `google.rpc.RetryInfo.retryDelay` ("30s") from a Google error's `details`, if any."""
    if not isinstance(details, list):
        return None
    for item in details:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            delay = item.get("retryDelay")
            return parse_duration(delay) if isinstance(delay, str) else None
    return None
