"""Rate-limit response headers -> RateLimitSnapshot. Unparseable values are ignored, never raised.

Two header families are documented:

- OpenAI (and many OpenAI-compatible servers): `x-ratelimit-{limit,remaining,reset}-{requests,
  tokens}`; resets are Go-style durations such as "1s", "6m0s", "20ms", "1h2m3.5s".
- Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,
  reset}`; resets are RFC 3339 timestamps. `tokens-*` is the most restrictive token limit in
  effect, so it is preferred; otherwise the tighter of input/output is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from evaltally.records import RateLimitSnapshot

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(value: str | None) -> float | None:
    """Seconds from a Go-style duration ("6m0s", "20ms") or a bare number of seconds."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 else None
    parts = _DURATION_PART.findall(text)
    # The parts must cover the whole string, or "5 minutes" would read as 5 minutes of nothing.
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def parse_rfc3339_delay(value: str | None, now: datetime) -> float | None:
    """Seconds from `now` until an RFC 3339 timestamp (never negative)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if number >= 0 else None


def openai_snapshot(headers: Mapping[str, str]) -> RateLimitSnapshot | None:
    """The OpenAI-style `x-ratelimit-*` headers, or None when none of them parse."""
    snapshot = RateLimitSnapshot(
        limit_requests=_int(headers.get("x-ratelimit-limit-requests")),
        remaining_requests=_int(headers.get("x-ratelimit-remaining-requests")),
        reset_requests_s=parse_duration(headers.get("x-ratelimit-reset-requests")),
        limit_tokens=_int(headers.get("x-ratelimit-limit-tokens")),
        remaining_tokens=_int(headers.get("x-ratelimit-remaining-tokens")),
        reset_tokens_s=parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )
    return None if snapshot == RateLimitSnapshot() else snapshot


def anthropic_snapshot(
    headers: Mapping[str, str], now: datetime | None = None
) -> RateLimitSnapshot | None:
    """The `anthropic-ratelimit-*` headers, or None when none of them parse."""
    now = now or datetime.now(UTC)
    prefix = "anthropic-ratelimit-"
    token_kind = _anthropic_token_kind(headers)
    snapshot = RateLimitSnapshot(
        limit_requests=_int(headers.get(prefix + "requests-limit")),
        remaining_requests=_int(headers.get(prefix + "requests-remaining")),
        reset_requests_s=parse_rfc3339_delay(headers.get(prefix + "requests-reset"), now),
        limit_tokens=_int(headers.get(f"{prefix}{token_kind}-limit")),
        remaining_tokens=_int(headers.get(f"{prefix}{token_kind}-remaining")),
        reset_tokens_s=parse_rfc3339_delay(headers.get(f"{prefix}{token_kind}-reset"), now),
    )
    return None if snapshot == RateLimitSnapshot() else snapshot


def _anthropic_token_kind(headers: Mapping[str, str]) -> str:
    if _int(headers.get("anthropic-ratelimit-tokens-remaining")) is not None:
        return "tokens"
    remaining = {
        kind: _int(headers.get(f"anthropic-ratelimit-{kind}-remaining"))
        for kind in ("input-tokens", "output-tokens")
    }
    known = {kind: value for kind, value in remaining.items() if value is not None}
    return min(known, key=lambda kind: known[kind]) if known else "tokens"


def any_snapshot(
    headers: Mapping[str, str], now: datetime | None = None
) -> RateLimitSnapshot | None:
    """Whichever family the response carries (Anthropic first: its names are unambiguous)."""
    return anthropic_snapshot(headers, now) or openai_snapshot(headers)
