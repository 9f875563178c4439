"""Rate-limit response headers -> RateLimitSnapshot. Unparseable values are ignored, never raised.

The header sets hosts document, and the window each limit counts over:

- OpenAI and most OpenAI-compatible hosts (Groq, DeepSeek, OpenRouter, ...):
  `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`; resets are Go-style durations such
  as "1s", "6m0s", "20ms", "1h2m3.5s". The limits are per minute, except where the request
  reset says the window is longer: a reset past a minute cannot belong to a per-minute limit
  (Groq's request limit is per DAY, and its reset reads "2m59.56s" once 30 of 14,400 are
  used).
- Together: `x-ratelimit-{limit,remaining,reset}` (requests) and `x-tokenlimit-{limit,
  remaining}` (tokens), both per SECOND; the reset is in seconds.
- Mistral: `x-ratelimitbysize-{limit,remaining}-minute` (tokens per minute; the `-month`
  quota is not a pace) with `x-ratelimitbysize-reset` in seconds.
- The IETF RateLimit fields (Hugging Face): `RateLimit-Policy: ...;q=<quota>;w=<window s>`
  and `RateLimit: ...;r=<remaining>;t=<reset s>`, counted as requests.
- Anthropic, also on its OpenAI-compatible endpoint: `anthropic-ratelimit-{requests,tokens,
  input-tokens,output-tokens}-{limit,remaining,reset}`; resets are RFC 3339 timestamps.
  `tokens-*` is the most restrictive token limit in effect, so it is preferred; otherwise the
  tighter of input/output is used. Per minute.

`RateLimitSnapshot.per_minute` turns a limit into the lane's pace; a limit over a longer window
is shown but never paced on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

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
    """The OpenAI-style headers and the per-host variants above (Together, Mistral, IETF
    RateLimit), or None when none of them parse."""
    requests = (
        _family(headers, "x-ratelimit-%s-requests", 60.0, stretch=True)
        or _family(headers, "x-ratelimit-%s", 1.0)
        or _ietf(headers)
    )
    tokens = (
        _family(headers, "x-ratelimit-%s-tokens", 60.0)
        or _family(headers, "x-tokenlimit-%s", 1.0, reset=False)
        or _family(
            headers, "x-ratelimitbysize-%s-minute", 60.0, reset_name="x-ratelimitbysize-reset"
        )
    )
    snapshot = RateLimitSnapshot(**_fields("requests", requests), **_fields("tokens", tokens))
    return None if snapshot == RateLimitSnapshot() else snapshot


@dataclass(frozen=True, slots=True)
class _Limit:
    limit: int | None
    remaining: int | None
    reset_s: float | None
    window_s: float
    header: str | None = None
    """The header the limit was read from."""


def _family(
    headers: Mapping[str, str],
    names: str,
    documented_s: float,
    *,
    stretch: bool = False,
    reset: bool = True,
    reset_name: str | None = None,
) -> _Limit | None:
    """One limit's headers (`names` % "limit", "remaining", "reset"; `reset_name` when the
    reset is named otherwise, none without `reset`) over its documented window. With
    `stretch` (request limits under OpenAI's names, which hosts use for per-minute and per-day
    limits alike) a reset past the window tells a longer one: a limit cannot reset later than
    its window ends. Token resets are not read so: OpenAI's own documentation shows a
    per-minute token limit resetting in "6m0s"."""
    limit, remaining = names % "limit", names % "remaining"
    reset_header = (reset_name or names % "reset") if reset else None
    reset_value = headers.get(reset_header) if reset_header else None
    found = _Limit(
        _int(headers.get(limit)),
        _int(headers.get(remaining)),
        parse_duration(reset_value),
        documented_s,
        _named(headers, limit),
    )
    if found.limit is None and found.remaining is None and found.reset_s is None:
        return None
    if stretch and found.reset_s is not None and found.reset_s > documented_s + 1.0:
        return replace(found, window_s=_window_of(found))
    return found


def _fields(kind: str, found: _Limit | None) -> dict[str, Any]:
    """RateLimitSnapshot's fields of one limit ("requests" or "tokens")."""
    if found is None:
        return {}
    return {
        f"limit_{kind}": found.limit,
        f"remaining_{kind}": found.remaining,
        f"reset_{kind}_s": found.reset_s,
        f"window_{kind}_s": found.window_s,
        f"header_{kind}": found.header,
    }


STANDARD_WINDOWS_S = (1.0, 60.0, 3600.0, 86400.0)


def _window_of(found: _Limit) -> float:
    """The standard window (second, minute, hour, day) of a limit whose reset is `reset_s`
    away: at least the shortest it fits in and, where part of the limit is used, the one
    nearest to the time a refilling bucket takes to fill (Groq refills continuously: 30 of
    14,400 used and 180 s to refill make a day)."""
    reset = found.reset_s or 0.0
    shortest = next((w for w in STANDARD_WINDOWS_S if reset <= w + 1.0), STANDARD_WINDOWS_S[-1])
    limit, remaining = found.limit, found.remaining
    if not limit or remaining is None or remaining >= limit:
        return shortest
    refill = reset * limit / (limit - remaining)
    nearest = min(STANDARD_WINDOWS_S, key=lambda w: abs(math.log(w / refill)))
    return max(shortest, nearest)


_IETF_PARAM = re.compile(r"\b([qwrt])=(\d+)")


def _ietf(headers: Mapping[str, str]) -> _Limit | None:
    """The IETF RateLimit-Policy/RateLimit fields: quota `q` over window `w` seconds,
    remaining `r`, reset in `t` seconds."""
    policy = dict(_IETF_PARAM.findall(headers.get("ratelimit-policy", "")))
    state = dict(_IETF_PARAM.findall(headers.get("ratelimit", "")))
    if "q" not in policy and "r" not in state:
        return None
    window = float(policy.get("w", "60")) or 60.0
    return _Limit(
        _int(policy.get("q")),
        _int(state.get("r")),
        None if "t" not in state else float(state["t"]),
        window,
        "ratelimit-policy" if "q" in policy else None,
    )


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
        header_requests=_named(headers, prefix + "requests-limit"),
        header_tokens=_named(headers, f"{prefix}{token_kind}-limit"),
    )
    return None if snapshot == RateLimitSnapshot() else snapshot


def _named(headers: Mapping[str, str], name: str) -> str | None:
    return name if _int(headers.get(name)) is not None else None


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
    """Whichever family the response carries (Anthropic first: its names are unambiguous).

    Every family's names hold "limit", so the names are looked at once and a family is parsed
    only when one of its names is there: this runs on every answer, and parsing each family
    to learn it is absent cost more than the rest of reading an answer's headers."""
    names = [low for name in headers if "limit" in (low := name.lower())]
    if not names:
        return None
    anthropic = None
    if any(name.startswith("anthropic-ratelimit-") for name in names):
        anthropic = anthropic_snapshot(headers, now)
    return anthropic or openai_snapshot(headers)
