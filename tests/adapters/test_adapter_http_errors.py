"""The shared classification table, Retry-After in every form, redaction, bad bodies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evaltally.adapters import http_errors
from evaltally.adapters.http_errors import (
    action_for_status,
    bad_body,
    classify_status,
    retry_after_seconds,
)
from evaltally.records import ErrorAction
from evaltally.redact import redact_message

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)

RETRY, FAIL, STOP = ErrorAction.RETRY, ErrorAction.FAIL_CALL, ErrorAction.STOP_LANE


@pytest.mark.parametrize(
    ("status", "action"),
    [
        (429, RETRY),
        (408, RETRY),
        (409, RETRY),
        (500, RETRY),
        (502, RETRY),
        (503, RETRY),
        (504, RETRY),
        (529, RETRY),
        (400, FAIL),
        (413, FAIL),
        (422, FAIL),
        (402, FAIL),
        (410, FAIL),
        (424, FAIL),
        (451, FAIL),
        (401, STOP),
        (403, STOP),
        (302, FAIL),
        (100, FAIL),
    ],
)
def test_classification_table(status: int, action: ErrorAction) -> None:
    assert action_for_status(status) is action
    error = classify_status(status, {})
    assert error.action is action
    assert error.error_class == f"http_{status}"
    assert error.status == status


def test_every_status_is_classified() -> None:
    for status in range(100, 600):
        assert action_for_status(status) in ErrorAction


def test_retry_after_seconds_form() -> None:
    assert retry_after_seconds({"retry-after": "7"}, NOW) == 7.0
    assert retry_after_seconds({"retry-after": "1.5"}, NOW) == 1.5


def test_retry_after_ms_wins_over_seconds() -> None:
    headers = {"retry-after-ms": "250", "retry-after": "3"}
    assert retry_after_seconds(headers, NOW) == 0.25


def test_retry_after_http_date_form() -> None:
    headers = {"retry-after": "Sun, 29 Nov 2026 12:00:30 GMT"}
    assert retry_after_seconds(headers, NOW) == 30.0


def test_retry_after_http_date_in_the_past_is_zero() -> None:
    headers = {"retry-after": "Sun, 29 Nov 2026 11:00:00 GMT"}
    assert retry_after_seconds(headers, NOW) == 0.0


def test_retry_after_is_reported_as_asked_and_finite() -> None:
    # The lane holds the one cap (and stops past it); the classification reports the truth.
    assert retry_after_seconds({"retry-after": "86400"}, NOW) == 86400.0
    assert retry_after_seconds({"retry-after-ms": "99999999"}, NOW) == 99999.999
    huge = retry_after_seconds({"retry-after": "inf"}, NOW)
    assert huge is not None and huge > 1e300 and huge != float("inf")


def test_insufficient_quota_429_stops_the_lane() -> None:
    error = classify_status(
        429,
        {"retry-after": "1"},
        error_type="insufficient_quota/insufficient_quota",
        message="You exceeded your current quota",
    )
    assert error.action is ErrorAction.STOP_LANE
    assert "quota is used up" in error.detail and error.retry_after_s is None
    limited = classify_status(429, {"retry-after": "1"}, error_type="requests/rate_limit_exceeded")
    assert limited.action is ErrorAction.RETRY and limited.retry_after_s == 1.0


def test_negative_retry_after_is_zero() -> None:
    assert retry_after_seconds({"retry-after": "-5"}, NOW) == 0.0


@pytest.mark.parametrize("value", ["soon", "", "nan", "Mon, 99 Foo"])
def test_unparseable_retry_after_is_ignored(value: str) -> None:
    assert retry_after_seconds({"retry-after": value}, NOW) is None


def test_openai_reset_header_is_the_fallback_for_the_exhausted_bucket() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "10",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "20ms",
    }
    assert retry_after_seconds(headers, NOW) == pytest.approx(0.02)


def test_reset_fallback_without_remaining_takes_the_later_reset() -> None:
    headers = {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "2m30s"}
    assert retry_after_seconds(headers, NOW) == 150.0


def test_anthropic_reset_is_a_fallback_too() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-11-29T12:00:12Z",
    }
    assert retry_after_seconds(headers, NOW) == 12.0


def test_429_carries_retry_after() -> None:
    error = classify_status(429, {"retry-after": "4"}, error_type="rate_limit_error", now=NOW)
    assert error.action is RETRY
    assert error.retry_after_s == 4.0
    assert error.detail.startswith("[rate_limit_error]")


def test_fail_and_stop_carry_no_retry_after() -> None:
    assert classify_status(400, {"retry-after": "4"}).retry_after_s is None
    assert classify_status(401, {"retry-after": "4"}).retry_after_s is None


def test_body_retry_hint_is_used_without_headers() -> None:
    assert classify_status(429, {}, retry_hint_s=17.0).retry_after_s == 17.0
    assert classify_status(429, {"retry-after": "2"}, retry_hint_s=17.0).retry_after_s == 2.0


def test_auth_failure_names_the_key_variable_but_not_the_key() -> None:
    message = "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    error = classify_status(401, {}, message=message, key_env="DEEPSEEK_API_KEY")
    assert error.action is STOP
    assert "DEEPSEEK_API_KEY" in error.detail
    assert "abcdefghijklmnop" not in error.detail
    assert "[redacted]" in error.detail


@pytest.mark.parametrize(
    "secret",
    [
        # Built from parts so the fakes do not read as committed credentials to a scanner.
        "sk-ant-" + "api03-AbCdEfGhIjKlMnOp",
        "AKIA" + "IOSFODNN7EXAMPLE",
        "AIzaSyA-1234567890abcdefghijklmnopqr",
        "gsk_" + "AbCdEfGhIjKlMnOpQrStUv12",
        "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
        "Bearer " + "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ",
    ],
)
def test_redact_removes_key_shaped_strings(secret: str) -> None:
    assert secret not in redact_message(f"key {secret} rejected")


def test_redact_keeps_ordinary_messages() -> None:
    text = "This model's maximum context length is 8192 tokens."
    assert redact_message(text) == text


def test_long_messages_are_clipped() -> None:
    error = classify_status(400, {}, message="word " * 500)
    assert len(error.detail) <= http_errors.DETAIL_MAX_CHARS + 20


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>",
        b'{"choices": [{"mess',
        b"",
    ],
)
def test_bad_body_is_retried_with_a_prefix(body: bytes) -> None:
    error = bad_body(body, "not JSON")
    assert error.action is RETRY
    assert error.error_class == "bad_body"
    assert body[:20].decode(errors="replace") in error.detail
    assert len(error.detail) < http_errors.BODY_PREFIX_CHARS + 80


def test_google_retry_delay() -> None:
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"},
    ]
    assert http_errors.google_retry_delay(details) == 31.0
    assert http_errors.google_retry_delay("nope") is None
