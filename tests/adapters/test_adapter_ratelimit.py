"""Rate-limit header parsing (OpenAI durations, Anthropic RFC 3339 resets)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evaltally.adapters.ratelimit_headers import (
    anthropic_snapshot,
    any_snapshot,
    openai_snapshot,
    parse_duration,
)
from evaltally.records import RateLimitSnapshot

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5s", 0.5),
        ("12", 12.0),
        ("7.25", 7.25),
        ("150us", 0.00015),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "1d", "-3", "1s junk"])
def test_unparseable_duration_is_none(text: str) -> None:
    assert parse_duration(text) is None


def test_openai_headers() -> None:
    headers = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-reset-requests": "125ms",
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-tokens": "29000",
        "x-ratelimit-reset-tokens": "2s",
    }
    assert openai_snapshot(headers) == RateLimitSnapshot(
        remaining_requests=499,
        remaining_tokens=29000,
        reset_requests_s=0.125,
        reset_tokens_s=2.0,
        limit_requests=500,
        limit_tokens=30000,
    )


def test_unparseable_values_are_ignored_not_raised() -> None:
    headers = {
        "x-ratelimit-limit-requests": "lots",
        "x-ratelimit-remaining-requests": "-1",
        "x-ratelimit-reset-requests": "whenever",
        "x-ratelimit-remaining-tokens": "12",
    }
    assert openai_snapshot(headers) == RateLimitSnapshot(remaining_tokens=12)


def test_no_headers_no_snapshot() -> None:
    assert openai_snapshot({}) is None
    assert anthropic_snapshot({}, NOW) is None
    assert any_snapshot({"content-type": "application/json"}, NOW) is None


def test_anthropic_headers_prefer_combined_tokens() -> None:
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2026-11-29T12:00:01Z",
        "anthropic-ratelimit-tokens-limit": "90000",
        "anthropic-ratelimit-tokens-remaining": "80000",
        "anthropic-ratelimit-tokens-reset": "2026-11-29T12:00:30+00:00",
        "anthropic-ratelimit-input-tokens-remaining": "10",
    }
    snap = anthropic_snapshot(headers, NOW)
    assert snap == RateLimitSnapshot(
        remaining_requests=49,
        remaining_tokens=80000,
        reset_requests_s=1.0,
        reset_tokens_s=30.0,
        limit_requests=50,
        limit_tokens=90000,
    )


def test_anthropic_without_combined_tokens_uses_the_tighter_of_input_output() -> None:
    headers = {
        "anthropic-ratelimit-input-tokens-limit": "40000",
        "anthropic-ratelimit-input-tokens-remaining": "39000",
        "anthropic-ratelimit-input-tokens-reset": "2026-11-29T12:00:05Z",
        "anthropic-ratelimit-output-tokens-limit": "8000",
        "anthropic-ratelimit-output-tokens-remaining": "100",
        "anthropic-ratelimit-output-tokens-reset": "2026-11-29T12:00:09Z",
    }
    snap = anthropic_snapshot(headers, NOW)
    assert snap is not None
    assert (snap.remaining_tokens, snap.limit_tokens, snap.reset_tokens_s) == (100, 8000, 9.0)


def test_anthropic_bad_timestamp_is_ignored() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "3",
        "anthropic-ratelimit-requests-reset": "tomorrow",
    }
    assert anthropic_snapshot(headers, NOW) == RateLimitSnapshot(remaining_requests=3)
