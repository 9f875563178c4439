"""Each host's documented rate-limit headers, and the window each limit counts over: a per-day
or per-five-minutes limit is shown but never paced on as if it were per minute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from adapter_testkit import response

from evaltally.adapters.openai import OpenAIAdapter
from evaltally.config import Limits
from evaltally.records import RateLimitSnapshot
from evaltally.runner.lane import Lane

CHAT = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def limits(headers: dict[str, str]) -> RateLimitSnapshot:
    snapshot = OpenAIAdapter().rate_limits(response(CHAT, 200, headers))
    assert snapshot is not None
    return snapshot


GROQ = {
    # Groq documents x-ratelimit-limit-requests as requests per DAY, the tokens as per minute.
    "x-ratelimit-limit-requests": "14400",
    "x-ratelimit-remaining-requests": "14370",
    "x-ratelimit-reset-requests": "2m59.56s",
    "x-ratelimit-limit-tokens": "6000",
    "x-ratelimit-remaining-tokens": "5880",
    "x-ratelimit-reset-tokens": "1.2s",
}


def test_groq_daily_request_limit_is_not_a_pace() -> None:
    snapshot = limits(GROQ)
    assert snapshot.limit_requests == 14400
    assert snapshot.window_requests_s == 86400.0
    assert snapshot.per_minute(snapshot.limit_requests, snapshot.window_requests_s) is None
    assert snapshot.per_minute(snapshot.limit_tokens, snapshot.window_tokens_s) == 6000


@pytest.mark.parametrize(
    ("headers", "rpm", "tpm"),
    [
        (  # OpenAI: per minute, a token reset as its documentation shows it
            {
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "499",
                "x-ratelimit-reset-requests": "120ms",
                "x-ratelimit-limit-tokens": "150000",
                "x-ratelimit-remaining-tokens": "149984",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            500,
            150000,
        ),
        (  # Together: per second
            {
                "x-ratelimit-limit": "10",
                "x-ratelimit-remaining": "9",
                "x-ratelimit-reset": "1",
                "x-tokenlimit-limit": "2000",
                "x-tokenlimit-remaining": "1900",
            },
            600,
            120000,
        ),
        (  # Mistral: tokens per minute, a monthly quota beside it
            {
                "x-ratelimitbysize-limit-minute": "500000",
                "x-ratelimitbysize-remaining-minute": "499000",
                "x-ratelimitbysize-reset": "30",
                "x-ratelimitbysize-limit-month": "1000000000",
            },
            None,
            500000,
        ),
    ],
)
def test_documented_header_sets_as_rates_per_minute(
    headers: dict[str, str], rpm: float | None, tpm: float | None
) -> None:
    snapshot = limits(headers)
    assert snapshot.per_minute(snapshot.limit_requests, snapshot.window_requests_s) == rpm
    assert snapshot.per_minute(snapshot.limit_tokens, snapshot.window_tokens_s) == tpm


def test_ietf_ratelimit_fields_of_the_hugging_face_router() -> None:
    snapshot = limits(
        {"ratelimit-policy": '"fixed window";"api";q=500;w=300', "ratelimit": '"api";r=489;t=189'}
    )
    assert (snapshot.limit_requests, snapshot.remaining_requests) == (500, 489)
    assert snapshot.window_requests_s == 300 and snapshot.reset_requests_s == 189
    assert snapshot.per_minute(snapshot.limit_requests, snapshot.window_requests_s) is None


def test_anthropic_openai_compatible_endpoint_headers_are_read() -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=20)).isoformat().replace("+00:00", "Z")
    snapshot = limits(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": reset,
        }
    )
    assert snapshot.per_minute(snapshot.limit_requests, snapshot.window_requests_s) == 50


def test_a_lane_paces_on_the_minute_limits_only() -> None:
    lane = Lane("groq", Limits(), clock=lambda: 0.0)
    lane.observe(limits(GROQ))
    assert lane.requests.pacer is None
    assert lane.tokens.pacer is not None
